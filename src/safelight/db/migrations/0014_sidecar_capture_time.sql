-- A capture time read from a photo's XMP sidecar ('sidecar': ``name.ext.xmp`` or
-- ``name.xmp`` beside it, the editor's word, which wins over what the file embeds;
-- ADR 0026 decision 6).
ALTER TABLE assets DROP CONSTRAINT assets_captured_at_source_check;
ALTER TABLE assets ADD CONSTRAINT assets_captured_at_source_check
    CHECK (captured_at_source IN ('sidecar', 'exif', 'xmp', 'iptc', 'maker', 'video', 'file'));
