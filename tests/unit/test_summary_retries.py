"""A run's summary lists an item that failed for good, not an attempt that went back to
the queue for a retry (ADR 0024)."""

from __future__ import annotations

from typing import Any

from safelight.testing.summaries import rendered, summary_document
from safelight.work.outcome import FAILS_BY_NAME


def rendered_items(items: list[dict[str, Any]]) -> str:
    return rendered(summary_document(items=items))


def item(n: int, outcome: str, error: str | None) -> dict[str, Any]:
    return {"id": n, "kind": "crawl", "storage_config_id": None, "outcome": outcome, "error": error}


def test_a_retried_attempt_is_not_listed_as_failed_but_the_last_failure_is() -> None:
    eio = "OSError: [Errno 5] Input/output error"
    retried_then_done = rendered_items([item(1, "retrying", eio), item(1, "succeeded", None)])
    assert "failed" not in retried_then_done
    spent = rendered_items(
        [item(1, "retrying", eio), item(1, "failed", f"failed 2 times; last: {eio}")]
    )
    assert f"failed crawl #1: failed 2 times; last: {eio}" in spent
    assert spent.count(eio) == 1


def test_an_attempt_stopped_without_a_verdict_is_listed_as_stopped_not_failed() -> None:
    outage = "OperationalError: the connection is lost"
    shown = rendered_items(
        [item(1, "interrupted", outage), item(2, "lost", None), item(3, "selfstopped", None)]
    )
    assert "failed" not in shown
    assert f"stopped crawl #1 interrupted: {outage}" in shown
    assert "stopped crawl #2 lost" in shown and "stopped crawl #3 selfstopped" in shown


def test_an_unknown_kind_and_an_unknown_outcome_name_are_listed_as_failed() -> None:
    shown = rendered_items([item(1, "unknownkind", None), item(2, "no-such-outcome", "why")])
    assert "failed crawl #1: unknownkind" in shown and "failed crawl #2: why" in shown


def test_every_outcome_is_known_by_its_name_with_whether_it_fails() -> None:
    assert FAILS_BY_NAME["failed"] is True and FAILS_BY_NAME["unknownkind"] is True
    assert FAILS_BY_NAME["interrupted"] is False and FAILS_BY_NAME["succeeded"] is False
    assert FAILS_BY_NAME["deferred"] is False  # wound down at the end of its heavy hours
    assert len(FAILS_BY_NAME) == 12
