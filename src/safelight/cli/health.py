"""``safelight health``: is this installation's work getting done? Exit 0 or 1, one line.

Three checks, against the database (never a Worker's own ``/healthz``, which says how one
process is):

1. the database answers, with this release's schema;
2. no lease is overdue past recovery: no running item whose lease expired longer ago
   than ``recovery_interval_seconds``, which lease recovery in any live Worker process
   would have taken back (none is running, or it is stuck);
3. a Worker was seen recently: some Worker process wrote its presence (the ``workers``
   table, ``safelight.observe.presence``) within ``health_worker_seen_seconds``.

It opens one connection and migrates nothing. Whatever fails, it is one line and exit 1
(an unreachable database too: a health check answers "unhealthy", not "error"); only a
setting safelight cannot use is a usage error (2), as for every command.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import click
import psycopg

from safelight.cli.admin import json_option
from safelight.cli.output import print_json
from safelight.cli.state import CliState, pass_state
from safelight.db.availability import no_answer
from safelight.db.database import resolve_url
from safelight.db.embedded import EmbeddedDatabaseError
from safelight.db.migrate import SchemaError, applied_migrations, available_migrations, verify
from safelight.db.pool import connect
from safelight.db.urls import mask_url
from safelight.logs import masker
from safelight.settings import Settings
from safelight.terminal import printable
from safelight.views.queries import health_rows
from safelight.words import plural
from safelight.work.errors import describe_briefly

EXIT_HEALTHY = 0
EXIT_UNHEALTHY = 1


@dataclass
class Verdict:
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each check run: its ``ok`` and what it found (a check not run is absent)."""
    reasons: list[str] = field(default_factory=list)
    """Why it is unhealthy, one per failed check."""

    @property
    def healthy(self) -> bool:
        return not self.reasons

    def check(self, name: str, ok: bool, reason: str | None = None, **found: Any) -> None:
        self.checks[name] = {"ok": ok, **found}
        if not ok:
            assert reason is not None
            self.checks[name]["reason"] = reason
            self.reasons.append(reason)


NO_WORKER_MEANS = (
    "with only 'safelight run' that is expected (it runs its own Workers while it works); "
    "for scheduled crawls and the dashboard's work, keep 'safelight worker' running "
    "(docs/operations.md)"
)
"""What a missing Worker means, said with it: on a machine where only ``run`` is used,
no Worker runs between runs, and health would say "unhealthy" with no way on."""


async def judge(settings: Settings, now: Any) -> Verdict:
    """Run the checks; ``now`` is the clock's ``transition_time()`` (None: the database's)."""
    verdict = Verdict()
    try:
        url, handle = await asyncio.to_thread(resolve_url, settings.database_url, settings.home)
    except EmbeddedDatabaseError as exc:
        verdict.check("database", False, f"the embedded database does not start: {exc}")
        return verdict
    try:
        conn = await connect(url, "safelight-health")
    except (psycopg.Error, OSError) as exc:
        reason = masker.mask(mask_url(describe_briefly(exc)))
        verdict.check("database", False, no_answer(reason))
        return verdict
    try:
        known = available_migrations()
        applied = await applied_migrations(conn)
        try:
            verify(applied, known)
        except SchemaError as exc:
            verdict.check("database", False, str(exc))
            return verdict
        pending = sorted({m.name for m in known} - {a.name for a in applied})
        if pending:
            verdict.check(
                "database",
                False,
                f"the database is not migrated to this release ({', '.join(pending)} "
                "not applied): run 'safelight db migrate', or start a Worker",
            )
            return verdict
        verdict.check("database", True)
        leases, workers = await health_rows(
            conn,
            now,
            recovery_seconds=settings.recovery_interval_seconds,
            within_seconds=settings.health_worker_seen_seconds,
        )
    except psycopg.Error as exc:
        reason = masker.mask(mask_url(describe_briefly(exc)))
        verdict.check("database", False, no_answer(reason))
        return verdict
    finally:
        await conn.close()
        if handle is not None:
            handle.cleanup()
    overdue = int(leases["overdue"])
    late = None
    if overdue:
        late = (
            f"{plural(overdue, 'running item has a lease', 'running items have a lease')} "
            "expired more than "
            f"{settings.recovery_interval_seconds:g} s ago (item {leases['most_overdue_id']}, "
            f"{leases['most_overdue_seconds']:.0f} s): is lease recovery running?"
        )
    verdict.check(
        "leases",
        late is None,
        late,
        overdue=overdue,
        most_overdue_id=leases["most_overdue_id"],
        most_overdue_seconds=leases["most_overdue_seconds"],
    )
    seen, within = int(workers["seen"]), settings.health_worker_seen_seconds
    missing = None
    if not seen and workers["last_seen_at"] is None:
        # A Worker stopped cleanly takes its presence with it.
        missing = f"no Worker seen in the last {within:g} s (none is running): {NO_WORKER_MEANS}"
    elif not seen:
        missing = (
            f"no Worker seen in the last {within:g} s "
            f"(last seen {workers['seconds_ago']:.0f} s ago): {NO_WORKER_MEANS}"
        )
    verdict.check(
        "workers",
        missing is None,
        missing,
        seen=seen,
        within_seconds=within,
        last_seen_at=workers["last_seen_at"],
        seconds_ago=workers["seconds_ago"],
    )
    return verdict


def summary(verdict: Verdict, settings: Settings) -> str:
    if not verdict.healthy:
        return "unhealthy: " + "; ".join(verdict.reasons)
    seen = verdict.checks["workers"]["seen"]
    return (
        f"healthy: the database answers, no lease is overdue, {plural(seen, 'Worker')} seen in the "
        f"last {settings.health_worker_seen_seconds:g} s"
    )


@click.command("health")
@json_option()
@pass_state
def health(state: CliState, as_json: bool) -> None:
    """Check that the work gets done: the database answers, no lease is overdue past
    lease recovery, a Worker was seen recently. Exit 0 healthy, 1 not, with one line
    saying why (for a container's or a monitor's health check)."""
    settings = state.settings()
    verdict = asyncio.run(judge(settings, state.clock.transition_time()))
    line = summary(verdict, settings)
    if as_json:
        print_json(
            {
                "healthy": verdict.healthy,
                "reason": line,
                "database": settings.database_display,
                "checks": verdict.checks,
            }
        )
    else:
        click.echo(printable(masker.mask(line)))
    raise click.exceptions.Exit(EXIT_HEALTHY if verdict.healthy else EXIT_UNHEALTHY)
