"""What guessing costs (``accounts.guessing``, ADR 0040), on a fake clock: lockouts per
account and per client that end by themselves, double, are forgotten, and the two log
lines of each."""

from __future__ import annotations

import logging

import pytest

from safelight.accounts import guessing
from safelight.accounts.guessing import (
    ACCOUNT_FAILURES,
    CLIENT_FAILURES,
    FIRST_LOCKOUT_SECONDS,
    MAX_LOCKOUT_SECONDS,
    WINDOW_SECONDS,
    Guesses,
)
from safelight.testing.fakeclock import FakeClock

LOGGER = "safelight.test.guesses"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def guesses(clock: FakeClock) -> Guesses:
    return Guesses(clock.monotonic, logging.getLogger(LOGGER))


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    found = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]
    caplog.clear()
    return found


def fail(
    guesses: Guesses, times: int, client: str = "10.0.0.1", account: str | None = "alice"
) -> None:
    for _ in range(times):
        assert guesses.wait_for(client, account) == 0.0
        guesses.failed(client, account)


def test_the_policy_is_the_documented_one() -> None:
    assert (ACCOUNT_FAILURES, CLIENT_FAILURES) == (5, 20)
    assert (WINDOW_SECONDS, FIRST_LOCKOUT_SECONDS, MAX_LOCKOUT_SECONDS) == (900, 60, 900)
    assert guessing.MAX_KEYS == 10_000


