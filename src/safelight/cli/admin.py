"""``safelight db migrate`` and ``safelight config add|list|enable|disable|retry-failed``."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import Any, TypeVar

import click

from safelight.cli.output import console, print_json, table
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.db.migrate import migrate
from safelight.library.catalogue.configs import ConfigError, StorageConfig, StorageConfigs
from safelight.library.catalogue.owners import owner_name_problem
from safelight.library.files.roots import own_folders
from safelight.settings import Settings
from safelight.terminal import printable
from safelight.words import plural

F = TypeVar("F", bound=Callable[..., Any])


def os_user() -> str:
    """The owner of a folder when ``--user`` is not given: who runs the command."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no $USER (some containers)
        return "owner"


def owner_name(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A ``--user`` option's callback: an owner name refused here is a usage error (2)."""
    if value is not None and (problem := owner_name_problem(value)) is not None:
        raise click.BadParameter(problem)
    return value


def user_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--user",
        metavar="NAME",
        default=None,
        callback=owner_name,
        help=f"{help_text} Default: the OS user name running the command.",
    )


def json_option(
    help_text: str = "Print one JSON document on stdout instead.",
) -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def config_document(config: StorageConfig) -> dict[str, Any]:
    return {
        "id": config.id,
        "owner": config.owner,
        "root": config.root_path,
        "active": config.active,
        "created_at": config.created_at,
    }


@click.group("db")
def db_group() -> None:
    """The database: its schema, its backups."""


@db_group.command("migrate")
@pass_state
def db_migrate(state: CliState) -> None:
    """Apply the migrations not yet applied (every command also does this on start).

    Safe to run from several machines at once: they take turns under a lock.
    """
    settings = state.settings()

    async def body(database: Database, settings: Settings) -> list[str]:
        async with database.pool.connection() as conn:
            return await migrate(conn)

    applied = state.with_database(body, run_migrations=False)
    if applied:
        click.echo(f"applied {plural(len(applied), 'migration')} to {settings.database_display}:")
        for name in applied:
            click.echo(f"  {name}")
    else:
        click.echo(f"{settings.database_display} is up to date")


@click.group("config")
def config_group() -> None:
    """Storage configs: the folders of originals that Workers serve."""


@config_group.command("add")
@click.argument("path", type=click.Path(path_type=str))
@user_option("Owner of the folder.")
@json_option("Print the config as a JSON object (with its id) instead.")
@pass_state
def config_add(state: CliState, path: str, user: str | None, as_json: bool) -> None:
    """Register the folder PATH for a user and print the config's id.

    Adding a folder the user already has prints the same id (and re-enables it if it
    was disabled).
    """
    owner = user or os_user()

    own = own_folders(state.settings().home, state.settings().proxies)

    async def body(database: Database, settings: Settings) -> Any:
        return await StorageConfigs(database.pool, state.clock, own_folders=own).add(owner, path)

    added = state.with_database(body)
    if as_json:
        print_json(
            {
                **config_document(added.config),
                "created": added.created,
                "reactivated": added.reactivated,
            }
        )
        return
    what = (
        "added" if added.created else ("re-enabled" if added.reactivated else "already registered")
    )
    click.echo(printable(f"{what}: {added.config.root_path} for {added.config.owner}"), err=True)
    click.echo(str(added.config.id))


@config_group.command("list")
@json_option()
@pass_state
def config_list(state: CliState, as_json: bool) -> None:
    """List every storage config."""

    async def body(database: Database, settings: Settings) -> list[StorageConfig]:
        return await StorageConfigs(database.pool, state.clock).list_configs()

    configs = state.with_database(body)
    if as_json:
        print_json([config_document(c) for c in configs])
        return
    console().print(
        table(
            "storage configs",
            ("id", "owner", "root", "active", "created"),
            ((c.id, c.owner, c.root_path, c.active, c.created_at) for c in configs),
            empty="none yet; add one with 'safelight config add PATH'",
        )
    )


