-- The scrub's columns of assets (migration 0022: content_checked_at, content_mismatch_at,
-- content_found_hash), as named blocks: "-- name --" then a line that says what it does.
-- Loaded once by safelight.library.catalogue.scrubbing, the only module that reads them
-- and the only writer of those columns. Time comes in as now from the injected clock.
-- The writes run inside the scrub's fenced transaction (ADR 0062); names read subject
-- first (ADR 0020), and tests/unit/test_query_names.py checks them.

-- assets_never_scrubbed_of_config --
-- A page of a config's live assets that were never checked, by id after a keyset: the
-- head of the scrub's order. An index range of ix_assets_scrub_order (its NULLs, then
-- id), LIMIT rows and no sort.
SELECT id, file_path, content_hash, size_bytes, modified_ns, content_checked_at
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted
  AND content_checked_at IS NULL AND id > %(after_id)s
ORDER BY content_checked_at NULLS FIRST, id
LIMIT %(limit)s

-- assets_scrubbed_before_of_config --
-- A page of a config's live assets checked before this run started, oldest check first
-- then by id, after a keyset (after_checked, after_id): the rest of the scrub's order,
-- leaving out those this run has just checked. An index range of ix_assets_scrub_order
-- (the row comparison is its condition), LIMIT rows and no sort.
SELECT id, file_path, content_hash, size_bytes, modified_ns, content_checked_at
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted
  AND (content_checked_at, id) > (%(after_checked)s::timestamptz, %(after_id)s::bigint)
  AND content_checked_at < %(started)s
ORDER BY content_checked_at NULLS FIRST, id
LIMIT %(limit)s

-- asset_content_intact --
-- An asset whose file the scrub read and found holding its recorded content: checked
-- now, and no longer reported changed (its bytes are the recorded ones again). Only the
-- version the scrub read: a live row with the same hash, size and time.
UPDATE assets
SET content_checked_at = %(now)s, content_mismatch_at = NULL, content_found_hash = NULL
WHERE id = %(id)s AND storage_config_id = %(config_id)s AND NOT is_deleted
  AND content_hash = %(content_hash)s AND size_bytes = %(size_bytes)s
  AND modified_ns = %(modified_ns)s

-- asset_content_changed --
-- An asset whose file the scrub found holding other bytes under the recorded size and
-- time: checked now, reported changed since now (or since it was first found holding
-- these same bytes), with the hash found. The recorded hash stays: it is what the file
-- held, and what the proxies show. Only the version the scrub read, as above.
UPDATE assets
SET content_checked_at = %(now)s,
    content_mismatch_at = CASE
        WHEN content_found_hash = %(found_hash)s THEN coalesce(content_mismatch_at, %(now)s)
        ELSE %(now)s
    END,
    content_found_hash = %(found_hash)s
WHERE id = %(id)s AND storage_config_id = %(config_id)s AND NOT is_deleted
  AND content_hash = %(content_hash)s AND size_bytes = %(size_bytes)s
  AND modified_ns = %(modified_ns)s
RETURNING content_mismatch_at = %(now)s AS newly
