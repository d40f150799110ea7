-- Sign-ins that expire: personal API tokens and the dashboard's sessions (tables
-- auth_tokens, web_sessions), as named blocks: "-- name --" then a line that says what
-- it does. Loaded once by safelight.library.catalogue.signins, the only module that
-- reads them. Time comes in as now from the injected clock. Handlers run the writes
-- inside their attempt's fenced transaction; the reads may use any connection, because
-- one item per storage config runs at a time (ADR 0008). Names read subject first (ADR
-- 0020): the table or thing the query reads or changes, singular for one row and plural
-- for a set, then what it does or returns, then any qualifier (`tokens_delete_expired`,
-- `sessions_delete_expired`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- tokens_delete_expired --
-- Delete the auth tokens that expired before now.
DELETE FROM auth_tokens WHERE expires_at < %(now)s

-- sessions_delete_expired --
-- Delete the web sessions that expired before now (a small table, scanned once a run).
DELETE FROM web_sessions WHERE expires_at < %(now)s
