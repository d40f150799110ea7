"""The queue: ``enqueue``, ``worker``, ``items``, ``items show``, ``items retry``,
``cancel``, ``status``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click
from rich.console import Group

from safelight.cli.admin import F, json_option, owner_name
from safelight.cli.failures import Failure
from safelight.cli.output import (
    console,
    key_values,
    print_json,
    safe_text,
    short_id,
    table,
    truncate,
)
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.library.catalogue.configs import StorageConfigs
from safelight.settings import Settings
from safelight.views import answers
from safelight.views.answers import Answer, no_item
from safelight.views.documents import item_document, progress_line
from safelight.views.queries import list_items, queue_status, workers_seen_count
from safelight.views.scrub import changed_count, changed_line
from safelight.views.waiting import no_worker_note
from safelight.words import plural
from safelight.work.model import CancelResult, RetriedCount, RetryResult, Status, WorkItem

if TYPE_CHECKING:
    from safelight.app import RunReport

# The engine (safelight.app, safelight.handlers) is imported by the commands that use it,
# so that `status` and `items` start without the decoders (ADR 0063).

STATUS_LIMIT = 10


def config_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--config",
        "config_ref",
        metavar="ID",
        default=None,
        help=f"{help_text} A config id, or its first 8 characters.",
    )


async def resolve_config(database: Database, state: CliState, ref: str | None) -> UUID | None:
    if ref is None:
        return None
    return (await StorageConfigs(database.pool, state.clock).resolve_id(ref)).id


def parse_payload(text: str | None) -> dict[str, Any] | None:
    """The ``--payload`` option: a JSON object. Raises a one-line :class:`Failure`."""
    if text is None:
        return None
    # Before parsing: the parser recurses once a level (RecursionError, an internal error).
    from safelight.handlers.payloads import MAX_PAYLOAD_DEPTH, json_text_too_deep

    if json_text_too_deep(text):
        raise Failure(f"--payload is nested more than {MAX_PAYLOAD_DEPTH} levels deep")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Failure(f"--payload is not valid JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(payload, dict):
        raise Failure(f"--payload must be a JSON object, not {type(payload).__name__}")
    return payload


# A running item its Worker claimed beside its last outcome, not started yet (ADR 0069).
HELD = "not yet: held"


def status_cell(row: Mapping[str, Any]) -> str:
    """An item's status as the list shows it: with a cancel request, the pause that
    holds it, the heavy hours it waits for, or the time a retry waits for."""
    if row["cancel_requested"]:
        return f"{row['status']} (cancel requested)"
    if row.get("paused_at") is not None:
        at = row["paused_at"].astimezone().strftime("%Y-%m-%d %H:%M")
        by = f"by {row['paused_by']} " if row.get("paused_by") else ""
        return f"{row['status']} (paused {by}at {at})"
    if row.get("waits_for"):
        return f"{row['status']} ({row['waits_for']})"
    if row["not_before"] is not None:
        return f"{row['status']} (retry at {row['not_before']})"
    return str(row["status"])


@click.command("enqueue")
@click.argument("kind")
@config_option("Scope the item to this storage config.")
@click.option(
    "--dedup-key",
    metavar="KEY",
    default=None,
    help="Add nothing if an item with this key is queued.",
)
@click.option(
    "--payload",
    metavar="JSON",
    default=None,
    help="A JSON object, e.g. '{\"seconds\": 2}' for noop.",
)
@pass_state
def enqueue(
    state: CliState,
    kind: str,
    config_ref: str | None,
    dedup_key: str | None,
    payload: str | None,
) -> None:
    """Queue a work item of KIND and print its id (as the last line).

    With a dedup key that already has a queued item, prints that item's id instead.
    """
    body_payload = parse_payload(payload)

    async def body(database: Database, settings: Settings) -> int:
        config_id = await resolve_config(database, state, config_ref)
        from safelight.app import app_store

        store = app_store(database, settings, state.clock)
        return await store.enqueue(
            kind, config_id=config_id, dedup_key=dedup_key, payload=body_payload
        )

    click.echo(str(state.with_database(body)))


@click.command("worker")
@click.option(
    "--user",
    metavar="NAME",
    default=None,
    callback=owner_name,
    help="Serve only this user's configs (and unscoped work). Default: every config.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Workers in this process, sharing one pool.",
)
@click.option(
    "--until-idle",
    is_flag=True,
    help="Exit once no item these Workers could run is queued or running.",
)
@click.option(
    "--name",
    metavar="NAME",
    default=None,
    help="The Worker's name in the queue (default: host and process id).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    default=None,
    help="Serve /metrics (Prometheus) and /healthz on this port, on SAFELIGHT_METRICS_HOST "
    "(default 127.0.0.1) [env SAFELIGHT_METRICS_PORT; default: not served].",
)
@pass_state
def worker(
    state: CliState,
    user: str | None,
    concurrency: int,
    until_idle: bool,
    name: str | None,
    metrics_port: int | None,
) -> None:
    """Run Workers: claim work, run it, recover expired leases, schedule periodic work.

    Logs go to stderr. SIGINT or SIGTERM: stop claiming, release running items, exit 0;
    a second signal exits at once (130), leaving its items to lease recovery. A task that
    fails of a bug ends the process with 70, its items released, for the service
    manager to restart it. A database still starting is waited for; one that refuses
    the URL's role, password or database exits 3, as does the embedded server stopping.
    """
    if metrics_port is not None:
        state.overrides = {**state.overrides, "metrics_port": metrics_port}
    from safelight.app import WorkerOptions, run_workers

    options = WorkerOptions(
        concurrency=concurrency, user=user, until_idle=until_idle, name=name, serve_metrics=True
    )

    async def body(database: Database, settings: Settings) -> RunReport:
        return await run_workers(settings, options, database=database)

    # Started with its database (a reboot, `docker compose up`), a Worker waits for it
    # to be ready rather than exit and be restarted in a loop.
    settings = state.settings(default_log_level="info")
    if settings.metrics_port is not None:
        from safelight.observe.server import exposure_warning  # prometheus_client

        warning = exposure_warning(settings.metrics_host)
        if warning is not None:
            click.echo(f"warning: {warning}", err=True)
    report = state.with_database(
        body,
        default_log_level="info",
        concurrency=concurrency,
        wait_until_ready=True,
        long_running=True,
    )
    # A Worker stopped by its first signal released its items and stopped cleanly: 0, as a
    # service manager expects. A second signal stops it at once: 130.
    raise click.exceptions.Exit(report.exit_code)


@click.group("items", invoke_without_command=True)
@click.option(
    "--status",
    type=click.Choice([s.value for s in Status]),
    default=None,
    help="Only items in this status.",
)
@config_option("Only items of this storage config.")
@click.option("--kind", metavar="KIND", default=None, help="Only items of this kind.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="At most this many, newest first.",
)
@json_option()
@click.pass_context
def items(
    ctx: click.Context,
    status: str | None,
    config_ref: str | None,
    kind: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List work items, newest first; 'items show ID' shows one with its attempts."""
    if ctx.invoked_subcommand is not None:
        return
    state = ctx.find_object(CliState)
    assert state is not None

    async def body(database: Database, settings: Settings) -> list[dict[str, Any]]:
        config_id = await resolve_config(database, state, config_ref)
        rows = await list_items(
            database.pool, status=status, config_id=config_id, kind=kind, limit=limit, owner=None
        )
        from safelight.handlers import HEAVY_KINDS  # the kinds table, on use (ADR 0063)

        heavy = settings.heavy_window(HEAVY_KINDS)
        if heavy is not None:
            waits = heavy.waits_for(state.clock.now())
            for row in rows:
                if row["status"] == "queued" and row["kind"] in heavy.kinds and waits:
                    row["waits_for"] = waits
        return rows

    rows = state.with_database(body)
    if as_json:
        print_json(rows)
        return
    console().print(
        table(
            "work items",
            (
                "id",
                "kind",
                "status",
                "config",
                "attempt",
                "stalls",
                "retries",
                "requested",
                "finished",
                "worker",
                "error",
            ),
            (
                (
                    r["id"],
                    r["kind"],
                    status_cell(r),
                    short_id(r["storage_config_id"]),
                    r["attempt"],
                    r["stalls"],
                    r["retries"],
                    r["requested_at"],
                    r["finished_at"],
                    r["worker_id"],
                    truncate(r["error"], 60),
                )
                for r in rows
            ),
            empty="none",
        )
    )


