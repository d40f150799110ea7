"""``pause`` and ``resume``: a kind, or a storage config's work, across all Workers
(ADR 0060). A pause stops claims, never a running item, which finishes."""

from __future__ import annotations

import getpass

import click

from safelight.cli.failures import Failure
from safelight.cli.queue import config_option, resolve_config
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.handlers import KINDS
from safelight.settings import Settings
from safelight.work.pausing import Pauses

KIND_NAMES = tuple(kind.name for kind in KINDS)


def _who() -> str | None:
    """Who pauses from the CLI: the machine's user (the dashboard names its user)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return None


def _kind(kind: str) -> str:
    if kind not in KIND_NAMES:
        raise Failure(f"no kind named {kind!r}; the kinds are {', '.join(KIND_NAMES)}")
    return kind


def _one_of(choices: str, *given: object) -> None:
    if sum(g is not None and g is not False for g in given) != 1:
        raise Failure(f"name {choices}: exactly one")


@click.command("pause")
@click.argument("kind", metavar="[KIND]", required=False)
@config_option("Pause this storage config's work (every kind).")
@pass_state
def pause(state: CliState, kind: str | None, config_ref: str | None) -> None:
    """Pause a kind (``pause crawl``) or a config's work, across all Workers.

    No Worker claims its queued items until ``safelight resume``; an item already
    running finishes. Other kinds and configs go on as before.
    """
    _one_of("a KIND or --config ID", kind, config_ref)

    async def body(database: Database, settings: Settings) -> str:
        pauses = Pauses(database.pool, state.clock)
        if kind is not None:
            if not await pauses.pause_kind(_kind(kind), _who()):
                return f"{kind} was paused already"
            return f"paused {kind}: no Worker starts it until `safelight resume {kind}`"
        config_id = await resolve_config(database, state, config_ref)
        assert config_id is not None  # resolve_config raises for a ref it cannot resolve
        await pauses.pause_config(config_id, _who())
        return (
            f"paused config {config_id}: no Worker starts its work until "
            f"`safelight resume --config {config_ref}`"
        )

    click.echo(state.with_database(body))


@click.command("resume")
@click.argument("kind", metavar="[KIND]", required=False)
@config_option("Resume this storage config's work.")
@click.option("--all", "every", is_flag=True, help="Resume every paused kind and config.")
@pass_state
def resume(state: CliState, kind: str | None, config_ref: str | None, every: bool) -> None:
    """Resume a paused kind, a config's work, or everything paused (``--all``)."""
    _one_of("a KIND, --config ID or --all", kind, config_ref, every)

    async def body(database: Database, settings: Settings) -> str:
        pauses = Pauses(database.pool, state.clock)
        if every:
            done = await pauses.resume_all()
            return f"resumed {done.kinds} kind(s) and {done.configs} config(s)"
        if kind is not None:
            if not await pauses.resume_kind(_kind(kind)):
                return f"{kind} was not paused"
            return f"resumed {kind}"
        config_id = await resolve_config(database, state, config_ref)
        assert config_id is not None
        await pauses.resume_config(config_id)
        return f"resumed config {config_id}"

    click.echo(state.with_database(body))
