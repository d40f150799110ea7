-- The assets' proxy rows (table proxy_files): which files under the proxy root, and
-- which BlurHash values, an asset's proxies are, as named blocks: "-- name --" then a
-- line that says what it does. Loaded once by safelight.library.catalogue.proxies, the
-- only module that reads them. Time comes in as now from the injected clock. Handlers
-- run the writes inside their attempt's fenced transaction; the reads may use any
-- connection, because one item per storage config runs at a time (ADR 0008). Names read
-- subject first (ADR 0020): the table or thing the query reads or changes, singular for
-- one row and plural for a set, then what it does or returns, then any qualifier
-- (`proxy_insert`, `proxies_of_asset`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- proxy_insert --
-- Record one proxy of an asset: a file under the proxy root, or a BlurHash value.
INSERT INTO proxy_files (asset_id, proxy_type, path, value, size_bytes, width, height, created_at)
VALUES (%(asset_id)s, %(proxy_type)s, %(path)s, %(value)s, %(size_bytes)s, %(width)s,
        %(height)s, %(now)s)

-- asset_set_picture_hash --
-- Store an asset's picture hash (its thumbnail's, two's complement) and when it was taken (NULL: not yet).
UPDATE assets SET picture_hash = %(picture_hash)s, picture_hashed_at = %(now)s
WHERE id = %(asset_id)s

-- proxies_delete_of_asset_types --
-- Delete an asset's proxy rows of these types (remade); the paths they named.
DELETE FROM proxy_files
WHERE asset_id = %(asset_id)s AND proxy_type = ANY(%(proxy_types)s)
RETURNING path

-- proxies_of_asset --
-- The proxy rows of one asset.
SELECT id, proxy_type, path FROM proxy_files WHERE asset_id = %(asset_id)s ORDER BY id

-- proxies_of_assets --
-- The proxy rows of some assets, each with its asset's config and content (its folder).
SELECT p.id, p.asset_id, p.path, a.storage_config_id, a.content_hash
FROM proxy_files p JOIN assets a ON a.id = p.asset_id
WHERE p.asset_id = ANY(%(asset_ids)s)
ORDER BY p.id

-- proxies_delete_by_id --
-- Delete proxy rows by id.
DELETE FROM proxy_files WHERE id = ANY(%(ids)s)

-- proxies_delete_by_path --
-- Delete every proxy row that names one of these paths (relative to the proxy root).
DELETE FROM proxy_files WHERE path = ANY(%(paths)s)

-- proxy_paths_named --
-- Which of these paths (relative to the proxy root) some proxy row names.
SELECT DISTINCT path FROM proxy_files WHERE path = ANY(%(paths)s)

-- proxies_legacy_of_config --
-- A page of a config's live proxy rows whose file name is <type>.<ext> (before ADR 0016),
-- in (asset, type) order after a key. The pattern is the one of
-- ix_proxy_files_legacy_name (migration 0007), written the same so that the planner
-- uses that index: empty once every proxy is renamed, so this costs a crawl nothing.
SELECT p.asset_id, p.proxy_type, p.path
FROM proxy_files p
WHERE p.path ~ '/[^/.]+\.[^/.]+$'
  AND (p.asset_id, p.proxy_type) > (%(after_asset)s::bigint, %(after_type)s::text)
  AND EXISTS (
    SELECT 1 FROM assets a
    WHERE a.id = p.asset_id AND a.storage_config_id = %(config_id)s AND NOT a.is_deleted
  )
ORDER BY p.asset_id, p.proxy_type
LIMIT %(limit)s

-- proxies_repoint --
-- Each row that still names its legacy file names the new one; the legacy names it left.
UPDATE proxy_files p
SET path = r.new_path
FROM unnest(
    %(asset_ids)s::bigint[], %(proxy_types)s::text[], %(old_paths)s::text[],
    %(new_paths)s::text[]
) AS r(asset_id, proxy_type, old_path, new_path)
WHERE p.asset_id = r.asset_id AND p.proxy_type = r.proxy_type AND p.path = r.old_path
RETURNING r.old_path

-- proxies_of_live_assets_of_config_after_path --
-- A page of a config's live assets in path order after a path, each with what its
-- original was when crawled and its proxy rows (types, paths, when made), for a remake
-- of its proxies. The rows are gathered per asset (LATERAL), so the page is read in
-- ix_assets_live_path_c's order and stops at the limit: a page at the end of a large
-- config costs what one at its start does.
SELECT a.id, a.file_path, a.content_hash, a.media_type, a.motion_photo, a.size_bytes,
       a.modified_ns, a.sidecar_path, a.sidecar_size, a.sidecar_modified_ns,
       p.types, p.paths, p.made
FROM assets a
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(f.proxy_type ORDER BY f.proxy_type), '{}'::text[]) AS types,
           coalesce(array_agg(f.path ORDER BY f.proxy_type), '{}'::text[]) AS paths,
           coalesce(array_agg(f.created_at ORDER BY f.proxy_type), '{}'::timestamptz[]) AS made
    FROM proxy_files f
    WHERE f.asset_id = a.id
) p
WHERE a.storage_config_id = %(config_id)s AND NOT a.is_deleted
  AND a.file_path COLLATE "C" > %(after_path)s COLLATE "C"
ORDER BY a.file_path COLLATE "C"
LIMIT %(limit)s
