"""The retry policy: which failures may pass, the backoff and its jitter, the maximum
attempts, and each kind's policy (ADR 0024). Pure: no clock, no database; the jitter
draws from a seeded random."""

from __future__ import annotations

import dataclasses
import errno
import random
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from safelight.handlers.contract import (
    HandlerFailed,
    HandlerUnavailable,
    MalformedPayload,
    handler_failure,
)
from safelight.library.files.errors import CorruptMedia, UnreadableFile
from safelight.library.render.video import ToolTimedOut
from safelight.settings import Settings, SettingsError
from safelight.testing.items import running_item
from safelight.work.errors import InvalidWorkItem, Retryable
from safelight.work.kinds import KindSpec, Scope
from safelight.work.outcome import (
    Failed,
    Interrupted,
    Lost,
    Released,
    Retrying,
    SelfStopped,
    Succeeded,
)
from safelight.work.retry import TRANSIENT_ERRNOS, Retries, RetryPolicy, after_failure, is_retryable

POLICY = RetryPolicy(max_attempts=4, delay_seconds=30.0, max_delay_seconds=100.0, jitter=0.25)
EIO = OSError(errno.EIO, "Input/output error")
EIO_TEXT = "OSError: [Errno 5] Input/output error"


def no_draw() -> float:
    raise AssertionError("the jitter was drawn for an outcome that does not wait")


