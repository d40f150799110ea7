"""Value objects of the engine: a work item, its status, and what a heartbeat learns."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID


class Status(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED})


class Beat(enum.StrEnum):
    """What a heartbeat of one attempt learns from the database."""

    ALIVE = "alive"
    CANCEL_REQUESTED = "cancel_requested"
    LOST = "lost"  # fenced out: the item is no longer this attempt's


class AttemptOutcome(enum.StrEnum):
    """How one attempt ended, as recorded in ``work_attempts.outcome``."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RELEASED = "released"
    STALLED = "stalled"
    SUPERSEDED = "superseded"


@dataclass(frozen=True, slots=True)
class WorkItem:
    id: int
    kind: str
    storage_config_id: UUID | None
    dedup_key: str | None
    payload: dict[str, Any]
    status: Status
    requested_at: datetime
    attempt: int
    stalls: int
    worker_id: str | None = None
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None
    lease_expires_at: datetime | None = None
    finished_at: datetime | None = None
    cancel_requested: bool = False
    error: str | None = None
    result: dict[str, Any] | None = field(default=None)
    retries: int = 0
    """Failed attempts put back for a retry (ADR 0024); counted apart from ``stalls``."""
    not_before: datetime | None = None
    """A queued item waiting for its retry is not claimed before this (the database's)
    time; None for every other item."""
    progress: dict[str, Any] | None = None
    """What its current or last attempt reported doing, ``{"attempt": n, "counts": {...}}``
    (saved with the heartbeats and when the attempt ended); None if none did."""


class RetryResult(enum.StrEnum):
    """What ``items retry ID`` found."""

    RETRIED = "retried"  # was failed, now queued and due at once
    NOT_FAILED = "not_failed"  # queued, running, succeeded or cancelled: nothing to retry
    KEY_QUEUED = "key_queued"  # failed, but its dedup key already has a queued item
    NOT_FOUND = "not_found"


@dataclass(frozen=True, slots=True)
class RetriedCount:
    """What ``items retry --failed`` did: ``retried`` items requeued, ``left_failed``
    matching items left failed (their dedup key was queued, or another of its failed
    items was requeued)."""

    retried: int
    left_failed: int


class CancelResult(enum.StrEnum):
    CANCELLED = "cancelled"  # was queued, now cancelled
    REQUESTED = "requested"  # was running: flagged, and its attempt notified (ADR 0070)
    FINISHED = "finished"  # already succeeded, failed or cancelled: nothing to do
    NOT_FOUND = "not_found"


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    requeued: int = 0
    failed: int = 0
    superseded: int = 0

    @property
    def total(self) -> int:
        return self.requeued + self.failed + self.superseded