@items.command("show")
@click.argument("item_id", metavar="ID", type=int)
@json_option()
@pass_state
def items_show(state: CliState, item_id: int, as_json: bool) -> None:
    """Show one work item with every attempt."""

    async def body(
        database: Database, settings: Settings
    ) -> tuple[WorkItem | None, list[dict[str, Any]]]:
        from safelight.app import app_store

        store = app_store(database, settings, state.clock)
        return await store.get(item_id), await store.attempts(item_id)

    item, attempts = state.with_database(body)
    if item is None:
        raise Failure(no_item(item_id))
    if as_json:
        print_json({**item_document(item), "attempts": attempts})
        return
    document = item_document(item)
    for key in ("payload", "result"):
        document[key] = None if document[key] is None else json.dumps(document[key])
    document["progress"] = progress_line(item.progress)
    console().print(
        Group(
            key_values(document),
            "",
            table(
                "attempts",
                ("attempt", "worker", "claimed", "ended", "outcome"),
                (
                    (a["attempt"], a["worker_id"], a["claimed_at"], a["ended_at"], a["outcome"])
                    for a in attempts
                ),
                empty="not claimed yet",
            ),
        )
    )


@items.command("retry")
@click.argument("item_id", metavar="ID", type=int, required=False)
@click.option(
    "--failed", "every_failed", is_flag=True, help="Every failed item (of --kind, of --config)."
)
@click.option("--kind", metavar="KIND", default=None, help="With --failed: only this kind.")
@config_option("With --failed: only items of this storage config.")
@pass_state
def items_retry(
    state: CliState,
    item_id: int | None,
    every_failed: bool,
    kind: str | None,
    config_ref: str | None,
) -> None:
    """Put failed item ID back to the queue, due now, its retries and stalls counted
    afresh; with --failed, every failed item (of a kind, of a config), and say how many.

    A failed item whose dedup key already has a queued item stays failed: that item
    does its work.
    """
    if every_failed:
        if item_id is not None:
            raise click.UsageError("give an item ID or --failed, not both")
        click.echo(retry_every_failed(state, kind, config_ref))
        return
    if item_id is None:
        raise click.UsageError("give an item ID, or --failed for every failed item")
    if kind is not None or config_ref is not None:
        raise click.UsageError("--kind and --config go with --failed")
    click.echo(retry_one(state, item_id))


