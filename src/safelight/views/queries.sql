-- The read-only queries of the operator commands (items, status, assets) and of the
-- summary `run` prints, as named blocks: "-- name --" then a line that says what it
-- does. Loaded once by safelight.views.queries. Nothing here writes; every filter is a
-- parameter, NULL meaning "any".
-- Names read subject first (ADR 0020): the table or thing the query reads or changes,
-- singular for one row and plural for a set, then what it does or returns, then any
-- qualifier (`items_list`, `status_failures`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.
-- The queue's views take %(owner)s, the dashboard viewer's filter (ADR 0044): NULL (the
-- CLI, an admin) for every item, else only the items of that owner's configs, so never an
-- item of no config. A config's id set of one owner is a handful of rows: the filter is a
-- hashed subplan (or an index probe of storage_configs) per item row, no join to plan.

-- items_list --
-- Work items, newest first, filtered by status, config, kind and owner.
-- paused_at, paused_by: the pause of its kind, else of its config, that holds a queued
-- item (ADR 0060); NULL for any other.
SELECT w.id, w.kind, w.status::text AS status, w.storage_config_id, w.dedup_key,
       w.attempt, w.stalls, w.retries, w.worker_id, w.requested_at, w.not_before,
       w.started_at, w.finished_at, w.lease_expires_at, w.cancel_requested, w.error,
       CASE WHEN w.status = 'queued' THEN coalesce(pk.paused_at, pc.paused_at) END AS paused_at,
       CASE WHEN w.status <> 'queued' THEN NULL
            WHEN pk.kind IS NOT NULL THEN pk.paused_by ELSE pc.paused_by END AS paused_by
FROM work_items w
LEFT JOIN paused_kinds pk ON pk.kind = w.kind
LEFT JOIN storage_configs pc ON pc.id = w.storage_config_id
WHERE (%(status)s::text IS NULL OR w.status = %(status)s::text::work_status)
  AND (%(config_id)s::uuid IS NULL OR w.storage_config_id = %(config_id)s::uuid)
  AND (%(kind)s::text IS NULL OR w.kind = %(kind)s::text)
  AND (%(owner)s::text IS NULL
       OR w.storage_config_id IN (SELECT c.id FROM storage_configs c
                                  WHERE c.owner = %(owner)s::text))
ORDER BY w.id DESC
LIMIT %(limit)s

-- item_owner --
-- The owner of a work item's config: no row for no item, a NULL owner for an item of no config.
SELECT w.id, c.owner
FROM work_items w
LEFT JOIN storage_configs c ON c.id = w.storage_config_id
WHERE w.id = %(item_id)s

-- server_version --
-- The server's PostgreSQL version, as "PostgreSQL 16.2" (a build may add its own words).
SELECT 'PostgreSQL ' || current_setting('server_version') AS server_version

-- status_counts --
-- How many items of an owner (NULL: all) there are of each kind in each status.
SELECT w.kind, w.status::text AS status, count(*) AS count
FROM work_items w
WHERE (%(owner)s::text IS NULL
       OR w.storage_config_id IN (SELECT c.id FROM storage_configs c
                                  WHERE c.owner = %(owner)s::text))
GROUP BY w.kind, w.status
ORDER BY kind, status

-- status_running --
-- Running items of an owner (NULL: all) with their config, Worker and lease; lease_expired: recovery may take it back; held: claimed, not started yet.
-- A Worker claims its next item beside its last outcome and starts it once that outcome
-- has committed (ADR 0069): while its Worker has an earlier item still running, an item
-- is held, its handler not started. Read from the rows, with no write of its own.
SELECT w.id, w.kind, w.storage_config_id, c.owner, c.root_path, w.worker_id, w.attempt,
       w.stalls, w.started_at, w.heartbeat_at, w.lease_expires_at, w.cancel_requested,
       w.lease_expires_at < coalesce(%(now)s::timestamptz, clock_timestamp()) AS lease_expired,
       EXISTS (
           SELECT 1 FROM work_items earlier
           WHERE earlier.status = 'running' AND earlier.worker_id = w.worker_id
             AND (earlier.started_at, earlier.id) < (w.started_at, w.id)
       ) AS held
FROM work_items w
LEFT JOIN storage_configs c ON c.id = w.storage_config_id
WHERE w.status = 'running'
  AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
ORDER BY c.root_path NULLS LAST, w.id

-- status_stalls --
-- The most recent stalled attempts of an owner's items (NULL: all): leases that expired and were recovered.
SELECT a.work_item_id AS id, w.kind, a.storage_config_id, a.attempt, a.worker_id,
       a.claimed_at, a.ended_at, w.status::text AS status, w.stalls
FROM work_attempts a
JOIN work_items w ON w.id = a.work_item_id
WHERE a.outcome = 'stalled'
  AND (%(owner)s::text IS NULL
       OR w.storage_config_id IN (SELECT c.id FROM storage_configs c
                                  WHERE c.owner = %(owner)s::text))
ORDER BY a.ended_at DESC, a.work_item_id DESC
LIMIT %(limit)s

-- status_stall_count --
-- How many attempts of an owner's items (NULL: all) have ever stalled, and how many of its items waiting or running have stalled.
SELECT
    (SELECT count(*) FROM work_attempts a
     WHERE a.outcome = 'stalled'
       AND (%(owner)s::text IS NULL
            OR a.storage_config_id IN (SELECT c.id FROM storage_configs c
                                       WHERE c.owner = %(owner)s::text))) AS stalled_attempts,
    (SELECT count(*) FROM work_items w
     WHERE w.status IN ('queued', 'running') AND w.stalls > 0
       AND (%(owner)s::text IS NULL
            OR w.storage_config_id IN (SELECT c.id FROM storage_configs c
                                       WHERE c.owner = %(owner)s::text))
    ) AS unfinished_items_with_stalls

-- status_retries_waiting --
-- Queued items of an owner (NULL: all) that wait for their retry time (ADR 0024): how many, and the soonest due
-- first. "now" is the clock's transition time, NULL meaning the database's clock.
SELECT w.id, w.kind, w.storage_config_id, w.attempt, w.retries, w.not_before, w.error,
       count(*) OVER () AS waiting
FROM work_items w
WHERE w.status = 'queued'
  AND w.not_before > coalesce(%(now)s::timestamptz, clock_timestamp())
  AND (%(owner)s::text IS NULL
       OR w.storage_config_id IN (SELECT c.id FROM storage_configs c
                                  WHERE c.owner = %(owner)s::text))
ORDER BY w.not_before, w.id
LIMIT %(limit)s

-- status_failures --
-- The most recently failed items of an owner (NULL: all), with their error.
SELECT w.id, w.kind, w.storage_config_id, w.attempt, w.stalls, w.finished_at, w.error
FROM work_items w
WHERE w.status = 'failed'
  AND (%(owner)s::text IS NULL
       OR w.storage_config_id IN (SELECT c.id FROM storage_configs c
                                  WHERE c.owner = %(owner)s::text))
ORDER BY w.finished_at DESC, w.id DESC
LIMIT %(limit)s

-- assets_list --
-- Assets of one config or all, live or soft-deleted, with how many proxies each has.
SELECT a.id, a.storage_config_id, a.file_path, a.media_type, a.size_bytes, a.captured_at,
       a.camera_make, a.camera_model, a.width, a.height, a.burst_id, a.paired_asset_id,
       a.is_deleted, a.deleted_at, a.captured_at_source, a.latitude, a.longitude, a.altitude_m,
       a.motion_photo, a.motion_photo_issue, a.stack_primary_id,
       a.read_note,
       (SELECT count(*) FROM proxy_files p WHERE p.asset_id = a.id) AS proxies, a.stack_kind,
       a.captured_local,
       a.place_city, a.place_region, a.place_country, a.place_country_code, a.time_zone,
       a.zone_source
FROM assets a
WHERE (%(config_id)s::uuid IS NULL OR a.storage_config_id = %(config_id)s::uuid)
  AND a.is_deleted = %(deleted)s
ORDER BY a.storage_config_id, a.file_path, a.id
LIMIT %(limit)s

-- duplicates_list --
-- Files of one config or all that hold the same bytes as a live asset, with its path.
SELECT d.storage_config_id, d.file_path, d.asset_id, a.file_path AS same_as,
       d.first_seen_at, d.last_seen_at
FROM asset_duplicates d JOIN assets a ON a.id = d.asset_id
WHERE (%(config_id)s::uuid IS NULL OR d.storage_config_id = %(config_id)s::uuid)
ORDER BY d.storage_config_id, d.file_path
LIMIT %(limit)s

-- similar_groups_list --
-- The similar groups (ADR 0066) of one config or all, up to a limit of groups, each with its live members, the shown one first, then in capture order.
SELECT g.id AS group_id, g.storage_config_id, g.primary_asset_id, a.id, a.file_path,
       a.captured_at, a.captured_local, a.captured_at_source
FROM similar_groups g
JOIN assets a ON a.similar_group_id = g.id AND NOT a.is_deleted
WHERE g.id IN (SELECT s.id FROM similar_groups s
               WHERE (%(config_id)s::uuid IS NULL OR s.storage_config_id = %(config_id)s::uuid)
               ORDER BY s.storage_config_id, s.id
               LIMIT %(limit)s)
ORDER BY g.storage_config_id, g.id, (a.id = g.primary_asset_id) DESC, a.captured_at, a.id

-- library_counts_of_config --
-- What a config's library holds now: live assets by type, soft-deleted, bursts, Live Photos,
-- motion photos, RAW stacks, proxies, the live photos no place inside dated (their
-- capture time is the file's time) and those dated only by the file's last edit (ADR 0053),
-- the other files of a capture stacked on it (formats and near-copies, ADR 0056), the
-- groups of similar shots and their live members (ADR 0066), and the people found in its
-- photos and how many of them have a name.
SELECT
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND media_type = 'image') AS images,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND media_type = 'video') AS videos,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND is_deleted) AS soft_deleted,
    (SELECT count(*) FROM bursts WHERE storage_config_id = %(config_id)s) AS bursts,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND burst_id IS NOT NULL) AS burst_assets,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND paired_asset_id IS NOT NULL) AS live_photos,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND media_type = 'image'
       AND captured_at_source = 'file') AS photos_dated_by_file,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND motion_photo) AS motion_photos,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND stack_primary_id IS NOT NULL
       AND coalesce(stack_kind, 'raw') = 'raw') AS stacks,
    (SELECT count(*) FROM proxy_files p JOIN assets a ON a.id = p.asset_id
     WHERE a.storage_config_id = %(config_id)s AND p.path IS NOT NULL) AS proxy_files,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND media_type = 'image'
       AND captured_at_source IN ('modified', 'png')) AS photos_dated_by_last_edit,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND stack_primary_id IS NOT NULL
       AND stack_kind IN ('format', 'copy')) AS copies,
    (SELECT count(*) FROM similar_groups WHERE storage_config_id = %(config_id)s) AS similar_groups,
    (SELECT count(*) FROM assets
     WHERE storage_config_id = %(config_id)s AND NOT is_deleted
       AND similar_group_id IS NOT NULL) AS similar_assets,
    (SELECT count(*) FROM people WHERE storage_config_id = %(config_id)s) AS people,
    (SELECT count(*) FROM people
     WHERE storage_config_id = %(config_id)s AND name IS NOT NULL) AS people_named

