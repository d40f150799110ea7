"""A backup of the catalogue and its restore (ADR 0061), on real PostgreSQL: every row of
every table comes back, rotation keeps N, a damaged or newer backup is refused with the
database untouched, files are private and never left half-written."""

from __future__ import annotations

import json
import os
import stat
import zipfile
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.backup import restore_backup, write_backup
from safelight.db.backupfile import MANIFEST, BackupError, member_of
from safelight.db.backups import (
    back_up_into_home,
    backups_in,
    folder_of,
    name_at,
    rotate,
    write_atomically,
)
from safelight.db.migrate import available_migrations, check_schema, replay
from safelight.db.pool import connect, with_database
from safelight.observe.presence import alive_workers
from safelight.testing.catalogue import cut_short, damaged, fill_every_table, table_digests
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import Harness, make_harness
from safelight.work.model import Status
from tests.dbserver import PgTestServer

pytestmark = pytest.mark.integration


@pytest.fixture
async def harness(pool: AsyncConnectionPool[Any], tmp_path: Path) -> Harness:
    h = make_harness(pool, tmp_path)
    await fill_every_table(h, tmp_path / "library")
    return h


@pytest.fixture
async def empty_database(pg_server: PgTestServer) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A database never migrated: what a restore onto a new server starts from."""
    name = f"safelight_empty_{os.getpid()}_{id(object())}"
    with psycopg.connect(pg_server.admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    conn = await connect(with_database(pg_server.admin_url, name))
    try:
        yield conn
    finally:
        await conn.close()
        pg_server.drop_database(name)


async def backup_of(pool: AsyncConnectionPool[Any], h: Harness, path: Path) -> None:
    async with pool.connection() as conn:

        async def write(out: Any) -> Any:
            return await write_backup(conn, out, h.clock.now())

        await write_atomically(path, write)


async def test_a_backup_restored_into_a_fresh_database_holds_every_row_of_every_table(
    pool: AsyncConnectionPool[Any],
    harness: Harness,
    empty_database: psycopg.AsyncConnection[Any],
    tmp_path: Path,
) -> None:
    path = tmp_path / "catalogue.zip"
    await backup_of(pool, harness, path)
    async with pool.connection() as conn:
        before = await table_digests(conn)

    restored = await restore_backup(empty_database, path)

    assert await table_digests(empty_database) == before
    assert restored.migrated == () and restored.manifest.rows == sum(n for n, _ in before.values())
    # The migrations are this release's, checksums and all.
    await check_schema(empty_database)
    # The presence of Workers is not part of a backup: none is alive after a restore.
    assert await alive_workers(empty_database, None, 3600) == []
    # The sequences went on from where they were: a new row takes a new id.
    cur = await empty_database.execute(
        "INSERT INTO users (name, created_at) VALUES ('bob', now()) RETURNING id"
    )
    row = await cur.fetchone()
    assert row is not None and row[0] == 2


async def test_a_restore_replaces_what_the_database_held(
    pool: AsyncConnectionPool[Any], harness: Harness, pg_server: PgTestServer, tmp_path: Path
) -> None:
    path = tmp_path / "catalogue.zip"
    await backup_of(pool, harness, path)
    async with pool.connection() as conn:
        before = await table_digests(conn)
        await conn.execute("DELETE FROM storage_configs")
        await conn.execute("INSERT INTO users (name, created_at) VALUES ('mallory', now())")
        await restore_backup(conn, path)
        assert await table_digests(conn) == before
        await check_schema(conn)


async def test_a_backup_of_an_older_release_is_migrated_up_after_its_restore(
    pool: AsyncConnectionPool[Any],
    empty_database: psycopg.AsyncConnection[Any],
    pg_server: PgTestServer,
    tmp_path: Path,
) -> None:
    older, newest = available_migrations()[:-1], available_migrations()[-1]
    name = f"safelight_older_{os.getpid()}"
    with psycopg.connect(pg_server.admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        conn = await connect(with_database(pg_server.admin_url, name))
        try:
            async with conn.transaction():
                await replay(conn, older)
            await conn.execute(
                "INSERT INTO storage_configs (owner, root_path, created_at) "
                "VALUES ('alice', '/photos/alice', now())"
            )

            async def write(out: Any) -> Any:
                return await write_backup(conn, out, make_harness(pool, tmp_path).clock.now())

            await write_atomically(tmp_path / "older.zip", write)
        finally:
            await conn.close()
    finally:
        pg_server.drop_database(name)

    restored = await restore_backup(empty_database, tmp_path / "older.zip")

    assert restored.migrated == (newest.name,)
    await check_schema(empty_database)
    cur = await empty_database.execute("SELECT owner, root_path FROM storage_configs")
    assert await cur.fetchall() == [("alice", "/photos/alice")]


def rewritten(path: Path, target: Path, change: Any) -> Path:
    """A copy of the backup at ``path`` whose manifest ``change`` edited."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w") as copy:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == MANIFEST:
                document = json.loads(data)
                change(document)
                data = json.dumps(document).encode()
            copy.writestr(info, data)
    return target


