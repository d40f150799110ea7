"""A backup of the catalogue through psycopg's COPY, and its restore (ADR 0061).

No ``pg_dump``: the one safelight could run is the embedded server's (16), which refuses
a newer server, and Debian's beside an older server refuses the embedded one; COPY's
text format reads back on any version. The schema is not in the file: the migrations
make it, so a restore replays the backup's migrations (checksums and all), loads the
rows, then applies this release's later ones, as an upgrade would.

A backup is every table of the schema (but the migrations' own and the Workers'
presence) copied in one REPEATABLE READ snapshot, and the sequences' values. A restore
is one transaction: under migrate's lock, the schema emptied, the migrations replayed,
the foreign keys set aside and user triggers off while the rows go in, then both back
(each key checked against the rows), sequences set, later migrations applied. A
failure anywhere leaves the database as it was.
"""

from __future__ import annotations

import asyncio
import zipfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from safelight import __version__
from safelight.core.sql import load_queries
from safelight.db.backupfile import (
    CHUNK_BYTES,
    MANIFEST,
    BackupError,
    Manifest,
    SequenceEntry,
    TableEntry,
    TableWriter,
    member_of,
    read_manifest,
)
from safelight.db.migrate import (
    MIGRATION_LOCK_KEY,
    AppliedMigration,
    Migration,
    applied_migrations,
    available_migrations,
    replay,
)

QUERIES = load_queries("safelight.db", "backup.sql")

Connection = psycopg.AsyncConnection[Any]
Check = Callable[[Connection], Awaitable[None]]
"""What a restore runs in its transaction, under the lock, before it changes anything:
raise to refuse (the CLI's "no Worker is alive")."""


@dataclass(frozen=True, slots=True)
class Restored:
    manifest: Manifest
    migrated: tuple[str, ...]
    """This release's migrations applied after the rows: the backup's were older."""


def _copy(query: str, table: str, columns: Sequence[str]) -> sql.Composed:
    """A COPY block of ``QUERIES`` for one table: identifiers only, from the catalog."""
    return sql.SQL(query).format(
        table=sql.Identifier(table), columns=sql.SQL(", ").join(map(sql.Identifier, columns))
    )


async def _tables(conn: Connection) -> list[tuple[str, tuple[str, ...]]]:
    cur = await conn.execute(QUERIES["tables_listed"])
    return [(name, tuple(columns)) for name, columns in await cur.fetchall()]


