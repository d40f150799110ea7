-- The faces found in photos, the assets' faces_content_hash, and the people the grouping
-- makes (migration 0023), as named blocks: "-- name --" then a line that says what it
-- does. Loaded once by safelight.library.catalogue.faces, the only module that reads
-- them: the faces kind's writes of faces rows and of their clustered placement (naming,
-- merging and splitting people is catalogue.people's). Time comes in as now from the
-- injected clock. The writes run inside the faces kind's fenced transaction.

-- assets_faces_due_of_config --
-- A page of a config's live photos whose faces were not found for the content they hold
-- now (never, or for other content), that have a preview, by id after a keyset; with the
-- preview's path. A photo without a preview waits for one.
SELECT a.id, a.file_path, a.content_hash, p.path AS preview
FROM assets a
JOIN proxy_files p ON p.asset_id = a.id AND p.proxy_type = 'full_preview'
WHERE a.storage_config_id = %(config_id)s AND NOT a.is_deleted AND a.media_type = 'image'
  AND a.faces_content_hash IS DISTINCT FROM a.content_hash AND a.id > %(after_id)s
ORDER BY a.id
LIMIT %(limit)s

-- asset_faces_found --
-- Mark a live photo's faces found for the content it holds: only if it still holds the
-- content they were found on (no row: it changed or went meanwhile, its faces are not
-- written).
UPDATE assets SET faces_content_hash = content_hash
WHERE id = %(asset_id)s AND storage_config_id = %(config_id)s AND NOT is_deleted
  AND content_hash = %(content_hash)s
RETURNING id

-- faces_of_asset_delete --
-- Delete a photo's faces found on other content than it holds now, before its faces of
-- this content are written.
DELETE FROM faces WHERE asset_id = %(asset_id)s AND storage_config_id = %(config_id)s
RETURNING id

-- face_insert --
-- Add a face found in a photo, not placed in any person yet.
INSERT INTO faces (asset_id, storage_config_id, box_left, box_top, box_right, box_bottom,
                   descriptor, created_at)
VALUES (%(asset_id)s, %(config_id)s, %(left)s, %(top)s, %(right)s, %(bottom)s,
        %(descriptor)s, %(now)s)
RETURNING id

-- faces_placed_of_config --
-- A config's faces that have a person, with their descriptors: those of deleted photos
-- too, which still say what the person looks like (a photo edited is a new asset, and
-- its faces should find the person its old faces were in).
SELECT id, person_id, descriptor
FROM faces
WHERE storage_config_id = %(config_id)s AND person_id IS NOT NULL
ORDER BY id

-- faces_unplaced_of_config --
-- A config's faces of live photos that have no person and that the grouping may place:
-- not one a user took out of its person (placed_by = 'person').
SELECT f.id, f.descriptor
FROM faces f
JOIN assets a ON a.id = f.asset_id
WHERE f.storage_config_id = %(config_id)s AND f.person_id IS NULL
  AND f.placed_by = 'cluster' AND NOT a.is_deleted
ORDER BY f.id

-- people_lock_to_place --
-- Lock the people faces are about to be placed in (KEY SHARE, in id order: a user's edit
-- locks people before faces, so the grouping does too and the two cannot deadlock),
-- waiting for an edit that holds one; the people still there.
SELECT id FROM people
WHERE id = ANY(%(person_ids)s::bigint[]) AND storage_config_id = %(config_id)s
ORDER BY id
FOR KEY SHARE

-- faces_place --
-- Place unplaced faces in a person of their config, each given face with the given
-- person; only faces still unplaced and placed by the grouping (a user's move since
-- stays), and only in a person of the same config (the composite key). The faces placed.
UPDATE faces f
SET person_id = chosen.person_id
FROM unnest(%(face_ids)s::bigint[], %(person_ids)s::bigint[]) AS chosen (face_id, person_id)
WHERE f.id = chosen.face_id AND f.storage_config_id = %(config_id)s
  AND f.person_id IS NULL AND f.placed_by = 'cluster'
RETURNING f.id

-- person_insert --
-- Add a person of a config, not named.
INSERT INTO people (storage_config_id, created_at)
VALUES (%(config_id)s, %(now)s)
RETURNING id

-- person_delete_if_empty --
-- Delete a person the grouping has just added if none of its faces could be placed in it
-- (a user placed them first): never a named person, nor one with a face.
DELETE FROM people p
WHERE p.id = %(person_id)s AND p.storage_config_id = %(config_id)s AND p.name IS NULL
  AND NOT EXISTS (SELECT 1 FROM faces f WHERE f.person_id = p.id)
