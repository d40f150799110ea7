"""What ``safelight demo`` prints to open its library in the dashboard: the command that
reaches the same home and database, and the URL a browser on this machine opens."""

from __future__ import annotations

import grp
import os
from datetime import date
from pathlib import Path

import pytest

from safelight.cli.dashboard_hint import (
    dashboard_url,
    day_showing,
    hint,
    program,
    serve_argv,
)
from safelight.settings import Settings


def settings(**values: object) -> Settings:
    return Settings.load(values, env={})


def test_started_through_the_repository_it_names_its_wrapper(tmp_path: Path) -> None:
    repo = tmp_path / "safelight-clone"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / "safelight").write_text("#!/bin/sh\n")
    entry = str(repo / ".venv" / "bin" / "safelight")

    assert program(entry, cwd=repo) == "./safelight"
    assert program(entry, cwd=tmp_path) == "./safelight-clone/safelight"
    assert program(entry, cwd=tmp_path / "elsewhere") == str((repo / "safelight").resolve())


def test_anywhere_else_it_is_plain_safelight(tmp_path: Path) -> None:
    venv_only = tmp_path / ".venv" / "bin"
    venv_only.mkdir(parents=True)  # a venv with no wrapper beside it

    assert program(str(venv_only / "safelight"), cwd=tmp_path) == "safelight"
    assert program("/usr/lib/python3/site-packages/safelight/__main__.py") == "safelight"
    assert program("/usr/local/bin/safelight") == "safelight"


def test_the_command_repeats_the_home_and_proxy_root_it_was_given(tmp_path: Path) -> None:
    given = settings(home=tmp_path / "home", proxy_root=tmp_path / "px")

    by_flag = serve_argv(given, {"home": tmp_path / "home"}, env={}, argv0="x")
    by_env = serve_argv(
        given, {}, env={"SAFELIGHT_HOME": "h", "SAFELIGHT_PROXY_ROOT": "p"}, argv0="x"
    )

    assert by_flag == ["safelight", "--home", str(tmp_path / "home"), "serve"]
    assert by_env == [
        "safelight",
        "--home",
        str(tmp_path / "home"),
        "--proxy-root",
        str(given.proxies),
        "serve",
    ]
    assert serve_argv(settings(), {}, env={}, argv0="x") == ["safelight", "serve"]


def test_the_command_names_the_day_its_link_opens_on() -> None:
    assert serve_argv(settings(), {}, day=date(2026, 6, 15), env={}, argv0="x") == [
        "safelight",
        "serve",
        "--day",
        "2026-06-15",
    ]


def test_a_database_url_is_repeated_only_from_the_flag_and_masked() -> None:
    url = "postgresql://alice:s3cret@db.example/photos"
    flagged = serve_argv(settings(database_url=url), {"database_url": url}, env={}, argv0="x")
    from_env = serve_argv(
        settings(database_url=url), {}, env={"SAFELIGHT_DATABASE_URL": url}, argv0="x"
    )

    assert flagged == [
        "safelight",
        "--database-url",
        "postgresql://alice:***@db.example/photos",
        "serve",
    ]
    assert from_env == ["safelight", "serve"], "the environment still holds it"
    assert "s3cret" not in " ".join(flagged + from_env)


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8470, "http://127.0.0.1:8470/"),
        ("0.0.0.0", 8470, "http://127.0.0.1:8470/"),
        ("::", 9000, "http://127.0.0.1:9000/"),
        ("::1", 8470, "http://[::1]:8470/"),
        ("photos.lan", 80, "http://photos.lan:80/"),
        ("127.0.0.1", 0, None),
    ],
)
def test_the_url_is_the_one_a_browser_here_opens(host: str, port: int, url: str | None) -> None:
    assert dashboard_url(settings(web_host=host, web_port=port)) == url


def test_the_url_is_the_one_serve_prints_on_the_home_network(tmp_path: Path) -> None:
    # Beyond loopback, serve prints its first allowed name (never 0.0.0.0); https with TLS.
    home = settings(web_host="0.0.0.0", web_allowed_hosts=("nas.local", "192.168.1.5"))
    assert dashboard_url(home) == "http://nas.local:8470/" == home.web_url(8470)
    tls = settings(web_tls_cert=tmp_path / "c.pem", web_tls_key=tmp_path / "k.pem")
    assert dashboard_url(tls, date(2026, 12, 1)) == "https://127.0.0.1:8470/?date=2026-12-01"


def test_the_url_opens_on_the_day_asked_for() -> None:
    assert dashboard_url(settings(), date(2026, 12, 1)) == "http://127.0.0.1:8470/?date=2026-12-01"


def test_a_leap_day_is_shown_on_28_february_of_a_common_year() -> None:
    assert day_showing(2, 29, 2026) == date(2026, 2, 28)
    assert day_showing(2, 29, 2028) == date(2028, 2, 29)
    assert day_showing(7, 4, 2026) == date(2026, 7, 4)


def test_the_hint_is_a_command_to_paste_and_where_its_link_goes() -> None:
    lines = hint(
        ["./safelight", "--home", "/tmp/my home", "serve", "--day", "2026-06-15"],
        "http://127.0.0.1:8470/?date=2026-06-15",
    )

    assert lines == [
        "See it in a browser (On this day, the queue): "
        "./safelight --home '/tmp/my home' serve --day 2026-06-15",
        "  then open the link it prints, which signs you in on "
        "http://127.0.0.1:8470/?date=2026-06-15",
    ]
    assert hint(["safelight", "serve"], None)[1] == (
        "  then open the link it prints, which signs you in"
    )


def test_the_command_repeats_the_read_group_it_was_given() -> None:
    """Else serve would make the proxies its user's alone again (ADR 0043)."""
    group = grp.getgrgid(os.getegid()).gr_name
    given = settings(read_group=group)
    assert serve_argv(given, {"read_group": group}, env={}, argv0="x") == [
        "safelight",
        "--read-group",
        group,
        "serve",
    ]
    assert serve_argv(settings(), {}, env={}, argv0="x") == ["safelight", "serve"]
