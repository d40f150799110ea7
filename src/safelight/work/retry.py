"""Retries: which failures may pass, and when an item that failed so is tried again.

An attempt whose handler raised while nobody had asked it to stop ends
:class:`~safelight.work.outcome.Failed`, for good, unless the error may pass and the
kind's :class:`RetryPolicy` has attempts left: then it ends
:class:`~safelight.work.outcome.Retrying`, whose store call puts the item back to
queued with a not-before time, the policy's backoff (ADR 0024).

What may pass (:func:`is_retryable`):

- :class:`~safelight.work.errors.Retryable`, raised by a handler that knows its failure
  may pass (a share that is not mounted);
- an :class:`OSError` whose errno says the storage or the network went away for a while
  (:data:`TRANSIENT_ERRNOS`: a NAS mount's EIO, ESTALE, ETIMEDOUT, ENOTCONN, EHOSTDOWN,
  ...), and :class:`TimeoutError`.

Nothing else: a bad payload, an unknown kind, a corrupt file, a missing file or a refused
permission would fail the same way again. A transient *database* error is not a failure
at all but a stall (:class:`~safelight.work.outcome.Interrupted`), bounded by
``max_stalls``; retries have a count of their own (``work_items.retries``), so neither
uses up the other.

The policy is the kind's (its ``Kind`` row, handed over in its
:class:`~safelight.work.kinds.KindSpec`, else ``Settings.retry_policy()``); the engine
names no kind. The jitter's randomness is injected, so tests draw from a seeded random.
"""

from __future__ import annotations

import errno
import math
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from safelight.work.errors import Retryable, describe
from safelight.work.model import WorkItem
from safelight.work.outcome import Failed, Outcome, Retrying

if TYPE_CHECKING:
    from safelight.work.kinds import KindSpec

# Errors of a storage or a network that went away for a while: a NAS mount (NFS, SMB)
# whose server restarts, a stale handle after it did, a cable pulled. ENOENT, EACCES,
# ENOSPC and the like are not here: they say something about the library or the disk
# that a wait does not change.
TRANSIENT_ERRNOS = frozenset(
    {
        errno.EIO,
        errno.ESTALE,
        errno.ETIMEDOUT,
        errno.ENOTCONN,
        errno.EHOSTDOWN,
        errno.EHOSTUNREACH,
        errno.ENETDOWN,
        errno.ENETUNREACH,
        errno.ENETRESET,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.ECONNREFUSED,
        errno.EAGAIN,
        errno.EBUSY,
        errno.ENOLCK,
        errno.EREMOTEIO,
    }
)


def is_retryable(error: BaseException) -> bool:
    """Whether ``error`` may pass, so that trying again later may succeed."""
    if isinstance(error, Retryable | TimeoutError):
        return True
    return isinstance(error, OSError) and error.errno in TRANSIENT_ERRNOS


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a kind's items are tried again after a failure that may pass, in seconds
    (``Settings.retry_policy()`` has the defaults).

    ``max_attempts``: attempts that may fail before the item fails for good (1: never
    retried); stalled, released and late-claimed attempts do not count. After the nth
    failure the item waits ``delay_seconds * 2**(n-1)``, at most ``max_delay_seconds``,
    less up to ``jitter`` of it (a fraction, 0 to 1) at random, so that items that
    failed together do not all come back at once.
    """

    max_attempts: int
    delay_seconds: float
    max_delay_seconds: float
    jitter: float

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts!r}")
        if not (math.isfinite(self.delay_seconds) and self.delay_seconds > 0):
            raise ValueError(f"delay_seconds must be > 0, got {self.delay_seconds!r}")
        if not (
            math.isfinite(self.max_delay_seconds) and self.max_delay_seconds >= self.delay_seconds
        ):
            raise ValueError(
                f"max_delay_seconds must be at least delay_seconds ({self.delay_seconds:g}), "
                f"got {self.max_delay_seconds!r}"
            )
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter!r}")

    def delay_after(self, failures: int, draw: float) -> float:
        """The wait after the ``failures``-th failure (1 for the first), ``draw`` in
        [0, 1) taking off its share of the jitter."""
        try:
            wait = self.delay_seconds * 2.0 ** (failures - 1)
        except OverflowError:  # 2**1024 and beyond: far past any cap
            wait = math.inf
        return min(wait, self.max_delay_seconds) * (1.0 - self.jitter * draw)


def after_failure(
    policy: RetryPolicy | None, retries: int, error: BaseException, draw: Callable[[], float]
) -> Failed | Retrying:
    """The outcome of an attempt whose handler raised ``error`` while nobody had asked it
    to stop. ``retries``: how many of the item's failures were retried before this one;
    ``policy`` None: the kind is not retried."""
    text = describe(error)
    if policy is None or not is_retryable(error):
        return Failed(text)
    failures = retries + 1
    if failures < policy.max_attempts:
        return Retrying(text, policy.delay_after(failures, draw()))
    return Failed(text if failures == 1 else f"failed {failures} times; last: {text}")


@dataclass(frozen=True, slots=True)
class Retries:
    """The retry policy of each kind the executor runs, and the jitter's randomness.

    A kind with no policy here is never retried. ``draw`` returns a float in [0, 1).
    """

    policies: Mapping[str, RetryPolicy] = field(default_factory=dict)
    draw: Callable[[], float] = random.random

    @classmethod
    def of(
        cls, specs: Iterable[KindSpec], default: RetryPolicy, draw: Callable[[], float]
    ) -> Retries:
        """Each kind's own policy, or ``default`` for a kind that declares none."""
        return cls({s.name: default if s.retry is None else s.retry for s in specs}, draw)

    def outcome(self, item: WorkItem, error: BaseException) -> Failed | Retrying:
        """:func:`after_failure` for ``item``, by its kind's policy."""
        return after_failure(self.policies.get(item.kind), item.retries, error, self.draw)

    def after(self, verdict: Outcome, item: WorkItem, error: BaseException | None) -> Outcome:
        """The executor's ``verdict`` of an attempt whose handler raised ``error`` (None:
        it raised nothing), by the kind's policy: a ``Failed`` for an error is
        :meth:`outcome`'s to decide; every other verdict stands."""
        if isinstance(verdict, Failed) and error is not None:
            return self.outcome(item, error)
        return verdict
