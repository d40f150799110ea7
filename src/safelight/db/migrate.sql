-- The bookkeeping of safelight.db.migrate, as named blocks: "-- name --" then a line
-- that says what it does. The migrations themselves are the files of migrations/.
-- Names read subject first (ADR 0020): the table or thing the query reads or changes,
-- singular for one row and plural for a set, then what it does or returns, then any
-- qualifier (`migration_record`, `migrations_applied`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- migrations_lock --
-- Waits for any other process migrating this database (a session lock).
SELECT pg_advisory_lock(%(key)s)

-- migrations_unlock --
-- Lets the next migrating process in.
SELECT pg_advisory_unlock(%(key)s)

-- migrations_table_create --
-- The table of applied migrations; checksum is the sha256 of the file applied.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    checksum text
)

-- migrations_checksum_add --
-- A table made before checksums were recorded gets the column (last, as a new table has
-- it). Nullable: its rows are backfilled by the same migrate, and a release from before
-- checksums inserts rows without one, which the next migrate backfills in turn.
ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text

-- migrations_table_exists --
-- Whether the database was ever migrated (a read-only check must not create the table).
SELECT to_regclass('schema_migrations') IS NOT NULL AS present

-- migrations_applied --
-- Every recorded migration. Read through to_jsonb so this works on a table without the
-- checksum column too (a database not migrated since checksums were recorded): NULL.
SELECT m.version, m.name, to_jsonb(m) ->> 'checksum' AS checksum
FROM schema_migrations m
ORDER BY m.version

-- migration_record --
-- Records a migration, in the transaction that applied it.
INSERT INTO schema_migrations (version, name, checksum)
VALUES (%(version)s, %(name)s, %(checksum)s)

-- migration_checksum_backfill --
-- Records the checksum of a migration applied before checksums were kept, as the file
-- is now: nothing can tell what that file said then.
UPDATE schema_migrations
SET checksum = %(checksum)s
WHERE version = %(version)s AND checksum IS NULL