def test_an_account_is_locked_after_five_failures_and_the_lockout_ends_by_itself(
    guesses: Guesses, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    fail(guesses, ACCOUNT_FAILURES - 1, client="10.0.0.1")
    assert guesses.wait_for("10.0.0.9", "alice") == 0.0
    assert lines(caplog) == []

    guesses.failed("10.0.0.2", "alice")  # the fifth, from another address

    assert lines(caplog) == [
        (
            logging.WARNING,
            "sign-in locked for account 'alice' after 5 failed tries within 15 minutes: for 60 s",
        )
    ]
    assert guesses.wait_for("10.0.0.3", "alice") == 60.0
    clock.jump(59.5)
    assert guesses.wait_for("10.0.0.4", "alice") == pytest.approx(0.5)
    assert guesses.wait_for("10.0.0.4", "bob") == 0.0  # another account is not locked
    assert lines(caplog) == []  # refusals are counted, not logged one by one

    clock.jump(0.5)
    assert guesses.wait_for("10.0.0.4", "alice") == 0.0
    assert lines(caplog) == [
        (logging.INFO, "sign-in lockout of account 'alice' ended: 2 tries refused during it")
    ]
    assert guesses.wait_for("10.0.0.4", "alice") == 0.0
    assert lines(caplog) == []  # one line per lockout


def test_each_next_lockout_doubles_up_to_fifteen_minutes(
    guesses: Guesses, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    lasted = []
    for n in range(7):
        # From a new address each time, so that no client reaches its own limit.
        fail(guesses, ACCOUNT_FAILURES, client=f"10.0.0.{n}", account="alice")
        wait = guesses.wait_for("10.0.0.99", "alice")
        lasted.append(wait)
        clock.jump(wait)
    assert lasted == [60, 120, 240, 480, 900, 900, 900]
    assert [m.rsplit(": ", 1)[1] for _, m in lines(caplog)] == [
        "for 60 s",
        "for 120 s",
        "for 240 s",
        "for 480 s",
        "for 900 s",
        "for 900 s",
        "for 900 s",
    ]


def test_failures_older_than_the_window_do_not_count(guesses: Guesses, clock: FakeClock) -> None:
    fail(guesses, ACCOUNT_FAILURES - 1)
    clock.jump(WINDOW_SECONDS - 1)
    guesses.failed("10.0.0.1", "alice")  # five within the window: locked
    assert guesses.wait_for("10.0.0.1", "alice") == FIRST_LOCKOUT_SECONDS

    other = Guesses(clock.monotonic, logging.getLogger(LOGGER))
    for _ in range(ACCOUNT_FAILURES):
        other.failed("10.0.0.1", "bob")
        clock.jump(WINDOW_SECONDS / (ACCOUNT_FAILURES - 1) + 1)  # never five within 15 min
    assert other.wait_for("10.0.0.1", "bob") == 0.0


def test_a_key_is_forgotten_fifteen_minutes_after_its_last_failure_or_lockout(
    guesses: Guesses, clock: FakeClock
) -> None:
    fail(guesses, ACCOUNT_FAILURES)
    clock.jump(FIRST_LOCKOUT_SECONDS + WINDOW_SECONDS - 1)
    fail(guesses, ACCOUNT_FAILURES)  # remembered: the second lockout is doubled
    assert guesses.wait_for("10.0.0.1", "alice") == 2 * FIRST_LOCKOUT_SECONDS

    clock.jump(2 * FIRST_LOCKOUT_SECONDS + WINDOW_SECONDS + 1)
    guesses.sweep()
    assert guesses.tracked() == 0  # forgotten, the client too
    fail(guesses, ACCOUNT_FAILURES)
    assert guesses.wait_for("10.0.0.1", "alice") == FIRST_LOCKOUT_SECONDS


def test_a_success_clears_the_accounts_count_but_not_the_clients(
    guesses: Guesses, clock: FakeClock
) -> None:
    fail(guesses, ACCOUNT_FAILURES - 1, account="alice")
    guesses.succeeded("10.0.0.1", "alice")
    fail(guesses, ACCOUNT_FAILURES - 1, account="alice")
    assert guesses.wait_for("10.0.0.1", "alice") == 0.0

    # The client's count went on: 8 failures so far; 12 more on other names lock it.
    for n in range(CLIENT_FAILURES - 2 * (ACCOUNT_FAILURES - 1)):
        guesses.failed("10.0.0.1", f"user{n}")
    assert guesses.wait_for("10.0.0.1", "carol") == FIRST_LOCKOUT_SECONDS
    assert guesses.wait_for("10.0.0.2", "carol") == 0.0


def test_a_client_is_locked_after_twenty_failures_and_logged_by_address(
    guesses: Guesses, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    for n in range(CLIENT_FAILURES):
        guesses.failed("192.0.2.7", None if n % 2 else f"name{n}")
    assert lines(caplog) == [
        (
            logging.WARNING,
            "sign-in locked for client 192.0.2.7 after 20 failed tries within 15 minutes: for 60 s",
        )
    ]
    assert guesses.wait_for("192.0.2.7", None) == 60.0
    assert guesses.wait_for("192.0.2.7", "alice") == 60.0
    clock.jump(60)
    guesses.sweep()
    assert lines(caplog) == [
        (logging.INFO, "sign-in lockout of client 192.0.2.7 ended: 2 tries refused during it")
    ]


def test_a_name_is_logged_printable(guesses: Guesses, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    fail(guesses, ACCOUNT_FAILURES, account="al\x1b[2Jice\n")
    [(_, message)] = lines(caplog)
    assert "account 'al\\x1b[2Jice\\n'" in message
    assert "\x1b" not in message and "\n" not in message


def test_the_keys_kept_are_bounded_and_a_running_lockout_is_not_pushed_out(
    guesses: Guesses, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guessing, "MAX_KEYS", 50)
    fail(guesses, ACCOUNT_FAILURES, client="10.0.0.1", account="alice")
    for n in range(200):
        guesses.failed(f"10.1.0.{n}", f"name{n}")
    assert guesses.tracked() == 50
    assert guesses.wait_for("10.9.9.9", "alice") == FIRST_LOCKOUT_SECONDS
    assert guesses.wait_for("10.1.0.199", None) == 0.0


def test_a_long_name_is_kept_cut_short(guesses: Guesses) -> None:
    long = "x" * 1_000_000
    fail(guesses, ACCOUNT_FAILURES, account=long)
    assert guesses.wait_for("10.0.0.2", long) == FIRST_LOCKOUT_SECONDS
    assert guesses.wait_for("10.0.0.2", long[: guessing.MAX_KEY_CHARACTERS]) > 0
    assert all(len(name) <= guessing.MAX_KEY_CHARACTERS for _, name in guesses._keys)


def test_a_failure_exactly_one_window_old_still_counts(guesses: Guesses, clock: FakeClock) -> None:
    """The window is inclusive: five failures within fifteen minutes, the first exactly
    fifteen minutes before the fifth, lock the account (and the key is not forgotten)."""
    fail(guesses, ACCOUNT_FAILURES - 1)
    clock.jump(WINDOW_SECONDS)
    guesses.failed("10.0.0.1", "alice")
    assert guesses.wait_for("10.0.0.1", "alice") == FIRST_LOCKOUT_SECONDS


def test_the_key_dropped_past_the_bound_is_the_least_recently_touched(
    guesses: Guesses, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guessing, "MAX_KEYS", 3)
    for client in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        guesses.failed(client, None)
    assert guesses.wait_for("10.0.0.1", None) == 0.0  # a look touches it too
    guesses.failed("10.0.0.4", None)
    assert set(guesses._keys) == {
        ("client", "10.0.0.1"),
        ("client", "10.0.0.3"),
        ("client", "10.0.0.4"),
    }
