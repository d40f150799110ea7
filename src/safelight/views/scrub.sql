-- What the scrub of the originals found (ADR 0062), for both front ends: originals whose
-- content changed while their size and modification time did not (assets'
-- content_mismatch_at, content_found_hash, written by safelight.library.catalogue.
-- scrubbing). Named blocks: "-- name --" then a line that says what it does. Loaded once
-- by safelight.views.scrub, the only module that reads them. owner NULL: every config's
-- (the CLI); else that owner's configs only (the dashboard's viewer, ADR 0044).

-- assets_changed_count_shown --
-- How many live assets, of one config or all (and of one owner's configs, when given),
-- are reported changed.
SELECT count(*) AS changed
FROM assets a
JOIN storage_configs c ON c.id = a.storage_config_id
WHERE a.content_mismatch_at IS NOT NULL AND NOT a.is_deleted
  AND (%(config_id)s::uuid IS NULL OR a.storage_config_id = %(config_id)s::uuid)
  AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)

-- assets_changed_list --
-- The live assets reported changed, of one config or all (and of one owner's configs,
-- when given), the last found first: the path, the recorded hash and the one found.
SELECT a.id, a.storage_config_id, a.file_path, a.size_bytes, a.modified_at,
       a.content_hash, a.content_found_hash, a.content_mismatch_at, a.content_checked_at
FROM assets a
JOIN storage_configs c ON c.id = a.storage_config_id
WHERE a.content_mismatch_at IS NOT NULL AND NOT a.is_deleted
  AND (%(config_id)s::uuid IS NULL OR a.storage_config_id = %(config_id)s::uuid)
  AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
ORDER BY a.content_mismatch_at DESC, a.id
LIMIT %(limit)s
