"""How an attempt ended, as a value, and the one store call each ending makes.

The executor decides an :data:`Outcome`; :func:`write_for` maps it, purely, to the
:data:`Write` to make (or none), and :func:`record` makes it. Keeping the mapping one
small function makes the rule that matters most easy to check: an attempt that lost
its claim (lost, self-stopped) or whose handler would not stop (abandoned) writes
nothing, and never reaches ``fail``.

Each outcome carries its ``name`` (what a run's summary and its JSON call it) and
whether it ``counts_as_failure`` (the item failed for good: ``safelight run`` exits 1);
each write carries the ``name`` of its store call, for the logs. They are declared,
not derived from the class name, so renaming a class changes neither.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias, get_args

from safelight.work.context import AttemptStore
from safelight.work.errors import StopReason
from safelight.work.model import WorkItem

# --- outcomes --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Succeeded:
    """The handler returned; its result is stored with the item."""

    name: ClassVar[str] = "succeeded"
    counts_as_failure: ClassVar[bool] = False

    result: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Failed:
    """The handler raised while nobody had asked it to stop: the item fails for good."""

    name: ClassVar[str] = "failed"
    counts_as_failure: ClassVar[bool] = True

    error: str


@dataclass(frozen=True, slots=True)
class Retrying:
    """The handler raised an error that may pass while nobody had asked it to stop, and
    its kind's policy has attempts left (:mod:`safelight.work.retry`): the item goes
    back to the queue, to be claimed again once ``delay_seconds`` have passed on the
    database's clock, counting a retry (not a stall). Not a failure for good."""

    name: ClassVar[str] = "retrying"
    counts_as_failure: ClassVar[bool] = False

    error: str
    delay_seconds: float


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The handler raised a transient database error while nobody had asked it to stop
    (:data:`~safelight.work.errors.TRANSIENT_DATABASE_ERRORS`). Not a verdict on the
    work: the item goes back to the queue in its place counting a stall, as lease
    recovery would put it, and fails once it reaches max_stalls."""

    name: ClassVar[str] = "interrupted"
    counts_as_failure: ClassVar[bool] = False

    error: str


@dataclass(frozen=True, slots=True)
class Deferred:
    """The handler wound down when its kind's heavy hours ended (it raised
    :class:`~safelight.work.errors.WoundDown` after being asked to): the item goes back
    to the queue, not claimed again for ``delay_seconds`` (the window's next start),
    counting neither a retry nor a stall (ADR 0060)."""

    name: ClassVar[str] = "deferred"
    counts_as_failure: ClassVar[bool] = False

    note: str
    delay_seconds: float


@dataclass(frozen=True, slots=True)
class UnknownKind:
    """No handler is registered for the item's kind: the item fails for good."""

    name: ClassVar[str] = "unknownkind"
    counts_as_failure: ClassVar[bool] = True

    kind: str


@dataclass(frozen=True, slots=True)
class Cancelled:
    """An operator cancelled the running item and the handler stopped."""

    name: ClassVar[str] = "cancelled"
    counts_as_failure: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Released:
    """The Worker shut down and the handler stopped: the item goes back to the queue
    without counting a stall."""

    name: ClassVar[str] = "released"
    counts_as_failure: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ClaimedLate:
    """The claim's answer came ``seconds`` after it was sent, half a lease or more: the
    lease it set may be about to expire, or already have. The attempt starts nothing
    (no handler, no file) and gives the item back without a stall, since it did no work.
    Were it to write nothing, lease recovery would count a stall for work that never
    started, and enough network cuts could fail an item that never ran."""

    name: ClassVar[str] = "claimedlate"
    counts_as_failure: ClassVar[bool] = False

    seconds: float


@dataclass(frozen=True, slots=True)
class Lost:
    """The database says the item is no longer this attempt's. Writes nothing: a
    fenced write could not apply anyway."""

    name: ClassVar[str] = "lost"
    counts_as_failure: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class SelfStopped:
    """No heartbeat succeeded for half a lease, so the attempt stopped itself. Writes
    nothing, as a lost attempt does: lease recovery requeues the item and counts a stall.
    Writing ``fail`` here would end the item for good once the database is back."""

    name: ClassVar[str] = "selfstopped"
    counts_as_failure: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Abandoned:
    """The attempt was stopped (for ``reason``) but the handler did not finish within the
    grace period. Writes nothing, not even ``release`` or ``cancel``: either would let
    another attempt start on the same storage config while this handler may still touch
    its files. The lease expires and recovery requeues the item, counting a stall."""

    name: ClassVar[str] = "abandoned"
    counts_as_failure: ClassVar[bool] = False

    reason: StopReason


Outcome: TypeAlias = (
    Succeeded
    | Failed
    | Retrying
    | Interrupted
    | UnknownKind
    | Cancelled
    | Released
    | ClaimedLate
    | Lost
    | SelfStopped
    | Abandoned
    | Deferred
)

# Each outcome's name, as a run's summary and its JSON carry it, and whether it counts as
# a failure: what reads an outcome by its name (the summary) asks here.
FAILS_BY_NAME: dict[str, bool] = {
    outcome.name: outcome.counts_as_failure for outcome in get_args(Outcome)
}

# --- writes ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Complete:
    name: ClassVar[str] = "complete"

    result: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Fail:
    name: ClassVar[str] = "fail"

    error: str


@dataclass(frozen=True, slots=True)
class Retry:
    name: ClassVar[str] = "retry"

    error: str


@dataclass(frozen=True, slots=True)
class RetryLater:
    name: ClassVar[str] = "retry_later"

    error: str
    delay_seconds: float


@dataclass(frozen=True, slots=True)
class Defer:
    name: ClassVar[str] = "defer"

    note: str
    delay_seconds: float


@dataclass(frozen=True, slots=True)
class Cancel:
    name: ClassVar[str] = "cancel"


@dataclass(frozen=True, slots=True)
class Release:
    name: ClassVar[str] = "release"


Write: TypeAlias = Complete | Fail | RetryLater | Retry | Cancel | Release | Defer


def write_for(outcome: Outcome) -> Write | None:
    """The store call an outcome makes, or ``None`` for an outcome that writes nothing.

    Writing nothing is the default: Lost, SelfStopped and Abandoned fall through, and
    so would any outcome added later until it is given a write on purpose.
    """
    match outcome:
        case Succeeded(result):
            return Complete(result)
        case Failed(error):
            return Fail(error)
        case Retrying(error, delay_seconds):
            return RetryLater(error, delay_seconds)
        case Interrupted(error):
            return Retry(error)
        case UnknownKind(kind):
            return Fail(f"no handler for kind {kind}")
        case Cancelled():
            return Cancel()
        case Released() | ClaimedLate():
            return Release()
        case Deferred(note, delay_seconds):
            return Defer(note, delay_seconds)
    return None


async def record(store: AttemptStore, item: WorkItem, write: Write | None) -> bool:
    """Make ``write`` (an outcome's :func:`write_for`) for ``item``'s attempt.

    Returns ``True`` only if a write was made and applied; ``False`` when there is
    nothing to write or the store answered that the attempt no longer owns the item.
    Store errors propagate.
    """
    if write is None:
        return False
    return await store_call(store, item, write)


def store_call(store: AttemptStore, item: WorkItem, write: Write) -> Awaitable[bool]:
    """The store call that makes ``write`` for ``item``'s attempt, not yet awaited: the
    store's own awaitable, so that waiting for it with a bound needs no task of its own
    (``WorkStore`` answers a batched outcome with a future)."""
    match write:
        case Complete(result):
            return store.complete(item.id, item.attempt, result)
        case Fail(error):
            return store.fail(item.id, item.attempt, error)
        case RetryLater(error, delay_seconds):
            return store.retry_later(item.id, item.attempt, error, delay_seconds)
        case Retry(error):
            return store.retry(item.id, item.attempt, error)
        case Cancel():
            return store.cancel(item.id, item.attempt)
        case Release():
            return store.release(item.id, item.attempt)
        case Defer(note, delay_seconds):
            return store.defer(item.id, item.attempt, note, delay_seconds)
