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

-- workers_table_exists --
-- Whether the database has the table at all (a database never migrated has none).
SELECT to_regclass('workers') IS NOT NULL AS present

-- workers_alive --
-- The Workers seen within the window before now (the clock's, else the database's),
-- as health counts them: a restore is refused while any is.
SELECT worker_id
FROM workers
WHERE last_seen_at > coalesce(%(now)s::timestamptz, clock_timestamp())
                     - make_interval(secs => %(within_seconds)s)
ORDER BY worker_id
