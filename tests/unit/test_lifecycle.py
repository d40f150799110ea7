"""ADR 0032: the lifecycle lines. Every attempt's two lines at DEBUG; at INFO a line for
every attempt worth one, and quick successes summed up once a minute."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import running_item
from safelight.work.executor import RunResult
from safelight.work.lifecycle import Lifecycle
from safelight.work.outcome import Complete, Fail, Failed, Succeeded

LOGGER = "test.lifecycle"
ITEM = running_item(id=4, attempt=1, config=None, worker_id="w1")
NOOP = dataclasses.replace(ITEM, kind="noop")
DONE = RunResult(Succeeded(None), Complete(None), True)
REFUSED = RunResult(Succeeded(None), Complete(None), False)
FAILED = RunResult(Failed("boom"), Fail("boom"), True)


@pytest.fixture
def lifecycle(clock: FakeClock) -> Lifecycle:
    return Lifecycle(logging.getLogger(LOGGER), clock)


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records]


async def test_at_debug_both_lines_of_every_attempt_are_written_at_once(
    clock: FakeClock, lifecycle: Lifecycle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    claim = lifecycle.claimed(ITEM, "w1")
    assert lines(caplog) == [("DEBUG", "work item 4 attempt 1: claimed by w1 (crawl, unscoped)")]
    await clock.advance(0.25)
    lifecycle.ended(claim, DONE, 0.25)
    assert lines(caplog)[1] == (
        "DEBUG",
        "work item 4 attempt 1: ended succeeded after 0.250 s (crawl, unscoped)",
    )
    record = caplog.records[1]
    assert (record.outcome, record.seconds, record.worker_id) == ("succeeded", 0.25, "w1")  # type: ignore[attr-defined]
    assert (record.item_id, record.attempt) == (4, 1)  # type: ignore[attr-defined]


async def test_at_info_quick_successes_are_summed_up_once_a_minute(
    clock: FakeClock, lifecycle: Lifecycle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    for item, seconds in ((ITEM, 0.5), (NOOP, 0.999), (NOOP, 0.0)):
        claim = lifecycle.claimed(item, "w1")
        lifecycle.ended(claim, DONE, seconds)
    await clock.advance(10)
    lifecycle.ended(lifecycle.claimed(NOOP, "w2"), DONE, 0.1)
    assert caplog.records == []
    assert clock.deadlines() == [1060.0]  # one summary, due a minute after the first
    await clock.advance(49.999)
    assert caplog.records == []
    await clock.advance(0.001)
    assert lines(caplog) == [
        ("INFO", "4 attempts succeeded within 1 s in the last 60 s (crawl 1, noop 3)")
    ]
    assert caplog.records[0].succeeded == {"crawl": 1, "noop": 3}  # type: ignore[attr-defined]
    assert clock.deadlines() == []
    # Counted afresh: the next one starts a new minute.
    lifecycle.ended(lifecycle.claimed(NOOP, "w1"), DONE, 0.1)
    assert clock.deadlines() == [1120.0]


async def test_a_flush_writes_what_was_counted_and_nothing_when_nothing_was(
    clock: FakeClock, lifecycle: Lifecycle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    lifecycle.flush()
    assert caplog.records == []
    lifecycle.ended(lifecycle.claimed(NOOP, "w1"), DONE, 0.1)
    await clock.advance(12.4)
    lifecycle.flush()
    assert lines(caplog) == [("INFO", "1 attempt succeeded within 1 s in the last 12 s (noop 1)")]
    assert clock.deadlines() == []  # its minute's timer went with it
    lifecycle.flush()
    assert len(caplog.records) == 1


async def test_an_attempt_still_running_after_a_second_says_so_then(
    clock: FakeClock, lifecycle: Lifecycle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    claim = lifecycle.claimed(ITEM, "w1")
    await clock.advance(0.999)
    assert caplog.records == []
    await clock.advance(0.001)
    assert lines(caplog) == [
        ("INFO", "work item 4 attempt 1: running: claimed by w1 1 s ago (crawl, unscoped)")
    ]
    await clock.advance(6)
    lifecycle.ended(claim, DONE, 7.0)
    assert lines(caplog)[1:] == [
        ("INFO", "work item 4 attempt 1: ended succeeded after 7.000 s (crawl, unscoped)")
    ]
    assert clock.deadlines() == []  # not counted


@pytest.mark.parametrize(
    ("result", "seconds", "ended"),
    [
        (DONE, 1.0, "ended succeeded after 1.000 s (crawl, unscoped)"),
        (FAILED, 0.2, "ended failed after 0.200 s (crawl, unscoped)"),
        (REFUSED, 0.2, "ended succeeded after 0.200 s (crawl, unscoped); its write did not apply"),
    ],
)
async def test_an_attempt_that_ends_late_or_not_as_a_success_has_its_end_line_at_info(
    clock: FakeClock,
    lifecycle: Lifecycle,
    caplog: pytest.LogCaptureFixture,
    result: RunResult,
    seconds: float,
    ended: str,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    claim = lifecycle.claimed(ITEM, "w1")
    lifecycle.ended(claim, result, seconds)
    assert lines(caplog) == [("INFO", f"work item 4 attempt 1: {ended}")]
    assert clock.deadlines() == []  # neither counted nor still armed
    await clock.advance(120)
    assert len(caplog.records) == 1


async def test_a_quiet_claim_writes_no_running_line(
    clock: FakeClock, lifecycle: Lifecycle, caplog: pytest.LogCaptureFixture
) -> None:
    """An attempt cut short (its Worker cancelled) says nothing more."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    claim = lifecycle.claimed(ITEM, "w1")
    claim.quiet()
    claim.quiet()
    assert clock.deadlines() == []
    await clock.advance(5)
    assert caplog.records == []


async def test_above_info_nothing_is_armed_or_counted(
    clock: FakeClock, lifecycle: Lifecycle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    claim = lifecycle.claimed(ITEM, "w1")
    assert clock.deadlines() == []
    lifecycle.ended(claim, DONE, 0.1)
    lifecycle.ended(lifecycle.claimed(ITEM, "w1"), FAILED, 0.1)
    assert clock.deadlines() == []
    lifecycle.flush()
    assert caplog.records == []


async def test_the_thresholds_are_settings(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    lifecycle = Lifecycle(logging.getLogger(LOGGER), clock, prompt_seconds=5, summary_seconds=30)
    claim = lifecycle.claimed(ITEM, "w1")
    await clock.advance(4.5)
    lifecycle.ended(claim, DONE, 4.5)
    assert clock.deadlines() == [1034.5]
    await clock.advance(30)
    assert lines(caplog) == [("INFO", "1 attempt succeeded within 5 s in the last 30 s (crawl 1)")]


async def test_the_claimed_line_carries_the_worker_id_as_a_field(
    lifecycle: Lifecycle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    lifecycle.claimed(ITEM, "w1")
    (record,) = caplog.records
    assert record.__dict__["worker_id"] == "w1"
    assert record.__dict__["item_id"] == 4
