"""The outcome → store-call mapping, for every outcome, record() making the call, and
the names and failure flags the outcomes and writes declare."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from safelight.app import FinishedItem, finished_item
from safelight.testing.items import ITEM
from safelight.testing.workstore import ScriptedStore
from safelight.work.errors import StopReason
from safelight.work.executor import RunResult
from safelight.work.outcome import (
    Abandoned,
    Cancel,
    Cancelled,
    ClaimedLate,
    Complete,
    Defer,
    Deferred,
    Fail,
    Failed,
    Interrupted,
    Lost,
    Outcome,
    Release,
    Released,
    Retry,
    Retrying,
    RetryLater,
    SelfStopped,
    Succeeded,
    UnknownKind,
    Write,
    record,
    write_for,
)

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

CASES: list[tuple[Outcome, Write | None, tuple[Any, ...] | None]] = [
    (Succeeded({"files": 3}), Complete({"files": 3}), ("complete", 7, 3, {"files": 3})),
    (Succeeded(None), Complete(None), ("complete", 7, 3, None)),
    (Failed("ValueError: bad"), Fail("ValueError: bad"), ("fail", 7, 3, "ValueError: bad")),
    (
        Retrying("OSError: [Errno 5] Input/output error", 27.5),
        RetryLater("OSError: [Errno 5] Input/output error", 27.5),
        ("retry_later", 7, 3, "OSError: [Errno 5] Input/output error", 27.5),
    ),
    (
        Interrupted("OperationalError: gone"),
        Retry("OperationalError: gone"),
        ("retry", 7, 3, "OperationalError: gone"),
    ),
    (
        UnknownKind("purge"),
        Fail("no handler for kind purge"),
        ("fail", 7, 3, "no handler for kind purge"),
    ),
    (Cancelled(), Cancel(), ("cancel", 7, 3)),
    (Released(), Release(), ("release", 7, 3)),
    (ClaimedLate(31.0), Release(), ("release", 7, 3)),
    (
        Deferred("wound down", 3600.0),
        Defer("wound down", 3600.0),
        ("defer", 7, 3, "wound down", 3600.0),
    ),
    (Lost(), None, None),
    (SelfStopped(), None, None),
    (Abandoned(StopReason.SHUTDOWN), None, None),
    (Abandoned(StopReason.LOST), None, None),
]


@pytest.mark.parametrize(("outcome", "write", "call"), CASES)
def test_each_outcome_maps_to_one_write_or_none(
    outcome: Outcome, write: Write | None, call: tuple[Any, ...] | None
) -> None:
    assert write_for(outcome) == write


@pytest.mark.parametrize(("outcome", "write", "call"), CASES)
@pytest.mark.parametrize("applied", [True, False])
async def test_record_makes_exactly_that_call_and_returns_whether_it_applied(
    store: ScriptedStore,
    outcome: Outcome,
    write: Write | None,
    call: tuple[Any, ...] | None,
    applied: bool,
) -> None:
    store.writes = applied
    result = await record(store, ITEM, write_for(outcome))
    if call is None:
        assert store.calls == []
        assert result is False
    else:
        assert store.calls == [(0.0, *call)]
        assert result is applied


async def test_record_lets_a_store_error_through(store: ScriptedStore) -> None:
    store.writes = ConnectionError("database is down")
    with pytest.raises(ConnectionError, match=r"^database is down$"):
        await record(store, ITEM, write_for(Failed("ValueError: bad")))
    assert store.calls == [(0.0, "fail", 7, 3, "ValueError: bad")]


def test_no_outcome_of_a_stopped_attempt_reaches_fail() -> None:
    """Finding 1 of the design review, as a rule of the mapping: only an outcome that
    says the handler itself failed writes ``fail``."""
    failing = [outcome for outcome, write, _ in CASES if isinstance(write, Fail)]
    assert failing == [Failed("ValueError: bad"), UnknownKind("purge")]


def test_outcomes_declare_the_names_runs_report_and_which_count_as_failure() -> None:
    """The names are what a run's summary and its JSON say (``safelight.app``), and
    ``counts_as_failure`` decides ``safelight run``'s exit code: both are declared by
    each class, so renaming a class changes neither."""
    declared = {
        cls: (vars(cls)["name"], vars(cls)["counts_as_failure"]) for cls in get_args(Outcome)
    }
    assert declared == {
        Succeeded: ("succeeded", False),
        Failed: ("failed", True),
        Retrying: ("retrying", False),
        Interrupted: ("interrupted", False),
        UnknownKind: ("unknownkind", True),
        Cancelled: ("cancelled", False),
        Released: ("released", False),
        ClaimedLate: ("claimedlate", False),
        Lost: ("lost", False),
        SelfStopped: ("selfstopped", False),
        Abandoned: ("abandoned", False),
        Deferred: ("deferred", False),
    }
    assert Failed("x").name == "failed" and UnknownKind("k").counts_as_failure


def test_writes_declare_the_store_call_they_make() -> None:
    assert {cls: vars(cls)["name"] for cls in get_args(Write)} == {
        Complete: "complete",
        Fail: "fail",
        RetryLater: "retry_later",
        Retry: "retry",
        Cancel: "cancel",
        Release: "release",
        Defer: "defer",
    }


@pytest.mark.parametrize(("outcome", "write", "call"), CASES)
def test_a_finished_item_reports_the_outcome_and_what_its_write_stored(
    outcome: Outcome, write: Write | None, call: tuple[Any, ...] | None
) -> None:
    finished = finished_item(ITEM, RunResult(outcome, write_for(outcome), True))
    result = outcome.result if isinstance(outcome, Succeeded) else None
    error = {
        Failed: "ValueError: bad",
        Retrying: "OSError: [Errno 5] Input/output error",
        Interrupted: "OperationalError: gone",
        UnknownKind: "no handler for kind purge",
    }.get(type(outcome))
    assert finished == FinishedItem(
        ITEM.id,
        ITEM.kind,
        ITEM.storage_config_id,
        outcome.name,
        result,
        error,
        outcome.counts_as_failure,
    )
