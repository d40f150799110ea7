-- The files a crawl folded into an existing asset because they hold the same bytes (a
-- copy, or a symbolic link inside the root to an asset's file): which path duplicates
-- which asset, so that `safelight assets --duplicates` can name them after the run.
-- Each crawl that reaches its end rewrites its config's rows from what it found, in its
-- fenced transaction (a path no longer a duplicate loses its row, unless it lies under
-- a folder that could not be listed); an asset that is soft-deleted loses the rows that
-- name it in the same transaction, and its purge (ON DELETE CASCADE) takes any left.
CREATE TABLE asset_duplicates (
    storage_config_id uuid NOT NULL REFERENCES storage_configs (id) ON DELETE CASCADE,
    file_path text NOT NULL,
    asset_id bigint NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    first_seen_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    PRIMARY KEY (storage_config_id, file_path)
);
CREATE INDEX ix_asset_duplicates_asset ON asset_duplicates (asset_id);

-- Android motion photos (library.motionphotos): a still whose file holds a short MP4,
-- found by its metadata and checked to be one, whose web_video proxy is that video. A
-- still that claims a video which is not there keeps motion_photo false and says why.
ALTER TABLE assets ADD COLUMN motion_photo boolean NOT NULL DEFAULT false;
ALTER TABLE assets ADD COLUMN motion_photo_issue text;
ALTER TABLE assets ADD CONSTRAINT ck_assets_motion_photo_is_an_image
    CHECK (NOT motion_photo OR media_type = 'image');
