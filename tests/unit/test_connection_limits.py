"""A process's descriptors and its servers' connections (issue #27): the open files
limit raised at start, the limits' settings, and what counts as beyond loopback."""

from __future__ import annotations

import logging
import resource
from collections.abc import Iterator
from typing import Any

import pytest

from safelight.core.connections import ConnectionLimits, beyond_loopback
from safelight.core.openfiles import raise_open_files_limit
from safelight.settings import Settings, SettingsError


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
