-- The queries of safelight.db.backup (a backup of the catalogue and its restore, ADR
-- 0061), as named blocks: "-- name --" then a line that says what it does. Loaded once
-- by safelight.db.backup, the only module that reads them. Names read subject first
-- (ADR 0020); tests/unit/test_query_names.py checks them.
--
-- Everything safelight keeps is in the connection's current schema (the migrations
-- name no schema), so "the catalogue" is every object of current_schema() that no
-- extension owns. The blocks with {table} and {columns} take identifiers only, composed
-- by psycopg.sql from the catalog's own names (never a value, never a person's text).

-- backup_snapshot_begin --
-- The one snapshot every table is copied in: what the backup holds is one moment.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY

-- tables_listed --
-- Every table of the schema and its columns in their order (not generated, not
-- dropped), but the migrations' own table (a restore replays the migrations) and the
-- Workers' presence (which Workers are alive now, not then).
SELECT c.relname AS name,
       array_agg(a.attname::text ORDER BY a.attnum) AS columns
FROM pg_class c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     AND a.attgenerated = ''
WHERE c.relnamespace = current_schema()::regnamespace
  AND c.relkind = 'r'
  AND c.relname NOT IN ('schema_migrations', 'workers')
  AND NOT EXISTS (
      SELECT 1 FROM pg_depend d
      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
GROUP BY c.relname
ORDER BY c.relname

-- sequences_listed --
-- Every sequence of the schema and its last value (NULL: never used yet).
SELECT c.relname AS name, pg_sequence_last_value(c.oid) AS last_value
FROM pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'S'
ORDER BY c.relname

-- server_version_shown --
-- The server's version, for the backup's manifest (a reader's information only).
SELECT current_setting('server_version') AS version

-- table_copy_out --
-- One table's rows, as COPY's text format.
COPY {table} ({columns}) TO STDOUT

-- table_copy_in --
-- One table's rows from COPY's text format.
COPY {table} ({columns}) FROM STDIN

-- catalogue_lock --
-- Waits for, then keeps out, any process migrating this database (migrate's key), for
-- the rest of the restore's transaction: a Worker starting meanwhile waits for it.
SELECT pg_advisory_xact_lock(%(key)s)

-- catalogue_drop --
-- Drops every object of the schema that no extension owns: tables (with their
-- sequences, indexes and triggers), views, sequences, functions, then types.
DO $drop$
DECLARE
    found record;
BEGIN
    FOR found IN
        SELECT c.oid::regclass AS name,
               CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                              WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS what
        FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace
          AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
          AND NOT EXISTS (
              SELECT 1 FROM pg_depend d
              WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                AND d.deptype IN ('e', 'a', 'i'))
          AND NOT (c.relkind = 'r' AND c.relispartition)
        ORDER BY c.relkind = 'S', c.oid
    LOOP
        EXECUTE format('DROP %s IF EXISTS %s CASCADE', found.what, found.name);
    END LOOP;
    FOR found IN
        SELECT p.oid::regprocedure AS name
        FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND NOT EXISTS (
              SELECT 1 FROM pg_depend d
              WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('DROP ROUTINE IF EXISTS %s CASCADE', found.name);
    END LOOP;
    FOR found IN
        SELECT t.oid::regtype AS name
        FROM pg_type t
        WHERE t.typnamespace = current_schema()::regnamespace
          AND t.typtype IN ('e', 'd', 'c', 'r')
          AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
          AND NOT EXISTS (
              SELECT 1 FROM pg_depend d
              WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('DROP TYPE IF EXISTS %s CASCADE', found.name);
    END LOOP;
END
$drop$

-- tables_load_begin --
-- Before the rows go in: the foreign keys set aside (kept in a temporary table, as
-- pg_dump adds them after the data: rows of a cycle, assets and bursts, load in any
-- order), the user triggers off (their effects are in the rows already), and every
-- table emptied of what a migration may have inserted. Only the tables' owner's rights.
CREATE TEMPORARY TABLE restore_foreign_keys ON COMMIT DROP AS
SELECT con.conrelid::regclass AS owner_table, con.conname AS name,
       pg_get_constraintdef(con.oid) AS definition
FROM pg_constraint con
WHERE con.connamespace = current_schema()::regnamespace AND con.contype = 'f';
DO $begin$
DECLARE
    found record;
BEGIN
    FOR found IN SELECT * FROM restore_foreign_keys LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', found.owner_table, found.name);
    END LOOP;
    FOR found IN
        SELECT c.oid::regclass AS name
        FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
          AND c.relname <> 'schema_migrations'
    LOOP
        EXECUTE format('ALTER TABLE %s DISABLE TRIGGER USER', found.name);
        EXECUTE format('TRUNCATE %s', found.name);
    END LOOP;
END
$begin$

-- tables_load_end --
-- After the rows: the user triggers on again and the foreign keys back, each checked
-- against every row restored.
DO $end$
DECLARE
    found record;
BEGIN
    FOR found IN
        SELECT c.oid::regclass AS name
        FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
          AND c.relname <> 'schema_migrations'
    LOOP
        EXECUTE format('ALTER TABLE %s ENABLE TRIGGER USER', found.name);
    END LOOP;
    FOR found IN SELECT * FROM restore_foreign_keys LOOP
        EXECUTE format(
            'ALTER TABLE %s ADD CONSTRAINT %I %s',
            found.owner_table, found.name, found.definition);
    END LOOP;
END
$end$

-- sequence_set --
-- A sequence back at the value the backup recorded.
SELECT setval(quote_ident(%(name)s)::regclass, %(last_value)s, true)