def retry_one(state: CliState, item_id: int) -> str:
    """``items retry ID``: the line to print, or a one-line :class:`Failure`."""

    async def body(database: Database, settings: Settings) -> Answer[RetryResult]:
        from safelight.app import app_store

        return await answers.retry(app_store(database, settings, state.clock), item_id)

    answer = state.with_database(body)
    if answer.result is not RetryResult.RETRIED:
        raise Failure(answer.message)
    return answer.message


def retry_every_failed(state: CliState, kind: str | None, config_ref: str | None) -> str:
    """``items retry --failed``: how many were requeued, and how many stay failed."""

    async def body(database: Database, settings: Settings) -> RetriedCount:
        config_id = await resolve_config(database, state, config_ref)
        from safelight.app import app_store

        store = app_store(database, settings, state.clock)
        return await store.retry_failed_matching(kind=kind, config_id=config_id)

    counted = state.with_database(body)
    line = f"retried {plural(counted.retried, 'failed item')}: queued again, due now"
    if counted.left_failed:
        line += (
            f"; {counted.left_failed} stay failed: their dedup key already has a queued "
            "item, or a newer failed item of their key was retried"
        )
    return line


@click.command("cancel")
@click.argument("item_id", metavar="ID", type=int)
@pass_state
def cancel(state: CliState, item_id: int) -> None:
    """Cancel a work item: a queued one at once, a running one as its Worker hears."""

    async def body(database: Database, settings: Settings) -> Answer[CancelResult]:
        from safelight.app import app_store

        return await answers.cancel(app_store(database, settings, state.clock), item_id)

    answer = state.with_database(body)
    if answer.result is CancelResult.NOT_FOUND:
        raise Failure(answer.message)
    click.echo(answer.message)


