-- A generated library for bench/web.py, written straight into the tables (no files but
-- the thumbnails of the measured day, which bench/web.py writes itself). Asset ids are
-- given (OVERRIDING SYSTEM VALUE) so that a Live Photo can name its video and a burst
-- its members in the same statement; the sequences are moved past them at the end.
--
-- Asset g (1..count) belongs to config (g / 1000) % configs, is captured at
-- start + g * span / count (so each day of the span holds about the same number), and:
--   g % 33 = 0       a video; g % 33 = 1: the Live Photo image naming it (paired_asset_id)
--   g % 100 < 5      one of the 5 photos of burst g / 100 + 1, 0.2 s apart
-- Every image has a thumbnail, a full preview and a BlurHash; every video a thumbnail
-- (its poster), a full preview and a web video.

-- bench_bursts --
-- One burst per 100 assets, its primary set once the assets exist.
INSERT INTO bursts (id, storage_config_id, burst_key, created_at)
OVERRIDING SYSTEM VALUE
SELECT b, (%(configs)s::uuid[])[1 + ((b - 1) * 100 / 1000) %% %(config_count)s],
       'bench-' || b, %(now)s
FROM generate_series(1, %(count)s::integer / 100) AS b

-- bench_assets --
-- Assets first..last (one batch).
INSERT INTO assets (id, storage_config_id, file_path, file_name, content_hash, size_bytes,
                    modified_at, modified_ns, media_type, captured_at, captured_local,
                    captured_at_source, captured_year, captured_month, captured_day,
                    camera_make, camera_model, width, height, orientation, burst_id,
                    paired_asset_id, last_seen_at, created_at)
OVERRIDING SYSTEM VALUE
SELECT g, (%(configs)s::uuid[])[1 + (g / 1000) %% %(config_count)s],
       to_char(t, 'YYYY/MM/') || name, name, lpad(to_hex(g), 16, '0'),
       2000000 + g %% 5000000, t, 0, kind, t, t, 'exif',
       extract(year FROM t), extract(month FROM t), extract(day FROM t),
       'Canon', 'Canon EOS R5', 4000, 3000, 1,
       CASE WHEN g %% 100 < 5 AND kind = 'image' THEN g / 100 + 1 END,
       CASE WHEN g %% 33 = 1 AND g > 1 THEN g - 1 END,
       %(now)s, %(now)s
FROM generate_series(%(first)s::integer, %(last)s::integer) AS g
CROSS JOIN LATERAL (
    SELECT CASE WHEN g %% 33 = 0 THEN 'video' ELSE 'image' END AS kind,
           -- A burst's photos take the time of its first one, 0.2 s apart.
           %(start)s::timestamp
               + ((g - CASE WHEN g %% 100 < 5 THEN g %% 100 ELSE 0 END)::float8
                  * %(span_seconds)s / %(count)s) * interval '1 second'
               + (CASE WHEN g %% 100 < 5 THEN g %% 100 ELSE 0 END) * interval '200 ms' AS t,
           'IMG_' || lpad(g::text, 7, '0')
               || CASE WHEN g %% 33 = 0 THEN '.mov' ELSE '.jpg' END AS name
) AS a

-- bench_proxies --
-- The proxies of assets first..last (one batch), under <config>/<hh>/<hash>/.
INSERT INTO proxy_files (asset_id, proxy_type, path, value, size_bytes, width, height,
                         created_at)
SELECT a.id, p.proxy_type,
       CASE WHEN p.ext IS NOT NULL THEN
           format('%%s/%%s/%%s/%%s.1-1.%%s', a.storage_config_id, left(a.content_hash, 2),
                  a.content_hash, p.proxy_type, p.ext)
       END,
       CASE WHEN p.ext IS NULL THEN %(blurhash)s END,
       CASE WHEN p.ext IS NOT NULL THEN p.size END, p.width, p.height, %(now)s
FROM assets a
CROSS JOIN LATERAL (
    VALUES ('thumbnail', 'jpg', 12000, 400, 300),
           ('full_preview', 'jpg', 250000, 2048, 1536),
           (CASE WHEN a.media_type = 'image' THEN 'blurhash' ELSE 'web_video' END,
            CASE WHEN a.media_type = 'image' THEN NULL ELSE 'mp4' END, 900000, 1280, 960)
) AS p (proxy_type, ext, size, width, height)
WHERE a.id BETWEEN %(first)s AND %(last)s

-- bench_burst_primaries --
-- Each burst's first photo (a video in its range is no member).
UPDATE bursts b SET primary_asset_id = m.id
FROM (SELECT burst_id, min(id) AS id FROM assets WHERE burst_id IS NOT NULL GROUP BY burst_id) AS m
WHERE m.burst_id = b.id

-- bench_sequences --
SELECT setval('assets_id_seq', %(count)s), setval('bursts_id_seq', greatest(%(count)s / 100, 1))
