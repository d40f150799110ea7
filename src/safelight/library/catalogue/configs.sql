-- The queries of storage configs (the folders of originals that scope work), as named
-- blocks: "-- name --" then a line that says what it does. Loaded once by
-- safelight.library.catalogue.configs. Time comes in as now from the injected clock.
-- Names read subject first (ADR 0020): the table or thing the query reads or changes,
-- singular for one row and plural for a set, then what it does or returns, then any
-- qualifier (`config_disable`, `configs_by_root`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- configs_lock_for_add --
-- Make adds take turns until this transaction ends, so that two adds of nested folders
-- cannot each miss the other's uncommitted row (configs_nested below).
SELECT pg_advisory_xact_lock(%(key)s)

-- configs_nested --
-- The configs of every owner and state whose folder lies inside the given one or
-- around it, on path components ("/p/a" is inside "/p", "/p-b" is not); its own folder
-- is not nested in itself.
SELECT id, owner, root_path, active, created_at
FROM storage_configs
WHERE root_path <> %(root_path)s
  AND (starts_with(root_path, rtrim(%(root_path)s, '/') || '/')
       OR starts_with(%(root_path)s, rtrim(root_path, '/') || '/'))
ORDER BY created_at, id

-- config_insert --
-- Register a folder for an owner; nothing when that owner already has it (see config_reactivate).
INSERT INTO storage_configs (owner, root_path, created_at)
VALUES (%(owner)s, %(root_path)s, %(now)s)
ON CONFLICT (owner, root_path) DO NOTHING
RETURNING id, owner, root_path, active, created_at

-- config_reactivate --
-- The owner's existing config of a folder, made active again; was_active tells whether it was.
UPDATE storage_configs c
SET active = true
FROM (
    SELECT id, active AS was_active
    FROM storage_configs
    WHERE owner = %(owner)s AND root_path = %(root_path)s
    FOR UPDATE
) old
WHERE c.id = old.id
RETURNING c.id, c.owner, c.root_path, c.active, c.created_at, old.was_active

-- config_get --
-- One storage config by id.
SELECT id, owner, root_path, active, created_at FROM storage_configs WHERE id = %(id)s

-- configs_by_id_prefix --
-- The configs whose id starts with a prefix (a short id typed by an operator); two at most.
SELECT id, owner, root_path, active, created_at
FROM storage_configs
WHERE id::text LIKE %(prefix)s || '%%'
ORDER BY id
LIMIT 2

-- configs_list --
-- Every storage config, optionally of one owner and only the active ones, oldest first.
SELECT id, owner, root_path, active, created_at
FROM storage_configs
WHERE (%(owner)s::text IS NULL OR owner = %(owner)s::text)
  AND (NOT %(active_only)s OR active)
ORDER BY created_at, id

-- configs_by_root --
-- The configs of a folder: one owner's, or every owner's when owner is NULL.
SELECT id, owner, root_path, active, created_at
FROM storage_configs
WHERE root_path = %(root_path)s
  AND (%(owner)s::text IS NULL OR owner = %(owner)s::text)
ORDER BY created_at, id

-- config_enable --
-- Make a config active again; was_active tells whether it was.
UPDATE storage_configs c
SET active = true
FROM (SELECT id, active AS was_active FROM storage_configs WHERE id = %(id)s FOR UPDATE) old
WHERE c.id = old.id
RETURNING c.id, c.owner, c.root_path, c.active, c.created_at, old.was_active

-- config_disable --
-- Make a config inactive: Workers stop claiming its work; enqueue refuses new work for it.
-- Its queued items stay queued (they run again if it is re-added); a running item finishes.
UPDATE storage_configs c
SET active = false
FROM (SELECT id, active AS was_active FROM storage_configs WHERE id = %(id)s FOR UPDATE) old
WHERE c.id = old.id
RETURNING c.id, c.owner, c.root_path, c.active, c.created_at, old.was_active
