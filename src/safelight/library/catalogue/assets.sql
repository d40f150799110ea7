-- A config's assets, the files that duplicate them and the files a crawl could not read
-- (tables assets, asset_duplicates, asset_errors), as named blocks: "-- name --" then a
-- line that says what it does. Loaded once by safelight.library.catalogue.assets, the
-- only module that reads them. Time comes in as now from the injected clock. Handlers
-- run the writes inside their attempt's fenced transaction; the reads may use any
-- connection, because one item per storage config runs at a time (ADR 0008). Names read
-- subject first (ADR 0020): the table or thing the query reads or changes, singular for
-- one row and plural for a set, then what it does or returns, then any qualifier
-- (`asset_insert`, `assets_live_at_paths`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- assets_live_of_config_after_path --
-- A page of what a crawl needs of the live assets of a config, after a path, in the
-- walk's order: by the bytes of the path (COLLATE "C"), which is Python's str order.
-- Each row begins with the decisions.StatKey the walk gives out for a file (the path,
-- its stat, its sidecar's stat), then the id, content and type (assets.KnownRow). Each
-- page is its own short query (no transaction held for the walk), a walk of
-- ix_assets_live_path_c from its keyset (migration 0018), LIMIT rows and no sort.
SELECT file_path, size_bytes, modified_ns, sidecar_path, sidecar_size, sidecar_modified_ns,
       id, content_hash, media_type
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted
  AND file_path COLLATE "C" > %(after)s
ORDER BY file_path COLLATE "C"
LIMIT %(limit)s

-- assets_live_of_config_in_range --
-- The same page, of the live assets after a path and up to another (a walk batch's
-- range): assets_live_of_config_after_path with an upper bound.
SELECT file_path, size_bytes, modified_ns, sidecar_path, sidecar_size, sidecar_modified_ns,
       id, content_hash, media_type
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted
  AND file_path COLLATE "C" > %(after)s AND file_path COLLATE "C" <= %(upto)s
ORDER BY file_path COLLATE "C"
LIMIT %(limit)s

-- assets_live_of_config_digest_in_range --
-- How many live assets of a config lie after a path and up to another, and the SHA-256
-- of their decisions.StatKeys in path order, encoded exactly as
-- library.walk.matching.stat_keys_digest encodes the walk's (tests/integration/
-- test_crawl_digest.py holds the two together): equal, the walk's files of that range
-- are its assets, unchanged, with no row sent. Each path is prefixed by its length,
-- so no name can make two lists of keys encode alike. The rows are taken in path
-- order from ix_assets_live_path_c and aggregated as they come: were that order not
-- kept, the digests could only differ (the rows are then read), never match.
SELECT count(*), sha256(convert_to(coalesce(string_agg(key, E'\x1e'), ''), 'UTF8'))
FROM (
  SELECT concat(length(file_path), ':', file_path, E'\x1f', size_bytes, E'\x1f', modified_ns,
                E'\x1f' || length(sidecar_path) || ':' || sidecar_path || E'\x1f'
                || sidecar_size || E'\x1f' || sidecar_modified_ns) AS key
  FROM assets
  WHERE storage_config_id = %(config_id)s AND NOT is_deleted
    AND file_path COLLATE "C" > %(after)s AND file_path COLLATE "C" <= %(upto)s
  ORDER BY file_path COLLATE "C"
) AS keys

-- assets_live_at_paths --
-- What a crawl needs of the live assets of a config at these paths (assets.KnownRow).
SELECT file_path, size_bytes, modified_ns, sidecar_path, sidecar_size, sidecar_modified_ns,
       id, content_hash, media_type
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND file_path = ANY(%(paths)s)

-- assets_live_at_path_or_with_content --
-- What a crawl needs of the live assets of a config at this path and with this content
-- (none, one, or two), in one trip: what a hashed file's decision reads.
SELECT file_path, size_bytes, modified_ns, sidecar_path, sidecar_size, sidecar_modified_ns,
       id, content_hash, media_type
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted
  AND (file_path = %(path)s OR content_hash = %(content_hash)s)

-- asset_insert --
-- Add a new live asset (ix_assets_live_path and ix_assets_live_content guard duplicates).
INSERT INTO assets (
    storage_config_id, file_path, file_name, content_hash, size_bytes, modified_at,
    modified_ns, media_type, captured_at, captured_local, captured_at_source,
    captured_year, captured_month, captured_day, camera_make, camera_model, width, height,
    orientation, duration_seconds, maker_burst_id, content_identifier, sequence_number,
    latitude, longitude, altitude_m, motion_photo, motion_photo_issue, sidecar_path,
    sidecar_size, sidecar_modified_ns, last_seen_at, created_at, read_note,
    zone_source, time_zone, place_city, place_region, place_country, place_country_code,
    places_checked_at
) VALUES (
    %(config_id)s, %(file_path)s, %(file_name)s, %(content_hash)s, %(size_bytes)s,
    %(modified_at)s, %(modified_ns)s, %(media_type)s, %(captured_at)s, %(captured_local)s,
    %(captured_at_source)s, %(captured_year)s, %(captured_month)s, %(captured_day)s,
    %(camera_make)s, %(camera_model)s, %(width)s, %(height)s, %(orientation)s,
    %(duration_seconds)s, %(maker_burst_id)s, %(content_identifier)s, %(sequence_number)s,
    %(latitude)s, %(longitude)s, %(altitude_m)s, %(motion_photo)s, %(motion_photo_issue)s,
    %(sidecar_path)s, %(sidecar_size)s, %(sidecar_modified_ns)s, %(now)s, %(now)s,
    %(read_note)s, %(zone_source)s, %(time_zone)s, %(place_city)s, %(place_region)s,
    %(place_country)s, %(place_country_code)s, %(places_checked_at)s
)
RETURNING id

-- asset_shown_as --
-- The orientation and displayed size a live asset of a config is stored with.
SELECT orientation, width, height FROM assets
WHERE id = %(id)s AND storage_config_id = %(config_id)s AND NOT is_deleted

-- asset_update_read_again --
-- A live asset whose metadata was read again (its XMP sidecar changed), in place: its
-- capture times with the zone and place of its position (the file's, unchanged).
UPDATE assets
SET captured_at = %(captured_at)s, captured_local = %(captured_local)s,
    captured_at_source = %(captured_at_source)s, captured_year = %(captured_year)s,
    captured_month = %(captured_month)s, captured_day = %(captured_day)s,
    zone_source = %(zone_source)s, time_zone = %(time_zone)s, place_city = %(place_city)s,
    place_region = %(place_region)s, place_country = %(place_country)s,
    place_country_code = %(place_country_code)s, places_checked_at = %(places_checked_at)s,
    orientation = %(orientation)s, width = %(width)s, height = %(height)s,
    sidecar_path = %(sidecar_path)s, sidecar_size = %(sidecar_size)s,
    sidecar_modified_ns = %(sidecar_modified_ns)s, last_seen_at = %(now)s
WHERE id = %(id)s AND storage_config_id = %(config_id)s AND NOT is_deleted
RETURNING id

-- asset_move --
-- A live asset follows its content to another path (a move or rename): no new proxies.
UPDATE assets
SET file_path = %(file_path)s, file_name = %(file_name)s, size_bytes = %(size_bytes)s,
    modified_at = %(modified_at)s, modified_ns = %(modified_ns)s, last_seen_at = %(now)s
WHERE id = %(id)s AND storage_config_id = %(config_id)s AND NOT is_deleted
RETURNING id

-- asset_soft_delete --
-- Mark live assets of a config as deleted (their file is gone or its content changed).
UPDATE assets
SET is_deleted = true, deleted_at = %(now)s, burst_id = NULL, paired_asset_id = NULL,
    stack_primary_id = NULL, stack_kind = NULL
WHERE storage_config_id = %(config_id)s AND id = ANY(%(ids)s) AND NOT is_deleted

-- duplicates_delete_of_assets --
-- Forget the duplicates of these assets of a config (the asset went: soft-deleted).
DELETE FROM asset_duplicates
WHERE storage_config_id = %(config_id)s AND asset_id = ANY(%(ids)s)

-- duplicates_upsert --
-- Record files of a config that hold the same bytes as a live asset (path -> asset).
INSERT INTO asset_duplicates (storage_config_id, file_path, asset_id, first_seen_at, last_seen_at)
SELECT %(config_id)s, d.file_path, d.asset_id, %(now)s, %(now)s
FROM unnest(%(paths)s::text[], %(asset_ids)s::bigint[]) AS d(file_path, asset_id)
ON CONFLICT (storage_config_id, file_path) DO UPDATE
SET asset_id = EXCLUDED.asset_id, last_seen_at = EXCLUDED.last_seen_at

-- duplicate_paths_of_config --
-- Every path of a config recorded as a duplicate.
SELECT file_path FROM asset_duplicates WHERE storage_config_id = %(config_id)s

-- duplicates_delete_by_path --
-- Forget these duplicate paths of a config (no longer a duplicate, or gone).
DELETE FROM asset_duplicates
WHERE storage_config_id = %(config_id)s AND file_path = ANY(%(paths)s)

-- asset_counts_by_type --
-- How many live assets a config has, per media type.
SELECT media_type, count(*) FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted
GROUP BY media_type

-- asset_error_upsert --
-- Record (or count once more) a file a crawl could not ingest, with its latest reason,
-- the file as it was when it failed (NULL: not known, so the next crawl reads it again)
-- and the earliest time a crawl reads it again unchanged (library/walk/failures.py).
INSERT INTO asset_errors (storage_config_id, file_path, reason, first_seen_at, last_seen_at,
                          size, modified_ns, inode, retry_after)
VALUES (%(config_id)s, %(file_path)s, %(reason)s, %(now)s, %(now)s,
        %(size)s, %(modified_ns)s, %(inode)s, %(retry_after)s)
ON CONFLICT (storage_config_id, file_path) DO UPDATE
SET reason = EXCLUDED.reason, last_seen_at = EXCLUDED.last_seen_at,
    failures = asset_errors.failures + 1,
    size = EXCLUDED.size, modified_ns = EXCLUDED.modified_ns, inode = EXCLUDED.inode,
    retry_after = EXCLUDED.retry_after

-- asset_errors_clear --
-- Forget the errors of these paths (they were ingested, or are no longer there).
DELETE FROM asset_errors WHERE storage_config_id = %(config_id)s AND file_path = ANY(%(paths)s)

-- asset_errors_of_config_for_crawl --
-- What a crawl needs of each path of a config that has a recorded error: the reason, how
-- many crawls it failed, the file as it was then and when it is due again.
SELECT file_path, reason, failures, size, modified_ns, inode, retry_after
FROM asset_errors WHERE storage_config_id = %(config_id)s

-- asset_errors_due_now --
-- Make failed files of a config due again (``run --retry-failed``, ``config retry-failed``,
-- the dashboard's "try again"): all of them, those of one reason or the one path (NULL:
-- any); the next crawl reads each one, changed or not. How many matched, and how many of
-- those were waiting (the others were due already).
WITH matched AS (
    SELECT file_path, retry_after FROM asset_errors
    WHERE storage_config_id = %(config_id)s
      AND (%(reason)s::text IS NULL OR reason = %(reason)s::text)
      AND (%(path)s::text IS NULL OR file_path = %(path)s::text)
), made AS (
    UPDATE asset_errors e SET retry_after = %(now)s
    FROM matched m
    WHERE e.storage_config_id = %(config_id)s AND e.file_path = m.file_path
      AND (m.retry_after IS NULL OR m.retry_after > %(now)s)
    RETURNING 1
)
SELECT (SELECT count(*) FROM matched) AS matched, (SELECT count(*) FROM made) AS made

-- asset_errors_of_config --
-- A config's per-file errors, for reports and tests.
SELECT file_path, reason, failures FROM asset_errors
WHERE storage_config_id = %(config_id)s ORDER BY file_path

-- assets_deleted_of_config --
-- A config's soft-deleted assets, oldest deletion first, for a purge.
SELECT id FROM assets
WHERE storage_config_id = %(config_id)s AND is_deleted
ORDER BY deleted_at, id

-- asset_lock_deleted --
-- Lock a soft-deleted asset of a config for its purge (re-check: still deleted).
-- FOR UPDATE keeps anything else from changing the row until the purge commits.
SELECT id, content_hash FROM assets
WHERE id = %(id)s AND storage_config_id = %(config_id)s AND is_deleted
FOR UPDATE

-- asset_delete --
-- Delete one asset row (its proxy rows cascade).
DELETE FROM assets WHERE id = %(id)s

-- assets_config_of --
-- The config of each of these assets.
SELECT id, storage_config_id FROM assets WHERE id = ANY(%(asset_ids)s)
