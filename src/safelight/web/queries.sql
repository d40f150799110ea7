-- The web dashboard's own reads (safelight serve): "On this day", a config's overview,
-- an asset's proxy file. Everything the CLI already reads (items, status, a config's
-- counts) is read through safelight.views.queries, once. Named blocks ("-- name --" then
-- a line that says what it does), loaded by safelight.web.reads; names read subject
-- first (ADR 0020). Nothing here writes; every value is a parameter.
-- Each read takes %(owner)s, the viewer's filter (ADR 0044): NULL for an admin (every
-- owner), else only that owner's configs and what belongs to them. What is shown or served
-- of the library (a day, a burst, a proxy) is also only of enabled configs' live assets.

-- assets_on_day --
-- A page of the live assets captured on a month and days before a year, as the library shows them (a RAW through its JPEG, a Live Photo's video through its image, a burst through its primary), newest first, after a keyset cursor, with their proxies.
-- Each day (one, or 28 and 29 February on 28 February of a common year) is a walk of
-- ix_assets_on_this_day backwards (migration 0016) from the cursor (year, local time,
-- id: an index condition; the first page's is the year's bound), up to LIMIT rows that
-- pass the library's filters: no sort of the day, nothing read past the page. The two
-- days' pages are merged (at most 2 * limit rows sorted), and only the page's rows look
-- up their proxies and their burst's size.
-- A burst with no primary yet shows every member; burst_count counts its live members.
-- A similar group (ADR 0066) likewise: its primary only, similar_count its live members.
SELECT a.id, a.storage_config_id, a.media_type, a.file_name, a.captured_at,
       a.captured_local, a.captured_year, a.captured_at_source, a.zone_source, a.width,
       a.height, a.orientation, a.duration_seconds, a.motion_photo, a.burst_id, a.paired_asset_id,
       a.camera_make, a.camera_model,
       a.read_note,
       a.place_city, a.place_region, a.place_country, a.place_country_code, a.time_zone,
       CASE WHEN a.burst_id IS NULL THEN 0 ELSE
           (SELECT count(*) FROM assets m WHERE m.burst_id = a.burst_id AND NOT m.is_deleted)
       END AS burst_count,
       a.similar_group_id,
       CASE WHEN a.similar_group_id IS NULL THEN 0 ELSE
           (SELECT count(*) FROM assets m
            WHERE m.similar_group_id = a.similar_group_id AND NOT m.is_deleted)
       END AS similar_count,
       px.thumbnail_path, px.preview_path, px.blurhash,
       -- A Live Photo's video only while it is live itself: what is shown is served.
       coalesce(px.own_video_path,
                CASE WHEN EXISTS (SELECT 1 FROM assets v
                                  WHERE v.id = a.paired_asset_id AND NOT v.is_deleted)
                     THEN px.paired_video_path END) AS video_path
FROM (
    SELECT d.*
    FROM unnest(%(days)s::smallint[]) AS day_of(day)
    CROSS JOIN LATERAL (
        SELECT a.*
        FROM assets a
        WHERE a.captured_month = %(month)s
          AND a.captured_day = day_of.day
          AND NOT a.is_deleted
          AND a.captured_year < %(year)s
          AND (a.captured_year, a.captured_local, a.id)
              < (%(after_year)s::smallint, %(after_local)s::timestamp, %(after_id)s::bigint)
          AND a.stack_primary_id IS NULL
          -- The viewer's enabled configs (an InitPlan, read once): a filter on the walk,
          -- so a page of one owner of n reads about n times its rows, never the day.
          AND a.storage_config_id = ANY(ARRAY(
                  SELECT c.id FROM storage_configs c
                  WHERE c.active AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)))
          -- Each test below is one index probe of a row the walk reaches, written so
          -- that it stays one and the planner sees that most rows pass: OR keeps it a
          -- filter, not an anti join (whose misestimate made the planner read and sort
          -- the whole day), and OFFSET 0 keeps it a probe, not a hash of every burst or
          -- pair read up front.
          -- Not a burst's member other than its primary (a burst without one: all).
          AND (a.burst_id IS NULL
               OR NOT EXISTS (SELECT 1 FROM bursts b
                              WHERE b.id = a.burst_id AND b.primary_asset_id <> a.id OFFSET 0))
          -- Not a similar group's member other than its primary (ADR 0066), as bursts.
          AND (a.similar_group_id IS NULL
               OR NOT EXISTS (SELECT 1 FROM similar_groups g
                              WHERE g.id = a.similar_group_id AND g.primary_asset_id <> a.id
                              OFFSET 0))
          -- Not a Live Photo's video (a live image names it; only a video can be one).
          AND (a.media_type <> 'video'
               OR NOT EXISTS (SELECT 1 FROM assets i
                              WHERE i.paired_asset_id = a.id AND NOT i.is_deleted OFFSET 0))
        ORDER BY a.captured_year DESC, a.captured_local DESC, a.id DESC
        LIMIT %(limit)s
    ) d
    ORDER BY d.captured_year DESC, d.captured_local DESC, d.id DESC
    LIMIT %(limit)s
) a
-- The tile's proxies and its paired video's web video: one index lookup (asset_id) a row.
CROSS JOIN LATERAL (
    SELECT max(p.path) FILTER (WHERE p.asset_id = a.id AND p.proxy_type = 'thumbnail')
               AS thumbnail_path,
           max(p.path) FILTER (WHERE p.asset_id = a.id AND p.proxy_type = 'full_preview')
               AS preview_path,
           max(p.value) FILTER (WHERE p.asset_id = a.id AND p.proxy_type = 'blurhash')
               AS blurhash,
           max(p.path) FILTER (WHERE p.asset_id = a.id AND p.proxy_type = 'web_video')
               AS own_video_path,
           max(p.path) FILTER (WHERE p.asset_id = a.paired_asset_id
                                 AND p.proxy_type = 'web_video') AS paired_video_path
    FROM proxy_files p
    WHERE p.asset_id = ANY(ARRAY[a.id, a.paired_asset_id])
) px
ORDER BY a.captured_year DESC, a.captured_local DESC, a.id DESC

