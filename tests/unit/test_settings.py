"""Settings: flags over SAFELIGHT_* environment over defaults, validated, never showing
the database password."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from safelight.core.filemodes import FileModes
from safelight.db.embedded import DATA_FOLDER
from safelight.db.urls import url_problem
from safelight.library.files.limits import DEFAULT_DECODE_MEMORY_MIB, MIN_DECODE_MEMORY_MIB
from safelight.library.render.images import ProxySpec
from safelight.settings import (
    Settings,
    SettingsError,
    check_folder,
    default_decode_processes,
    make_folder,
)
from safelight.work.executor import ExecutorSettings
from safelight.work.worker import WorkerSettings


def test_defaults_with_an_empty_environment() -> None:
    settings = Settings.load({}, {})
    assert settings.database_url is None
    assert settings.lease_seconds == 60.0 and settings.heartbeat_seconds == 10.0
    assert settings.max_stalls == 3 and settings.max_concurrent_files == 4
    assert settings.decode_processes == default_decode_processes() >= 1
    assert settings.log_format == "text"
    assert settings.proxies == (settings.home / "proxies").resolve()


@pytest.mark.parametrize(
    ("euid", "home"),
    [(1000, Path.home() / ".local" / "share" / "safelight"), (0, Path("/var/lib/safelight"))],
)
def test_the_default_home_keeps_root_s_home_closed(
    monkeypatch: pytest.MonkeyPatch, euid: int, home: Path
) -> None:
    """As root the embedded server runs as its own user, who cannot enter /root."""
    monkeypatch.setattr("safelight.settings.os.geteuid", lambda: euid)
    assert Settings.load({}, {}).home == home


def test_flags_override_the_environment_which_overrides_defaults(tmp_path: Path) -> None:
    env = {
        "SAFELIGHT_LEASE_SECONDS": "120",
        "SAFELIGHT_POLL_SECONDS": "2.5",
        "SAFELIGHT_MAX_STALLS": "5",
        "SAFELIGHT_HOME": str(tmp_path / "from-env"),
    }
    settings = Settings.load({"lease_seconds": 90.0, "max_stalls": None}, env)
    assert settings.lease_seconds == 90.0  # the flag
    assert settings.poll_seconds == 2.5  # the environment
    assert settings.max_stalls == 5  # a flag left unset (None) does not override
    assert settings.heartbeat_seconds == 10.0  # the default
    assert settings.home == tmp_path / "from-env"


def test_an_empty_environment_variable_counts_as_unset() -> None:
    assert Settings.load({}, {"SAFELIGHT_LEASE_SECONDS": ""}).lease_seconds == 60.0


def test_paths_expand_the_home_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = Settings.load({}, {"SAFELIGHT_HOME": "~/sl", "SAFELIGHT_PROXY_ROOT": "~/px"})
    assert settings.home == tmp_path / "sl"
    assert settings.proxies == (tmp_path / "px").resolve()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"SAFELIGHT_LEASE_SECONDS": "abc"},
            "lease_seconds (SAFELIGHT_LEASE_SECONDS) must be a number",
        ),
        (
            {"SAFELIGHT_MAX_STALLS": "2.5"},
            "max_stalls (SAFELIGHT_MAX_STALLS) must be a whole number",
        ),
        ({"SAFELIGHT_POLL_SECONDS": "nan"}, "poll_seconds"),
        ({"SAFELIGHT_LEASE_SECONDS": "inf"}, "lease_seconds"),
        ({"SAFELIGHT_LEASE_SECONDS": "0"}, "lease_seconds must be greater than 0"),
        ({"SAFELIGHT_MAX_CONCURRENT_FILES": "-1"}, "max_concurrent_files must be greater than 0"),
        ({"SAFELIGHT_DECODE_PROCESSES": "-1"}, "decode_processes must be 0 (decode in threads)"),
        ({"SAFELIGHT_DECODE_PROCESSES": "two"}, "decode_processes (SAFELIGHT_DECODE_PROCESSES)"),
        ({"SAFELIGHT_HEARTBEAT_SECONDS": "20"}, "heartbeat_seconds (20) must be at most a quarter"),
        ({"SAFELIGHT_LOG_FORMAT": "xml"}, "log_format must be 'text' or 'json'"),
        ({"SAFELIGHT_THUMBNAIL_QUALITY": "100"}, "thumbnail_quality must be between 1 and 95"),
        ({"SAFELIGHT_FAILED_FILE_RETRY_DAYS": "0"}, "failed_file_retry_days must be greater"),
        (
            {"SAFELIGHT_FAILED_FILE_RETRY_DAYS": "2", "SAFELIGHT_FAILED_FILE_RETRY_MAX_DAYS": "1"},
            "failed_file_retry_max_days must not be less than failed_file_retry_days",
        ),
    ],
)
def test_an_invalid_value_is_an_error_naming_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.load({}, env)
    assert message in str(raised.value)


def test_zero_decode_processes_means_decoding_in_threads() -> None:
    assert Settings.load({}, {"SAFELIGHT_DECODE_PROCESSES": "0"}).decode_processes == 0
    assert Settings.load({"decode_processes": 3}, {}).decode_processes == 3


def test_an_invalid_flag_value_is_named_too() -> None:
    with pytest.raises(SettingsError, match="max_stalls"):
        Settings.load({"max_stalls": 1.5}, {})


def test_the_database_url_is_never_shown_with_its_password() -> None:
    url = "postgresql://alice:hunter2@db.example:5432/library"
    settings = Settings.load({}, {"SAFELIGHT_DATABASE_URL": url})
    assert settings.database_url == url
    assert settings.database_display == "postgresql://alice:***@db.example:5432/library"
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings)
    assert "alice:***@db.example" in repr(settings)


def test_the_embedded_database_is_shown_by_its_folder(tmp_path: Path) -> None:
    settings = Settings.load({"home": tmp_path}, {})
    assert settings.database_display == f"embedded PostgreSQL in {tmp_path / DATA_FOLDER}"


def test_settings_are_frozen() -> None:
    settings = Settings.load({}, {})
    with pytest.raises(AttributeError):
        settings.lease_seconds = 1.0  # type: ignore[misc]


def test_each_component_is_handed_its_own_config() -> None:
    settings = Settings(
        lease_seconds=80,
        heartbeat_seconds=20,
        shutdown_grace_seconds=3,
        poll_seconds=7,
        thumbnail_width=100,
        thumbnail_quality=60,
        preview_width=800,
        preview_quality=70,
        decode_memory_mib=256,
    )
    assert settings.executor() == ExecutorSettings(
        lease_seconds=80, heartbeat_seconds=20, shutdown_grace_seconds=3
    )
    assert settings.worker("w", frozenset({"noop"}), owner="bob", until_idle=True) == (
        WorkerSettings(
            worker_id="w",
            kinds=frozenset({"noop"}),
            owner="bob",
            lease_seconds=80,
            poll_seconds=7,
            until_idle=True,
            backoff_max_seconds=60,
        )
    )
    assert settings.proxy_spec() == ProxySpec(
        thumbnail_width=100,
        thumbnail_quality=60,
        preview_width=800,
        preview_quality=70,
        decode_memory_mib=256,
    )


def test_the_default_proxies() -> None:
    spec = Settings().proxy_spec()
    sizes = (spec.thumbnail_width, spec.thumbnail_quality, spec.preview_width, spec.preview_quality)
    assert sizes == (300, 75, 1920, 85)
    assert spec.decode_memory_mib == DEFAULT_DECODE_MEMORY_MIB


def test_a_heartbeat_of_exactly_a_quarter_lease_is_allowed() -> None:
    assert Settings(lease_seconds=40, heartbeat_seconds=10).executor().heartbeat_seconds == 10
    with pytest.raises(SettingsError, match=r"heartbeat_seconds \(10\.5\) must be at most"):
        Settings(lease_seconds=40, heartbeat_seconds=10.5)


def test_a_default_is_read_from_the_settings_themselves() -> None:
    assert (Settings.default("lease_seconds"), Settings.default("max_stalls")) == (60.0, 3)
    with pytest.raises(ValueError, match=r"^home has no fixed default$"):
        Settings.default("home")


def test_the_edges_of_each_range_are_valid() -> None:
    edges = Settings(
        poll_seconds=0.5,
        shutdown_grace_seconds=0,
        decode_processes=0,
        decode_memory_mib=MIN_DECODE_MEMORY_MIB,
        thumbnail_quality=1,
        preview_quality=95,
        thumbnail_width=256,
        preview_width=256,
    )
    assert (edges.poll_seconds, edges.shutdown_grace_seconds) == (0.5, 0)
    assert Settings(shutdown_grace_seconds=0.5, thumbnail_quality=95, preview_quality=1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"shutdown_grace_seconds": -0.5}, "shutdown_grace_seconds must not be negative"),
        (
            {"decode_processes": -1},
            "decode_processes must be 0 (decode in threads) or more, not -1",
        ),
        (
            {"decode_memory_mib": MIN_DECODE_MEMORY_MIB - 1},
            f"decode_memory_mib must be at least {MIN_DECODE_MEMORY_MIB}, "
            f"not {MIN_DECODE_MEMORY_MIB - 1}",
        ),
        ({"thumbnail_quality": 0}, "thumbnail_quality must be between 1 and 95, not 0"),
        ({"preview_quality": 96}, "preview_quality must be between 1 and 95, not 96"),
        (
            {"thumbnail_width": 257, "preview_width": 256},
            "thumbnail_width must not be larger than preview_width",
        ),
    ],
)
def test_a_value_past_an_edge_is_refused_with_its_message(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings(**changes)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://u:pw@db/x", "it is a mysql:// URL, and safelight needs PostgreSQL"),
        ("SQLite:///photos.db", "it is a sqlite:// URL, and safelight needs PostgreSQL"),
        ("://x", "it is neither a postgresql:// URL nor key=value pairs"),
        ("garbage", 'missing "=" after "…" in connection info string'),
        ("u:secret@host", 'missing "=" after "…" in connection info string'),
        ("host=h password=secret junk", 'missing "=" after "…" in connection info string'),
        (
            "postgresql://u:secret@[bad",
            'end of string reached when looking for matching "]" in IPv6 host address',
        ),
        ("postgresql://h/db?secret=1", 'invalid URI query parameter: "…"'),
    ],
)
def test_a_url_that_is_not_postgresql_is_named_without_quoting_it(url: str, problem: str) -> None:
    assert url_problem(url) == problem
    with pytest.raises(SettingsError) as raised:
        Settings.load({}, {"SAFELIGHT_DATABASE_URL": url})
    message = str(raised.value)
    assert message.startswith(
        "database_url (SAFELIGHT_DATABASE_URL) is not a PostgreSQL connection string: " + problem
    )
    assert "secret" not in message and "pw@" not in message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:pw@db.example:5432/library",
        "postgres://u@db.example/library?sslmode=require",
        "postgresql:///library?host=/run/postgresql",
        "host=db.example dbname=library user=u",
    ],
)
def test_a_postgresql_url_in_either_form_is_taken(url: str) -> None:
    assert url_problem(url) is None
    assert Settings.load({}, {"SAFELIGHT_DATABASE_URL": url}).database_url == url


def test_a_home_or_proxy_root_that_is_not_a_folder_is_named(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(SettingsError) as raised:
        Settings.load({}, {"SAFELIGHT_HOME": str(a_file)})
    assert str(raised.value) == f"home (SAFELIGHT_HOME) must be a folder, and {a_file} is not one"
    with pytest.raises(SettingsError) as raised:
        Settings.load({}, {"SAFELIGHT_PROXY_ROOT": str(a_file / "p" / "q")})
    assert str(raised.value) == (
        f"proxy_root (SAFELIGHT_PROXY_ROOT) {a_file / 'p' / 'q'} cannot be made: "
        f"{a_file} is not a folder"
    )
    # Folders that exist, or that can be made, pass; checking makes none.
    check_folder("home", tmp_path)
    check_folder("home", tmp_path / "new" / "deeper")
    assert not (tmp_path / "new").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may make folders anywhere it can write")
def test_a_home_in_a_folder_this_user_may_not_write_is_named(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o500)
    try:
        with pytest.raises(SettingsError, match=r"may not make folders in .*closed$"):
            check_folder("home", closed / "home")
    finally:
        closed.chmod(0o700)


def test_making_a_folder_that_cannot_be_made_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as raised:
        make_folder("home", Path("/proc/safelight-test-home"), FileModes())
    assert str(raised.value).startswith(
        "home (SAFELIGHT_HOME) /proc/safelight-test-home cannot be made: "
    )
    make_folder("home", tmp_path / "a" / "b", FileModes())
    assert (tmp_path / "a" / "b").is_dir()


def test_the_metrics_server_and_health_settings() -> None:
    defaults = Settings.load({}, {})
    assert (defaults.metrics_port, defaults.metrics_host) == (None, "127.0.0.1")
    assert defaults.health_worker_seen_seconds == 120.0
    assert defaults.outage_backoff_max_seconds == 60.0
    loaded = Settings.load(
        {},
        {
            "SAFELIGHT_METRICS_PORT": "9310",
            "SAFELIGHT_METRICS_HOST": "::1",
            "SAFELIGHT_HEALTH_WORKER_SEEN_SECONDS": "300",
            "SAFELIGHT_OUTAGE_BACKOFF_MAX_SECONDS": "30",
        },
    )
    assert (loaded.metrics_port, loaded.metrics_host) == (9310, "::1")
    assert (loaded.health_worker_seen_seconds, loaded.outage_backoff_max_seconds) == (300, 30)
    assert Settings.load({"metrics_port": 0}, {}).metrics_port == 0  # any free port
    assert Settings.load({"metrics_port": 65535}, {}).metrics_port == 65535


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"SAFELIGHT_METRICS_PORT": "nine"},
            "metrics_port (SAFELIGHT_METRICS_PORT) must be a whole number, not 'nine'",
        ),
        (
            {"SAFELIGHT_METRICS_PORT": "65536"},
            "metrics_port must be a TCP port, 0 to 65535, not 65536",
        ),
        (
            {"SAFELIGHT_METRICS_PORT": "-1"},
            "metrics_port must be a TCP port, 0 to 65535, not -1",
        ),
        (
            {"SAFELIGHT_METRICS_HOST": " "},
            "metrics_host must name an address to listen on, not nothing",
        ),
        (
            {"SAFELIGHT_HEALTH_WORKER_SEEN_SECONDS": "30"},
            "health_worker_seen_seconds (30) must be more than twice "
            "recovery_interval_seconds (15), how often a Worker says it is alive",
        ),
        (
            {"SAFELIGHT_OUTAGE_BACKOFF_MAX_SECONDS": "0"},
            "outage_backoff_max_seconds must be greater than 0, not 0.0",
        ),
    ],
)
def test_a_bad_metrics_or_health_setting_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.load({}, env)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "changes",
    [
        {"retry_delay_seconds": 30.0, "retry_max_delay_seconds": 30.0},
        {"retry_jitter": 0.0},
        {"retry_jitter": 1.0},
        {"web_port": 0},
        {"web_port": 65535},
        {"web_token": "abcdefgh" * 4},
        {"recovery_interval_seconds": 15.0, "health_worker_seen_seconds": 40.0},
    ],
)
def test_the_edges_of_what_the_settings_allow_are_allowed(changes: dict[str, Any]) -> None:
    settings = Settings(**changes)
    assert all(getattr(settings, name) == value for name, value in changes.items())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"retry_delay_seconds": 30.0, "retry_max_delay_seconds": 29.5},
            "retry_max_delay_seconds (29.5) must not be less than retry_delay_seconds (30)",
        ),
        ({"retry_jitter": 1.5}, "retry_jitter must be between 0 and 1, not 1.5"),
        ({"web_port": 65536}, "web_port must be a TCP port, 0 to 65535, not 65536"),
        ({"web_host": " "}, "web_host must name an address to listen on, not nothing"),
        *(
            (
                {"web_token": weak},
                "web_token (SAFELIGHT_WEB_TOKEN) must be a random secret of at least 32 "
                "characters, at least 8 of them different (`openssl rand -hex 32` makes one); "
                "or leave it unset for one made at start",
            )
            # The token, one letter long enough, too few different letters, and
            # varied but one character short.
            for weak in ("a" * 16, "a" * 64, "abcdefg" * 8, ("0123456789abcdef" * 2)[:31])
        ),
        (
            {"database_url": "mysql://u@h/db"},
            "database_url (SAFELIGHT_DATABASE_URL) is not a PostgreSQL connection string: "
            f"{url_problem('mysql://u@h/db')}; give postgresql://user@host:port/dbname, or "
            "leave it unset for the embedded PostgreSQL",
        ),
    ],
)
def test_past_the_edges_the_settings_say_exactly_what_is_wrong(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings(**changes)
    assert str(refused.value) == message


# --- faces (ADR 0067) ----------------------------------------------------------------


def test_faces_are_off_unless_turned_on(tmp_path: Path) -> None:
    env = {"SAFELIGHT_HOME": str(tmp_path)}
    assert Settings.load({}, env).faces is False
    assert Settings.load({}, {**env, "SAFELIGHT_FACES": "1"}).faces is True


def test_a_bad_faces_value_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.load({}, {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_FACES": "maybe"})
    assert str(caught.value) == "faces (SAFELIGHT_FACES) must be true or false, not 'maybe'"


def test_faces_on_without_dlib_is_one_line_naming_the_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        "importlib.util.find_spec", lambda name: None if name == "dlib" else real(name)
    )
    env = {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_FACES": "1"}
    with pytest.raises(SettingsError) as caught:
        Settings.load({}, env)
    assert str(caught.value) == (
        "faces (SAFELIGHT_FACES) is on, but dlib not installed: "
        "`SAFELIGHT_FACES=1 scripts/setup` installs them"
    )
    assert Settings.load({}, {"SAFELIGHT_HOME": str(tmp_path)}).faces is False  # off: no check
