"""The documents the operator's two front ends show of the queue: a work item as JSON,
an attempt's saved progress as one line, and the one JSON encoding of both (the CLI's
``--json`` and ``safelight serve``'s API), so the two cannot say different things."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

from safelight.work.model import WorkItem


def json_default(value: Any) -> Any:
    """``json.dumps``'s ``default``: the CLI's and the web API's one encoding."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, UUID | Path | Decimal):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def item_document(item: WorkItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "kind": item.kind,
        "status": item.status.value,
        "storage_config_id": item.storage_config_id,
        "dedup_key": item.dedup_key,
        "payload": item.payload,
        "attempt": item.attempt,
        "stalls": item.stalls,
        "retries": item.retries,
        "worker_id": item.worker_id,
        "requested_at": item.requested_at,
        "not_before": item.not_before,
        "started_at": item.started_at,
        "heartbeat_at": item.heartbeat_at,
        "lease_expires_at": item.lease_expires_at,
        "finished_at": item.finished_at,
        "cancel_requested": item.cancel_requested,
        "error": item.error,
        "result": item.result,
        "progress": item.progress,
    }


def progress_line(progress: Mapping[str, Any] | None) -> str | None:
    """``attempt 1: found 133, ingested 133, proxies 399``: what an attempt saved it did
    (its counters that are not 0, by name: the database keeps no order of keys)."""
    if not progress:
        return None
    counts = progress.get("counts")
    if not isinstance(counts, Mapping):
        return json.dumps(progress)
    done = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v != 0) or "nothing yet"
    return f"attempt {progress.get('attempt')}: {done}"
