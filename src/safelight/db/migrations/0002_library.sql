-- The library: assets found by crawls, their proxies, bursts, per-file errors, tokens.

CREATE TABLE bursts (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    storage_config_id uuid        NOT NULL REFERENCES storage_configs (id) ON DELETE CASCADE,
    -- What makes the group: a maker's burst id, or a derived key (camera and first capture).
    burst_key         text        NOT NULL,
    primary_asset_id  bigint,
    created_at        timestamptz NOT NULL,
    UNIQUE (storage_config_id, burst_key)
);

CREATE TABLE assets (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    storage_config_id   uuid        NOT NULL REFERENCES storage_configs (id) ON DELETE CASCADE,
    -- Relative to the config's root; always confined to it.
    file_path           text        NOT NULL CHECK (file_path <> '' AND left(file_path, 1) <> '/'),
    file_name           text        NOT NULL,
    -- Hash of the whole file (XXH3-64, hex): tracks moves, and names the proxy folder.
    content_hash        text        NOT NULL CHECK (content_hash ~ '^[0-9a-f]{16}$'),
    size_bytes          bigint      NOT NULL CHECK (size_bytes > 0),
    modified_at         timestamptz NOT NULL,
    -- st_mtime_ns as read by the crawl: "unchanged" means same size and same mtime_ns.
    modified_ns         bigint      NOT NULL,
    media_type          text        NOT NULL CHECK (media_type IN ('image', 'video')),
    -- The capture time as an instant when the offset is known, else the wall-clock time
    -- read as UTC; captured_local is the wall-clock time as shot, for "on this day".
    captured_at         timestamptz NOT NULL,
    captured_local      timestamp   NOT NULL,
    captured_at_source  text        NOT NULL CHECK (captured_at_source IN ('exif', 'video', 'file')),
    captured_year       smallint    NOT NULL,
    captured_month      smallint    NOT NULL CHECK (captured_month BETWEEN 1 AND 12),
    captured_day        smallint    NOT NULL CHECK (captured_day BETWEEN 1 AND 31),
    camera_make         text,
    camera_model        text,
    width               integer,
    height              integer,
    orientation         smallint    CHECK (orientation BETWEEN 1 AND 8),
    duration_seconds    double precision,
    -- A maker's burst id (Apple), and a Live Photo's content identifier.
    maker_burst_id      text,
    content_identifier  text,
    sequence_number     integer,
    burst_id            bigint      REFERENCES bursts (id) ON DELETE SET NULL,
    -- Live Photo / motion photo: set on the image, naming its video.
    paired_asset_id     bigint      REFERENCES assets (id) ON DELETE SET NULL,
    is_deleted          boolean     NOT NULL DEFAULT false,
    deleted_at          timestamptz,
    last_seen_at        timestamptz NOT NULL,
    created_at          timestamptz NOT NULL,
    CHECK (is_deleted = (deleted_at IS NOT NULL))
);

ALTER TABLE bursts
    ADD CONSTRAINT bursts_primary_asset_fk
    FOREIGN KEY (primary_asset_id) REFERENCES assets (id) ON DELETE SET NULL;

-- One live asset per path, and one live asset per content within a config: the proxy
-- folder derives from (config, content hash), so two live assets of one content would
-- share, and fight over, one folder of proxies.
CREATE UNIQUE INDEX ix_assets_live_path ON assets (storage_config_id, file_path) WHERE NOT is_deleted;
CREATE UNIQUE INDEX ix_assets_live_content ON assets (storage_config_id, content_hash) WHERE NOT is_deleted;
CREATE INDEX ix_assets_hash ON assets (storage_config_id, content_hash);
CREATE INDEX ix_assets_deleted ON assets (storage_config_id) WHERE is_deleted;
CREATE INDEX ix_assets_on_this_day ON assets (captured_month, captured_day) WHERE NOT is_deleted;
CREATE INDEX ix_assets_burst ON assets (burst_id) WHERE burst_id IS NOT NULL;

-- One proxy per type per asset. A BlurHash is a row whose value is the string.
CREATE TABLE proxy_files (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    asset_id    bigint      NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    proxy_type  text        NOT NULL CHECK (proxy_type IN ('thumbnail', 'full_preview', 'blurhash', 'web_video')),
    -- Relative to the proxy root; NULL for a BlurHash.
    path        text,
    value       text,
    size_bytes  bigint,
    width       integer,
    height      integer,
    created_at  timestamptz NOT NULL,
    UNIQUE (asset_id, proxy_type),
    CHECK ((proxy_type = 'blurhash') = (path IS NULL)),
    CHECK ((proxy_type = 'blurhash') = (value IS NOT NULL))
);
CREATE INDEX ix_proxy_files_path ON proxy_files (path) WHERE path IS NOT NULL;

-- A file a crawl could not ingest, with its reason; the next crawl retries it.
CREATE TABLE asset_errors (
    storage_config_id uuid        NOT NULL REFERENCES storage_configs (id) ON DELETE CASCADE,
    file_path         text        NOT NULL,
    reason            text        NOT NULL,
    first_seen_at     timestamptz NOT NULL,
    last_seen_at      timestamptz NOT NULL,
    failures          integer     NOT NULL DEFAULT 1,
    PRIMARY KEY (storage_config_id, file_path)
);

CREATE TABLE auth_tokens (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_name   text        NOT NULL,
    token_hash  text        NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX ix_auth_tokens_expiry ON auth_tokens (expires_at);
