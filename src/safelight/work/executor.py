"""The executor: runs one claimed work item's attempt and records how it ended.

One attempt, from claim to outcome (docs/executor.md has the whole story):

1. The handler for the item's kind runs in a task of its own. Beside it, heartbeats
   renew the lease every ``heartbeat_seconds``, each call limited to one interval by a
   timer on the injected clock, so a hung call does not hold up the next one. The
   heartbeats' task starts when the first beat falls due (a timer until then), so an
   item that ends sooner costs no task for them.
2. A self-stop deadline, also a timer on the clock, falls half a lease after the last
   heartbeat that succeeded (the claim counts as the first). It does not depend on any
   heartbeat call returning: with every call hanging it still fires. Lease recovery
   elsewhere needs the whole lease to expire, so a cut-off attempt has stopped at least
   half a lease before anyone else can claim work on its storage config.
3. The attempt stops when a heartbeat says the item is lost or cancel-requested, when
   the self-stop deadline passes, or when the Worker shuts down. Stopping cancels the
   handler's task; cancellation is cooperative (see :mod:`safelight.work.context`), so
   the executor waits up to ``shutdown_grace_seconds`` for the handler to finish.
4. The outcome follows from why the attempt stopped, never from what the handler raised
   while stopping. A handler cancelled because its attempt stopped never reaches
   ``fail`` (docs/executor.md): a self-stopped attempt that failed its item once the
   database was back would end the item for good with no retry.
5. :func:`~safelight.work.outcome.record` makes the outcome's one store call, if any.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from safelight.core.clock import Clock, TimerHandle, abandon, wait_done, wait_with_timeout
from safelight.work.attemptlog import AttemptLog, attempt_fields
from safelight.work.cancels import CancelRequests
from safelight.work.context import (
    AttemptStore,
    Handler,
    HandlerContext,
    ProgressCallback,
)
from safelight.work.errors import (
    TRANSIENT_DATABASE_ERRORS,
    AttemptLost,
    AttemptStopped,
    StopReason,
    WorkError,
    WoundDown,
    describe,
)
from safelight.work.hours import HeavyWindow
from safelight.work.model import Beat, WorkItem
from safelight.work.observer import NO_OBSERVER, EngineObserver
from safelight.work.outcome import (
    Abandoned,
    Cancelled,
    ClaimedLate,
    Deferred,
    Failed,
    Interrupted,
    Lost,
    Outcome,
    Released,
    Retrying,
    SelfStopped,
    Succeeded,
    UnknownKind,
    Write,
    store_call,
    write_for,
)
from safelight.work.retry import Retries

__all__ = [
    "AttemptStore",
    "Executor",
    "ExecutorSettings",
    "RunResult",
    "Shutdown",
    "longest_heartbeat",
    "shutdown_watch",
]

Shutdown: TypeAlias = asyncio.Event | asyncio.Future[Any]
"""What asks an attempt to stop: the shutdown event, or its :func:`shutdown_watch`."""


def shutdown_watch(shutdown: asyncio.Event) -> asyncio.Future[Any]:
    """A future that is done once ``shutdown`` is set, for any number of attempts to heed
    by a callback: a Worker makes one for all the attempts it runs, instead of each
    attempt waiting for the event in a task of its own. Cancel it when done with it (a
    cancelled watch asks nothing to stop)."""
    return asyncio.ensure_future(shutdown.wait())


# A later reason replaces an earlier one only if it is graver: a request to stop gives
# way to a loss of ownership, which nothing undoes.
_ESCALATION = (
    StopReason.SHUTDOWN,
    StopReason.CANCEL_REQUESTED,
    StopReason.SELF_STOPPED,
    StopReason.LOST,
)


def longest_heartbeat(lease_seconds: float) -> float:
    """The longest heartbeat interval a lease allows: a quarter of it, so that at least
    two heartbeats fall inside the self-stop margin (half a lease) and one failed beat
    never stops an attempt by itself."""
    return lease_seconds / 4


@dataclass(frozen=True, slots=True)
class ExecutorSettings:
    """Timing of one attempt, in seconds (``Settings.executor()`` has the defaults).

    ``heartbeat_seconds`` is at most :func:`longest_heartbeat`. ``shutdown_grace_seconds``
    is how long a stopped attempt waits for its handler to finish before abandoning it.
    """

    lease_seconds: float
    heartbeat_seconds: float
    shutdown_grace_seconds: float
    # The heavy kinds' window (ADR 0060): an attempt of one winds down when it ends.
    # None: no window, heavy kinds run at any hour.
    heavy: HeavyWindow | None = None

    def __post_init__(self) -> None:
        for name in ("lease_seconds", "heartbeat_seconds", "shutdown_grace_seconds"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
        if self.lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be > 0, got {self.lease_seconds!r}")
        if self.heartbeat_seconds <= 0:
            raise ValueError(f"heartbeat_seconds must be > 0, got {self.heartbeat_seconds!r}")
        if self.heartbeat_seconds > longest_heartbeat(self.lease_seconds):
            raise ValueError(
                f"heartbeat_seconds must be at most lease_seconds / 4 "
                f"({longest_heartbeat(self.lease_seconds):g}), got {self.heartbeat_seconds!r}"
            )
        if self.shutdown_grace_seconds < 0:
            raise ValueError(
                f"shutdown_grace_seconds must be >= 0, got {self.shutdown_grace_seconds!r}"
            )


@dataclass(frozen=True, slots=True)
class RunResult:
    """How one attempt ended and what became of its store call.

    ``write`` is the call the outcome made (``None``: nothing to write). ``applied`` is
    ``True`` only if that call was made and the store confirmed it; ``False`` with a
    ``write`` means the attempt had lost the item, or the call failed or timed out, and
    lease recovery will take the item back.
    """

    outcome: Outcome
    write: Write | None
    applied: bool


class Executor:
    """Runs claimed work items, one :meth:`run` per attempt; holds no state between runs."""

    def __init__(
        self,
        store: AttemptStore,
        clock: Clock,
        handlers: Mapping[str, Handler],
        settings: ExecutorSettings,
        logger: logging.Logger,
        on_progress: ProgressCallback | None = None,
        observer: EngineObserver = NO_OBSERVER,
        *,
        retries: Retries | None = None,
        cancels: CancelRequests | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._handlers = handlers
        self._settings = settings
        self._logger = logger
        self._on_progress = on_progress
        # The kinds' retry policies; without them no failure is retried.
        self._retries = Retries() if retries is None else retries
        self._observer = observer
        # Cancel requests heard by notification (None: heard by heartbeats only).
        self._cancels = cancels

    async def run(
        self,
        item: WorkItem,
        shutdown: Shutdown | None = None,
        *,
        claimed_at: float | None = None,
    ) -> RunResult:
        """Run the attempt ``item.attempt`` of the claimed ``item`` and record its outcome.

        Call it right after the claim: the claim's lease counts as the first heartbeat.
        ``claimed_at`` is the clock's ``monotonic()`` when the claim was *sent* (default:
        now). The database set the lease somewhere after that, so counting the self-stop
        from it keeps the full margin even when the claim's answer came late: a claim
        answered half a lease or more after it was sent starts nothing: the item is
        released (no stall), as the attempt did no work (:class:`ClaimedLate`).
        Setting ``shutdown`` asks the attempt to stop; the item is released (back to the
        queue, no stall) once the handler has stopped. It may be the event itself or a
        future that is done once the event is set (:func:`shutdown_watch`, which a
        Worker makes once for all its attempts). Nothing is left running when it
        returns, except a handler that ignored its cancellation for the whole grace
        period, which is cancelled and abandoned (:class:`~safelight.work.outcome.Abandoned`).

        Cancelling ``run`` itself is not a shutdown: the handler is cancelled and
        abandoned, nothing is written, and lease recovery takes the item back.
        """
        written = await self.run_to_write(item, shutdown, claimed_at=claimed_at)
        return await written.answer()

    async def run_to_write(
        self,
        item: WorkItem,
        shutdown: Shutdown | None = None,
        *,
        claimed_at: float | None = None,
    ) -> Written:
        """:meth:`run` up to its outcome's write: returns once the attempt is over and
        its write is sent, with the write's answer still to come (:meth:`Written.answer`).

        A Worker claims its next item while this item's outcome commits (ADR 0069): the
        claim and the outcome are on the server at once. The rule is untouched by it: the
        item stays running, so its config stays busy, until the outcome has committed.
        """
        log = AttemptLog(self._logger, item)
        handler = self._handlers.get(item.kind)
        half_lease = self._settings.lease_seconds / 2
        waited = None if claimed_at is None else self._clock.monotonic() - claimed_at
        if waited is not None and waited >= half_lease:
            # Past the self-stop deadline before the first step: no handler, no file.
            log.warning(
                "the claim's answer came %.3g s after it was sent (half a lease is %g s); "
                "starting nothing and giving the item back",
                waited,
                half_lease,
            )
            outcome: Outcome = ClaimedLate(waited)
        elif handler is None:
            log.error("no handler for kind %s", item.kind)
            outcome = UnknownKind(item.kind)
        else:
            attempt = _Attempt(self, item, handler, log, claimed_at)
            outcome = await attempt.run(shutdown)
            return self._send(
                item, outcome, log, attempt.unsaved_progress(), attempt.raise_heartbeats_bug
            )
        return self._send(item, outcome, log)

    def _send(
        self,
        item: WorkItem,
        outcome: Outcome,
        log: AttemptLog,
        progress: Mapping[str, Any] | None = None,
        after: Callable[[], None] | None = None,
    ) -> Written:
        """Send the outcome's write, after saving the handler's last progress report if
        no heartbeat saved it (an outcome that writes nothing saves nothing either).

        A batched outcome (success, failure, cancellation) is on its way when this
        returns; the other writes, and a save of progress, go out once the answer is
        waited for."""
        write = write_for(outcome)
        if write is None:
            return Written.answered(RunResult(outcome, None, False), after)

        async def save_and_record() -> bool:
            assert progress is not None
            await self._store.save_progress(item.id, item.attempt, progress)
            return await store_call(self._store, item, write)

        # With no progress to save, the store's own awaitable is waited for: a batched
        # outcome is a future, so no task is made for it.
        writing: Awaitable[bool] = (
            store_call(self._store, item, write) if progress is None else save_and_record()
        )
        # Limited like a heartbeat: a write hung on a dead connection must not hold the
        # Worker forever.
        seconds = self._settings.heartbeat_seconds
        return Written(self._clock, seconds, outcome, write, writing, log, after)


class Written:
    """An attempt's outcome whose write was sent and whose answer is still to come.

    Exactly one of :meth:`answer` and :meth:`abandon` is called, once.
    """

    __slots__ = (
        "_after",
        "_clock",
        "_log",
        "_outcome",
        "_result",
        "_seconds",
        "_sent",
        "_write",
        "_writing",
    )

    def __init__(
        self,
        clock: Clock,
        seconds: float,
        outcome: Outcome,
        write: Write,
        writing: Awaitable[bool],
        log: AttemptLog,
        after: Callable[[], None] | None = None,
    ) -> None:
        self._clock = clock
        # The limit counts from when the write was sent: a Worker that claimed in the
        # meantime does not make it longer.
        self._seconds = seconds
        self._sent = clock.monotonic()
        self._outcome = outcome
        self._write: Write | None = write
        self._writing: Awaitable[bool] | None = writing
        self._log: AttemptLog | None = log
        self._after = after
        self._result: RunResult | None = None

    @classmethod
    def answered(cls, result: RunResult, after: Callable[[], None] | None = None) -> Written:
        """An outcome with nothing (left) to write: its answer is ``result``."""
        written = cls.__new__(cls)
        written._writing = None  # nothing to give up (abandon)
        written._after = after
        written._result = result
        return written

    async def answer(self) -> RunResult:
        """Wait for the write's answer; if it did not apply, the lease expires and
        recovery requeues the item."""
        result = await self._answer()
        if self._after is not None:
            self._after()
        return result

    async def _answer(self) -> RunResult:
        if self._result is not None:
            return self._result
        outcome, write, writing, log = self._outcome, self._write, self._writing, self._log
        assert write is not None and writing is not None and log is not None
        call = write.name
        seconds = self._seconds
        left = self._sent + seconds - self._clock.monotonic()
        try:
            if isinstance(writing, asyncio.Future) and writing.done():
                # Answered while the Worker claimed (ADR 0069): no timer to arm.
                applied = writing.result()
            else:
                applied = await wait_with_timeout(self._clock, writing, left)
        except TimeoutError:
            log.error(
                "%s timed out after %g s; lease recovery will requeue the item", call, seconds
            )
            return RunResult(outcome, write, False)
        except Exception as exc:
            log.error("%s failed: %s; lease recovery will requeue the item", call, describe(exc))
            return RunResult(outcome, write, False)
        if not applied:
            log.warning("%s not applied: the attempt had lost the item", call)
        return RunResult(outcome, write, applied)

    def abandon(self) -> None:
        """Stop waiting for the answer (the Worker is cancelled): a batched write already
        sent runs to its end, a write not yet sent is never sent."""
        writing = self._writing
        if isinstance(writing, asyncio.Future):
            writing.cancel()
        elif inspect.iscoroutine(writing):
            writing.close()


@dataclass(frozen=True, slots=True)
class _Ending:
    """How a handler's task ended: cancelled, or raised ``error``, or returned ``result``."""

    cancelled: bool
    error: BaseException | None
    result: dict[str, Any] | None

    @classmethod
    def of(cls, task: asyncio.Task[dict[str, Any] | None]) -> _Ending:
        if task.cancelled():
            return cls(True, None, None)
        error = task.exception()
        return cls(False, error, None if error is not None else task.result())


