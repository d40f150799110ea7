"""The Worker: claims one item at a time and runs it to its end, for months.

One :class:`Worker` runs one item at a time; parallelism is inside the handler
(``max_concurrent_files``). Its next claim goes out while its last outcome commits, and
it waits for that outcome before it runs the next item (ADR 0069); the outcome of an item
it waited for goes alone (docs/benchmarks.md, section 17). A process may run
several Workers sharing its pool and its LISTEN connection (``--concurrency``); the
claim, not the process, keeps two items of one storage config from running at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from safelight.core.clock import Clock
from safelight.work.backoff import Backoff
from safelight.work.errors import OUTAGE_ERRORS
from safelight.work.executor import Executor, RunResult, Shutdown, Written, shutdown_watch
from safelight.work.hours import HeavyWindow
from safelight.work.lifecycle import Claim, Lifecycle
from safelight.work.model import WorkItem
from safelight.work.observer import NO_OBSERVER, EngineObserver
from safelight.work.store import WorkStore

_log = logging.getLogger(__name__)

FinishedCallback = Callable[[WorkItem, RunResult], object]


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """One Worker's config (``Settings.worker()`` has the defaults)."""

    worker_id: str
    kinds: frozenset[str]
    # A per-user Worker serves only this user's configs; None serves every config.
    owner: str | None
    lease_seconds: float
    poll_seconds: float
    # Return once no item this Worker could run is queued or running.
    until_idle: bool
    # While the database is away, the wait between tries doubles from poll_seconds up
    # to this (work.backoff); a wake-up still cuts it short.
    backoff_max_seconds: float
    # The heavy kinds' window (ADR 0060): outside it they are left out of the claim.
    # None: every kind at any hour.
    heavy: HeavyWindow | None = None

    def __post_init__(self) -> None:
        if not self.kinds:
            raise ValueError("a Worker needs at least one kind to run")
        if self.poll_seconds <= 0 or self.lease_seconds <= 0:
            raise ValueError("poll_seconds and lease_seconds must be positive")