-- asset_errors_of_config --
-- The files of a config the last crawls could not ingest, with their reason.
SELECT file_path, reason, failures, first_seen_at, last_seen_at
FROM asset_errors
WHERE storage_config_id = %(config_id)s
ORDER BY file_path

-- assets_busiest_day_of_config --
-- The month and day on which a config's live assets of years before one were most often
-- captured (the earliest such day on a tie): where ``safelight demo`` points the dashboard.
SELECT captured_month AS month, captured_day AS day, count(*) AS assets
FROM assets
WHERE storage_config_id = %(config_id)s AND NOT is_deleted AND captured_year < %(before_year)s
GROUP BY captured_month, captured_day
ORDER BY count(*) DESC, captured_month, captured_day
LIMIT 1

-- items_lease_overdue --
-- Running items whose lease expired longer ago than the recovery interval (recovery should have taken them back), with the most overdue.
WITH stamp AS (SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at)
SELECT count(w.id) AS overdue,
       (array_agg(w.id ORDER BY w.lease_expires_at, w.id))[1] AS most_overdue_id,
       extract(epoch FROM stamp.at - min(w.lease_expires_at))::float8 AS most_overdue_seconds
FROM stamp
LEFT JOIN work_items w
       ON w.status = 'running'
      AND w.lease_expires_at < stamp.at - make_interval(secs => %(recovery_seconds)s)
GROUP BY stamp.at

-- workers_seen --
-- Workers whose presence was written within the window, and when any Worker was last seen.
WITH stamp AS (SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at)
SELECT count(*) FILTER (
           WHERE w.last_seen_at >= stamp.at - make_interval(secs => %(within_seconds)s)
       ) AS seen,
       max(w.last_seen_at) AS last_seen_at,
       extract(epoch FROM stamp.at - max(w.last_seen_at))::float8 AS seconds_ago
FROM stamp
LEFT JOIN workers w ON true
GROUP BY stamp.at
