-- The queries of a Worker process's metrics and /healthz (safelight.observe), as named
-- blocks: "-- name --" then a line that says what it does. Loaded once by
-- safelight.observe.metrics, the only module that reads them. The metrics' reads run at
-- each scrape. Names read subject first (ADR 0020); tests/unit/test_query_names.py checks them.

-- database_ping --
-- Whether the database answers (/healthz).
SELECT 1

-- items_by_kind_and_status --
-- How many work items there are of each kind in each status (the queue depth gauges).
SELECT kind, status::text AS status, count(*) AS count
FROM work_items
GROUP BY kind, status

-- configs_running_items --
-- Running items per active storage config (0 or 1, ADR 0008), and of unscoped items (config NULL).
SELECT c.id AS config_id, count(w.id) AS running
FROM storage_configs c
LEFT JOIN work_items w ON w.storage_config_id = c.id AND w.status = 'running'
WHERE c.active
GROUP BY c.id
UNION ALL
SELECT NULL, count(*) FROM work_items WHERE status = 'running' AND storage_config_id IS NULL

-- attempts_stalled_count --
-- Attempts recorded as stalled (leases that expired and were recovered), kept as long as their items.
SELECT count(*) AS stalled FROM work_attempts WHERE outcome = 'stalled'

-- assets_changed_count --
-- Live originals the scrub found changed while their size and modification time did not
-- (ADR 0062: bit rot or tampering), across every config.
SELECT count(*) AS changed FROM assets WHERE content_mismatch_at IS NOT NULL AND NOT is_deleted
-- paused_counts --
-- How many kinds, and how many storage configs, are paused (ADR 0060): no Worker claims their items.
SELECT (SELECT count(*) FROM paused_kinds) AS kinds,
       (SELECT count(*) FROM storage_configs WHERE paused_at IS NOT NULL) AS configs
