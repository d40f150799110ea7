"""What ``safelight serve`` prints after its ready line (ADR 0045): the one way in it
offers, once, and never a token it was given."""

from __future__ import annotations

from datetime import date

import pytest

from safelight.cli.serve import announce, on_this_day_path
from safelight.web.welcome import WelcomeLink

URL = "http://127.0.0.1:8470/"
TOKEN = "Zq3" + "x" * 37 + "k9_"  # the shape of one made at start: 43 URL-safe characters


def printed(
    capsys: pytest.CaptureFixture[str], link: WelcomeLink | None, **options: object
) -> list[str]:
    announce(
        URL,
        link,
        read_only=bool(options.get("read_only", False)),
        given=bool(options.get("given", False)),
        next_path=str(options.get("next_path", "/")),
    )
    return capsys.readouterr().out.splitlines()


def test_with_no_user_the_first_admin_link_after_the_ready_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = printed(capsys, WelcomeLink(TOKEN, "alice", False, "/"))
    assert lines == [
        f"safelight serve: {URL} (Ctrl-C stops)",
        f"no user yet: this link makes you the admin, alice (it works once): "
        f"{URL}welcome#token={TOKEN}",
    ]


def test_a_given_token_is_named_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    lines = printed(capsys, WelcomeLink(TOKEN, "alice", False, "/"), given=True)
    assert lines[1] == (
        f"no user yet: open {URL}welcome and give SAFELIGHT_WEB_TOKEN to become the admin, "
        "alice (once)"
    )
    assert TOKEN not in "\n".join(lines)


def test_an_admin_without_a_password_gets_a_link_and_is_told_to_set_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = printed(capsys, WelcomeLink(TOKEN, "alice", True, "/"))
    assert lines[1:] == [
        f"sign in as alice, who has no password yet (this link works once): "
        f"{URL}welcome#token={TOKEN}",
        f"then set a password at {URL}account to sign in from other devices",
    ]


def test_with_passwords_the_sign_in_url_opens_on_the_day_asked_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    today = printed(capsys, None)
    day = printed(capsys, None, next_path=on_this_day_path(date(2026, 6, 15)), read_only=True)
    assert today[1:] == [f"sign in at {URL}login (`safelight user add NAME` makes an account)"]
    assert day[1:] == [
        "read-only: started with --read-only, nobody can act",
        f"sign in at {URL}login?next=/%3Fdate%3D2026-06-15 "
        "(`safelight user add NAME` makes an account)",
    ]


def test_a_name_is_printed_as_a_terminal_shows_it(capsys: pytest.CaptureFixture[str]) -> None:
    lines = printed(capsys, WelcomeLink(TOKEN, "eve\u202egpj", False, "/"))
    assert "\u202e" not in lines[1] and "eve\\u202egpj" in lines[1]


def test_the_day_path() -> None:
    assert on_this_day_path(None) == "/"
    assert on_this_day_path(date(2025, 2, 28)) == "/?date=2025-02-28"