async def write_backup(conn: Connection, out: IO[bytes], now: datetime) -> Manifest:
    """Write a backup of the database of ``conn`` (autocommit) to the open file ``out``;
    return its manifest. Raises :class:`BackupError` for a database never migrated."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        async with conn.transaction():
            await conn.execute(QUERIES["backup_snapshot_begin"])
            migrations = await applied_migrations(conn)
            if not migrations:
                raise BackupError("the database was never migrated: there is nothing to back up")
            cur = await conn.execute(QUERIES["server_version_shown"])
            (server_version,) = await cur.fetchone() or ("unknown",)
            tables = [
                await _write_table(conn, archive, name, columns)
                for name, columns in await _tables(conn)
            ]
            async with conn.cursor(row_factory=dict_row) as rows:
                await rows.execute(QUERIES["sequences_listed"])
                sequences = [SequenceEntry(**row) for row in await rows.fetchall()]
        manifest = Manifest(
            safelight_version=__version__,
            created_at=now.isoformat(),
            server_version=str(server_version),
            migrations=tuple(migrations),
            tables=tuple(tables),
            sequences=tuple(sequences),
        )
        await asyncio.to_thread(archive.writestr, MANIFEST, manifest.to_json())
    return manifest


async def _write_table(
    conn: Connection, archive: zipfile.ZipFile, table: str, columns: tuple[str, ...]
) -> TableEntry:
    # force_zip64: a member's size is not known before it is written.
    with archive.open(member_of(table), "w", force_zip64=True) as member:
        writer = TableWriter(member)
        pending = bytearray()
        statement = _copy(QUERIES["table_copy_out"], table, columns)
        async with conn.cursor() as cur, cur.copy(statement) as copy:
            async for data in copy:
                pending += data
                if len(pending) >= CHUNK_BYTES:
                    await asyncio.to_thread(writer.write, bytes(pending))
                    pending.clear()
        await asyncio.to_thread(writer.write, bytes(pending))
    return TableEntry(table, columns, writer.rows, writer.sha256)


async def restore_backup(conn: Connection, path: Path, *, check: Check | None = None) -> Restored:
    """Replace the database of ``conn`` (autocommit) by the backup at ``path``.

    The file is read whole and checked first (:func:`read_manifest`), and its
    migrations against this release's: a damaged file, or one a newer safelight made,
    is refused before the database is touched. Then one transaction (module docstring).
    """
    manifest = await asyncio.to_thread(read_manifest, path)
    known = available_migrations()
    older = _migrations_of(manifest, known, path)
    later = known[len(older) :]
    async with conn.transaction():
        await conn.execute(QUERIES["catalogue_lock"], {"key": MIGRATION_LOCK_KEY})
        if check is not None:
            await check(conn)
        await conn.execute(QUERIES["catalogue_drop"])
        await replay(conn, older)
        here = dict(await _tables(conn))
        wanted = {table.name: table.columns for table in manifest.tables}
        if here != wanted:
            raise BackupError(
                f"{path} does not fit the schema its migrations make here "
                f"({_difference(wanted, here)}); nothing was restored"
            )
        await conn.execute(QUERIES["tables_load_begin"])
        with zipfile.ZipFile(path) as archive:
            for table in manifest.tables:
                await _load_table(conn, archive, table, path)
        await conn.execute(QUERIES["tables_load_end"])
        for sequence in manifest.sequences:
            if sequence.last_value is not None:
                await conn.execute(
                    QUERIES["sequence_set"],
                    {"name": sequence.name, "last_value": sequence.last_value},
                )
        await replay(conn, later)
    return Restored(manifest, tuple(m.name for m in later))


async def _load_table(
    conn: Connection, archive: zipfile.ZipFile, table: TableEntry, path: Path
) -> None:
    async with conn.cursor() as cur:
        with archive.open(member_of(table.name)) as member:
            async with cur.copy(_copy(QUERIES["table_copy_in"], table.name, table.columns)) as copy:
                while chunk := await asyncio.to_thread(member.read, CHUNK_BYTES):
                    await copy.write(chunk)
        if cur.rowcount != table.rows:
            raise BackupError(
                f"{path}: table {table.name} loaded {cur.rowcount} rows of {table.rows}; "
                "nothing was restored"
            )


def _migrations_of(manifest: Manifest, known: list[Migration], path: Path) -> list[Migration]:
    """This release's migrations that the backup's are: the first ones, by version, name
    and checksum. Raises :class:`BackupError` for a backup of a newer release, or of
    migrations that are not this release's."""
    by_version = {m.version: m for m in known}
    unknown = [m for m in manifest.migrations if _known(m, by_version) is None]
    if unknown:
        raise BackupError(
            f"{path} was made by a newer safelight ({manifest.safelight_version}, with "
            f"migrations this one, {__version__}, does not know: "
            f"{', '.join(m.name for m in unknown)}): restore it with that release or a "
            "later one; nothing was restored"
        )
    changed = [
        m.name
        for m in manifest.migrations
        if m.checksum is not None and m.checksum != by_version[m.version].checksum
    ]
    if changed:
        raise BackupError(
            f"{path} holds migrations whose files changed since ({', '.join(changed)}): "
            "it is not this release's schema; nothing was restored"
        )
    versions = [m.version for m in manifest.migrations]
    if versions != [m.version for m in known[: len(versions)]]:
        raise BackupError(
            f"{path}'s migrations are not this release's first {len(versions)}; "
            "nothing was restored"
        )
    return known[: len(versions)]


def _known(applied: AppliedMigration, by_version: dict[str, Migration]) -> Migration | None:
    migration = by_version.get(applied.version)
    return migration if migration is not None and migration.name == applied.name else None


def _difference(wanted: dict[str, tuple[str, ...]], here: dict[str, tuple[str, ...]]) -> str:
    missing = sorted(set(wanted) - set(here))
    extra = sorted(set(here) - set(wanted))
    other = sorted(name for name in set(wanted) & set(here) if wanted[name] != here[name])
    parts = []
    if missing:
        parts.append(f"tables it has and the schema lacks: {', '.join(missing)}")
    if extra:
        parts.append(f"tables the schema has and it lacks: {', '.join(extra)}")
    if other:
        parts.append(f"other columns in: {', '.join(other)}")
    return "; ".join(parts)