@click.command("status")
@json_option()
@pass_state
def status(state: CliState, as_json: bool) -> None:
    """The queue at a glance: counts by status and kind, running items per config with
    their Worker and lease expiry, stalls, retries waiting for their time, and the last
    failures."""

    async def body(database: Database, settings: Settings) -> dict[str, Any]:
        from safelight.handlers import HEAVY_KINDS  # the kinds table, on use (ADR 0063)

        now = state.clock.transition_time()
        document = await queue_status(
            database.pool,
            now,
            limit=STATUS_LIMIT,
            owner=None,
            heavy=settings.heavy_window(HEAVY_KINDS),
            at=state.clock.now(),
        )
        seen = await workers_seen_count(
            database.pool, now, within_seconds=settings.health_worker_seen_seconds
        )
        queued = int(document["totals"].get(Status.QUEUED.value, 0))
        changed = await changed_count(database.pool, owner=None)
        return {
            "database": settings.database_display,
            **document,
            "no_worker": no_worker_note(queued, seen),
            "originals_changed": changed,
        }

    document = state.with_database(body)
    if as_json:
        print_json(document)
        return
    statuses = [s.value for s in Status]
    by_kind: dict[str, dict[str, int]] = {}
    for row in document["counts"]:
        by_kind.setdefault(row["kind"], {})[row["status"]] = int(row["count"])
    totals = document["totals"]
    stalls = document["stalls"]
    retries = document["retries"]
    heavy = document["heavy_hours"]
    console().print(
        Group(
            safe_text(f"database: {document['database']}"),
            safe_text(f"server: {document['server_version']}"),
            *filter(None, [changed_line(document["originals_changed"])]),
            "",
            table(
                "items by kind and status",
                ("kind", *statuses),
                (
                    (kind, *(counts.get(s, 0) for s in statuses))
                    for kind, counts in sorted(by_kind.items())
                ),
                empty="the queue is empty",
            ),
            "total: " + ", ".join(f"{totals.get(s, 0)} {s}" for s in statuses),
            *((safe_text(document["no_worker"], style="bold"),) if document["no_worker"] else ()),
            "",
            table(
                "paused (no Worker starts their work; `safelight resume`)",
                ("kind or config", "root", "queued", ""),
                (
                    (
                        p["kind"] or short_id(p["config_id"]),
                        p["root_path"] or "",
                        p["queued"],
                        p["shown"],
                    )
                    for p in document["paused"]
                ),
                empty="nothing",
            ),
            safe_text(
                "heavy hours: always (SAFELIGHT_HEAVY_HOURS unset)"
                if heavy is None
                else f"heavy hours: {heavy['window']} for {', '.join(heavy['kinds'])}: "
                f"{heavy['shown']}"
            ),
            "",
            table(
                "running",
                (
                    "item",
                    "kind",
                    "config",
                    "root",
                    "owner",
                    "worker",
                    "attempt",
                    "started",
                    "lease expires",
                ),
                (
                    (
                        r["id"],
                        r["kind"],
                        short_id(r["storage_config_id"]),
                        r["root_path"],
                        r["owner"],
                        r["worker_id"],
                        r["attempt"],
                        HELD if r["held"] else r["started_at"],
                        r["lease_expires_at"] if not r["lease_expired"] else "expired",
                    )
                    for r in document["running"]
                ),
                empty="nothing",
            ),
            "",
            f"stalls: {plural(stalls['stalled_attempts'], 'stalled attempt')} in all; "
            + plural(
                stalls["unfinished_items_with_stalls"],
                "queued or running item has stalled",
                "queued or running items have stalled",
            ),
            table(
                "recent stalls",
                ("item", "kind", "config", "attempt", "worker", "recovered", "now"),
                (
                    (
                        r["id"],
                        r["kind"],
                        short_id(r["storage_config_id"]),
                        r["attempt"],
                        r["worker_id"],
                        r["ended_at"],
                        r["status"],
                    )
                    for r in stalls["recent"]
                ),
                empty="none",
            ),
            "",
            "retries: "
            + plural(
                retries["waiting"],
                "queued item waits for its retry time",
                "queued items wait for their retry time",
            ),
            table(
                "next retries",
                ("item", "kind", "config", "retry", "due", "last error"),
                (
                    (
                        r["id"],
                        r["kind"],
                        short_id(r["storage_config_id"]),
                        r["retries"],
                        r["not_before"],
                        truncate(r["error"], 60),
                    )
                    for r in retries["soonest"]
                ),
                empty="none",
            ),
            "",
            table(
                "last failures",
                ("item", "kind", "config", "failed", "error"),
                (
                    (
                        r["id"],
                        r["kind"],
                        short_id(r["storage_config_id"]),
                        r["finished_at"],
                        truncate(r["error"], 100),
                    )
                    for r in document["failures"]
                ),
                empty="none",
            ),
        )
    )
