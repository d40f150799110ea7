"""The backoff of a Worker process's tasks while the database is away."""

from __future__ import annotations

import pytest

from safelight.work.backoff import Backoff


def test_the_wait_doubles_from_the_first_up_to_the_most_and_a_success_resets_it() -> None:
    backoff = Backoff(5.0, 60.0)
    assert [backoff.failed() for _ in range(6)] == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    assert backoff.failures == 6
    backoff.succeeded()
    assert (backoff.failures, backoff.failed()) == (0, 5.0)


def test_a_ceiling_below_the_first_wait_is_the_first_wait() -> None:
    backoff = Backoff(30.0, 10.0)
    assert (backoff.most_seconds, backoff.failed(), backoff.failed()) == (30.0, 30.0, 30.0)


def test_months_of_failures_do_not_overflow() -> None:
    backoff = Backoff(1.0, 60.0)
    for _ in range(5000):
        wait = backoff.failed()
    assert wait == 60.0


@pytest.mark.parametrize("first", [0.0, -1.0])
def test_the_first_wait_must_be_positive(first: float) -> None:
    with pytest.raises(ValueError, match="first_seconds must be > 0"):
        Backoff(first, 60.0)


def test_the_doublings_stop_at_64_however_far_the_ceiling() -> None:
    # Only a ceiling more than 2**64 first waits away shows where the exponent stops.
    backoff = Backoff(first_seconds=2.0**-70, most_seconds=1.0)
    waits = [backoff.failed() for _ in range(200)]
    assert waits[64] == 2.0**-6
    assert waits[-1] == 2.0**-6