def flipped(path: Path, target: Path) -> Path:
    """A copy of the backup at ``path`` with one byte of the users' rows changed, its
    ZIP checksums made to match (as a tool that rewrote the archive would)."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w") as copy:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == member_of("users"):
                data = data.replace(b"alice", b"alicf", 1)
            copy.writestr(info, data)
    return target


async def test_a_damaged_or_newer_backup_is_refused_and_the_database_untouched(
    pool: AsyncConnectionPool[Any], harness: Harness, tmp_path: Path
) -> None:
    path = tmp_path / "catalogue.zip"
    await backup_of(pool, harness, path)
    short = tmp_path / "short.zip"
    short.write_bytes(path.read_bytes())
    cut_short(short)
    newer = rewritten(
        path,
        tmp_path / "newer.zip",
        lambda d: d["migrations"].append(
            {"version": "9999", "name": "9999_from_the_future.sql", "checksum": "0" * 64}
        ),
    )
    other_format = rewritten(path, tmp_path / "format.zip", lambda d: d.update(format_version=2))
    not_zip = tmp_path / "notes.zip"
    not_zip.write_text("a shopping list\n")
    async with pool.connection() as conn:
        before = await table_digests(conn)
        for bad, expected in (
            (short, "is damaged or cut short"),
            (damaged(path, tmp_path / "damaged.zip"), "is damaged"),
            (flipped(path, tmp_path / "flipped.zip"), "is damaged: table users holds"),
            (newer, "was made by a newer safelight"),
            (other_format, "format version 2"),
            (not_zip, "is damaged or cut short"),
        ):
            with pytest.raises(BackupError, match=expected) as refused:
                await restore_backup(conn, bad)
            assert str(bad) in str(refused.value)
            assert await table_digests(conn) == before


async def test_a_restore_its_check_refuses_changes_nothing(
    pool: AsyncConnectionPool[Any], harness: Harness, tmp_path: Path
) -> None:
    path = tmp_path / "catalogue.zip"
    await backup_of(pool, harness, path)
    seen: list[list[str]] = []

    async def a_worker_is_alive(conn: psycopg.AsyncConnection[Any]) -> None:
        seen.append(await alive_workers(conn, harness.clock.now(), 120))
        raise BackupError("a Worker is alive")

    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO workers (worker_id, started_at, last_seen_at) "
            "VALUES ('w-live', %(now)s, %(now)s)",
            {"now": harness.clock.now() - timedelta(seconds=30)},
        )
        await conn.execute("DELETE FROM assets")
        before = await table_digests(conn)
        with pytest.raises(BackupError, match="a Worker is alive"):
            await restore_backup(conn, path, check=a_worker_is_alive)
        assert await table_digests(conn) == before
    # The live Worker is seen; the one of fill_every_table, seen at the clock's start, too.
    assert seen == [["w-gone", "w-live"]]


async def test_backups_in_the_home_are_private_named_by_utc_time_and_rotated(
    pool: AsyncConnectionPool[Any], harness: Harness, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    old_umask = os.umask(0)
    try:
        async with pool.connection() as conn:
            made = []
            for day in range(4):
                now = harness.clock.now() + timedelta(days=day)
                path, manifest, removed = await back_up_into_home(conn, home, 2, now)
                made.append(path)
                assert path.name == name_at(now)
                assert manifest.rows > 0
    finally:
        os.umask(old_umask)
    folder = folder_of(home)
    assert backups_in(folder) == made[-2:]
    assert removed == [made[1]]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in made[-2:]} == {0o600}
    assert made[0].name.startswith("safelight-backup-") and made[0].name.endswith("Z.zip")


def test_rotation_removes_only_whole_old_backups_and_stale_partial_files(tmp_path: Path) -> None:
    now = FakeClock().now()
    names = [name_at(now - timedelta(days=day)) for day in range(5)]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "notes.zip").write_bytes(b"mine")
    stale, young = tmp_path / ".a.zip.1.partial", tmp_path / ".b.zip.2.partial"
    for partial, age in ((stale, timedelta(days=2)), (young, timedelta(minutes=5))):
        partial.write_bytes(b"half")
        stamp = (now - age).timestamp()
        os.utime(partial, (stamp, stamp))

    removed = rotate(tmp_path, 3, now)

    assert sorted(p.name for p in removed) == sorted(names[3:])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*names[:3], "notes.zip", young.name]
    )


async def test_a_failed_backup_leaves_no_file(
    pool: AsyncConnectionPool[Any], harness: Harness, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    async with pool.connection() as conn:
        await back_up_into_home(conn, home, 7, harness.clock.now())
    folder = folder_of(home)
    before = sorted(os.listdir(folder))
    async with pool.connection() as conn:
        # A table the dump cannot read (locked) makes it fail halfway, after the others.
        await conn.execute("CREATE TABLE zz_locked (x int)")
        await conn.execute("INSERT INTO zz_locked VALUES (1)")
    async with pool.connection() as conn:
        await conn.execute("SET lock_timeout = '1ms'")
        async with pool.connection() as holder:
            await holder.execute("BEGIN")
            await holder.execute("LOCK TABLE zz_locked IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(psycopg.Error):
                await back_up_into_home(conn, home, 7, harness.clock.now() + timedelta(hours=1))
            await holder.execute("ROLLBACK")
        await conn.execute("RESET lock_timeout")
    assert sorted(os.listdir(folder)) == before


async def test_the_daily_kind_backs_up_into_the_workers_home(
    pool: AsyncConnectionPool[Any], harness: Harness
) -> None:
    item = await harness.run("catalogue_backup")

    assert item.status is Status.SUCCEEDED and item.result is not None
    (path,) = backups_in(folder_of(harness.settings.home))
    assert item.result["file"] == str(path) and item.result["bytes"] == path.stat().st_size
    assert item.result["rows"] > 0 and item.result["removed"] == []
    assert harness.settings.backups_kept == 7
