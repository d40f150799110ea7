"""Migrations: applied once each, safe when two processes start together, and
docs/schema.sql is what they produce."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.app import WorkerOptions, run_workers
from safelight.db import migrate as migrate_module
from safelight.db.database import Database, open_database
from safelight.db.migrate import (
    MIGRATION_LOCK_KEY,
    ChangedMigrationError,
    NewerSchemaError,
    available_migrations,
    check_schema,
    migrate,
)
from safelight.db.pool import connect, with_database
from safelight.settings import Settings
from tests.dbserver import PgTestServer

pytestmark = pytest.mark.integration

SCHEMA_SQL = Path(__file__).resolve().parents[2] / "docs" / "schema.sql"

# A fingerprint of everything the schema defines, independent of the order and the
# pg_dump version that wrote docs/schema.sql.
CATALOG = """
SELECT 'column', format('%s.%s %s null=%s default=%s', c.relname, a.attname,
       format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'index', indexdef FROM pg_indexes WHERE schemaname = 'public'
UNION ALL
SELECT 'constraint', format('%s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
FROM pg_constraint WHERE connamespace = 'public'::regnamespace
UNION ALL
SELECT 'trigger', pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
UNION ALL
SELECT 'function', format('%s %s', proname, md5(prosrc)) FROM pg_proc
WHERE pronamespace = 'public'::regnamespace
UNION ALL
SELECT 'enum', format('%s %s %s', t.typname, e.enumsortorder, e.enumlabel)
FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid
ORDER BY 1, 2
"""


def _catalog(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return list(conn.execute(CATALOG).fetchall())


@pytest.fixture
def empty_database(pg_server: PgTestServer) -> Iterator[str]:
    name = "safelight_empty_" + str(id(object()))
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(pg_server.admin_url, name)
    finally:
        pg_server.drop_database(name)


def test_schema_sql_is_what_the_migrations_make(empty_database: str, database_url: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute(SCHEMA_SQL.read_text("utf-8").encode())
    from_dump = _catalog(empty_database)
    from_migrations = _catalog(database_url)
    assert from_dump == from_migrations, (
        "docs/schema.sql is stale: run .venv/bin/python scripts/dump_schema.py"
    )
    assert any("ix_work_items_storage_config_running" in str(row[1]) for row in from_dump)


async def test_migrating_twice_applies_nothing_the_second_time(empty_database: str) -> None:
    conn = await connect(empty_database)
    try:
        first = await migrate(conn)
        second = await migrate(conn)
    finally:
        await conn.close()
    assert first == [m.name for m in available_migrations()]
    assert second == []


async def test_two_processes_migrating_together_take_turns(empty_database: str) -> None:
    holder = await connect(empty_database, "holder")
    one = await connect(empty_database, "one")
    two = await connect(empty_database, "two")
    try:
        # Hold the migration lock so both migrations start and queue up behind it.
        await holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        tasks = [asyncio.create_task(migrate(one)), asyncio.create_task(migrate(two))]
        for _ in range(10_000):
            cur = await holder.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            )
            row = await cur.fetchone()
            if row and row[0] == 2:
                break
            await asyncio.sleep(0.005)  # polling the server for the two waiters
        else:
            raise AssertionError("the two migrations never waited on the lock")
        await holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
        results = await asyncio.gather(*tasks)
    finally:
        for c in (holder, one, two):
            await c.close()
    names = [m.name for m in available_migrations()]
    assert sorted(results, key=len) == [[], names]
    with psycopg.connect(empty_database) as conn:
        row = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert row is not None and row[0] == len(names)


def test_migrations_are_numbered_and_ordered() -> None:
    migrations = available_migrations()
    assert [m.version for m in migrations] == sorted(m.version for m in migrations)
    assert migrations[0].name == "0001_work.sql"


def test_0005_names_the_items_already_running(empty_database: str) -> None:
    """Applied to a database that already has running items, 0005 names each config's
    running item, as its trigger would have."""
    before, (m0005, *_) = (
        [m for m in available_migrations() if m.version < "0005"],
        [m for m in available_migrations() if m.version >= "0005"],
    )
    with psycopg.connect(empty_database, autocommit=True) as conn:
        for m in before:
            conn.execute(m.sql.encode())
        busy, idle = (
            conn.execute(
                "INSERT INTO storage_configs (owner, root_path, created_at)"
                " VALUES ('a', %s, now()) RETURNING id",
                (root,),
            ).fetchone()[0]  # type: ignore[index]
            for root in ("/busy", "/idle")
        )
        running = conn.execute(
            "INSERT INTO work_items (kind, storage_config_id, status, requested_at, attempt,"
            " lease_expires_at) VALUES ('crawl', %s, 'running', now(), 1, now()) RETURNING id",
            (busy,),
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO work_items (kind, storage_config_id, requested_at)"
            " VALUES ('crawl', %s, now()), ('crawl', %s, now())",
            (busy, idle),
        )
        conn.execute(m0005.sql.encode())
        named: dict[Any, Any] = dict(
            conn.execute("SELECT id, running_item_id FROM storage_configs").fetchall()
        )
    assert named == {busy: running, idle: None}


def test_0008_gives_every_item_no_retries_and_no_wait(empty_database: str) -> None:
    """Applied to a database with items in every state, 0008 leaves each with no
    retries and no not-before time, due as it was, and then refuses a not-before time on
    an item that is not queued."""
    before, (m0008, *_) = (
        [m for m in available_migrations() if m.version < "0008"],
        [m for m in available_migrations() if m.version >= "0008"],
    )
    with psycopg.connect(empty_database, autocommit=True) as conn:
        for m in before:
            conn.execute(m.sql.encode())
        conn.execute(
            "INSERT INTO work_items (kind, status, requested_at, attempt, stalls, finished_at,"
            " lease_expires_at) VALUES"
            " ('noop', 'queued', now(), 0, 0, NULL, NULL),"
            " ('noop', 'running', now(), 1, 1, NULL, now()),"
            " ('noop', 'failed', now(), 2, 2, now(), NULL)"
        )
        conn.execute(m0008.sql.encode())
        rows = conn.execute(
            "SELECT status::text, stalls, retries, not_before FROM work_items ORDER BY id"
        ).fetchall()
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE work_items SET not_before = now() WHERE status = 'failed'")
    assert rows == [("queued", 0, 0, None), ("running", 1, 0, None), ("failed", 2, 0, None)]


# --- a newer schema, changed files, checksums ----------------------------------------

OLD_TABLE = (
    "CREATE TABLE schema_migrations (version text PRIMARY KEY, name text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT now())"
)


def file_checksums() -> dict[str, str]:
    """The sha256 of every migration file, read from disk here, not by the code tested."""
    folder = Path(migrate_module.__file__).parent / "migrations"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.sql")}


def recorded(url: str) -> dict[str, str | None]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT name, checksum FROM schema_migrations").fetchall()
    return dict(rows)


def record_unknown(url: str, *names: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for name in names:
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, 'f00')",
                (name[:4], name),
            )


async def test_every_applied_migration_records_its_files_checksum(empty_database: str) -> None:
    conn = await connect(empty_database)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    assert recorded(empty_database) == file_checksums()


async def test_a_database_with_migrations_this_release_does_not_know_is_refused(
    empty_database: str, tmp_path: Path
) -> None:
    known = available_migrations()
    with psycopg.connect(empty_database, autocommit=True) as conn:
        # Migrated by a newer release: all but our last migration, and two of its own.
        conn.execute(OLD_TABLE.replace("now())", "now(), checksum text)"))
        for m in known[:-1]:
            conn.execute(m.sql.encode())
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (m.version, m.name, m.checksum),
            )
    record_unknown(empty_database, "0099_future.sql", "0100_later.sql")
    before = recorded(empty_database)
    expected = (
        r"the database has migrations this safelight \(.+\) does not know: "
        r"0099_future.sql, 0100_later.sql; it was migrated by a newer release: upgrade safelight"
    )
    aconn = await connect(empty_database)
    try:
        with pytest.raises(NewerSchemaError, match=expected):
            await migrate(aconn)
        with pytest.raises(NewerSchemaError, match=expected):
            await check_schema(aconn)
    finally:
        await aconn.close()
    for run_migrations in (True, False):
        with pytest.raises(NewerSchemaError, match=expected):
            await open_database(empty_database, tmp_path, run_migrations=run_migrations)
    # Refused before anything ran: our last migration is still not applied.
    assert recorded(empty_database) == before and known[-1].name not in before


async def test_a_recorded_migration_of_another_name_is_unknown(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE schema_migrations SET name = '0002_renamed.sql' WHERE version = '0002'"
        )
    aconn = await connect(database_url)
    try:
        with pytest.raises(NewerSchemaError, match=r"does not know: 0002_renamed.sql;"):
            await check_schema(aconn)
    finally:
        await aconn.close()


async def test_a_migration_whose_file_changed_is_refused_naming_it(
    database_url: str, tmp_path: Path
) -> None:
    edited = hashlib.sha256(b"what the file said when it was applied").hexdigest()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = %s WHERE version = '0004'", (edited,))
    expected = (
        r"migrations changed since they were applied to the database: "
        rf"0004_claim_queue_order.sql \(recorded sha256 {edited[:12]}…, "
        rf"file {file_checksums()['0004_claim_queue_order.sql'][:12]}…\); "
        r"an applied migration must never change"
    )
    aconn = await connect(database_url)
    try:
        with pytest.raises(ChangedMigrationError, match=expected):
            await migrate(aconn)
    finally:
        await aconn.close()
    for run_migrations in (True, False):
        with pytest.raises(ChangedMigrationError, match=expected):
            await open_database(database_url, tmp_path, run_migrations=run_migrations)
    assert recorded(database_url)["0004_claim_queue_order.sql"] == edited


async def test_a_database_migrated_before_checksums_gets_them_at_the_next_migrate(
    empty_database: str, database_url: str, tmp_path: Path
) -> None:
    """As the release before checksums left it: no column, every migration but the last."""
    known = available_migrations()
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute(OLD_TABLE)
        for m in known[:-1]:
            conn.execute(m.sql.encode())
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (m.version, m.name)
            )
    # Opening without migrating reads the table as it is, and changes nothing.
    database = await open_database(empty_database, tmp_path, run_migrations=False)
    await database.close()
    with psycopg.connect(empty_database) as conn:
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'schema_migrations' ORDER BY ordinal_position"
        ).fetchall()
    assert [c[0] for c in columns] == ["version", "name", "applied_at"]

    aconn = await connect(empty_database)
    try:
        assert await migrate(aconn) == [known[-1].name]
        assert await migrate(aconn) == []
    finally:
        await aconn.close()
    assert recorded(empty_database) == file_checksums()
    # The same table as a database migrated from scratch.
    assert [r for r in _catalog(empty_database) if "schema_migrations" in str(r[1])] == [
        r for r in _catalog(database_url) if "schema_migrations" in str(r[1])
    ]


async def test_workers_refuse_to_start_on_a_newer_schema(
    database_url: str, pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """Whoever opened the database: run_workers checks it again before the first claim."""
    record_unknown(database_url, "0099_future.sql")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO work_items (kind, requested_at) VALUES ('noop', now())")
    settings = Settings(database_url=database_url, home=tmp_path)
    with pytest.raises(NewerSchemaError, match=r"0099_future\.sql"):
        await run_workers(
            settings,
            WorkerOptions(until_idle=True),
            database=Database(url=database_url, pool=pool),
            install_signal_handlers=False,
        )
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT status::text, attempt FROM work_items").fetchone()
    assert row == ("queued", 0)