-- assets_of_bursts --
-- The live members of bursts of the viewer's enabled configs, each burst's primary first, then in capture order, with their proxies (a burst's stack in the preview).
SELECT a.id, a.burst_id, a.media_type, a.file_name, a.captured_local, a.width, a.height,
       a.captured_at, a.captured_at_source, a.zone_source,
       a.place_city, a.place_region, a.place_country, a.place_country_code,
       th.path AS thumbnail_path, pv.path AS preview_path, bh.value AS blurhash
FROM assets a
JOIN bursts b ON b.id = a.burst_id
JOIN storage_configs c ON c.id = a.storage_config_id
     AND c.active AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
LEFT JOIN proxy_files th ON th.asset_id = a.id AND th.proxy_type = 'thumbnail'
LEFT JOIN proxy_files pv ON pv.asset_id = a.id AND pv.proxy_type = 'full_preview'
LEFT JOIN proxy_files bh ON bh.asset_id = a.id AND bh.proxy_type = 'blurhash'
WHERE a.burst_id = ANY(%(burst_ids)s::bigint[]) AND NOT a.is_deleted
ORDER BY a.burst_id, (a.id = b.primary_asset_id) DESC, a.captured_local, a.sequence_number,
         a.id

-- assets_of_similar_groups --
-- The live members of similar groups of the viewer's enabled configs, each group's primary first, then in capture order, with their proxies (a group's stack in the preview).
SELECT a.id, a.similar_group_id, a.media_type, a.file_name, a.captured_local, a.width,
       a.height, a.captured_at, a.captured_at_source, a.zone_source,
       a.place_city, a.place_region, a.place_country, a.place_country_code,
       th.path AS thumbnail_path, pv.path AS preview_path, bh.value AS blurhash
FROM assets a
JOIN similar_groups g ON g.id = a.similar_group_id
JOIN storage_configs c ON c.id = a.storage_config_id
     AND c.active AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
LEFT JOIN proxy_files th ON th.asset_id = a.id AND th.proxy_type = 'thumbnail'
LEFT JOIN proxy_files pv ON pv.asset_id = a.id AND pv.proxy_type = 'full_preview'
LEFT JOIN proxy_files bh ON bh.asset_id = a.id AND bh.proxy_type = 'blurhash'
WHERE a.similar_group_id = ANY(%(group_ids)s::bigint[]) AND NOT a.is_deleted
ORDER BY a.similar_group_id, (a.id = g.primary_asset_id) DESC, a.captured_local, a.id

-- assets_places_of_years_on_day --
-- The places of a day's live assets of these years, as the day's page counts them (not a stacked copy; every member of a burst), of the viewer's enabled configs: up to per_year a year, most photographed first (ADR 0065).
-- A walk of ix_assets_on_this_day over the asked years of the day only, each row's place
-- read from its heap tuple: paid once per year, on the page where the year begins.
SELECT captured_year, place_city, place_country, place_country_code, photos
FROM (
    SELECT a.captured_year, a.place_city, a.place_country, a.place_country_code,
           count(*) AS photos,
           row_number() OVER (PARTITION BY a.captured_year
                              ORDER BY count(*) DESC, a.place_city, a.place_country_code)
               AS rank
    FROM assets a
    WHERE a.captured_month = %(month)s
      AND a.captured_day = ANY(%(days)s::smallint[])
      AND a.captured_year = ANY(%(years)s::smallint[])
      AND NOT a.is_deleted
      AND a.stack_primary_id IS NULL
      AND a.place_city IS NOT NULL
      AND a.storage_config_id = ANY(ARRAY(
              SELECT c.id FROM storage_configs c
              WHERE c.active AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)))
    GROUP BY a.captured_year, a.place_city, a.place_country, a.place_country_code
) p
WHERE rank <= %(per_year)s
ORDER BY captured_year DESC, rank

-- proxy_of_asset --
-- One proxy file of a live asset of the viewer's enabled configs: where it is under the proxy root, and the asset's config and content hash it must lie under.
-- No row for a soft-deleted asset, a disabled config's or another owner's: the route
-- answers each exactly as an asset that does not exist.
SELECT p.path, p.size_bytes, a.storage_config_id, a.content_hash
FROM proxy_files p
JOIN assets a ON a.id = p.asset_id AND NOT a.is_deleted
JOIN storage_configs c ON c.id = a.storage_config_id
     AND c.active AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
WHERE p.asset_id = %(asset_id)s AND p.proxy_type = %(proxy_type)s AND p.path IS NOT NULL

-- configs_overview --
-- Every storage config of the viewer (or the one asked for, if the viewer's) with its running item (Worker, attempt, lease), its last finished crawl and its failed files; disabled ones too.
SELECT c.id, c.owner, c.root_path, c.active, c.created_at,
       r.id AS running_id, r.kind AS running_kind, r.worker_id AS running_worker_id,
       r.attempt AS running_attempt, r.started_at AS running_started_at,
       r.lease_expires_at AS running_lease_expires_at,
       l.id AS last_crawl_id, l.status::text AS last_crawl_status,
       l.finished_at AS last_crawl_finished_at, l.error AS last_crawl_error,
       l.result AS last_crawl_result,
       (SELECT count(*) FROM asset_errors e WHERE e.storage_config_id = c.id) AS failed_files
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
  AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
ORDER BY c.owner, c.root_path, c.id

-- assets_nearest_days --
-- The nearest month and day before and after a day (wrapping the year's end) on which the viewer's enabled configs hold a live asset shown, captured before a year: where an empty day's page leads.
-- The 366 month-days of a leap year, each with how many days after the asked one it
-- falls (0-365, around the year's end). Each side walks them nearest first and probes
-- ix_assets_on_this_day (migration 0016) for one row per month-day, stopping at the
-- first that holds one: OFFSET 0 keeps the sort below the probe, so LIMIT 1 ends the
-- walk, and the probe a probe (not a semi join that reads every asset of the viewer).
-- The asked day's own month and days are skipped (they are the empty page's).
WITH month_days AS (
    SELECT extract(month FROM d)::smallint AS month, extract(day FROM d)::smallint AS day,
           mod(mod(extract(doy FROM d)::int - %(position)s::int, 366) + 366, 366) AS after_by
    FROM generate_series(date '2000-01-01', date '2000-12-31', interval '1 day') AS d
),
candidates AS (
    SELECT m.month, m.day, m.after_by, mod(366 - m.after_by, 366) AS before_by
    FROM month_days m
    WHERE NOT (m.month = %(month)s::smallint AND m.day = ANY(%(days)s::smallint[]))
),
viewer_configs AS MATERIALIZED (
    SELECT c.id FROM storage_configs c
    WHERE c.active AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
)
(SELECT 'before' AS side, n.month, n.day, n.before_by AS days_away
 FROM (SELECT * FROM candidates ORDER BY before_by OFFSET 0) n
 WHERE EXISTS (SELECT 1 FROM assets a
               WHERE a.captured_month = n.month AND a.captured_day = n.day
                 AND NOT a.is_deleted AND a.captured_year < %(year)s::smallint
                 AND a.stack_primary_id IS NULL
                 AND a.storage_config_id = ANY(ARRAY(SELECT id FROM viewer_configs))
               OFFSET 0)
 LIMIT 1)
UNION ALL
(SELECT 'after' AS side, n.month, n.day, n.after_by AS days_away
 FROM (SELECT * FROM candidates ORDER BY after_by OFFSET 0) n
 WHERE EXISTS (SELECT 1 FROM assets a
               WHERE a.captured_month = n.month AND a.captured_day = n.day
                 AND NOT a.is_deleted AND a.captured_year < %(year)s::smallint
                 AND a.stack_primary_id IS NULL
                 AND a.storage_config_id = ANY(ARRAY(SELECT id FROM viewer_configs))
               OFFSET 0)
 LIMIT 1)