class Worker:
    def __init__(
        self,
        store: WorkStore,
        executor: Executor,
        clock: Clock,
        settings: WorkerSettings,
        *,
        wake: asyncio.Event | None = None,
        on_finished: FinishedCallback | None = None,
        after_item: Callable[[], object] | None = None,
        observer: EngineObserver = NO_OBSERVER,
        lifecycle: Lifecycle | None = None,
    ) -> None:
        self._store = store
        self._executor = executor
        self._clock = clock
        self._settings = settings
        self._wake = wake
        self._on_finished = on_finished
        self._after_item = after_item
        self._observer = observer
        # The process's Workers share one (its summary line counts them all).
        self._lifecycle = Lifecycle(_log, clock) if lifecycle is None else lifecycle

    @property
    def settings(self) -> WorkerSettings:
        return self._settings

    async def run_once(self, shutdown: Shutdown | None = None) -> RunResult | None:
        """Claim one item and run it to its end; None when there was nothing to claim."""
        running = await self._claim_and_run(shutdown, None)
        return None if running is None else await self._ended(running)

    async def _claim_and_run(
        self, shutdown: Shutdown | None, previous: _Sent | None, *, woken: bool = False
    ) -> _Sent | None:
        """Claim an item while ``previous``'s outcome commits, then run it up to its own
        outcome's write; None when there was nothing to claim.

        ``previous`` is seen to its end (its answer, its callbacks) before this returns
        or raises, so a Worker never has more than one outcome on its way (ADR 0069).
        The claim cannot take ``previous``'s config's next item before that outcome has
        committed: the item is running until then, and the claim passes over a busy
        config (ADR 0008).

        ``woken``: this claim is the first since the Worker waited, so no backlog is
        known. The item it takes then has its outcome go alone, and the claim
        after it goes out once that outcome is answered (as before ADR 0069): a claim
        beside it would most often find nothing (the item's config is busy until the
        outcome commits, and nothing else was queued), and its statement, on the server
        and in this process just as the outcome commits and its notification wakes the
        other Workers, makes the config's next item start later on a loaded machine
        (docs/benchmarks.md, section 17). Once a claim follows an item, a backlog is
        being drained and the claims go out beside the outcomes again.
        """
        if previous is not None and previous.woken:
            await self._ended(previous)
            previous = None
        try:
            kinds = self._claimable()
            item, sent = await self._claim(kinds)
        except asyncio.CancelledError:
            if previous is not None:
                # The Worker is cancelled: its last outcome is not waited for.
                previous.claim.quiet()
                previous.written.abandon()
            raise
        except BaseException:
            if previous is not None:
                await self._ended(previous)
            raise
        if previous is not None:
            result = await self._ended(previous)
            if item is None and previous.item.storage_config_id is not None and result.applied:
                # The claim beside the outcome found its config busy; it is free now,
                # and its next item is not left for the next wake-up.
                item, sent = await self._claim(kinds)
        if item is None:
            return None
        claim = self._lifecycle.claimed(item, self._settings.worker_id)
        started = self._clock.monotonic()
        try:
            written = await self._executor.run_to_write(item, shutdown, claimed_at=sent)
        except BaseException:
            claim.quiet()
            raise
        # The attempt's time, up to its outcome's write (not the next claim's).
        return _Sent(item, claim, written, self._clock.monotonic() - started, woken)

    async def _claim(self, kinds: frozenset[str]) -> tuple[WorkItem | None, float]:
        """An item of ``kinds`` (none if empty), and when its claim was sent."""
        s = self._settings
        # Taken before the claim is sent: the lease starts somewhere after it, and the
        # attempt's self-stop counts from it, however late the claim's answer comes.
        sent = self._clock.monotonic()
        if not kinds:
            return None, sent
        item = await self._store.claim(
            s.worker_id, kinds, owner=s.owner, lease_seconds=s.lease_seconds
        )
        return item, sent

    async def _ended(self, running: _Sent) -> RunResult:
        """Wait for ``running``'s outcome to be answered, then report its end."""
        try:
            result = await running.written.answer()
        finally:
            running.claim.quiet()
        item = running.item
        self._lifecycle.ended(running.claim, result, running.seconds)
        self._observer.item_ended(item.kind, result.outcome.name, running.seconds)
        if self._on_finished is not None:
            self._on_finished(item, result)
        if self._after_item is not None:
            # Siblings in this process re-check at once: this item's end may have made
            # them idle (--until-idle) or freed its config. Not this Worker, whose claim
            # beside the outcome was its re-check: a poke of its own is dropped (the
            # loop cleared it after the item's end before ADR 0069), one that came
            # before is kept.
            poked = self._wake is not None and self._wake.is_set()
            self._after_item()
            if self._wake is not None and not poked:
                self._wake.clear()
        return result

    async def run(self, shutdown: asyncio.Event) -> None:
        """Claim and run items until ``shutdown`` is set (or, until idle, nothing is left).

        The database being away (:data:`~safelight.work.errors.OUTAGE_ERRORS`) is waited
        out, longer after each failure in a row (:class:`~safelight.work.backoff.Backoff`);
        anything else is a bug and is raised, for the supervisor to end the process.
        """
        s = self._settings
        backoff = Backoff(s.poll_seconds, s.backoff_max_seconds)
        # One watch of the shutdown for every attempt this Worker runs (no task each).
        watch = shutdown_watch(shutdown)
        try:
            await self._loop(shutdown, watch, backoff)
        finally:
            watch.cancel()

    async def _loop(
        self, shutdown: asyncio.Event, watch: asyncio.Future[Any], backoff: Backoff
    ) -> None:
        s = self._settings
        # The last item run, its outcome sent and not yet answered: the next claim goes
        # out beside it (ADR 0069).
        running: _Sent | None = None
        # Whether the next claim is the first since the Worker waited. Not at the start:
        # a Worker (re)started may find a backlog, and claims beside from its first item.
        woken = False
        while not shutdown.is_set():
            if self._wake is not None:
                # Cleared before the claim, so a notification that arrives during it
                # makes the next wait return at once instead of being missed.
                self._wake.clear()
            try:
                previous, running = running, None
                running = await self._claim_and_run(watch, previous, woken=woken)
                woken = False
                backoff.succeeded()
                if running is not None:
                    continue
                if s.until_idle and await self._idle():
                    return
                wait = await self._until_due()
            except OUTAGE_ERRORS as exc:
                wait = backoff.failed()
                _log.warning(
                    "worker %s cannot reach the database (%s); retrying in %g s",
                    s.worker_id,
                    type(exc).__name__,
                    wait,
                )
            await self._wait(shutdown, wait)
            woken = True
        if running is not None:
            # Shut down: no claim after the last item, only its outcome's answer.
            await self._ended(running)

    def _claimable(self) -> frozenset[str]:
        """The kinds this Worker claims now: its kinds, less the heavy ones outside their
        window, by the Worker's clock (the machine's local time: ADR 0060)."""
        s = self._settings
        if s.heavy is None:
            return s.kinds
        return s.heavy.claimable(s.kinds, self._clock.now())

    async def _idle(self) -> bool:
        s = self._settings
        kinds = self._claimable()
        return not kinds or await self._store.pending_count(kinds, s.owner) == 0

    async def _until_due(self) -> float:
        """The poll interval, or less when a retry falls due sooner: no notification
        comes when an item's not-before time passes (ADR 0024), so the Worker wakes for
        it itself."""
        s = self._settings
        due = await self._store.next_due_seconds(s.kinds, s.owner)
        return s.poll_seconds if due is None else min(s.poll_seconds, due)

    async def _wait(self, shutdown: asyncio.Event, seconds: float) -> None:
        """Until a wake-up, ``seconds``, or shutdown, whichever comes first."""
        waiters: list[asyncio.Future[object]] = [
            asyncio.ensure_future(shutdown.wait()),
            asyncio.ensure_future(self._clock.sleep(seconds)),
        ]
        if self._wake is not None:
            waiters.append(asyncio.ensure_future(self._wake.wait()))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)


@dataclass(frozen=True, slots=True)
class _Sent:
    """An item this Worker ran whose outcome's write was sent and not yet answered."""

    item: WorkItem
    claim: Claim
    written: Written
    # The attempt's time, from its start to its outcome's write.
    seconds: float
    # Claimed by the first claim after a wait: no claim goes out beside its outcome.
    woken: bool


def worker_ids(name: str, count: int) -> list[str]:
    return [name if count == 1 else f"{name}/{i}" for i in range(count)]
