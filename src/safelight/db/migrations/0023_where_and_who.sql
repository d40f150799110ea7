-- Issue #32, memories that know where and who. One migration for the pieces the issue's
-- parts share; each column's reader and writer is named beside it.

-- 1. Where, offline (library/places/): the place nearest an asset's recorded position,
-- from GeoNames data shipped in a package, and the time zone at that position. NULL
-- for an asset without a position. places_checked_at says the lookup ran for the
-- position the row holds now (NULL: not yet; the crawl fills it for what it reads, the
-- place fill kind for rows from before this migration).
ALTER TABLE assets
    ADD COLUMN place_city         text,
    ADD COLUMN place_region       text,
    ADD COLUMN place_country      text,
    ADD COLUMN place_country_code text CHECK (place_country_code ~ '^[A-Z]{2}$'),
    ADD COLUMN places_checked_at  timestamptz,
    -- The IANA zone at the position ('Europe/Lisbon'; 'Etc/GMT-1' at sea).
    ADD COLUMN time_zone          text CHECK (time_zone <> ''),
    -- Where the offset between captured_local and captured_at came from: 'file' (the
    -- file recorded its zone, or recorded an instant), 'position' (the file recorded a
    -- wall clock or an instant without a zone, and its position gave the zone). NULL:
    -- neither, the wall clock read as UTC (ADR 0064).
    ADD COLUMN zone_source        text CHECK (zone_source IN ('file', 'position'));
CREATE INDEX ix_assets_places_unchecked ON assets (storage_config_id, id)
    WHERE latitude IS NOT NULL AND places_checked_at IS NULL AND NOT is_deleted;

-- 2. Similar shots (library/grouping/): a 64-bit perceptual hash of the asset's
-- thumbnail (two's complement in a bigint), NULL until it is computed; picture_hashed_at
-- says it was tried for the thumbnail the asset has now (a photo without a thumbnail
-- stays NULL and is not tried again). Near-identical shots of one scene and time form a
-- similar group, shown as one tile like a burst.
CREATE TABLE similar_groups (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    storage_config_id uuid        NOT NULL REFERENCES storage_configs (id) ON DELETE CASCADE,
    primary_asset_id  bigint      REFERENCES assets (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL
);
CREATE INDEX ix_similar_groups_config ON similar_groups (storage_config_id);
ALTER TABLE assets
    ADD COLUMN picture_hash      bigint,
    ADD COLUMN picture_hashed_at timestamptz,
    ADD COLUMN similar_group_id  bigint REFERENCES similar_groups (id) ON DELETE SET NULL;
CREATE INDEX ix_assets_similar_group ON assets (similar_group_id) WHERE similar_group_id IS NOT NULL;
CREATE INDEX ix_assets_picture_unhashed ON assets (storage_config_id, id)
    WHERE picture_hashed_at IS NULL AND NOT is_deleted;

-- 3. Who (library/faces/, opt-in with SAFELIGHT_FACES=1): people of one config (faces of
-- a config stay with its owner, so a person never spans two configs), the faces found
-- in each photo, and which content each photo's faces were found on.
CREATE TABLE people (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    storage_config_id uuid        NOT NULL REFERENCES storage_configs (id) ON DELETE CASCADE,
    -- Given by a user (NULL: not named yet); a re-crawl or a re-clustering keeps it.
    name              text        CHECK (name IS NULL OR length(btrim(name)) BETWEEN 1 AND 200),
    named_by          text,
    named_at          timestamptz,
    created_at        timestamptz NOT NULL,
    UNIQUE (storage_config_id, id)
);
CREATE INDEX ix_people_config ON people (storage_config_id);

CREATE TABLE faces (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    asset_id          bigint      NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    storage_config_id uuid        NOT NULL REFERENCES storage_configs (id) ON DELETE CASCADE,
    -- The face's box in the upright picture, as fractions of its width and height.
    box_left          real        NOT NULL CHECK (box_left BETWEEN 0 AND 1),
    box_top           real        NOT NULL CHECK (box_top BETWEEN 0 AND 1),
    box_right         real        NOT NULL CHECK (box_right BETWEEN 0 AND 1),
    box_bottom        real        NOT NULL CHECK (box_bottom BETWEEN 0 AND 1),
    -- The 128-D descriptor, as 128 little-endian float32.
    descriptor        bytea       NOT NULL CHECK (length(descriptor) = 512),
    person_id         bigint,
    -- 'cluster': placed by the grouping, which may move it; 'person': placed by a user
    -- (a split, a merge, a move), which the grouping leaves where it is.
    placed_by         text        NOT NULL DEFAULT 'cluster' CHECK (placed_by IN ('cluster', 'person')),
    created_at        timestamptz NOT NULL,
    CONSTRAINT faces_box_wide CHECK (box_right > box_left),
    CONSTRAINT faces_box_tall CHECK (box_bottom > box_top),
    -- A face and its person belong to one config (a composite key, so no face can be
    -- placed in another config's person).
    FOREIGN KEY (storage_config_id, person_id) REFERENCES people (storage_config_id, id)
        ON DELETE SET NULL (person_id)
);
CREATE INDEX ix_faces_asset ON faces (asset_id);
CREATE INDEX ix_faces_person ON faces (person_id) WHERE person_id IS NOT NULL;
CREATE INDEX ix_faces_config ON faces (storage_config_id);
ALTER TABLE assets ADD COLUMN faces_content_hash text CHECK (faces_content_hash ~ '^[0-9a-f]{16}$');
