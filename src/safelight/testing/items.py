"""Work items for tests that need one in hand without a database (journals, executors,
Workers)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from safelight.core.journal import Journal, attempt_scope
from safelight.work.model import Status, WorkItem


def running_item(
    *,
    id: int,
    attempt: int,
    config: UUID | None,
    kind: str = "crawl",
    payload: dict[str, Any] | None = None,
    worker_id: str | None = None,
) -> WorkItem:
    """A claimed item: running, its attempt ``attempt``, requested at a fixed time."""
    return WorkItem(
        id=id,
        kind=kind,
        storage_config_id=config,
        dedup_key=None,
        payload=payload or {},
        status=Status.RUNNING,
        requested_at=datetime(2026, 1, 1, tzinfo=UTC),
        attempt=attempt,
        stalls=0,
        worker_id=worker_id,
    )


def scope_of(journal: Journal | None, item: WorkItem) -> AbstractContextManager[None]:
    """The journal's attempt scope of ``item``'s attempt, as a Worker sets it around the
    handler."""
    return attempt_scope(
        journal, config_id=item.storage_config_id, item_id=item.id, attempt=item.attempt
    )


def noop_item(n: int) -> WorkItem:
    """Item ``n`` of the ``noop`` kind, unscoped, on its first attempt."""
    return running_item(id=n, attempt=1, config=None, kind="noop")


ITEM = running_item(
    id=7,
    attempt=3,
    config=UUID("00000000-0000-4000-8000-000000000001"),
    payload={"root": "/photos/ann"},
    worker_id="worker-a",
)
"""The item of the executor's tests: a crawl of a config, on its third attempt."""
