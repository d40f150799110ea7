-- The queries of a Worker process's metrics, /healthz and presence (safelight.observe),
-- as named blocks: "-- name --" then a line that says what it does. Loaded once by
-- safelight.observe.metrics and .presence. The metrics' reads run at each scrape.
-- Names read subject first (ADR 0020); tests/unit/test_query_names.py checks them.

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

-- workers_touch --
-- Write that this process's Workers were seen now; the first write also sets started_at.
INSERT INTO workers (worker_id, started_at, last_seen_at)
SELECT id, stamp.at, stamp.at
FROM unnest(%(worker_ids)s::text[]) AS ids(id),
     (SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at) AS stamp
ON CONFLICT (worker_id) DO UPDATE SET last_seen_at = excluded.last_seen_at

-- workers_forget --
-- Delete this process's Workers as it stops cleanly.
DELETE FROM workers WHERE worker_id = ANY(%(worker_ids)s::text[])

-- workers_forget_stale --
-- Delete the Workers of processes that died long ago (last seen before the cutoff).
DELETE FROM workers WHERE last_seen_at < %(cutoff)s::timestamptz
