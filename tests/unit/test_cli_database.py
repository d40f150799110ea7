"""How a command opens its database (``CliState.with_database``), with the opening
faked: ``safelight worker`` waits for a database still starting and no other command
does, and a database lost during a command is exit 3, said with its masked URL.

The real thing, on real processes and servers: ``tests/acceptance/test_database_away.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import psycopg.errors
import pytest
from click.testing import CliRunner

from safelight.app import RunReport
from safelight.cli.main import cli
from safelight.cli.state import CliState
from safelight.db.database import DatabaseUnavailable
from safelight.settings import Settings

URL = "postgresql://safelight:secret@db/photos"
MASKED = "postgresql://safelight:***@db/photos"


@dataclass
class FakeDatabase:
    display: str = MASKED
    closed: bool = False

    async def close(self) -> None:
        self.closed = True


class Sleeps:
    """A clock whose sleeps return at once, recording how long each was."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def starting() -> DatabaseUnavailable:
    return DatabaseUnavailable("cannot reach the database: starting up", transient=True)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each try to open the database does, in turn: an error to raise, or the
    database to return (the last one for every later try)."""
    script: list[Any] = [FakeDatabase()]

    async def open_app_database(settings: Settings, **_: Any) -> Any:
        answer = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr("safelight.cli.state.resolve_url", lambda url, home: (url, None))
    monkeypatch.setattr("safelight.cli.state.open_app_database", open_app_database)
    return script


def state(tmp_path: Path, clock: Any = None) -> CliState:
    settings = Settings(home=tmp_path, database_url=URL, poll_seconds=3.0)
    made = CliState(overrides={}, _settings=settings)
    if clock is not None:
        made.clock = clock
    return made


async def nothing(database: Any, settings: Settings) -> str:
    return "done"


def test_only_when_asked_is_a_database_still_starting_waited_for(
    tmp_path: Path, opened: list[Any]
) -> None:
    database = FakeDatabase()
    opened[:] = [starting(), starting(), database]
    clock = Sleeps()
    assert state(tmp_path, clock).with_database(nothing, wait_until_ready=True) == "done"
    assert clock.slept == [3.0, 6.0] and database.closed

    first = starting()
    opened[:] = [first, FakeDatabase()]
    with pytest.raises(DatabaseUnavailable) as raised:
        state(tmp_path, clock).with_database(nothing)
    assert raised.value is first


def test_a_connection_lost_during_the_command_is_the_database_unavailable(
    tmp_path: Path, opened: list[Any]
) -> None:
    database = FakeDatabase()
    opened[:] = [database]

    async def body(database: Any, settings: Settings) -> None:
        raise psycopg.OperationalError(
            "server closed the connection unexpectedly\n"
            "\tThis probably means the server terminated abnormally"
        )

    with pytest.raises(DatabaseUnavailable) as raised:
        state(tmp_path).with_database(body)
    assert str(raised.value) == (
        f"lost the database at {MASKED}: server closed the connection unexpectedly"
    )
    assert not raised.value.transient
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert database.closed


def test_a_statement_refused_is_raised_as_it_is(tmp_path: Path, opened: list[Any]) -> None:
    deadlock = psycopg.errors.DeadlockDetected("deadlock detected")

    async def body(database: Any, settings: Settings) -> None:
        raise deadlock

    with pytest.raises(psycopg.errors.DeadlockDetected) as raised:
        state(tmp_path).with_database(body)
    assert raised.value is deadlock


@pytest.mark.parametrize(
    ("args", "waits"),
    [
        (["worker", "--until-idle"], True),
        (["status"], False),
        (["items"], False),
    ],
)
def test_the_worker_command_waits_for_its_database_and_the_others_do_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], waits: bool
) -> None:
    asked: list[bool] = []

    def with_database(self: CliState, body: Any, **options: Any) -> Any:
        asked.append(options.get("wait_until_ready", False))
        return RunReport(exit_code=0) if args[0] == "worker" else {}

    monkeypatch.setattr(CliState, "with_database", with_database)
    env = {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": URL}
    CliRunner().invoke(cli, args, env=env, catch_exceptions=True)
    assert asked == [waits]


def test_the_command_opens_the_database_its_settings_name_and_hands_it_to_its_body(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[str, Any]] = []
    resolved = ("postgresql://resolved", object())
    database = FakeDatabase()
    monkeypatch.setattr(
        "safelight.cli.state.configure_logging",
        lambda log_format, level, secrets: calls.append(("logging", level)),
    )
    monkeypatch.setattr(
        "safelight.cli.state.make_folder",
        lambda name, path, modes: calls.append(("folder", (name, path))),
    )

    def resolve_url(url: str | None, home: Path) -> Any:
        calls.append(("resolve", (url, home)))
        return resolved

    async def open_app_database(settings: Settings, **options: Any) -> Any:
        calls.append(("open", (settings, options)))
        return database

    monkeypatch.setattr("safelight.cli.state.resolve_url", resolve_url)
    monkeypatch.setattr("safelight.cli.state.open_app_database", open_app_database)

    async def body(given: Any, settings: Settings) -> tuple[Any, Settings]:
        return given, settings

    home = tmp_path / "home"
    on_url = CliState(overrides={"home": home, "database_url": URL})
    given, settings = on_url.with_database(body)
    assert given is database and settings is on_url.settings() and database.closed
    assert calls == [
        ("logging", "warning"),
        ("resolve", (URL, home)),
        ("open", (settings, {"concurrency": 1, "run_migrations": True, "resolved": resolved})),
    ]

    calls.clear()
    embedded = CliState(overrides={"home": home})
    _, settings = embedded.with_database(
        body, default_log_level="info", concurrency=3, run_migrations=False
    )
    # Without a URL the embedded server lives in the home, made first.
    assert calls == [
        ("logging", "info"),
        ("folder", ("home", home)),
        ("resolve", (None, home)),
        ("open", (settings, {"concurrency": 3, "run_migrations": False, "resolved": resolved})),
    ]