@config_group.command("enable")
@click.argument("config_id", metavar="ID")
@pass_state
def config_enable(state: CliState, config_id: str) -> None:
    """Serve a disabled config again (as 'safelight config add' of its folder does).

    Refused when its folder now overlaps safelight's own folders (the proxy root, the
    home or the embedded database's): move the setting first.
    """
    own = own_folders(state.settings().home, state.settings().proxies)

    async def body(database: Database, settings: Settings) -> tuple[StorageConfig, bool]:
        configs = StorageConfigs(database.pool, state.clock, own_folders=own)
        found = await configs.resolve_id(config_id)
        return await configs.enable(found.id)

    config, was_active = state.with_database(body)
    if was_active:
        click.echo(printable(f"{config.id} ({config.root_path}) was already enabled"))
    else:
        click.echo(printable(f"enabled {config.id} ({config.root_path}, {config.owner})"))


@config_group.command("disable")
@click.argument("config_id", metavar="ID")
@pass_state
def config_disable(state: CliState, config_id: str) -> None:
    """Stop serving a config: Workers claim none of its work, and no new work is queued
    for it. Its queued items wait; 'safelight config enable ID' (or 'config add' of its
    folder) serves it again."""

    async def body(database: Database, settings: Settings) -> tuple[StorageConfig, bool]:
        configs = StorageConfigs(database.pool, state.clock)
        found = await configs.resolve_id(config_id)
        return await configs.disable(found.id)

    config, was_active = state.with_database(body)
    if was_active:
        click.echo(printable(f"disabled {config.id} ({config.root_path}, {config.owner})"))
    else:
        click.echo(printable(f"{config.id} ({config.root_path}) was already disabled"))


@config_group.command("retry-failed")
@click.argument("config_id", metavar="ID")
@click.option("--reason", metavar="REASON", default=None, help="Only the files failed for it.")
@click.option(
    "--path", metavar="PATH", default=None, help="Only this file, relative to the config's root."
)
@pass_state
def config_retry_failed(
    state: CliState, config_id: str, reason: str | None, path: str | None
) -> None:
    """Have the next crawl read again the files of a config that failed before (all of
    them, those of one --reason, or one --path: 'safelight assets --failed' lists both),
    changed or not, and queue that crawl (a Worker runs it; 'safelight run --retry-failed
    PATH' does both in this process). Otherwise a failed file is read again once it
    changes, or after a backoff of days (ADRs 0057, 0058)."""
    if reason is not None and path is not None:
        raise click.UsageError("--reason and --path do not go together")
    if "" in (reason, path):
        raise click.UsageError("--reason and --path take a text that is not empty")

    async def body(database: Database, settings: Settings) -> tuple[StorageConfig, int, int]:
        config = await StorageConfigs(database.pool, state.clock).resolve_id(config_id)
        async with database.pool.connection() as conn:
            from safelight.library.catalogue import assets  # the catalogue, on use

            due = await assets.errors_made_due(
                conn, config.id, state.clock.now(), reason=reason, path=path
            )
        if due.matched == 0 and (reason is not None or path is not None):
            what = f"reason {reason!r}" if reason is not None else f"path {path!r}"
            raise ConfigError(
                f"{config.id} has no failed file of {what}: 'safelight assets --failed "
                f"--config {config.id}' lists them"
            )
        from safelight.app import app_store  # the engine, on use (ADR 0063)
        from safelight.handlers import CRAWL

        item_id = await CRAWL.enqueue_for(app_store(database, settings, state.clock), config.id)
        return config, due.matched, item_id

    config, due, item_id = state.with_database(body)
    click.echo(
        printable(
            f"{plural(due, 'failed file')} of {config.id} ({config.root_path}) will be read again "
            f"by crawl item {item_id}"
        )
    )


# The catalogue's backup and restore (ADR 0061), under ``db``: registered here, where
# the group is, because only this module is loaded when ``db`` runs (ADR 0063).
from safelight.cli.backup import db_backup, db_restore  # noqa: E402

db_group.add_command(db_backup)
db_group.add_command(db_restore)
