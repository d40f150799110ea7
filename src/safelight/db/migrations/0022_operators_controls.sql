-- Issue #31, the operator's controls. One migration for the pieces its parts share;
-- each column's reader and writer is named beside it.

-- 1. Pause and resume (item 3): a kind paused across all Workers (no
-- Worker claims its items until it is resumed; a running item finishes), and a config
-- whose work is paused (none of its items is claimed). Who paused it and when, shown
-- wherever paused work is shown.
CREATE TABLE paused_kinds (
    kind      text        PRIMARY KEY CHECK (kind <> ''),
    paused_at timestamptz NOT NULL,
    paused_by text
);
ALTER TABLE storage_configs
    ADD COLUMN paused_at timestamptz,
    ADD COLUMN paused_by text;

-- 2. A scrub of the originals (item 5): when an asset's original was last read again
-- and its content hash compared with the one recorded (NULL: never; the scrub takes
-- the oldest check first), and, when the content changed while its size and
-- modification time did not, when that was found and the hash the bytes have now.
-- Reported, never "fixed": the asset keeps its recorded hash.
ALTER TABLE assets
    ADD COLUMN content_checked_at  timestamptz,
    ADD COLUMN content_mismatch_at timestamptz,
    ADD COLUMN content_found_hash  text CHECK (content_found_hash ~ '^[0-9a-f]{16}$');
CREATE INDEX ix_assets_scrub_order ON assets (storage_config_id, content_checked_at NULLS FIRST, id)
    WHERE NOT is_deleted;
