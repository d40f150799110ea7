-- The groupings of a config's assets: bursts, Live Photo pairs, stacks (table
-- bursts, and the assets' burst, pair and stack columns), as named blocks: "-- name --"
-- then a line that says what it does. Loaded once by safelight.library.catalogue.groups,
-- the only module that reads them. Time comes in as now from the injected clock.
-- Handlers run the writes inside their attempt's fenced transaction; the reads may use
-- any connection, because one item per storage config runs at a time (ADR 0008). Names
-- read subject first (ADR 0020): the table or thing the query reads or changes, singular
-- for one row and plural for a set, then what it does or returns, then any qualifier
-- (`burst_upsert`, `assets_set_burst`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- burst_candidates --
-- A config's live photos with what burst grouping needs, and their thumbnail's path.
SELECT a.id, a.file_path, a.captured_at, a.captured_at_source, a.camera_make,
       a.camera_model, a.maker_burst_id, a.sequence_number, a.burst_id, a.picture_hash,
       t.path AS thumbnail
FROM assets a
LEFT JOIN proxy_files t ON t.asset_id = a.id AND t.proxy_type = 'thumbnail'
WHERE a.storage_config_id = %(config_id)s AND NOT a.is_deleted AND a.media_type = 'image'

-- burst_upsert --
-- Create or update the burst of a key, with its primary; returns its id.
INSERT INTO bursts (storage_config_id, burst_key, primary_asset_id, created_at)
VALUES (%(config_id)s, %(burst_key)s, %(primary_asset_id)s, %(now)s)
ON CONFLICT (storage_config_id, burst_key) DO UPDATE
SET primary_asset_id = EXCLUDED.primary_asset_id
RETURNING id

-- assets_set_burst --
-- Put these live assets of a config in a burst.
UPDATE assets SET burst_id = %(burst_id)s
WHERE storage_config_id = %(config_id)s AND id = ANY(%(ids)s)
  AND burst_id IS DISTINCT FROM %(burst_id)s

-- assets_clear_burst_except --
-- Take every asset of a config that is in a burst out of it, except the given ones.
UPDATE assets SET burst_id = NULL
WHERE storage_config_id = %(config_id)s AND burst_id IS NOT NULL AND NOT (id = ANY(%(keep)s))

-- bursts_delete_except --
-- Delete a config's bursts other than the given keys (empty or no longer a burst).
DELETE FROM bursts
WHERE storage_config_id = %(config_id)s AND NOT (burst_key = ANY(%(keep)s))

-- livephoto_candidates --
-- A config's live assets with what Live Photo pairing needs.
SELECT id, file_path, media_type, captured_at, captured_local, content_identifier,
       paired_asset_id
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted

-- asset_set_pair --
-- Pair an image of a config with its video (a Live Photo or motion photo).
UPDATE assets SET paired_asset_id = %(video_id)s
WHERE storage_config_id = %(config_id)s AND id = %(image_id)s
  AND paired_asset_id IS DISTINCT FROM %(video_id)s

-- assets_clear_pair_except --
-- Unpair every paired asset of a config except the given images.
UPDATE assets SET paired_asset_id = NULL
WHERE storage_config_id = %(config_id)s AND paired_asset_id IS NOT NULL
  AND NOT (id = ANY(%(keep)s))

-- asset_set_stack --
-- Stack an asset of a config on its primary, as what it is to it: 'raw' (a RAW of the same capture, ADR 0027), 'format' or 'copy' (ADR 0056).
UPDATE assets SET stack_primary_id = %(primary_id)s, stack_kind = %(stack_kind)s
WHERE storage_config_id = %(config_id)s AND id = %(asset_id)s
  AND (stack_primary_id IS DISTINCT FROM %(primary_id)s
       OR stack_kind IS DISTINCT FROM %(stack_kind)s)

-- assets_clear_stack_except --
-- Unstack every stacked asset of a config except the given ones (a kind left behind by a purged primary too).
UPDATE assets SET stack_primary_id = NULL, stack_kind = NULL
WHERE storage_config_id = %(config_id)s
  AND (stack_primary_id IS NOT NULL OR stack_kind IS NOT NULL)
  AND NOT (id = ANY(%(keep)s))

-- assets_unhashed --
-- Up to a batch of a config's live assets whose thumbnail was never hashed, after an id, with their thumbnail's path.
SELECT a.id, t.path AS thumbnail
FROM assets a
LEFT JOIN proxy_files t ON t.asset_id = a.id AND t.proxy_type = 'thumbnail'
WHERE a.storage_config_id = %(config_id)s AND a.picture_hashed_at IS NULL
  AND NOT a.is_deleted AND a.id > %(after)s
ORDER BY a.id
LIMIT %(limit)s

-- similar_candidates --
-- A config's live photos that may be similar shots: hashed, shown as themselves (not stacked, not in a burst), with their group now.
SELECT id, file_path, captured_at, captured_at_source, picture_hash, similar_group_id
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND media_type = 'image'
  AND picture_hash IS NOT NULL AND stack_primary_id IS NULL AND burst_id IS NULL

-- similar_group_insert --
-- Create a similar group of a config with its primary; returns its id.
INSERT INTO similar_groups (storage_config_id, primary_asset_id, created_at)
VALUES (%(config_id)s, %(primary_asset_id)s, %(now)s)
RETURNING id

-- similar_group_set_primary --
-- Show another asset as a similar group's primary.
UPDATE similar_groups SET primary_asset_id = %(primary_asset_id)s
WHERE storage_config_id = %(config_id)s AND id = %(group_id)s
  AND primary_asset_id IS DISTINCT FROM %(primary_asset_id)s

-- assets_set_similar_group --
-- Put these assets of a config in a similar group.
UPDATE assets SET similar_group_id = %(group_id)s
WHERE storage_config_id = %(config_id)s AND id = ANY(%(ids)s)
  AND similar_group_id IS DISTINCT FROM %(group_id)s

-- assets_clear_similar_group_except --
-- Take every asset of a config out of its similar group, except the given ones (a deleted asset too).
UPDATE assets SET similar_group_id = NULL
WHERE storage_config_id = %(config_id)s AND similar_group_id IS NOT NULL
  AND NOT (id = ANY(%(keep)s))

-- similar_groups_delete_except --
-- Delete a config's similar groups other than the given ids (empty, or no longer found).
DELETE FROM similar_groups
WHERE storage_config_id = %(config_id)s AND NOT (id = ANY(%(keep)s))