class Draws:
    """A draw that returns ``values`` in turn and counts its calls."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.values.pop(0)


# --- which failures may pass -------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(TRANSIENT_ERRNOS))
def test_an_os_error_of_a_storage_or_network_gone_for_a_while_may_pass(code: int) -> None:
    assert is_retryable(OSError(code, "gone for a while"))


def test_the_errors_of_a_nas_mount_are_among_them() -> None:
    nas = {errno.EIO, errno.ESTALE, errno.ETIMEDOUT, errno.ENOTCONN, errno.EHOSTDOWN}
    assert nas <= TRANSIENT_ERRNOS


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOENT, "No such file or directory"),
        OSError(errno.EACCES, "Permission denied"),
        OSError(errno.EPERM, "Operation not permitted"),
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.ENOTDIR, "Not a directory"),
        OSError("no errno at all"),
        FileNotFoundError(errno.ENOENT, "gone"),
        ValueError("bad value"),
        KeyError("bug"),
        MalformedPayload("noop seconds must be a number"),
        InvalidWorkItem("unknown kind"),
        HandlerFailed("storage config is disabled"),
        CorruptMedia("ffmpeg could not decode"),
        UnreadableFile("I/O error while reading the file"),
        ToolTimedOut("ffmpeg ran past its time limit"),
        # A database error is a stall (outcome.Interrupted), never a retry.
        psycopg.OperationalError("server closed the connection"),
    ],
    ids=repr,
)
def test_what_would_fail_the_same_way_again_does_not_pass(error: BaseException) -> None:
    assert not is_retryable(error)


@pytest.mark.parametrize(
    "error",
    [
        Retryable("the share is not mounted"),
        HandlerUnavailable("the storage root cannot be listed"),
        TimeoutError(),
        ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
    ],
    ids=repr,
)
def test_a_handlers_retryable_and_a_timeout_may_pass(error: BaseException) -> None:
    assert is_retryable(error)


def test_a_handlers_failure_is_retryable_only_when_its_cause_may_pass() -> None:
    retried = handler_failure("cannot be opened: I/O error", EIO)
    final = handler_failure("cannot be opened: permission denied", PermissionError(errno.EACCES))
    assert type(retried) is HandlerUnavailable and str(retried) == "cannot be opened: I/O error"
    assert type(final) is HandlerFailed and str(final) == "cannot be opened: permission denied"
    assert is_retryable(retried) and not is_retryable(final)


# --- the backoff -------------------------------------------------------------------------


def test_each_wait_doubles_the_one_before() -> None:
    policy = dataclasses.replace(POLICY, max_delay_seconds=10_000.0, jitter=0.0)
    assert [policy.delay_after(n, 0.5) for n in (1, 2, 3, 4, 5)] == [30, 60, 120, 240, 480]


def test_no_wait_is_longer_than_the_cap() -> None:
    policy = dataclasses.replace(POLICY, jitter=0.0)
    assert [policy.delay_after(n, 0.0) for n in (1, 2, 3, 4)] == [30.0, 60.0, 100.0, 100.0]


def test_a_failure_far_past_the_cap_still_waits_the_cap() -> None:
    assert dataclasses.replace(POLICY, jitter=0.0).delay_after(5000, 0.0) == 100.0


def test_the_jitter_takes_off_up_to_its_share_of_the_wait() -> None:
    assert POLICY.delay_after(1, 0.0) == 30.0  # nothing off
    assert POLICY.delay_after(1, 0.5) == 30.0 * (1 - 0.125)
    assert POLICY.delay_after(1, 0.999) == pytest.approx(30.0 * (1 - 0.25 * 0.999))
    assert POLICY.delay_after(3, 0.5) == 100.0 * (1 - 0.125)  # of the capped wait


def test_the_jitter_of_a_seeded_random_stays_within_its_bounds_and_repeats() -> None:
    def waits(seed: int) -> list[float]:
        draw = random.Random(seed).random
        return [POLICY.delay_after(n, draw()) for n in (1, 2, 3) for _ in range(200)]

    first = waits(15)
    assert first == waits(15)  # deterministic
    assert first != waits(16)
    bounds = {1: (22.5, 30.0), 2: (45.0, 60.0), 3: (75.0, 100.0)}
    for n, (low, high) in bounds.items():
        chunk = first[(n - 1) * 200 : n * 200]
        assert all(low < w <= high for w in chunk)
        assert max(chunk) - min(chunk) > (high - low) / 2  # the jitter spreads them


def test_no_jitter_waits_exactly() -> None:
    policy = dataclasses.replace(POLICY, jitter=0.0)
    assert {policy.delay_after(2, d) for d in (0.0, 0.3, 0.99)} == {60.0}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_attempts": 0}, r"^max_attempts must be at least 1, got 0$"),
        ({"delay_seconds": 0.0}, r"^delay_seconds must be > 0, got 0\.0$"),
        ({"delay_seconds": -1.0}, r"^delay_seconds must be > 0, got -1\.0$"),
        ({"delay_seconds": float("nan")}, r"^delay_seconds must be > 0, got nan$"),
        ({"delay_seconds": float("inf")}, r"^delay_seconds must be > 0, got inf$"),
        (
            {"max_delay_seconds": 29.0},
            r"^max_delay_seconds must be at least delay_seconds \(30\), got 29\.0$",
        ),
        (
            {"max_delay_seconds": float("inf")},
            r"^max_delay_seconds must be at least delay_seconds \(30\), got inf$",
        ),
        ({"jitter": -0.01}, r"^jitter must be between 0 and 1, got -0\.01$"),
        ({"jitter": 1.01}, r"^jitter must be between 0 and 1, got 1\.01$"),
    ],
)
def test_a_policy_is_validated(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(POLICY, **changes)


def test_the_edges_of_a_policy_are_valid() -> None:
    edge = RetryPolicy(max_attempts=1, delay_seconds=0.5, max_delay_seconds=0.5, jitter=1.0)
    assert edge.delay_after(1, 0.0) == 0.5
    assert dataclasses.replace(edge, jitter=0.0).jitter == 0.0


# --- the outcome of a failure ------------------------------------------------------------


def test_a_failure_that_may_pass_with_attempts_left_waits_its_backoff() -> None:
    draw = Draws(0.5)
    assert after_failure(POLICY, 0, EIO, draw) == Retrying(EIO_TEXT, 26.25)
    assert draw.calls == 1
    assert after_failure(POLICY, 1, EIO, Draws(0.0)) == Retrying(EIO_TEXT, 60.0)
    assert after_failure(POLICY, 2, EIO, Draws(0.0)) == Retrying(EIO_TEXT, 100.0)


def test_the_last_attempt_fails_for_good_saying_how_often() -> None:
    assert after_failure(POLICY, 3, EIO, no_draw) == Failed(f"failed 4 times; last: {EIO_TEXT}")
    # Retries counted past the policy's maximum (it was lowered since) fail at once too.
    assert after_failure(POLICY, 9, EIO, no_draw) == Failed(f"failed 10 times; last: {EIO_TEXT}")


def test_a_policy_of_one_attempt_never_retries() -> None:
    once = dataclasses.replace(POLICY, max_attempts=1)
    assert after_failure(once, 0, EIO, no_draw) == Failed(EIO_TEXT)


def test_a_failure_that_would_repeat_fails_at_once_with_attempts_left() -> None:
    error = MalformedPayload("noop seconds must be a number, not 'abc'")
    assert after_failure(POLICY, 0, error, no_draw) == Failed(
        "MalformedPayload: noop seconds must be a number, not 'abc'"
    )


def test_a_kind_with_no_policy_is_not_retried() -> None:
    assert after_failure(None, 0, EIO, no_draw) == Failed(EIO_TEXT)


# --- each kind's policy ------------------------------------------------------------------


def test_each_kind_gets_its_own_policy_or_the_default() -> None:
    own = dataclasses.replace(POLICY, max_attempts=2)
    default = dataclasses.replace(POLICY, max_attempts=7)
    draws = Draws()
    retries = Retries.of(
        [KindSpec("crawl", Scope.REQUIRED, own), KindSpec("noop", Scope.OPTIONAL)],
        default,
        draws,
    )
    assert retries.policies == {"crawl": own, "noop": default}
    assert retries.draw is draws


def item_of(kind: str, retries: int) -> Any:
    return dataclasses.replace(
        running_item(id=7, attempt=3, config=None, kind=kind), retries=retries
    )


def test_retries_decide_by_the_items_kind_and_its_retries_so_far() -> None:
    two = dataclasses.replace(POLICY, max_attempts=2, jitter=0.0)
    draws: Callable[[], float] = Draws(0.0, 0.0)
    retries = Retries({"crawl": two}, draws)
    assert retries.outcome(item_of("crawl", 0), EIO) == Retrying(EIO_TEXT, 30.0)
    assert retries.outcome(item_of("crawl", 1), EIO) == Failed(f"failed 2 times; last: {EIO_TEXT}")
    assert retries.outcome(item_of("noop", 0), EIO) == Failed(EIO_TEXT)  # no policy


def test_only_a_failed_verdict_for_an_error_is_the_policys_to_decide() -> None:
    retries = Retries({"crawl": dataclasses.replace(POLICY, jitter=0.0)}, Draws(0.0))
    item = item_of("crawl", 0)
    failed = Failed(EIO_TEXT)
    assert retries.after(failed, item, EIO) == Retrying(EIO_TEXT, 30.0)
    # Cancelled on its own, nothing raised: a failure no retry would mend.
    unasked = Failed("CancelledError: the handler was cancelled while its attempt was not stopped")
    assert retries.after(unasked, item, None) is unasked
    for verdict in (Succeeded(None), Released(), Lost(), SelfStopped(), Interrupted(EIO_TEXT)):
        assert retries.after(verdict, item, EIO) is verdict


def test_no_retries_retry_nothing() -> None:
    assert Retries().outcome(item_of("crawl", 0), EIO) == Failed(EIO_TEXT)


# --- the settings ------------------------------------------------------------------------


def test_the_default_policy_comes_from_the_settings() -> None:
    assert Settings().retry_policy() == RetryPolicy(
        max_attempts=5, delay_seconds=30.0, max_delay_seconds=3600.0, jitter=0.25
    )


def test_the_policy_settings_come_from_the_environment() -> None:
    env = {
        "SAFELIGHT_RETRY_MAX_ATTEMPTS": "2",
        "SAFELIGHT_RETRY_DELAY_SECONDS": "1.5",
        "SAFELIGHT_RETRY_MAX_DELAY_SECONDS": "9",
        "SAFELIGHT_RETRY_JITTER": "0",
    }
    assert Settings.load(env=env).retry_policy() == RetryPolicy(2, 1.5, 9.0, 0.0)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"retry_max_attempts": 0}, r"^retry_max_attempts must be greater than 0, not 0$"),
        ({"retry_delay_seconds": 0.0}, r"^retry_delay_seconds must be greater than 0, not 0\.0$"),
        (
            {"retry_delay_seconds": 60.0, "retry_max_delay_seconds": 59.0},
            r"^retry_max_delay_seconds \(59\) must not be less than retry_delay_seconds \(60\)$",
        ),
        ({"retry_jitter": -0.5}, r"^retry_jitter must be between 0 and 1, not -0\.5$"),
        ({"retry_jitter": 2.0}, r"^retry_jitter must be between 0 and 1, not 2\.0$"),
    ],
)
def test_the_policy_settings_are_validated_naming_the_setting(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings(**values)


def test_the_edges_of_the_policy_settings_are_valid() -> None:
    settings = Settings(
        retry_max_attempts=1, retry_delay_seconds=5.0, retry_max_delay_seconds=5.0, retry_jitter=1.0
    )
    assert settings.retry_policy() == RetryPolicy(1, 5.0, 5.0, 1.0)
    assert Settings(retry_jitter=0.0).retry_jitter == 0.0
