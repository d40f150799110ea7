-- The web dashboard's own reads (safelight serve): "On this day", a config's overview,
-- an asset's proxy file. Everything the CLI already reads (items, status, a config's
-- counts) is read through safelight.cli.queries, once. Named blocks ("-- name --" then
-- a line that says what it does), loaded by safelight.web.reads; names read subject
-- first (ADR 0020). Nothing here writes; every value is a parameter.

-- assets_on_day --
-- The live assets captured on a month and days before a year, as the library shows them (a RAW through its JPEG, a Live Photo's video through its image, a burst through its primary), newest first, with their proxies.
-- The day is a range (first_day to last_day: Feb 28 and 29 on Feb 28 of a common year),
-- the year a bound: both index conditions of ix_assets_on_this_day (migration 0016).
-- A burst with no primary yet shows every member; burst_count counts its live members.
SELECT a.id, a.storage_config_id, a.media_type, a.file_name, a.captured_at,
       a.captured_local, a.captured_year, a.captured_at_source, a.width, a.height,
       a.orientation, a.duration_seconds, a.motion_photo, a.burst_id, a.paired_asset_id,
       a.camera_make, a.camera_model,
       CASE WHEN a.burst_id IS NULL THEN 0 ELSE
           (SELECT count(*) FROM assets m WHERE m.burst_id = a.burst_id AND NOT m.is_deleted)
       END AS burst_count,
       th.path AS thumbnail_path, pv.path AS preview_path, bh.value AS blurhash,
       coalesce(ov.path, lv.path) AS video_path
FROM assets a
LEFT JOIN bursts b ON b.id = a.burst_id
LEFT JOIN proxy_files th ON th.asset_id = a.id AND th.proxy_type = 'thumbnail'
LEFT JOIN proxy_files pv ON pv.asset_id = a.id AND pv.proxy_type = 'full_preview'
LEFT JOIN proxy_files bh ON bh.asset_id = a.id AND bh.proxy_type = 'blurhash'
LEFT JOIN proxy_files ov ON ov.asset_id = a.id AND ov.proxy_type = 'web_video'
LEFT JOIN proxy_files lv ON lv.asset_id = a.paired_asset_id AND lv.proxy_type = 'web_video'
WHERE a.captured_month = %(month)s
  AND a.captured_day BETWEEN %(first_day)s AND %(last_day)s
  AND NOT a.is_deleted
  AND a.captured_year < %(year)s
  AND a.stack_primary_id IS NULL
  AND (b.primary_asset_id IS NULL OR b.primary_asset_id = a.id)
  AND NOT EXISTS (SELECT 1 FROM assets i WHERE i.paired_asset_id = a.id AND NOT i.is_deleted)
ORDER BY a.captured_year DESC, a.captured_local DESC, a.id DESC

-- assets_of_bursts --
-- The live members of bursts, each burst's primary first, then in capture order, with their proxies (a burst's stack in the preview).
SELECT a.id, a.burst_id, a.media_type, a.file_name, a.captured_local, a.width, a.height,
       th.path AS thumbnail_path, pv.path AS preview_path, bh.value AS blurhash
FROM assets a
JOIN bursts b ON b.id = a.burst_id
LEFT JOIN proxy_files th ON th.asset_id = a.id AND th.proxy_type = 'thumbnail'
LEFT JOIN proxy_files pv ON pv.asset_id = a.id AND pv.proxy_type = 'full_preview'
LEFT JOIN proxy_files bh ON bh.asset_id = a.id AND bh.proxy_type = 'blurhash'
WHERE a.burst_id = ANY(%(burst_ids)s::bigint[]) AND NOT a.is_deleted
ORDER BY a.burst_id, (a.id = b.primary_asset_id) DESC, a.captured_local, a.sequence_number,
         a.id

-- proxy_of_asset --
-- One proxy file of an asset: where it is under the proxy root, and the asset's config and content hash it must lie under.
SELECT p.path, p.size_bytes, a.storage_config_id, a.content_hash
FROM proxy_files p
JOIN assets a ON a.id = p.asset_id
WHERE p.asset_id = %(asset_id)s AND p.proxy_type = %(proxy_type)s AND p.path IS NOT NULL

-- configs_overview --
-- Every storage config with its running item (Worker, attempt, lease) and its last finished crawl.
SELECT c.id, c.owner, c.root_path, c.active, c.created_at,
       r.id AS running_id, r.kind AS running_kind, r.worker_id AS running_worker_id,
       r.attempt AS running_attempt, r.started_at AS running_started_at,
       r.lease_expires_at AS running_lease_expires_at,
       l.id AS last_crawl_id, l.status::text AS last_crawl_status,
       l.finished_at AS last_crawl_finished_at, l.error AS last_crawl_error,
       l.result AS last_crawl_result
FROM storage_configs c
LEFT JOIN work_items r ON r.id = c.running_item_id
LEFT JOIN LATERAL (
    SELECT w.id, w.status, w.finished_at, w.error, w.result
    FROM work_items w
    WHERE w.storage_config_id = c.id AND w.kind = %(crawl_kind)s AND w.finished_at IS NOT NULL
    ORDER BY w.finished_at DESC, w.id DESC
    LIMIT 1
) l ON true
WHERE (%(config_id)s::uuid IS NULL OR c.id = %(config_id)s::uuid)
ORDER BY c.owner, c.root_path, c.id
