-- Issue #30, every file of a family's disk, part 2. One migration for the pieces the
-- issue's parts share; each column's reader and writer is named beside it.

-- 1. Less certain dates a file holds, recorded as such (library/media/capturetime.py,
-- docs/metadata.md): 'modified' is EXIF IFD0 DateTime (ExifTool's ModifyDate: when the
-- camera or an editor last wrote the file's content), 'png' a PNG's tIME chunk (the
-- image's last modification). Either beats the file's own time, which a copy resets.
ALTER TABLE assets DROP CONSTRAINT assets_captured_at_source_check;
ALTER TABLE assets ADD CONSTRAINT assets_captured_at_source_check
    CHECK (captured_at_source IN
        ('sidecar', 'exif', 'xmp', 'iptc', 'maker', 'modified', 'png', 'video', 'file'));

-- 2. What a crawl noticed about a file it still ingested: its extension names another
-- format than its content ("holds a JPEG, named .nef"), or it was cut short and decoded
-- as far as it goes. NULL for a file with nothing to say. Shown with the asset.
ALTER TABLE assets ADD COLUMN read_note text;

-- 3. Copies of one capture are a stack, not a burst (library/grouping/stacks.py):
-- 'raw' a RAW behind the photo of the same shot (ADR 0027, every stack before this
-- migration), 'format' another format of the same capture (a JPEG's HEIC or WebP
-- export), 'copy' a near-copy (an edited copy beside its original, a copy with other
-- bytes in another folder). Meaningful only with stack_primary_id: no CHECK ties the
-- two, because the foreign key's ON DELETE SET NULL clears the link alone when a
-- primary is purged, and a CHECK would then refuse the purge.
ALTER TABLE assets ADD COLUMN stack_kind text CHECK (stack_kind IN ('raw', 'format', 'copy'));
UPDATE assets SET stack_kind = 'raw' WHERE stack_primary_id IS NOT NULL;

-- 4. A failed file is retried when it changes, when asked, or after a long backoff, not
-- at every crawl (library/catalogue/assets.py). The file as it was when it failed (NULL
-- for rows recorded before this migration: retried once at the next crawl, which fills
-- them), and the earliest time a crawl decodes it again unchanged.
ALTER TABLE asset_errors
    ADD COLUMN size        bigint CHECK (size >= 0),
    ADD COLUMN modified_ns bigint,
    ADD COLUMN inode       bigint,
    ADD COLUMN retry_after timestamptz;
