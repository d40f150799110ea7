-- The database's own identity, which the proxy root's marker records, as named blocks:
-- "-- name --" then a line that says what it does. Loaded once by
-- safelight.library.catalogue.database, the only module that reads them. Time comes in
-- as now from the injected clock. Handlers run the writes inside their attempt's fenced
-- transaction; the reads may use any connection, because one item per storage config
-- runs at a time (ADR 0008). Names read subject first (ADR 0020): the table or thing the
-- query reads or changes, singular for one row and plural for a set, then what it does
-- or returns, then any qualifier (`database_identity`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- database_identity --
-- Which database this is, for the proxy root's marker: the cluster's id and the name.
SELECT system_identifier, current_database() FROM pg_control_system()
