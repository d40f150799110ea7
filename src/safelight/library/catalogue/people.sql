-- The people of a config and the faces placed with them, as users edit and read them
-- (tables people and faces, migration 0023), as named blocks: "-- name --" then a line
-- that says what it does. Loaded once by safelight.library.catalogue.people, the only
-- module that reads them; the face grouping (library/faces/) keeps its own writes. Time
-- comes in as now from the injected clock. Names read subject first (ADR 0020).
-- Every query takes %(owner)s, the viewer's filter (ADR 0044): NULL for an admin or the
-- CLI (every owner), else only that owner's configs; and %(with_disabled)s: whether a
-- disabled config's people count (the CLI's), or only enabled configs' (the dashboard's,
-- which shows nothing of a disabled config). What is counted or shown of a person is of
-- live assets only: a soft-deleted photo's faces stay with the person, unseen.
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- people_list --
-- The people of the viewer's configs (or of one, or the one person), each with its faces and photos on live assets and its cover: the largest face of the newest photo that has a preview; those seen in most photos first.
-- One pass over the people's faces on live assets (joins and hash aggregates, not a
-- lookup per face for each person: a lateral per person read ~1 s for 800 people and
-- 73k faces, bench/people.py), counted per person, and the cover picked by DISTINCT ON
-- over narrow rows (no path, no box: wide rows spilled the sort to disk); only the
-- chosen covers then read their box and preview. One person (person_id) reads only
-- its own faces, through ix_faces_person.
WITH live AS (
    SELECT f.id, f.person_id, f.asset_id, a.captured_at,
           (f.box_right - f.box_left) * (f.box_bottom - f.box_top) AS area,
           v.asset_id IS NOT NULL AS has_preview
    FROM people p
    JOIN storage_configs c ON c.id = p.storage_config_id
         AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
         AND (c.active OR %(with_disabled)s)
    JOIN faces f ON f.person_id = p.id
    JOIN assets a ON a.id = f.asset_id AND NOT a.is_deleted
    LEFT JOIN proxy_files v ON v.asset_id = a.id AND v.proxy_type = 'full_preview'
    WHERE (%(config_id)s::uuid IS NULL OR p.storage_config_id = %(config_id)s::uuid)
      AND (%(person_id)s::bigint IS NULL OR p.id = %(person_id)s::bigint)
), counts AS (
    SELECT person_id, sum(faces) AS face_count, count(*) AS photo_count
    FROM (SELECT person_id, asset_id, count(*) AS faces FROM live GROUP BY person_id, asset_id) x
    GROUP BY person_id
), covers AS (
    SELECT DISTINCT ON (person_id) person_id, id AS face_id, asset_id
    FROM live
    ORDER BY person_id, has_preview DESC, captured_at DESC, area DESC, id DESC
)
SELECT p.id, p.storage_config_id, p.name, p.named_by, p.named_at, p.created_at,
       coalesce(n.face_count, 0) AS face_count, coalesce(n.photo_count, 0) AS photo_count,
       cv.face_id AS cover_face_id, cv.asset_id AS cover_asset_id,
       CASE WHEN cf.id IS NOT NULL
            THEN ARRAY[cf.box_left, cf.box_top, cf.box_right, cf.box_bottom] END AS cover_box,
       cp.path AS cover_preview_path
FROM people p
JOIN storage_configs c ON c.id = p.storage_config_id
     AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
     AND (c.active OR %(with_disabled)s)
LEFT JOIN counts n ON n.person_id = p.id
LEFT JOIN covers cv ON cv.person_id = p.id
LEFT JOIN faces cf ON cf.id = cv.face_id
LEFT JOIN proxy_files cp ON cp.asset_id = cv.asset_id AND cp.proxy_type = 'full_preview'
WHERE (%(config_id)s::uuid IS NULL OR p.storage_config_id = %(config_id)s::uuid)
  AND (%(person_id)s::bigint IS NULL OR p.id = %(person_id)s::bigint)
ORDER BY photo_count DESC, p.name NULLS LAST, p.id

-- person_photos --
-- A person's live photos, newest first, up to a limit, each with its proxies and this person's faces in it (id and box).
SELECT a.id, a.file_name, a.media_type, a.captured_at, a.captured_local,
       a.captured_at_source, a.zone_source, a.width, a.height,
       json_agg(json_build_object('id', f.id, 'box',
                json_build_array(f.box_left, f.box_top, f.box_right, f.box_bottom))
                ORDER BY f.id) AS faces,
       (SELECT t.path FROM proxy_files t
        WHERE t.asset_id = a.id AND t.proxy_type = 'thumbnail') AS thumbnail_path,
       (SELECT v.path FROM proxy_files v
        WHERE v.asset_id = a.id AND v.proxy_type = 'full_preview') AS preview_path