_CANCELLED_UNASKED = "CancelledError: the handler was cancelled while its attempt was not stopped"


def verdict(ending: _Ending, reason: StopReason | None) -> Outcome:
    """The outcome of a finished handler, decided by why its attempt stopped (``None``: it
    was not stopped), never by what the handler raised while stopping. Pure: the caller
    logs and writes."""
    error = ending.error
    if reason is None:
        if ending.cancelled:
            return Failed(_CANCELLED_UNASKED)
        if error is None:
            return Succeeded(ending.result)
        if isinstance(error, TRANSIENT_DATABASE_ERRORS):
            return Interrupted(describe(error))
        return Failed(describe(error))
    if reason is StopReason.LOST:
        return Lost()
    if reason is StopReason.SELF_STOPPED:
        return SelfStopped()
    if not ending.cancelled and error is None:
        # It finished before it noticed the request to stop: keep the work.
        return Succeeded(ending.result)
    if reason is StopReason.CANCEL_REQUESTED:
        return Cancelled()
    return Released()


class _Attempt:
    """The live state of one attempt: its handler, heartbeats and self-stop timer.

    Made without side effects; :meth:`run` goes through the attempt's steps: start the
    handler and arm the timers, wait for the handler (with a grace period once stopped),
    heed a loss its fence found, decide the outcome (:func:`verdict`, then the kind's
    retry policy for a failure: ``Retries.after``), report it, clean up.
    Everything here runs on the event loop's thread, so no locks: a stop is one
    synchronous step that records the reason, sets ``cancelled`` and cancels the handler.

    Only the handler is sure to get a task: the heartbeats get theirs when the first
    beat falls due, and a shutdown is heeded through a callback on the Worker's
    :func:`shutdown_watch` (a task of the attempt's own only when handed a bare event).
    A no-op item costs the Worker one task and a few timers (docs/benchmarks.md, 3).
    """

    def __init__(
        self,
        executor: Executor,
        item: WorkItem,
        handler: Handler,
        log: AttemptLog,
        claimed_at: float | None = None,
    ) -> None:
        self._store = executor._store
        self._clock = executor._clock
        self._settings = executor._settings
        self._on_progress = executor._on_progress
        self._retries = executor._retries
        self._observer = executor._observer
        self._cancels = executor._cancels
        self._item = item
        self._run_handler = handler
        self._log = log
        self._claimed_at = claimed_at
        self._half_lease = self._settings.lease_seconds / 2
        self._reason: StopReason | None = None
        self._misses = 0  # heartbeat calls in a row that failed or timed out
        # The handler's last progress report, while no write of the item holds it yet.
        self._unsaved: dict[str, Any] | None = None
        self._cancelled = asyncio.Event()
        self._winding_down = asyncio.Event()
        self._wind_down: TimerHandle | None = None
        # Set by _start: the last heartbeat that counted, the handler, the timers.
        self._last_beat: float
        # Done once the handler is done or the attempt is stopped, whichever is first.
        self._settled: asyncio.Future[None]
        self._self_stop: TimerHandle
        self._first_beat: TimerHandle
        self._handler: asyncio.Task[dict[str, Any] | None]
        self._beats: asyncio.Task[None] | None = None
        # The shutdown future this attempt listens to (a Worker's watch, or its own).
        self._shutdown: asyncio.Future[object] | None = None
        self._helpers: list[asyncio.Future[Any]] = []

    async def run(self, shutdown: Shutdown | None) -> Outcome:
        """Run the attempt to its outcome; nothing of it is left running on return,
        except a handler that would not stop, which is abandoned."""
        self._start(shutdown)
        try:
            await self._settled
            if not await self._handler_stopped_in_grace():
                return self._abandoned()
            ending = _Ending.of(self._handler)
            if isinstance(ending.error, AttemptLost):
                self._stop(StopReason.LOST)  # a fenced transaction found the item taken
            outcome = self._retries.after(verdict(ending, self._reason), self._item, ending.error)
            if self._reason is None and isinstance(ending.error, WoundDown):
                outcome = self._deferred(ending.error)
            self._report(outcome, ending)
            return outcome
        finally:
            await self._clean_up()

    # --- the steps -------------------------------------------------------------------

    def _start(self, shutdown: Shutdown | None) -> None:
        """Arm the self-stop and the first heartbeat, start the handler, heed shutdown."""
        self._settled = asyncio.get_running_loop().create_future()
        # The claim set the lease: when it was sent counts as the first success.
        now = self._clock.monotonic()
        claimed_at = self._claimed_at
        self._last_beat = now if claimed_at is None else min(claimed_at, now)
        self._self_stop = self._clock.call_later(
            self._last_beat + self._half_lease - now, self._self_stop_due
        )
        self._first_beat = self._clock.call_later(
            self._last_beat + self._settings.heartbeat_seconds - now, self._start_beats
        )
        context = HandlerContext(
            item=self._item,
            clock=self._clock,
            store=self._store,
            logger=logging.LoggerAdapter(self._log.logger, attempt_fields(self._item)),
            cancelled=self._cancelled,
            ensure_alive=self.ensure_alive,
            on_progress=self._reported,
            winding_down=self._winding_down,
        )
        self._arm_wind_down()
        self._handler = asyncio.create_task(self._run_handler(context))
        self._handler.add_done_callback(self._handler_done)
        # After the handler's task is made and before it takes its first step: with
        # ``shutdown`` already set, or a cancel of this attempt already heard (it was
        # claimed beside the last outcome, ADR 0069), the handler is cancelled before it
        # starts.
        self._heed(shutdown)
        if self._cancels is not None:
            self._cancels.watch(self._item.id, self._item.attempt, self._cancel_heard)

    def _arm_wind_down(self) -> None:
        """An attempt of a heavy kind winds down when its window ends (at once if it
        was claimed just as it ended)."""
        heavy = self._settings.heavy
        if heavy is None:
            return
        seconds = heavy.wind_down_in(self._item.kind, self._clock.now())
        if seconds is not None:
            self._wind_down = self._clock.call_later(seconds, self._window_ended)

    def _window_ended(self) -> None:
        heavy = self._settings.heavy
        assert heavy is not None  # armed only with a window
        self._log.info(
            "heavy hours (%s) are over: finishing the work started, then stopping until %s",
            heavy.hours,
            f"{heavy.hours.start:%H:%M}",
        )
        self._winding_down.set()

    def _deferred(self, error: WoundDown) -> Outcome:
        """The handler wound down when asked: back to the queue until the window opens.
        A handler raising ``WoundDown`` unasked (no window) fails as any error does."""
        heavy = self._settings.heavy
        if heavy is None or not self._winding_down.is_set():
            return Failed(describe(error))
        now = self._clock.now()
        note = f"{error}; goes on when heavy hours start ({heavy.hours.start:%H:%M})"
        return Deferred(note, heavy.hours.seconds_to_start(now))

    def _heed(self, shutdown: Shutdown | None) -> None:
        """Stop for ``shutdown`` at once if it is set, else once it is."""
        if shutdown is None:
            return
        if isinstance(shutdown, asyncio.Event):
            if shutdown.is_set():
                self._stop(StopReason.SHUTDOWN)
                return
            shutdown = shutdown_watch(shutdown)
            self._helpers.append(shutdown)  # its own: cancelled as the attempt ends
        if shutdown.done():
            self._shutdown_set(shutdown)
            return
        self._shutdown = shutdown
        shutdown.add_done_callback(self._shutdown_set)

    def _cancel_heard(self) -> None:
        # The flag is set and committed (the notification came after its commit): the
        # next heartbeat would say the same, later.
        self._stop(StopReason.CANCEL_REQUESTED)

    def _shutdown_set(self, shutdown: asyncio.Future[object]) -> None:
        # A watch cancelled (its Worker stopped watching) is no request to stop.
        if not shutdown.cancelled():
            self._stop(StopReason.SHUTDOWN)

    def _handler_done(self, _: asyncio.Task[dict[str, Any] | None]) -> None:
        if not self._settled.done():
            self._settled.set_result(None)

    async def _handler_stopped_in_grace(self) -> bool:
        """Whether the handler is done, waiting up to the grace period for it once the
        attempt was stopped."""
        if self._handler.done():
            return True
        return await wait_done(self._clock, self._handler, self._settings.shutdown_grace_seconds)

    def _abandoned(self) -> Abandoned:
        assert self._reason is not None  # only a stop starts the grace period
        self._log.error(
            "the handler did not stop within %g s of being asked (%s); "
            "writing nothing, lease recovery will requeue the item",
            self._settings.shutdown_grace_seconds,
            self._reason,
        )
        return Abandoned(self._reason)

    def _report(self, outcome: Outcome, ending: _Ending) -> None:
        """Log what the verdict means for the item, and what the handler raised while it
        was being stopped (which the verdict leaves aside)."""
        error = ending.error
        if self._reason is not None and error is not None and not isinstance(error, AttemptStopped):
            self._log.warning(
                "the handler raised while stopping (%s): %s",
                self._reason,
                describe(error),
                exc_info=error,
            )
        if isinstance(outcome, Interrupted):
            self._log.warning(
                "interrupted by the database (%s); it goes back to the queue, counting a stall",
                outcome.error,
            )
        elif isinstance(outcome, Retrying):
            self._log.warning(
                "failed (%s); it may pass: it goes back to the queue and is tried again in %.3g s",
                outcome.error,
                outcome.delay_seconds,
                exc_info=error,
            )
        elif isinstance(outcome, Failed):
            # An error raised on purpose (a malformed payload, a handler that cannot do
            # its work) says all in its message: one line. Anything else is a surprise,
            # logged with its traceback.
            self._log.error(
                "failed: %s",
                outcome.error,
                exc_info=None if isinstance(error, WorkError) else error,
            )

    def _beats_ended(self, beats: asyncio.Task[None]) -> None:
        """The heartbeats never end on their own but by a bug (their store calls' errors
        are caught): no lease renewal is coming, so the attempt stops now, as a self-stop
        would half a lease later, writing nothing. The error is raised once the attempt
        is over (:meth:`raise_heartbeats_bug`), to end the process (docs/operations.md)."""
        if beats.cancelled() or (error := beats.exception()) is None:
            return
        self._log.error(
            "the heartbeats stopped on a bug (%s); stopping the attempt, writing nothing",
            describe(error),
        )
        self._stop(StopReason.SELF_STOPPED)

    def raise_heartbeats_bug(self) -> None:
        """Raise what ended the heartbeats, if a bug did (see :meth:`_beats_ended`)."""
        beats = self._beats
        if beats is None or not beats.done() or beats.cancelled():
            return
        if (error := beats.exception()) is not None:
            raise error

    async def _clean_up(self) -> None:
        if self._cancels is not None:
            self._cancels.unwatch(self._item.id, self._item.attempt)
        self._self_stop.cancel()
        if self._wind_down is not None:
            self._wind_down.cancel()
        self._first_beat.cancel()
        if self._shutdown is not None:
            self._shutdown.remove_done_callback(self._shutdown_set)
        for helper in self._helpers:
            helper.cancel()
        if not self._handler.done():
            abandon(self._handler)
        # Our own helpers honour cancellation at once (a hung heartbeat call is
        # abandoned, not awaited), so this does not wait on the database.
        if self._helpers:
            await asyncio.wait(self._helpers)

    def _reported(self, item: WorkItem, counters: Mapping[str, int]) -> None:
        """A progress report: kept for the next heartbeat (or the outcome's write) to
        save, then handed to the Worker's callback."""
        self._unsaved = {"attempt": item.attempt, "counts": dict(counters)}
        if self._on_progress is not None:
            self._on_progress(item, counters)

    def unsaved_progress(self) -> dict[str, Any] | None:
        """The last progress report no heartbeat has saved yet, or None."""
        return self._unsaved

    def ensure_alive(self) -> None:
        """Raise :class:`AttemptStopped` if the attempt must stop; see HandlerContext.

        Checks the self-stop deadline against the monotonic clock itself: after a freeze
        (SIGSTOP, a long GC pause) the handler may run before the overdue timer does.
        """
        if self._overdue():
            self._stop(StopReason.SELF_STOPPED)
        if self._reason is not None:
            raise AttemptStopped(self._reason)

    # --- stopping --------------------------------------------------------------------

    def _overdue(self) -> bool:
        return self._clock.monotonic() - self._last_beat >= self._half_lease

    def _self_stop_due(self) -> None:
        self._stop(StopReason.SELF_STOPPED)

    def _stop(self, reason: StopReason) -> None:
        held = self._reason
        if held is not None and _ESCALATION.index(reason) <= _ESCALATION.index(held):
            return
        self._reason = reason
        if reason is StopReason.SELF_STOPPED:
            self._observer.self_stopped()
            self._log.warning(
                "self-stopped: no successful heartbeat for %g s (half the %g s lease); "
                "writing nothing, lease recovery will requeue it",
                self._clock.monotonic() - self._last_beat,
                self._settings.lease_seconds,
            )
        elif reason is StopReason.LOST:
            self._log.warning("lost the item; stopping the handler, writing nothing")
        else:
            self._log.info("%s, stopping the handler", reason)
        if held is None:
            # Cancelled once: a graver reason arriving later changes the outcome but
            # does not interrupt the handler's clean-up with a second cancellation.
            self._cancelled.set()
            if not self._settled.done():
                self._settled.set_result(None)
            self._handler.cancel()
        if reason is StopReason.SELF_STOPPED or reason is StopReason.LOST:
            # The claim is gone or given up: no more heartbeats, which are writes too.
            # After a cancel request or during shutdown they go on, keeping the lease
            # while the handler winds down.
            self._self_stop.cancel()
            self._first_beat.cancel()
            if self._beats is not None:
                self._beats.cancel()

    # --- heartbeats ------------------------------------------------------------------

    def _start_beats(self) -> None:
        """The first beat is due: from now on the heartbeats run in a task of their own."""
        beats = asyncio.create_task(self._heartbeats())
        beats.add_done_callback(self._beats_ended)
        self._beats = beats
        self._helpers.append(beats)

    async def _heartbeats(self) -> None:
        """Beat every interval until the attempt ends; never fatal by itself.

        Started when the first beat is due (:meth:`_start_beats`). Each beat starts one
        interval after the previous one started. A call is limited to one interval, so
        a hung call times out just as the next beat is due.
        """
        interval = self._settings.heartbeat_seconds
        while True:
            if self._overdue():  # frozen past the deadline before the timer could fire
                self._stop(StopReason.SELF_STOPPED)
                return
            sent = self._clock.monotonic()
            if not await self._beat(sent, interval):
                return
            await self._clock.sleep(sent + interval - self._clock.monotonic())

    async def _beat(self, sent: float, interval: float) -> bool:
        """One heartbeat, sent at ``sent``; False once the attempt has stopped for it."""
        item = self._item
        progress, self._unsaved = self._unsaved, None
        try:
            try:
                beat = await wait_with_timeout(
                    self._clock,
                    self._store.heartbeat(
                        item.id, item.attempt, self._settings.lease_seconds, progress
                    ),
                    interval,
                )
            except BaseException:
                # Not saved, as far as we know: the next beat (or the end) saves it,
                # unless the handler has reported since.
                if self._unsaved is None:
                    self._unsaved = progress
                raise
        except TimeoutError:
            self._misses += 1
            self._observer.heartbeat_failed()
            self._log.warning(
                "heartbeat timed out after %g s (%d in a row)", interval, self._misses
            )
            return True
        except Exception as exc:
            self._misses += 1
            self._observer.heartbeat_failed()
            self._log.warning("heartbeat failed (%d in a row): %s", self._misses, describe(exc))
            return True
        self._misses = 0
        if self._overdue():  # the answer came after the deadline had passed
            self._stop(StopReason.SELF_STOPPED)
            return False
        if beat is Beat.LOST:
            self._stop(StopReason.LOST)
            return False
        if beat is Beat.CANCEL_REQUESTED:
            self._stop(StopReason.CANCEL_REQUESTED)
        else:
            self._renewed(sent)
        return True

    def _renewed(self, sent: float) -> None:
        """The lease was renewed by the beat sent at ``sent``: re-arm the self-stop.

        The deadline counts from when the beat was sent, not answered: the database
        renewed the lease somewhere in between, so this keeps the full half-lease margin
        however slow the answer was. Only ALIVE re-arms it: after a cancel request the
        attempt is winding down, and a handler still running half a lease after its last
        ALIVE (the grace period is 10 s of 30 by default) self-stops and writes nothing.
        """
        self._last_beat = sent
        self._self_stop.cancel()
        self._self_stop = self._clock.call_later(
            sent + self._half_lease - self._clock.monotonic(), self._self_stop_due
        )
