"""``safelight demo`` ends with the ``safelight serve`` command of its library and what to
open; run as printed, that command prints one link, and that link signs the new user in
as the admin, on the demo's day (ADR 0045): one click from the photos."""

from __future__ import annotations

import signal
from datetime import date
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from safelight.cli.admin import os_user
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import follow_welcome_link, json_of, link_in, start_safelight

pytestmark = pytest.mark.acceptance


def test_demo_prints_the_command_whose_one_link_opens_its_photos_signed_in(
    invoke: Invoke, home: Path, database_url: str
) -> None:
    summary = json_of(invoke("demo", "--json"))
    text = invoke("demo").stdout.splitlines()

    serve = summary["serve"]
    url = urlsplit(serve["url"])
    assert (url.scheme, url.netloc, url.path) == ("http", "127.0.0.1:8470", "/")
    [shown_day] = parse_qs(url.query)["date"]
    day = date.fromisoformat(shown_day)
    assert day.year == date.today().year
    # The tests give the home by SAFELIGHT_HOME and the database by its variable: the
    # command repeats the one, and leaves the other in the environment.
    assert serve["command"] == ["safelight", "--home", str(home), "serve", "--day", shown_day]
    assert text[-2:] == [
        "See it in a browser (On this day, the queue): "
        f"safelight --home {home} serve --day {shown_day}",
        f"  then open the link it prints, which signs you in on {serve['url']}",
    ]
    # The day is the demo's busiest: no month and day holds more of its photos.
    with psycopg.connect(database_url) as conn:
        counts: dict[date, int] = dict(
            conn.execute(
                "SELECT make_date(2000, captured_month, captured_day), count(*) FROM assets"
                " WHERE NOT is_deleted AND captured_year < %s GROUP BY 1",
                (day.year,),
            ).fetchall()
        )
    assert counts[day.replace(year=2000)] == max(counts.values())

    # Run as printed (on any free port: 8470 may be taken here), it prints one link.
    process = start_safelight(
        *serve["command"][1:], "--port", "0", env={"SAFELIGHT_DATABASE_URL": database_url}
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("safelight serve: http://127.0.0.1:"), first
        base = first.split()[2]
        offer = process.stdout.readline()
        assert "makes you the admin" in offer, offer

        # Followed as the page's script follows it: signed in, on the demo's day.
        browsing = follow_welcome_link(link_in(offer))

        assert browsing.base == base
        assert browsing.next_path == f"/?date={shown_day}"
        assert browsing.get_json("api/account") == {
            "name": os_user(),
            "is_admin": True,
            "has_password": False,
        }
        configs = browsing.get_json("api/configs")
        assert [c["root"] for c in configs] == [str((home / "demo-library").resolve())]
        assert [c["owner"] for c in configs] == [os_user()], "the admin sees their own photos"
        on_the_day = browsing.get_json(f"api/on-this-day?date={shown_day}")
        assert on_the_day["count"] >= 1
        assert sum(len(y["assets"]) for y in on_the_day["years"]) == on_the_day["count"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    assert link_in(offer).split("#token=")[1] not in errors, "the token is never logged"