FROM faces f
JOIN people p ON p.id = f.person_id
JOIN storage_configs c ON c.id = p.storage_config_id
     AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
     AND (c.active OR %(with_disabled)s)
JOIN assets a ON a.id = f.asset_id AND NOT a.is_deleted
WHERE f.person_id = %(person_id)s
GROUP BY a.id
ORDER BY a.captured_at DESC, a.id DESC
LIMIT %(limit)s

-- people_named_on_days --
-- The named people in the live photos of the viewer's enabled configs captured on a month and days of some years: per year, each person with the photos they are in, most first.
SELECT a.captured_year AS year, p.id, p.name, count(DISTINCT a.id) AS photos
FROM assets a
JOIN storage_configs c ON c.id = a.storage_config_id AND c.active
     AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
JOIN faces f ON f.asset_id = a.id
JOIN people p ON p.id = f.person_id AND p.name IS NOT NULL
WHERE a.captured_month = %(month)s
  AND a.captured_day = ANY(%(days)s::smallint[])
  AND a.captured_year = ANY(%(years)s::smallint[])
  AND NOT a.is_deleted
GROUP BY a.captured_year, p.id, p.name
ORDER BY a.captured_year DESC, photos DESC, p.name, p.id

-- people_lock --
-- Lock people of the viewer's configs for an edit, in id order (two edits of the same pair cannot deadlock); returns those found.
SELECT p.id, p.storage_config_id, p.name, p.named_by, p.named_at
FROM people p
JOIN storage_configs c ON c.id = p.storage_config_id
     AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
     AND (c.active OR %(with_disabled)s)
WHERE p.id = ANY(%(ids)s::bigint[])
ORDER BY p.id
FOR UPDATE OF p

-- person_set_name --
-- Give a person a name (NULL: clear it), with who named it and when.
UPDATE people SET name = %(name)s, named_by = %(named_by)s, named_at = %(named_at)s
WHERE id = %(person_id)s

-- person_insert --
-- A new, unnamed person of a config (a split's); returns its id.
INSERT INTO people (storage_config_id, created_at)
VALUES (%(config_id)s, %(now)s)
RETURNING id

-- person_delete --
-- Delete a person (a merge's source, whose faces have moved).
DELETE FROM people WHERE id = %(person_id)s

-- person_delete_if_left_empty --
-- Delete a person no user named and who has no face left (a move took its last).
DELETE FROM people p
WHERE p.id = %(person_id)s AND p.name IS NULL
  AND NOT EXISTS (SELECT 1 FROM faces f WHERE f.person_id = p.id)

-- faces_move_from_person --
-- Move every face of a person to another of its config, placed there by a user (the grouping leaves it).
UPDATE faces SET person_id = %(into_id)s, placed_by = 'person'
WHERE person_id = %(from_id)s AND storage_config_id = %(config_id)s

-- faces_lock --
-- Lock faces of the viewer's configs for an edit; returns those found, with their config and person.
SELECT f.id, f.storage_config_id, f.person_id
FROM faces f
JOIN storage_configs c ON c.id = f.storage_config_id
     AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
     AND (c.active OR %(with_disabled)s)
WHERE f.id = ANY(%(ids)s::bigint[])
ORDER BY f.id
FOR UPDATE OF f

-- faces_place --
-- Place faces of a config with a person of that config, as a user did (the grouping leaves them).
UPDATE faces SET person_id = %(person_id)s, placed_by = 'person'
WHERE id = ANY(%(ids)s::bigint[]) AND storage_config_id = %(config_id)s

-- face_crop_source --
-- A face of a live asset of the viewer's enabled configs, with its box and its asset's preview proxy (the file a crop is cut from) and the config and content hash that file must lie under.
SELECT f.id, f.asset_id, f.box_left, f.box_top, f.box_right, f.box_bottom,
       a.storage_config_id, a.content_hash, v.path AS preview_path
FROM faces f
JOIN assets a ON a.id = f.asset_id AND NOT a.is_deleted
JOIN storage_configs c ON c.id = a.storage_config_id AND c.active
     AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
JOIN proxy_files v ON v.asset_id = a.id AND v.proxy_type = 'full_preview' AND v.path IS NOT NULL
WHERE f.id = %(face_id)s

-- face_get --
-- A face of the viewer's configs, with its config and person (unlocked: an edit reads whose it is, then locks).
SELECT f.id, f.storage_config_id, f.person_id
FROM faces f
JOIN storage_configs c ON c.id = f.storage_config_id
     AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
     AND (c.active OR %(with_disabled)s)
WHERE f.id = %(face_id)s
