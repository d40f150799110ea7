"""A process's descriptors and its servers' connections (issue #27): the open files
limit raised at start, the limits' settings, and what counts as beyond loopback."""

from __future__ import annotations

import logging
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from safelight.app import RunReport
from safelight.cli.main import cli
from safelight.cli.state import CliState
from safelight.core import openfiles
from safelight.core.connections import ConnectionLimits, beyond_loopback
from safelight.core.openfiles import raise_open_files_limit
from safelight.observe.server import exposure_warning
from safelight.settings import Settings, SettingsError

URL = "postgresql://safelight:secret@db/photos"


@pytest.fixture
def limits_restored() -> Iterator[tuple[int, int]]:
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield before
    resource.setrlimit(resource.RLIMIT_NOFILE, before)


def test_the_open_files_limit_is_raised_to_the_hard_one_and_said_once_at_debug(
    limits_restored: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    _, hard = limits_restored
    low = min(256, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    caplog.set_level(logging.DEBUG, logger="safelight.core.openfiles")
    assert raise_open_files_limit() == (low, hard)
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    assert raise_open_files_limit() == (hard, hard)  # already there: nothing to do
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    raised = f"open files limit: raised from {low} to the hard limit, {hard}"
    assert lines[0] == (logging.DEBUG, raised)
    assert all(level == logging.DEBUG for level, _ in lines)


def test_the_servers_limits_come_from_the_settings() -> None:
    settings = Settings(metrics_max_connections=8, web_max_connections=16, request_head_seconds=0.5)
    assert settings.metrics_limits() == ConnectionLimits(8, 0.5)
    assert settings.web_limits() == ConnectionLimits(16, 0.5)
    defaults = Settings()
    assert 64 <= defaults.metrics_max_connections <= 128
    assert 64 <= defaults.web_max_connections <= 128
    assert defaults.request_head_seconds <= 10
    assert defaults.metrics_refresh_seconds <= 15  # Prometheus's default scrape interval


@pytest.mark.parametrize(
    "name",
    [
        "metrics_max_connections",
        "web_max_connections",
        "request_head_seconds",
        "metrics_refresh_seconds",
    ],
)
def test_a_limit_of_nothing_is_refused_naming_its_setting(name: str) -> None:
    with pytest.raises(SettingsError, match=f"^{name} must be greater than 0, not 0"):
        changes: dict[str, Any] = {name: 0}
        Settings(**changes)
    env = {f"SAFELIGHT_{name.upper()}": "-1"}
    with pytest.raises(SettingsError, match=f"^{name} must be greater than 0"):
        Settings.load(env=env)


def test_connection_limits_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="max_connections must be at least 1"):
        ConnectionLimits(0, 1.0)
    with pytest.raises(ValueError, match="head_seconds must be greater than 0"):
        ConnectionLimits(1, 0)


@pytest.mark.parametrize(
    ("host", "beyond"),
    [
        ("127.0.0.1", False),
        ("127.1.2.3", False),
        ("::1", False),
        ("[::1]", False),
        ("::1%1", False),
        ("fe80::1%1", True),
        ("localhost", False),
        ("0.0.0.0", True),
        ("::", True),
        ("10.0.0.2", True),
        ("2001:db8::1", True),
        ("no-such-host.invalid", True),
    ],
)
def test_what_reaches_beyond_this_machine(host: str, beyond: bool) -> None:
    assert beyond_loopback(host) is beyond


class Limits:
    """Stands in for the ``resource`` module: one process's open files limit, and
    what ``setrlimit`` does (raise ``refusal``, or set it)."""

    RLIMIT_NOFILE = resource.RLIMIT_NOFILE
    RLIM_INFINITY = resource.RLIM_INFINITY

    def __init__(self, soft: int, hard: int, refusal: Exception | None = None) -> None:
        self.limit = (soft, hard)
        self.refusal = refusal

    def getrlimit(self, which: int) -> tuple[int, int]:
        assert which == self.RLIMIT_NOFILE
        return self.limit

    def setrlimit(self, which: int, limit: tuple[int, int]) -> None:
        assert which == self.RLIMIT_NOFILE
        if self.refusal is not None:
            raise self.refusal
        self.limit = limit


@pytest.mark.parametrize(
    ("limits", "result", "line"),
    [
        (Limits(1024, 1024), (1024, 1024), "open files limit: 1024 (already the hard limit)"),
        (
            Limits(resource.RLIM_INFINITY, resource.RLIM_INFINITY),
            (resource.RLIM_INFINITY, resource.RLIM_INFINITY),
            "open files limit: unlimited (already the hard limit)",
        ),
        (
            Limits(1024, resource.RLIM_INFINITY),
            (1024, resource.RLIM_INFINITY),
            "open files limit: raised from 1024 to the hard limit, unlimited",
        ),
        (
            Limits(1024, resource.RLIM_INFINITY, ValueError("not allowed to raise maximum")),
            (1024, 1024),
            "open files limit: 1024, could not raise it to unlimited: not allowed to raise maximum",
        ),
        (
            Limits(1024, 4096, PermissionError("a sandbox")),
            (1024, 1024),
            "open files limit: 1024, could not raise it to 4096: a sandbox",
        ),
    ],
)
def test_the_open_files_limit_says_what_it_found_and_keeps_what_the_kernel_refuses(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    limits: Limits,
    result: tuple[int, int],
    line: str,
) -> None:
    monkeypatch.setattr(openfiles, "resource", limits)
    caplog.set_level(logging.DEBUG, logger="safelight.core.openfiles")
    assert raise_open_files_limit() == result
    assert [r.getMessage() for r in caplog.records] == [line]


# --- the commands' wiring ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "long_running"),
    [
        (["worker", "--until-idle"], True),
        (["run", "{folder}"], True),
        (["serve"], True),
        (["status"], False),
        (["items"], False),
    ],
)
def test_only_the_long_running_commands_raise_their_open_files_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], long_running: bool
) -> None:
    asked: list[bool] = []

    def with_database(self: CliState, body: Any, **options: Any) -> Any:
        asked.append(options.get("long_running", False))
        raise SystemExit(0)  # what the body would do is not this test's

    monkeypatch.setattr(CliState, "with_database", with_database)
    library = tmp_path / "library"
    library.mkdir()
    env = {"SAFELIGHT_HOME": str(tmp_path / "home"), "SAFELIGHT_DATABASE_URL": URL}
    given = [arg.format(folder=library) for arg in args]
    CliRunner().invoke(cli, given, env=env, catch_exceptions=True)
    assert asked == [long_running]


