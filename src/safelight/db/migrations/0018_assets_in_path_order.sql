-- A crawl reads its config's live assets in the walk's order, the bytes of the path
-- (COLLATE "C", Python's str order), a page at a time after the last path read, each
-- page its own short query (assets_live_of_config_after_path, ADR 0033): no transaction
-- is held open for the length of the walk. ix_assets_live_path cannot serve that order
-- (its collation is the database's), so each page would sort every live asset of the
-- config; this index makes a page a walk from its keyset, LIMIT rows.
CREATE INDEX ix_assets_live_path_c
    ON assets (storage_config_id, file_path COLLATE "C")
    WHERE NOT is_deleted;
