-- The failed files of the operator's views (`safelight assets --failed`, the dashboard's
-- "Failed files" page, ADR 0058), as named blocks: "-- name --" then a line that says what
-- it does. Loaded once by safelight.views.failedfiles, the only module that reads them.
-- Names read subject first (ADR 0020); tests/unit/test_query_names.py checks them.
-- Each takes %(owner)s, the dashboard viewer's filter (ADR 0044): NULL (the CLI, an
-- admin) for every config, else only that owner's configs. A file of a reason sorts
-- newest first (last seen), then by path: a stable order the keyset pages follow.
-- "unknown": the file as it was when it failed is not recorded (it failed before it
-- was opened, or before migration 0021), so the next crawl reads it (walk/failures.py).

-- asset_errors_by_reason --
-- The failed files of an owner's configs (or one config), one group a reason with its count and newest time, and the group's first files.
SELECT storage_config_id, root_path, owner, reason, reason_files, reason_last_seen_at,
       file_path, first_seen_at, last_seen_at, failures, retry_after, unknown
FROM (
    SELECT e.storage_config_id, c.root_path, c.owner, e.reason, e.file_path,
           e.first_seen_at, e.last_seen_at, e.failures, e.retry_after,
           (e.size IS NULL OR e.modified_ns IS NULL OR e.inode IS NULL) AS unknown,
           count(*) OVER grp AS reason_files,
           max(e.last_seen_at) OVER grp AS reason_last_seen_at,
           row_number() OVER (grp ORDER BY e.last_seen_at DESC, e.file_path) AS place
    FROM asset_errors e
    JOIN storage_configs c ON c.id = e.storage_config_id
    WHERE (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
      AND (%(config_id)s::uuid IS NULL OR e.storage_config_id = %(config_id)s::uuid)
    WINDOW grp AS (PARTITION BY e.storage_config_id, e.reason)
) ranked
WHERE %(per_reason)s::int IS NULL OR place <= %(per_reason)s::int
ORDER BY root_path, storage_config_id, reason_last_seen_at DESC, reason, place

-- asset_errors_of_reason_page --
-- A page of one reason's failed files of a config of an owner, after a file (its last seen time and path), newest first.
SELECT e.storage_config_id, c.root_path, c.owner, e.reason, e.file_path,
       e.first_seen_at, e.last_seen_at, e.failures, e.retry_after,
       (e.size IS NULL OR e.modified_ns IS NULL OR e.inode IS NULL) AS unknown
FROM asset_errors e
JOIN storage_configs c ON c.id = e.storage_config_id
WHERE (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
  AND e.storage_config_id = %(config_id)s::uuid
  AND e.reason = %(reason)s::text
  AND (%(after_seen)s::timestamptz IS NULL
       OR e.last_seen_at < %(after_seen)s::timestamptz
       OR (e.last_seen_at = %(after_seen)s::timestamptz AND e.file_path > %(after_path)s::text))
ORDER BY e.last_seen_at DESC, e.file_path
LIMIT %(limit)s

-- asset_errors_reason_count --
-- How many failed files of one reason a config of an owner has, the newest time one failed, and the config's root and owner; no row for none.
SELECT c.id AS storage_config_id, c.root_path, c.owner, e.reason,
       count(*) AS files, max(e.last_seen_at) AS last_seen_at
FROM asset_errors e
JOIN storage_configs c ON c.id = e.storage_config_id
WHERE (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
  AND e.storage_config_id = %(config_id)s::uuid
  AND e.reason = %(reason)s::text
GROUP BY c.id, c.root_path, c.owner, e.reason
