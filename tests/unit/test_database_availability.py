"""Which failures to reach the database pass by waiting (``db.availability``), and a
Worker process that waits for a database still starting (``appdb.open_when_ready``) on
the FakeClock: one line a try, the waits of its backoff, and a failure that will not
pass raised at once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg
import psycopg.errors
import psycopg_pool
import pytest

from safelight.appdb import open_when_ready
from safelight.db.availability import TRANSIENT_MESSAGES, is_connection_lost, is_transient
from safelight.db.database import DatabaseUnavailable
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

AT = 'connection failed: connection to server at "db", port 5432 failed: '


@pytest.mark.parametrize(
    "message",
    [
        AT + "FATAL:  the database system is starting up",
        AT + "FATAL:  the database system is not yet accepting connections\n"
        "DETAIL:  Consistent recovery state has not been yet reached.",
        AT + "FATAL:  the database system is not accepting connections",
        AT + "FATAL:  the database system is in recovery mode",
        AT + "FATAL:  the database system is shutting down",
        AT + "FATAL:  terminating connection due to administrator command",
        AT + "FATAL:  sorry, too many clients already",
        AT + "FATAL:  remaining connection slots are reserved for roles with the SUPERUSER "
        "attribute",
        AT + "Connection refused\n\tIs the server running on that host and accepting TCP/IP "
        "connections?",
        'connection is bad: connection to server on socket "/run/postgresql/.s.PGSQL.5432" '
        "failed: No such file or directory",
        AT + "Network is unreachable",
        AT + "No route to host",
        AT + "Connection reset by peer",
        "failed to resolve host 'db': [Errno -3] Temporary failure in name resolution",
        AT + "server closed the connection unexpectedly",
        AT + "timeout expired",
    ],
)
def test_a_server_not_ready_yet_is_transient(message: str) -> None:
    assert is_transient(psycopg.OperationalError(message))


def test_every_transient_message_is_one_a_test_above_names() -> None:
    """The list and the cases above stay one: a message added to one is added to both."""
    named = {m for m in TRANSIENT_MESSAGES if is_transient(psycopg.OperationalError(m))}
    assert named == set(TRANSIENT_MESSAGES)
    assert len(TRANSIENT_MESSAGES) == 16


@pytest.mark.parametrize(
    "message",
    [
        AT + 'FATAL:  database "photos" does not exist',
        AT + 'FATAL:  password authentication failed for user "safelight"',
        AT + 'FATAL:  role "safelight" does not exist',
        AT + 'FATAL:  no pg_hba.conf entry for host "10.0.0.2", user "safelight"',
        AT + 'FATAL:  Peer authentication failed for user "postgres"',
        "failed to resolve host 'dbb': [Errno -2] Name or service not known",
        'invalid connection option "hots"',
        "",
    ],
)
def test_a_refusal_that_waiting_would_not_mend_is_permanent(message: str) -> None:
    assert not is_transient(psycopg.OperationalError(message))


def test_a_pool_or_a_call_that_timed_out_is_transient() -> None:
    assert is_transient(psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec"))
    assert is_transient(TimeoutError())


@pytest.mark.parametrize(
    ("error", "lost"),
    [
        (psycopg_pool.PoolTimeout("couldn't get a connection"), True),
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg.errors.lookup("08006")("connection failure"), True),
        (psycopg.errors.lookup("57P01")("terminating connection"), True),
        (psycopg.errors.lookup("57P03")("the database system is starting up"), True),
        # Refusals of a statement, on a connection that is fine: not the database gone.
        (psycopg.errors.lookup("57014")("canceling statement due to statement timeout"), False),
        (psycopg.errors.lookup("40P01")("deadlock detected"), False),
        (psycopg.errors.lookup("53100")("could not extend file: No space left"), False),
        (psycopg.errors.lookup("23505")("duplicate key value"), False),
        (psycopg.InterfaceError("the connection is closed"), False),
        (OSError("Connection refused"), False),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_a_connection_lost_under_a_command(error: BaseException, lost: bool) -> None:
    assert is_connection_lost(error) is lost


# --- waiting for a database that is still starting -------------------------------------


def starting() -> DatabaseUnavailable:
    # Made in the test, not at import: mutation testing runs the tests that call
    # DatabaseUnavailable, and a constant's construction belongs to no test.
    return DatabaseUnavailable(
        "cannot reach the database at postgresql://safelight:***@db/photos: connection "
        'failed: connection to server at "db", port 5432 failed: FATAL:  the database '
        "system is starting up",
        transient=True,
    )


class Opener:
    """Raises each error of ``errors`` in turn, then returns ``"database"``."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> Any:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "database"


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "safelight.app"]


async def test_a_database_still_starting_is_waited_for_with_the_workers_backoff(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    settings = Settings(poll_seconds=5.0, outage_backoff_max_seconds=30.0)
    error = starting()
    assert error.transient is True
    opener = Opener([error] * 5)
    opening = asyncio.create_task(open_when_ready(opener, settings, clock))
    # 5 s after the first try, then twice that after each next one, up to the ceiling.
    for tries, wait in enumerate((5.0, 10.0, 20.0, 30.0, 30.0), start=1):
        await clock.settle()
        assert clock.deadlines() == [clock.monotonic() + wait]  # one sleep, this long
        assert not opening.done()
        await clock.advance(wait - 0.001)
        assert opener.calls == tries  # not a moment early
        await clock.advance(0.001)
    assert await opening == "database"
    assert opener.calls == 6
    assert logged(caplog) == [
        (logging.WARNING, f"{error}; trying again in {wait:g} s")
        for wait in (5.0, 10.0, 20.0, 30.0, 30.0)
    ]
    assert "***" in logged(caplog)[0][1]  # the masked URL, as the error carries it


async def test_a_database_that_will_not_come_is_said_at_once(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    missing = DatabaseUnavailable('cannot reach the database at ...: database "x" does not exist')
    assert missing.transient is False
    opener = Opener([starting(), missing])
    opening = asyncio.create_task(open_when_ready(opener, Settings(poll_seconds=2.0), clock))
    await clock.advance(2.0)
    with pytest.raises(DatabaseUnavailable) as raised:
        await opening
    assert raised.value is missing
    assert opener.calls == 2 and clock.deadlines() == []
    assert len(logged(caplog)) == 1


async def test_a_database_ready_at_once_costs_no_wait_and_no_line(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    assert await open_when_ready(Opener([]), Settings(), clock) == "database"
    assert clock.deadlines() == [] and logged(caplog) == []


async def test_only_a_database_that_cannot_be_reached_is_waited_for(clock: FakeClock) -> None:
    """Any other error (a bug, a newer schema) is not waited out: it is raised as it is."""
    bug = RuntimeError("a bug")
    with pytest.raises(RuntimeError) as raised:
        await open_when_ready(Opener([bug]), Settings(), clock)
    assert raised.value is bug