@pytest.mark.parametrize("long_running", [False, True])
def test_opening_the_database_raises_the_open_files_limit_only_when_long_running(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, long_running: bool
) -> None:
    raised: list[bool] = []

    async def open_app_database(settings: Settings, **_: Any) -> Any:
        return Closable()

    async def body(database: Any, settings: Settings) -> str:
        return "done"

    monkeypatch.setattr("safelight.cli.state.raise_open_files_limit", lambda: raised.append(True))
    monkeypatch.setattr("safelight.cli.state.resolve_url", lambda url, home: (url, None))
    monkeypatch.setattr("safelight.cli.state.open_app_database", open_app_database)

    private: list[Any] = []

    async def make_private(database: Any, settings: Settings) -> None:
        private.append(database)  # the home and proxy root tightened (ADR 0043)

    monkeypatch.setattr("safelight.ondisk.make_private", make_private)
    state = CliState(overrides={"home": tmp_path, "database_url": URL})
    if long_running:
        assert state.with_database(body, long_running=True) == "done"
        assert state.with_database(body, long_running=True) == "done"
    else:
        assert state.with_database(body) == "done"  # the default
    assert raised == ([True, True] if long_running else [])
    # Once per process, by the long-running commands only.
    assert len(private) == (1 if long_running else 0)


class Closable:
    async def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("env", "warned"),
    [
        ({"SAFELIGHT_METRICS_PORT": "9100", "SAFELIGHT_METRICS_HOST": "0.0.0.0"}, True),
        ({"SAFELIGHT_METRICS_PORT": "9100", "SAFELIGHT_METRICS_HOST": "127.0.0.1"}, False),
        ({"SAFELIGHT_METRICS_HOST": "0.0.0.0"}, False),  # no port: nothing listens
    ],
)
def test_a_worker_says_on_stderr_when_its_metrics_port_is_open_beyond_this_machine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], warned: bool
) -> None:
    def with_database(self: CliState, body: Any, **options: Any) -> Any:
        return RunReport(exit_code=0)

    monkeypatch.setattr(CliState, "with_database", with_database)
    given = {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": URL, **env}
    result = CliRunner().invoke(cli, ["worker", "--until-idle"], env=given)
    assert result.exit_code == 0, result.output
    expected = f"warning: {exposure_warning('0.0.0.0')}\n"
    assert result.stderr == (expected if warned else "")
