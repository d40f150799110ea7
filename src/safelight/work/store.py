"""The work-item store: the only code that changes ``work_items`` and ``work_attempts``.

Every transition is one statement of ``queries.sql`` that also writes the attempt
history, so the two never disagree. Writes of an attempt are fenced by ``(id, attempt)``
and ``status = 'running'``: they report whether they applied, and a stale attempt's
write changes nothing.

Every transition's time (claimed, started, heartbeat, lease, ended, finished) is the
database's, read inside its statement: the store passes ``clock.transition_time()``,
None in production, and the statement stamps ``coalesce(now, clock_timestamp())``
(ADR 0015). Enqueues, schedules and the retention cutoff use ``clock.now()``.

The SQL here can only be tested against PostgreSQL; it is covered by the integration
contract tests and excluded from mutation testing (ADR 0005).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.core.sql import load_queries, text_array
from safelight.work import cancels
from safelight.work.batching import Batcher
from safelight.work.errors import AttemptLost, InvalidWorkItem
from safelight.work.kinds import KindSpec, Scope
from safelight.work.model import (
    Beat,
    CancelResult,
    RecoveryReport,
    RetriedCount,
    RetryResult,
    Status,
    WorkItem,
)
from safelight.work.observer import NO_OBSERVER, EngineObserver

_log = logging.getLogger(__name__)

QUERIES = load_queries("safelight.work", "queries.sql")

RUNNING_CONFIG_INDEX = "ix_work_items_storage_config_running"
DEDUP_INDEX = "ix_work_items_dedup_key_queued"
_ENQUEUE_TRIES = 5
# A claim statement looks at the oldest 16 queued items; more Workers than that in one
# batch would mostly come back empty-handed from the first look.
MAX_CLAIM_BATCH = 16
MAX_FINISH_BATCH = 64


def claim_query(count: int) -> str:
    """The claim statement for ``count`` Workers (1 to :data:`MAX_CLAIM_BATCH`)."""
    return _CLAIM_QUERIES[count]


def _claim_queries() -> dict[int, str]:
    """``items_claim`` for each batch size, the size written into its text.

    The one exception to "every value is a parameter", for the planner's sake: with
    ``LIMIT %(limit)s`` PostgreSQL's generic plan assumes a tenth of the table, so it
    keeps planning the claim anew on every call (three times its cost). The sizes are
    this module's own integers, never input.
    """
    template = QUERIES["items_claim"]
    return {n: template.replace("%(limit)s", str(n)) for n in range(1, MAX_CLAIM_BATCH + 1)}


_CLAIM_QUERIES = _claim_queries()


def _is_unique_violation_of(exc: BaseException, index_name: str) -> bool:
    """Whether ``exc`` is a unique violation of exactly ``index_name`` and no other."""
    return isinstance(exc, pg_errors.UniqueViolation) and exc.diag.constraint_name == index_name


# Not frozen: made for every outcome and read once, by this module only, and a frozen
# dataclass sets each field through object.__setattr__ (1.3 µs against 0.3: section 18
# of docs/benchmarks.md).
@dataclass(slots=True)
class _Ending:
    item_id: int
    attempt: int
    status: Status
    result: dict[str, Any] | None
    error: str | None


# The statuses by their value: an item's row is read for every claim, and Status(value)
# looks the member up through the enum's metaclass (0.8 µs against 0.05).
_STATUSES: dict[str, Status] = {status.value: status for status in Status}


def _item_from_row(row: Mapping[str, Any]) -> WorkItem:
    return WorkItem(
        id=row["id"],
        kind=row["kind"],
        storage_config_id=row["storage_config_id"],
        dedup_key=row["dedup_key"],
        payload=row["payload"],
        status=_STATUSES[row["status"]],
        requested_at=row["requested_at"],
        attempt=row["attempt"],
        stalls=row["stalls"],
        worker_id=row["worker_id"],
        started_at=row["started_at"],
        heartbeat_at=row["heartbeat_at"],
        lease_expires_at=row["lease_expires_at"],
        finished_at=row["finished_at"],
        cancel_requested=row["cancel_requested"],
        error=row["error"],
        result=row["result"],
        retries=row["retries"],
        not_before=row["not_before"],
        progress=row["progress"],
    )


class WorkStore:  # pragma: no mutate block
    """Async access to the queue, on a psycopg connection pool (autocommit connections)."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        clock: Clock,
        kinds: Collection[KindSpec],
        *,
        max_stalls: int,
        observer: EngineObserver = NO_OBSERVER,
    ) -> None:
        if max_stalls < 1:
            raise ValueError("max_stalls must be at least 1")
        self._observer = observer
        self._pool = pool
        self._clock = clock
        self._kinds = {spec.name: spec for spec in kinds}
        self._max_stalls = max_stalls
        self._claimers: dict[
            tuple[frozenset[str], str | None, float], Batcher[str, WorkItem | None]
        ] = {}
        self._finisher: Batcher[_Ending, bool] = Batcher(
            self._finish_batch, max_batch=MAX_FINISH_BATCH
        )

    @property
    def pool(self) -> AsyncConnectionPool[Any]:
        return self._pool

    @property
    def kind_names(self) -> frozenset[str]:
        return frozenset(self._kinds)

    # --- enqueue -------------------------------------------------------------------

    def _validate(
        self, kind: str, config_id: UUID | None, dedup_key: str | None, payload: object
    ) -> dict[str, Any]:
        spec = self._kinds.get(kind)
        if spec is None:
            known = ", ".join(sorted(self._kinds)) or "none"
            raise InvalidWorkItem(f"unknown kind {kind!r} (known kinds: {known})")
        if payload is None:
            payload = {}
        if not isinstance(payload, dict):
            raise InvalidWorkItem(
                f"the payload of a {kind} item must be a JSON object, not {type(payload).__name__}"
            )
        if spec.scope is Scope.REQUIRED and config_id is None:
            raise InvalidWorkItem(f"a {kind} item needs a storage config")
        if spec.scope is Scope.FORBIDDEN and config_id is not None:
            raise InvalidWorkItem(f"a {kind} item is unscoped and cannot name a storage config")
        if dedup_key is not None and not dedup_key.strip():
            raise InvalidWorkItem("a dedup key must not be blank")
        if spec.check_payload is not None:
            try:
                spec.check_payload(payload)
            except ValueError as error:
                raise InvalidWorkItem(f"enqueue {kind}: {error}") from None
        return payload

    async def enqueue(
        self,
        kind: str,
        *,
        config_id: UUID | None = None,
        dedup_key: str | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> int:
        """Queue an item and return its id.

        With a dedup key that already has a queued item, return that item's id and add
        nothing. Raises :class:`InvalidWorkItem` (and writes nothing) for an unknown
        kind, a payload that is not a JSON object or that its kind's check refuses
        (``KindSpec.check_payload``), or a config that does not exist or is inactive.
        """
        body = self._validate(kind, config_id, dedup_key, payload)
        async with self._pool.connection() as conn:
            if config_id is not None:
                await self._check_config(conn, config_id)
            return await self._enqueue_on(conn, kind, config_id, dedup_key, body)

    async def enqueue_in(
        self,
        conn: psycopg.AsyncConnection[Any],
        kind: str,
        *,
        config_id: UUID | None = None,
        dedup_key: str | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> int:
        """:meth:`enqueue` on the caller's connection, inside its transaction: a handler
        queues follow-up work in its fenced transaction (``ctx.fenced()``), so an attempt
        that lost its item queues nothing."""
        body = self._validate(kind, config_id, dedup_key, payload)
        if config_id is not None:
            await self._check_config(conn, config_id)
        return await self._enqueue_on(conn, kind, config_id, dedup_key, body)

    async def enqueue_many(
        self,
        kind: str,
        payloads: Sequence[Mapping[str, Any] | None],
        *,
        config_id: UUID | None = None,
        dedup_keys: Sequence[str | None] | None = None,
    ) -> list[int]:
        """Queue many items of one kind in one statement, and return their ids in order.

        Every payload (and dedup key) is checked before anything is written, so one bad
        item writes nothing. ``dedup_keys`` (one per payload, None: no key) are honoured
        as :meth:`enqueue` honours one: an item whose key already has a queued item, or
        an earlier item of the same call, adds nothing and returns that item's id.
        """
        keys = [None] * len(payloads) if dedup_keys is None else list(dedup_keys)
        if len(keys) != len(payloads):
            raise ValueError(f"{len(payloads)} payloads but {len(keys)} dedup keys")
        bodies = [
            self._validate(kind, config_id, key, p) for p, key in zip(payloads, keys, strict=True)
        ]
        if not bodies:
            return []
        now = self._clock.now()
        ids: list[int | None] = [None] * len(bodies)
        async with self._pool.connection() as conn, conn.transaction():
            if config_id is not None:
                await self._check_config(conn, config_id)
            # The items whose id is still unknown: all at first, then those whose key's
            # holder went away between the statement's look-up and its insert.
            left = list(range(len(bodies)))
            for _ in range(_ENQUEUE_TRIES):
                items = [{"payload": bodies[n], "dedup_key": keys[n]} for n in left]
                cur = await conn.execute(
                    QUERIES["items_enqueue"],
                    {"items": Jsonb(items), "kind": kind, "config_id": config_id, "now": now},
                )
                for ord_, item_id in await cur.fetchall():
                    ids[left[ord_ - 1]] = item_id
                left = [n for n in left if ids[n] is None]
                if not left:
                    return [int(i) for i in ids if i is not None]
        raise RuntimeError(f"could not enqueue {kind} items with their dedup keys: contended")

    async def _check_config(self, conn: psycopg.AsyncConnection[Any], config_id: UUID) -> None:
        cur = await conn.execute(QUERIES["config_check"], {"config_id": config_id})
        row = await cur.fetchone()
        if row is None:
            raise InvalidWorkItem(f"storage config {config_id} does not exist")
        if not row[0]:
            raise InvalidWorkItem(f"storage config {config_id} is disabled")

    async def _enqueue_on(
        self,
        conn: psycopg.AsyncConnection[Any],
        kind: str,
        config_id: UUID | None,
        dedup_key: str | None,
        payload: dict[str, Any],
    ) -> int:
        params = {
            "kind": kind,
            "config_id": config_id,
            "dedup_key": dedup_key,
            "payload": Jsonb(payload),
            "now": self._clock.now(),
        }
        # The queued holder of a dedup key can be claimed between our insert and our
        # look-up; then the key is free again and the next insert succeeds.
        for _ in range(_ENQUEUE_TRIES):
            cur = await conn.execute(QUERIES["item_enqueue"], params)
            row = await cur.fetchone()
            if row is not None:
                return int(row[0])
            cur = await conn.execute(QUERIES["item_queued_by_dedup_key"], {"dedup_key": dedup_key})
            row = await cur.fetchone()
            if row is not None:
                return int(row[0])
        raise RuntimeError(f"could not enqueue {kind} with dedup key {dedup_key!r}: contended")

    # --- claim ---------------------------------------------------------------------

    async def claim(
        self,
        worker_id: str,
        kinds: Collection[str],
        *,
        owner: str | None = None,
        lease_seconds: float,
    ) -> WorkItem | None:
        """Claim the oldest eligible queued item for ``worker_id``, or return None.

        ``owner`` limits scoped work to that user's configs (a per-user Worker); None
        serves every config. Unscoped items go to any Worker. A claim that lost the race
        for a config to another Worker's claim returns None: the Worker waits for its
        next wake-up (ADR 0008, decision 3: no immediate retry).

        Claims this process makes while one is in flight go out together as one
        statement (:mod:`safelight.work.batching`, ADR 0009): each Worker still gets its
        own item or None, and no two items of one config.
        """
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        key = (frozenset(kinds), owner, float(lease_seconds))
        batcher = self._claimers.get(key)
        if batcher is None:
            kinds_array = text_array(sorted(key[0]))

            async def run_batch(worker_ids: Sequence[str]) -> list[WorkItem | None]:
                return await self._claim_for(worker_ids, kinds_array, key[1], key[2])

            batcher = Batcher(run_batch, max_batch=MAX_CLAIM_BATCH)
            self._claimers[key] = batcher
        return await batcher.submit(worker_id)

    async def _claim_for(
        self,
        worker_ids: Sequence[str],
        kinds: str,
        owner: str | None,
        lease_seconds: float,
    ) -> list[WorkItem | None]:
        """One item or None for each of ``worker_ids``, in order; ``kinds`` is their
        array literal (:func:`~safelight.core.sql.text_array`).

        While a statement takes some items but not enough, the Workers left try again
        at once: the first look may have found only some of what the queue holds. The
        first statement that takes nothing, or loses a race, ends it.
        """
        items: list[WorkItem | None] = [None] * len(worker_ids)
        left = list(range(len(worker_ids)))
        while left:
            taken = await self._claim_once(
                [worker_ids[i] for i in left], kinds, owner, lease_seconds
            )
            if not taken:
                break
            for nth, item in taken.items():
                items[left[nth]] = item
            left = [i for n, i in enumerate(left) if n not in taken]
        return items

    async def _claim_once(
        self,
        worker_ids: Sequence[str],
        kinds: str,
        owner: str | None,
        lease_seconds: float,
    ) -> dict[int, WorkItem]:
        """The items one claim statement took, by the 0-based position of their Worker."""
        params = {
            "worker_ids": text_array(worker_ids),
            "kinds": kinds,
            "owner": owner,
            "lease_seconds": lease_seconds,
            "now": self._clock.transition_time(),
        }
        async with self._pool.connection() as conn:
            try:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(claim_query(len(worker_ids)), params)
                rows = await cur.fetchall()
            except (pg_errors.UniqueViolation, pg_errors.DeadlockDetected) as exc:
                # A deadlock needs two batches racing for two configs in opposite
                # orders; like a unique violation it means another claim won.
                if isinstance(exc, pg_errors.DeadlockDetected) or _is_unique_violation_of(
                    exc, RUNNING_CONFIG_INDEX
                ):
                    _log.debug("claim lost the race for a storage config; waiting", exc_info=False)
                    self._observer.claim_lost()
                    return {}
                raise
        return {row["nth"] - 1: _item_from_row(row) for row in rows}

    # --- an attempt's writes (fenced) ----------------------------------------------

    async def heartbeat(
        self,
        item_id: int,
        attempt: int,
        lease_seconds: float,
        progress: Mapping[str, Any] | None = None,
    ) -> Beat:
        """Renew the lease; ``progress`` (None: nothing new) is saved in the same write."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["attempt_heartbeat"],
                {
                    "id": item_id,
                    "attempt": attempt,
                    "lease_seconds": float(lease_seconds),
                    "progress": None if progress is None else Jsonb(dict(progress)),
                    "now": self._clock.transition_time(),
                },
            )
            row = await cur.fetchone()
        if row is None:
            return Beat.LOST
        return Beat.CANCEL_REQUESTED if row[0] else Beat.ALIVE

    async def save_progress(self, item_id: int, attempt: int, progress: Mapping[str, Any]) -> bool:
        """Save the attempt's progress; ``False`` if it had lost the item (nothing saved)."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["attempt_progress_save"],
                {"id": item_id, "attempt": attempt, "progress": Jsonb(dict(progress))},
            )
            return await cur.fetchone() is not None

    def _finish(
        self,
        item_id: int,
        attempt: int,
        status: Status,
        *,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> asyncio.Future[bool]:
        """Whether the attempt still held its item and now ended it (durably), as a
        future: the executor bounds the wait for it by a timer, with no task of its own.

        Outcomes written while another is in flight go out together in one statement
        (:mod:`safelight.work.batching`); each is fenced on its own.
        """
        return self._finisher.submit(
            _Ending(item_id, attempt, status, None if result is None else dict(result), error)
        )

    async def _finish_batch(self, endings: Sequence[_Ending]) -> list[bool]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["attempts_finish"],
                {
                    "endings": Jsonb(
                        [
                            {
                                "id": e.item_id,
                                "attempt": e.attempt,
                                "status": e.status.value,
                                "result": e.result,
                                "error": e.error,
                            }
                            for e in endings
                        ]
                    ),
                    "now": self._clock.transition_time(),
                },
                # Planned anew each time, never prepared: a plan cached while
                # work_attempts was small (a new database, just analysed) scans the
                # whole history on every outcome, so each one got slower as the history
                # grew (docs/benchmarks.md, 3). Planning it costs about 0.1 ms a batch.
                prepare=False,
            )
            applied = {(row[0], row[1]) for row in await cur.fetchall()}
        return [(e.item_id, e.attempt) in applied for e in endings]

    def complete(
        self, item_id: int, attempt: int, result: Mapping[str, Any] | None = None
    ) -> asyncio.Future[bool]:
        return self._finish(item_id, attempt, Status.SUCCEEDED, result=result)

    def fail(self, item_id: int, attempt: int, error: str) -> asyncio.Future[bool]:
        return self._finish(item_id, attempt, Status.FAILED, error=error)

    def cancel(self, item_id: int, attempt: int) -> asyncio.Future[bool]:
        return self._finish(item_id, attempt, Status.CANCELLED, error="cancelled while running")

    async def retry_later(
        self, item_id: int, attempt: int, error: str, delay_seconds: float
    ) -> bool:
        """Running → queued with one more retry, not claimed again until ``delay_seconds``
        have passed on the database's clock (its ``not_before``), after a failure that
        may pass (the executor decided, :mod:`safelight.work.retry`).

        Ended as superseded instead when its dedup key already has a queued item.
        """
        return await self._put_off(item_id, attempt, error, delay_seconds, counted=True)

    async def defer(self, item_id: int, attempt: int, note: str, delay_seconds: float) -> bool:
        """Running → queued, not claimed again until ``delay_seconds`` have passed on the
        database's clock, counting neither a retry nor a stall: the attempt wound down
        at the end of its heavy hours, and goes on at the next window (ADR 0060).
        ``note`` is the item's error until then. Superseded instead when its dedup key
        already has a queued item (which waits for the window as well)."""
        return await self._put_off(item_id, attempt, note, delay_seconds, counted=False)

    async def _put_off(
        self, item_id: int, attempt: int, error: str, delay_seconds: float, *, counted: bool
    ) -> bool:
        params = {
            "id": item_id,
            "attempt": attempt,
            "error": error,
            "delay_seconds": float(delay_seconds),
            "counted": counted,
            "now": self._clock.transition_time(),
        }
        async with self._pool.connection() as conn:
            cur = await self._requeue(conn, QUERIES["attempt_retry_later"], params)
            return await cur.fetchone() is not None

    async def _requeue(
        self, conn: psycopg.AsyncConnection[Any], query: str, params: Mapping[str, Any]
    ) -> psycopg.AsyncCursor[Any]:
        """Run a statement that puts items back to queued where their dedup key is free.

        It checks the key in its snapshot; an enqueue of the same key that commits after
        it makes the statement fail on ix_work_items_dedup_key_queued instead, and the
        next run sees that key queued and leaves its item alone.
        """
        for _ in range(_ENQUEUE_TRIES):
            try:
                return await conn.execute(query, params)
            except pg_errors.UniqueViolation as exc:
                if not _is_unique_violation_of(exc, DEDUP_INDEX):
                    raise
        raise RuntimeError("could not requeue: a dedup key kept being taken (contended)")

    async def retry(self, item_id: int, attempt: int, error: str) -> bool:
        """Running → queued in its place with one more stall, after a transient error.

        Failed once the item reaches ``max_stalls`` (so a database error that keeps
        coming does not loop for ever), or ended as superseded when its dedup key
        already has a queued item; the same decision as lease recovery.
        """
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["attempt_retry"],
                {
                    "id": item_id,
                    "attempt": attempt,
                    "error": error,
                    "max_stalls": self._max_stalls,
                    "now": self._clock.transition_time(),
                },
            )
            return await cur.fetchone() is not None

    async def release(self, item_id: int, attempt: int) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["attempt_release"],
                {"id": item_id, "attempt": attempt, "now": self._clock.transition_time()},
            )
            return await cur.fetchone() is not None

    @asynccontextmanager
    async def fenced(
        self, item_id: int, attempt: int
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A transaction in which the attempt provably still owns its item.

        It locks the item row FOR SHARE first, so lease recovery cannot take the item
        back until the transaction ends; if the attempt has already lost it, raises
        :class:`AttemptLost` and nothing is written. Keep these transactions short:
        the attempt's own heartbeat waits for them too.
        """
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                QUERIES["attempt_lock"],
                {"id": item_id, "attempt": attempt, "now": self._clock.transition_time()},
            )
            if await cur.fetchone() is None:
                raise AttemptLost()
            yield conn

    # --- maintenance and operators -------------------------------------------------

    async def recover_expired_leases(self) -> RecoveryReport:
        """Take back every running item whose lease has expired by the database's clock
        (or by the clock's :meth:`~safelight.core.clock.Clock.transition_time`).

        Each is requeued in its place with one more stall, failed as stalled at the
        ``max_stalls``-th stall, or, when its dedup key already has a queued item,
        ended as cancelled (superseded). One item per statement, so one odd row never
        blocks the rest and the work is spread across Workers by SKIP LOCKED.
        """
        requeued = failed = superseded = 0
        async with self._pool.connection() as conn:
            while True:
                params = {"now": self._clock.transition_time(), "max_stalls": self._max_stalls}
                try:
                    cur = await conn.execute(QUERIES["item_recover_expired_lease"], params)
                except pg_errors.UniqueViolation as exc:
                    # An enqueue committed a queued item with this dedup key after our
                    # snapshot; the next round sees it and supersedes instead.
                    if _is_unique_violation_of(exc, DEDUP_INDEX):
                        continue
                    raise
                row = await cur.fetchone()
                if row is None:
                    break
                item_id, new_status = row
                if new_status == "queued":
                    requeued += 1
                elif new_status == "failed":
                    failed += 1
                else:
                    superseded += 1
                _log.warning("lease of item %s expired: %s", item_id, new_status)
        return RecoveryReport(requeued=requeued, failed=failed, superseded=superseded)

    async def schedule_if_due(
        self,
        name: str,
        kind: str,
        interval_seconds: float,
        *,
        config_id: UUID | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> int | None:
        """Enqueue ``kind`` if schedule ``name`` is due, and move it to its next period.

        Both happen in one transaction, so of any number of Workers calling this for the
        same period exactly one enqueues. The item's dedup key is the schedule's name.
        Returns the item id, or None when the schedule was not due.
        """
        body = self._validate(kind, config_id, name, payload)
        now = self._clock.now()
        async with self._pool.connection() as conn, conn.transaction():
            params = {
                "name": name,
                "kind": kind,
                "config_id": config_id,
                "now": now,
                "interval_seconds": float(interval_seconds),
            }
            await conn.execute(QUERIES["schedule_seed"], params)
            cur = await conn.execute(QUERIES["schedule_take_due"], params)
            if await cur.fetchone() is None:
                return None
            return await self._enqueue_on(conn, kind, config_id, name, body)

    async def active_config_ids(self, owner: str | None = None) -> list[UUID]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["configs_active_ids"], {"owner": owner})
            return [row[0] for row in await cur.fetchall()]

    async def pending_count(self, kinds: Collection[str], owner: str | None = None) -> int:
        """Items a Worker of ``kinds`` (and ``owner``) could run that are queued or running."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["items_pending_for_worker"], {"kinds": list(kinds), "owner": owner}
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def request_cancel(self, item_id: int) -> CancelResult:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["item_request_cancel"],
                {
                    "id": item_id,
                    "now": self._clock.transition_time(),
                    "channel": cancels.CHANNEL,
                },
            )
            row = await cur.fetchone()
            if row is not None:
                return CancelResult.CANCELLED if row[0] == "cancelled" else CancelResult.REQUESTED
            cur = await conn.execute(QUERIES["item_by_id"], {"id": item_id})
            exists = await cur.fetchone() is not None
        return CancelResult.FINISHED if exists else CancelResult.NOT_FOUND

    async def retry_failed(self, item_id: int) -> RetryResult:
        """An operator's retry: a failed item back to queued, due at once, with its
        retries and stalls counted afresh (its place and last error kept until it is
        claimed). Nothing changes for an item that is not failed, or whose dedup key
        already has a queued item (which will do the same work)."""
        async with self._pool.connection() as conn:
            cur = await self._requeue(conn, QUERIES["item_retry_failed"], {"id": item_id})
            if await cur.fetchone() is not None:
                return RetryResult.RETRIED
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["item_by_id"], {"id": item_id})
            row = await cur.fetchone()
        if row is None:
            return RetryResult.NOT_FOUND
        if row["status"] == Status.FAILED:
            return RetryResult.KEY_QUEUED
        return RetryResult.NOT_FAILED

    async def retry_failed_matching(
        self, *, kind: str | None = None, config_id: UUID | None = None
    ) -> RetriedCount:
        """:meth:`retry_failed` for every failed item of ``kind`` and ``config_id``
        (None: any), in one statement. Of failed items sharing a dedup key only the
        newest is requeued, and none whose key already has a queued item."""
        params = {"kind": kind, "config_id": config_id}
        async with self._pool.connection() as conn:
            cur = await self._requeue(conn, QUERIES["items_retry_failed"], params)
            row = await cur.fetchone()
        assert row is not None  # counts: always one row
        return RetriedCount(retried=int(row[0]), left_failed=int(row[1]))

    async def next_due_seconds(
        self, kinds: Collection[str], owner: str | None = None
    ) -> float | None:
        """Seconds until the earliest queued item of ``kinds`` (and ``owner``) that waits
        for its retry falls due, by the database's clock; None if none waits."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["items_next_due"],
                {"kinds": list(kinds), "owner": owner, "now": self._clock.transition_time()},
            )
            row = await cur.fetchone()
        return None if row is None or row[0] is None else float(row[0])

    async def get(self, item_id: int) -> WorkItem | None:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["item_by_id"], {"id": item_id})
            row = await cur.fetchone()
        return None if row is None else _item_from_row(row)

    async def attempts(self, item_id: int) -> list[dict[str, Any]]:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["attempts_of_item"], {"id": item_id})
            return list(await cur.fetchall())

    async def delete_finished(self, retention: timedelta, *, batch: int = 5000) -> int:
        """Delete items that finished more than ``retention`` ago; return how many."""
        cutoff = self._clock.now() - retention
        deleted: int = 0
        async with self._pool.connection() as conn:
            while True:
                cur = await conn.execute(
                    QUERIES["items_delete_finished"], {"cutoff": cutoff, "batch": batch}
                )
                deleted += int(cur.rowcount)
                if cur.rowcount < batch:
                    return deleted
