-- Proxy rows that still name a file of the layout before ADR 0016 (<type>.<ext>, no
-- attempt in the name). Each crawl renames its config's (library/legacynames.py, ADR
-- 0017) and looks for them through this index, which is empty once they are all
-- renamed: the look then costs nothing. The pattern is the query's
-- (proxies_legacy_of_config), written the same so that the planner can use it.
CREATE INDEX ix_proxy_files_legacy_name ON proxy_files (asset_id, proxy_type)
    WHERE path ~ '/[^/.]+\.[^/.]+$';
