"""``safelight proxies remake [--missing|--all] [--wait] CONFIG``: make a config's
proxies again (ADR 0059), after a change of proxy size or quality, or a damaged proxy
root."""

from __future__ import annotations

from typing import Any

import click

from safelight.app import WorkerOptions, app_store, run_workers
from safelight.cli.admin import json_option
from safelight.cli.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_WORK_FAILED
from safelight.cli.output import console, print_json
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.handlers.proxy_remake import PROXY_REMAKE, dedup_key
from safelight.library.catalogue.configs import StorageConfigs
from safelight.library.proxystore.remaking import Mode
from safelight.settings import Settings
from safelight.work.model import Status


@click.group("proxies")
def proxies_group() -> None:
    """The proxies (thumbnails, previews, BlurHashes, web videos) of a config."""


@proxies_group.command("remake")
@click.argument("config_ref", metavar="CONFIG")
@click.option(
    "--missing",
    "mode",
    flag_value=Mode.MISSING.value,
    default=True,
    help="Only the proxies whose row or file is missing, empty or unreadable (the default).",
)
@click.option(
    "--all",
    "mode",
    flag_value=Mode.ALL.value,
    help="Every proxy, as the settings make them now (after a change of size or quality).",
)
@click.option(
    "--wait",
    is_flag=True,
    help="Run it here, in Workers of this process (with the owner's other queued work),"
    " and print what it did.",
)
@json_option()
@pass_state
def proxies_remake(state: CliState, config_ref: str, mode: str, wait: bool, as_json: bool) -> None:
    """Queue a remake of CONFIG's proxies: the missing ones (--missing, the default) or
    all (--all). The old proxies are served until the new ones are in place.

    A Worker runs it; with --wait it runs here and its result is printed (exits 1 if it
    failed). Prints the item's id (the queued one's, if a remake of that mode waits).
    """

    async def body(database: Database, settings: Settings) -> dict[str, Any]:
        config = await StorageConfigs(database.pool, state.clock).resolve_id(config_ref)
        store = app_store(database, settings, state.clock)
        item_id = await store.enqueue(
            PROXY_REMAKE.name,
            config_id=config.id,
            dedup_key=dedup_key(config.id, Mode(mode)),
            payload={"mode": mode},
        )
        document: dict[str, Any] = {"item_id": item_id, "config_id": config.id, "mode": mode}
        if not wait:
            return document
        report = await run_workers(
            settings,
            WorkerOptions(user=config.owner, until_idle=True),
            database=database,
        )
        item = await store.get(item_id)
        document["interrupted"] = report.interrupted
        if item is not None:
            document |= {"status": item.status.value, "error": item.error, "result": item.result}
        return document

    document = state.with_database(body, long_running=wait)
    code = _exit_code(document)
    if as_json:
        print_json(document)
    else:
        _print(document)
    raise click.exceptions.Exit(code)


def _exit_code(document: dict[str, Any]) -> int:
    if "status" not in document and "interrupted" not in document:
        return EXIT_OK
    if document.get("interrupted"):
        return EXIT_INTERRUPTED
    return EXIT_OK if document.get("status") == Status.SUCCEEDED.value else EXIT_WORK_FAILED


def _print(document: dict[str, Any]) -> None:
    out = console()
    item_id, mode = document["item_id"], document["mode"]
    if "interrupted" not in document:
        out.print(
            f"Queued proxy remake #{item_id} ({mode}) of config {document['config_id']}: "
            "a Worker runs it ('safelight worker'), or run it here with --wait."
        )
        return
    if document.get("interrupted"):
        out.print(f"Interrupted: proxy remake #{item_id} goes on at the next Worker.")
        return
    result = document.get("result")
    if document.get("status") != Status.SUCCEEDED.value or not isinstance(result, dict):
        out.print(f"Proxy remake #{item_id} is {document.get('status')}: {document.get('error')}")
        return
    out.print(
        f"Proxy remake #{item_id} ({mode}): assets checked {result['checked']} of "
        f"{result['total']}, remade {result['remade']} (proxies made: {result['proxies']}); "
        f"proxies found missing: {result['missing']}; failed: {result['failed']}."
    )
    for failure in result.get("failures", []):
        out.print(f"  failed: {failure['path']}: {failure['reason']}")
    for left in result.get("old_not_deleted", []):
        out.print(f"  old proxy left for the sweep: {left['path']}: {left['reason']}")
