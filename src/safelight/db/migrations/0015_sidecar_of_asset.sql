-- The XMP sidecar a photo's metadata was read with (ADR 0026 decision 6): its path
-- (relative to the root, in the photo's folder), size and mtime (ns) as they were when
-- it was read. The crawl compares them with the sidecar the walk pairs the photo with:
-- one added, changed or removed since re-reads the photo's metadata in place. All NULL:
-- read with none (every asset crawled before this migration, so a photo with a sidecar
-- is read again once).
ALTER TABLE assets
    ADD COLUMN sidecar_path text,
    ADD COLUMN sidecar_size bigint CHECK (sidecar_size >= 0),
    ADD COLUMN sidecar_modified_ns bigint,
    ADD CONSTRAINT assets_sidecar_whole CHECK (
        (sidecar_path IS NULL) = (sidecar_size IS NULL)
        AND (sidecar_path IS NULL) = (sidecar_modified_ns IS NULL)
    );
