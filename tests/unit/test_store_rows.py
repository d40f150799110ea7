"""A row of ``work_items`` as the store reads it into a ``WorkItem``: every column to its
field (the SQL itself is the integration tests')."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from safelight.work.model import Status, WorkItem
from safelight.work.store import _item_from_row

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_every_column_of_a_row_goes_to_its_field() -> None:
    config = UUID("00000000-0000-4000-8000-0000000000c1")
    row = {
        "id": 41,
        "kind": "crawl",
        "storage_config_id": config,
        "dedup_key": f"crawl:{config}",
        "payload": {"a": 1},
        "status": "queued",
        "requested_at": T0,
        "attempt": 3,
        "stalls": 1,
        "worker_id": "host:1/0",
        "started_at": T0 + timedelta(seconds=1),
        "heartbeat_at": T0 + timedelta(seconds=2),
        "lease_expires_at": T0 + timedelta(seconds=3),
        "finished_at": T0 + timedelta(seconds=4),
        "cancel_requested": True,
        "error": "OSError: [Errno 5] Input/output error",
        "result": {"files": 2},
        "retries": 2,
        "not_before": T0 + timedelta(seconds=5),
        "progress": {"attempt": 3, "counts": {"found": 7}},
    }
    assert _item_from_row(row) == WorkItem(
        id=41,
        kind="crawl",
        storage_config_id=config,
        dedup_key=f"crawl:{config}",
        payload={"a": 1},
        status=Status.QUEUED,
        requested_at=T0,
        attempt=3,
        stalls=1,
        worker_id="host:1/0",
        started_at=T0 + timedelta(seconds=1),
        heartbeat_at=T0 + timedelta(seconds=2),
        lease_expires_at=T0 + timedelta(seconds=3),
        finished_at=T0 + timedelta(seconds=4),
        cancel_requested=True,
        error="OSError: [Errno 5] Input/output error",
        result={"files": 2},
        retries=2,
        not_before=T0 + timedelta(seconds=5),
        progress={"attempt": 3, "counts": {"found": 7}},
    )
