"""``safelight db backup [--to FILE]`` and ``safelight db restore FILE`` (ADR 0061)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import IO

import click
import psycopg

from safelight.cli.failures import EXIT_USAGE, EXIT_WORK_FAILED, Failure
from safelight.cli.state import CliState, pass_state
from safelight.db.availability import is_connection_lost
from safelight.db.backup import Check, Connection, Restored, restore_backup, write_backup
from safelight.db.backupfile import BackupError, Manifest
from safelight.db.backups import back_up_into_home, folder_of, write_atomically
from safelight.db.database import Database, DatabaseUnavailable, resolve_url
from safelight.db.pool import connect
from safelight.db.urls import mask_url
from safelight.observe.presence import alive_workers
from safelight.settings import Settings, make_folder
from safelight.terminal import first_line
from safelight.words import plural


@click.command("backup")
@click.option(
    "--to",
    "target",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the backup to FILE (refused if it exists) instead of HOME/backups/, where "
    "the newest SAFELIGHT_BACKUPS_KEPT are kept.",
)
@pass_state
def db_backup(state: CliState, target: Path | None) -> None:
    """Back up the catalogue: every table's rows, in one snapshot, into one file.

    By default into HOME/backups/safelight-backup-<UTC time>.zip (private: 0600), as the
    daily catalogue_backup of a Worker does. The proxies need none: they can be remade.
    """
    now = state.clock.now()
    path = None if target is None else target.expanduser().absolute()
    if path is not None and os.path.lexists(path):
        raise Failure(f"{path} exists: remove it, or name another file", EXIT_USAGE)

    async def body(database: Database, settings: Settings) -> tuple[Path, Manifest, list[Path]]:
        async with database.pool.connection() as conn:
            if path is None:
                return await back_up_into_home(conn, settings.home, settings.backups_kept, now)

            async def write(out: IO[bytes]) -> Manifest:
                return await write_backup(conn, out, now)

            return path, await write_atomically(path, write), []

    try:
        written, manifest, removed = state.with_database(body, run_migrations=False)
    except BackupError as exc:
        raise Failure(str(exc), EXIT_WORK_FAILED) from None
    except OSError as exc:
        raise Failure(f"could not write the backup: {exc}", EXIT_WORK_FAILED) from None
    click.echo(
        f"backed up {len(manifest.tables)} tables, {manifest.rows} rows, to {written} "
        f"({written.stat().st_size} bytes)"
    )
    if removed:
        folder = folder_of(state.settings().home)
        click.echo(f"removed {plural(len(removed), 'older backup')} from {folder}")


@click.command("restore")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--yes", is_flag=True, help="Do not ask before replacing the catalogue.")
@pass_state
def db_restore(state: CliState, file: Path, yes: bool) -> None:
    """Replace the catalogue by the backup FILE, all or nothing.

    Refused while a Worker is alive (seen within SAFELIGHT_HEALTH_WORKER_SEEN_SECONDS):
    stop them first. A backup of an older safelight is migrated up after it is
    restored; one of a newer safelight is refused, as is a damaged one, before anything
    changes.
    """
    settings = state.settings()
    file = file.absolute()
    if not yes and sys.stdin.isatty():
        click.confirm(f"Replace everything in {settings.database_display} by {file}?", abort=True)
    now = state.clock.transition_time()
    window = settings.health_worker_seen_seconds

    async def no_worker_alive(conn: Connection) -> None:
        alive = await alive_workers(conn, now, window)
        if alive:
            raise BackupError(
                f"{plural(len(alive), 'Worker')} alive (seen in the last {window:g} s: "
                f"{', '.join(alive[:5])}{' …' if len(alive) > 5 else ''}): stop every "
                "Worker, then restore; nothing was restored"
            )

    try:
        restored = _restore(settings, file, no_worker_alive)
    except BackupError as exc:
        raise Failure(str(exc), EXIT_USAGE) from None
    manifest = restored.manifest
    click.echo(
        f"restored {len(manifest.tables)} tables, {manifest.rows} rows, from {file} "
        f"(made {manifest.created_at} by safelight {manifest.safelight_version})"
    )
    if restored.migrated:
        click.echo(f"then applied {len(restored.migrated)} newer migration(s):")
        for name in restored.migrated:
            click.echo(f"  {name}")


def _restore(settings: Settings, file: Path, check: Check) -> Restored:
    """Restore on a connection of its own, opened without the schema check every other
    command makes: the database is about to be replaced, and it may be one a newer
    release migrated (going back to the release before an upgrade, with the backup made
    before it). Before the event loop, as every command: the embedded server's start."""
    if settings.database_url is None:
        make_folder("home", settings.home, settings.file_modes())
    url, handle = resolve_url(settings.database_url, settings.home)

    async def main() -> Restored:
        try:
            conn = await connect(url, "safelight-restore")
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"cannot reach the database at {mask_url(url)}: {mask_url(first_line(str(exc)))}"
            ) from None
        try:
            return await restore_backup(conn, file, check=check)
        except psycopg.Error as exc:
            if not is_connection_lost(exc):
                raise
            # The database went away during the restore (rolled back): that, not a bug.
            raise DatabaseUnavailable(
                f"lost the database at {mask_url(url)}: {mask_url(first_line(str(exc)))}; "
                "nothing was restored"
            ) from None
        finally:
            await conn.close()

    try:
        return asyncio.run(main())
    finally:
        if handle is not None:
            handle.cleanup()
