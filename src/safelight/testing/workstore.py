"""The one fake of :class:`~safelight.work.store.WorkStore`: a store that answers from a
script and records every call, for the Worker's loop, the executor, the supervisor and
the maintenance scheduler run on a :class:`~safelight.testing.fakeclock.FakeClock`.

Its methods have the real store's signatures, and the function at the bottom makes mypy
check each against the real store's, so a change to the real store's signatures fails
the type check here rather than leaving the tests to run against a stale stand-in.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, cast
from uuid import UUID

from safelight.testing.fakeclock import FakeClock
from safelight.work.context import AttemptStore
from safelight.work.model import Beat, RecoveryReport, WorkItem
from safelight.work.store import WorkStore

HANG: Any = "hang"
"""A scripted reply that never comes: the call waits until it is cancelled."""


def at(clock: FakeClock) -> float:
    """Seconds since the fake clock's start, rounded to the microsecond for comparisons."""
    return round(clock.monotonic() - 1000.0, 6)


class ScriptedStore:
    """Answers from scripts and records each call in ``calls``.

    With a ``clock``, each call is recorded as ``(seconds since start, name, *arguments)``;
    without one, as ``(name, *arguments)``.

    - Claims answer from ``claims`` in order (an item, None, or an exception to raise),
      then None; ``pending`` (counts) and ``dues`` (seconds until the next retry falls
      due, None, or an exception) likewise, then 0 and None.
    - Heartbeats answer from ``beats`` in order, then ``beat_default``; writes answer
      ``writes``; :meth:`fenced` yields ``connection`` or raises ``fenced_error``. A
      reply may be a value, an exception to raise, an ``asyncio.Future`` to await (the
      test resolves it), or :data:`HANG`; ``abandoned`` records when a hanging call was
      cancelled.
    - The scheduler sees ``kinds`` as the kinds the store knows and ``configs`` as the
      active configs; a schedule named in ``due`` enqueues (its answer is the number of
      calls so far, as an item id), and lease recovery answers ``report``.
    """

    def __init__(
        self,
        clock: FakeClock | None = None,
        claims: Iterable[Any] = (),
        *,
        pending: Iterable[int] = (),
        dues: Iterable[Any] = (),
        kinds: Iterable[str] = (),
        configs: Iterable[UUID] = (),
        due: Iterable[str] = (),
    ) -> None:
        self.clock = clock
        self.calls: list[tuple[Any, ...]] = []
        self.claims = deque(claims)
        self.pending = deque(pending)
        self.dues = deque(dues)
        self.beats: list[Any] = []
        self.beat_default: Any = Beat.ALIVE
        self.writes: Any = True
        self.fenced_error: BaseException | None = None
        self.connection: Any = object()
        self.abandoned: list[tuple[float, str]] = []
        self.beat_progress: list[tuple[float, dict[str, Any]]] = []
        """The progress each heartbeat carried (kept apart from ``calls``), with its time."""
        self._kinds = frozenset(kinds)
        self.configs = list(configs)
        self.due = set(due)
        self.report = RecoveryReport()

    def _record(self, name: str, *args: Any) -> None:
        stamp = () if self.clock is None else (at(self.clock),)
        self.calls.append((*stamp, name, *args))

    def _now(self) -> float:
        assert self.clock is not None, "a ScriptedStore that times its calls needs a clock"
        return at(self.clock)

    async def _answer(self, name: str, reply: Any) -> Any:
        if isinstance(reply, str) and reply == HANG:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.abandoned.append((self._now(), name))
                raise
        if isinstance(reply, asyncio.Future):
            return await reply
        if isinstance(reply, BaseException):
            raise reply
        return reply

    # --- the Worker's calls -----------------------------------------------------------

    async def claim(
        self,
        worker_id: str,
        kinds: Collection[str],
        *,
        owner: str | None = None,
        lease_seconds: float,
    ) -> WorkItem | None:
        self._record("claim", worker_id, sorted(kinds), owner, lease_seconds)
        reply = self.claims.popleft() if self.claims else None
        item: WorkItem | None = await self._answer("claim", reply)
        return item

    async def pending_count(self, kinds: Collection[str], owner: str | None = None) -> int:
        self._record("pending", sorted(kinds), owner)
        return self.pending.popleft() if self.pending else 0

    async def next_due_seconds(
        self, kinds: Collection[str], owner: str | None = None
    ) -> float | None:
        self._record("next_due", sorted(kinds), owner)
        reply = self.dues.popleft() if self.dues else None
        seconds: float | None = await self._answer("next_due", reply)
        return seconds

    # --- one attempt's calls ----------------------------------------------------------

    async def heartbeat(
        self,
        item_id: int,
        attempt: int,
        lease_seconds: float,
        progress: Mapping[str, Any] | None = None,
    ) -> Beat:
        self._record("heartbeat", item_id, attempt, lease_seconds)
        if progress is not None:
            self.beat_progress.append((self._now(), dict(progress)))
        reply = self.beats.pop(0) if self.beats else self.beat_default
        beat: Beat = await self._answer("heartbeat", reply)
        return beat

    async def save_progress(self, item_id: int, attempt: int, progress: Mapping[str, Any]) -> bool:
        return await self._write("save_progress", item_id, attempt, dict(progress))

    async def _write(self, name: str, *args: Any) -> bool:
        self._record(name, *args)
        applied: bool = await self._answer(name, self.writes)
        return applied

    async def complete(self, item_id: int, attempt: int, result: dict[str, Any] | None) -> bool:
        return await self._write("complete", item_id, attempt, result)

    async def fail(self, item_id: int, attempt: int, error: str) -> bool:
        return await self._write("fail", item_id, attempt, error)

    async def retry_later(
        self, item_id: int, attempt: int, error: str, delay_seconds: float
    ) -> bool:
        return await self._write("retry_later", item_id, attempt, error, delay_seconds)

    async def retry(self, item_id: int, attempt: int, error: str) -> bool:
        return await self._write("retry", item_id, attempt, error)

    async def defer(self, item_id: int, attempt: int, note: str, delay_seconds: float) -> bool:
        return await self._write("defer", item_id, attempt, note, delay_seconds)

    async def cancel(self, item_id: int, attempt: int) -> bool:
        return await self._write("cancel", item_id, attempt)

    async def release(self, item_id: int, attempt: int) -> bool:
        return await self._write("release", item_id, attempt)

    def fenced(self, item_id: int, attempt: int) -> AbstractAsyncContextManager[Any]:
        self._record("fenced", item_id, attempt)
        return self._fenced()

    @asynccontextmanager
    async def _fenced(self) -> AsyncIterator[Any]:
        if self.fenced_error is not None:
            raise self.fenced_error
        yield self.connection

    # --- the maintenance scheduler's calls --------------------------------------------

    @property
    def kind_names(self) -> frozenset[str]:
        return self._kinds

    async def schedule_if_due(
        self,
        name: str,
        kind: str,
        interval_seconds: float,
        *,
        config_id: UUID | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> int | None:
        self._record("schedule", name, kind, interval_seconds, config_id)
        return len(self.calls) if name in self.due else None

    async def active_config_ids(self, owner: str | None = None) -> list[UUID]:
        self._record("configs", owner)
        return self.configs

    async def recover_expired_leases(self) -> RecoveryReport:
        self._record("recover")
        return self.report


def as_work_store(store: ScriptedStore) -> WorkStore:
    """``store`` where the engine's constructors ask for the real store: they name the
    class, and the fake has every call of it they make."""
    return cast(WorkStore, store)


def _the_fake_makes_the_real_calls(real: WorkStore, fake: ScriptedStore) -> list[object]:
    """Never called: mypy checks each of the fake's calls against the real store's (a
    variable takes the real method's type, then the fake's must fit it), and the fake
    against :class:`AttemptStore`, the executor's protocol."""
    attempt_store: AttemptStore = fake
    claim = real.claim
    claim = fake.claim
    pending = real.pending_count
    pending = fake.pending_count
    next_due = real.next_due_seconds
    next_due = fake.next_due_seconds
    kinds = real.kind_names
    kinds = fake.kind_names
    schedule = real.schedule_if_due
    schedule = fake.schedule_if_due
    configs = real.active_config_ids
    configs = fake.active_config_ids
    recover = real.recover_expired_leases
    recover = fake.recover_expired_leases
    return [attempt_store, claim, pending, next_due, kinds, schedule, configs, recover]
