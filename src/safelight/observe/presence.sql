-- The queries of a Worker process's presence (the workers table, migration 0009), as
-- named blocks: "-- name --" then a line that says what it does. Loaded once by
-- safelight.observe.presence, the only module that reads them.
-- Names read subject first (ADR 0020); tests/unit/test_query_names.py checks them.

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
