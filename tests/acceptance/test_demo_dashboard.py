"""``safelight demo`` ends with the ``safelight serve`` command of its library and the URL
to open; run as printed, that command serves the demo library on that day."""

from __future__ import annotations

import json
import signal
import urllib.request
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from safelight.accounts.tokens import new_token, token_digest
from tests.acceptance.conftest import Invoke
from tests.acceptance.harness import json_of, start_safelight

pytestmark = pytest.mark.acceptance


def get_json(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def reader_token(database_url: str) -> str:
    """An admin and a personal token of theirs: the dashboard answers only a user."""
    token = new_token()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO users (name, is_admin, created_at) VALUES ('reader', true, now())"
        )
        conn.execute(
            "INSERT INTO auth_tokens (user_name, token_hash, created_at, expires_at)"
            " VALUES ('reader', %s, now(), now() + interval '1 day')",
            (token_digest(token),),
        )
    return token


def test_demo_prints_the_dashboard_of_its_library_and_that_command_serves_it(
    invoke: Invoke, home: Path, database_url: str
) -> None:
    summary = json_of(invoke("demo", "--json"))
    text = invoke("demo").stdout.splitlines()

    serve = summary["serve"]
    # The tests give the home by SAFELIGHT_HOME and the database by its variable: the
    # command repeats the one, and leaves the other in the environment.
    assert serve["command"] == ["safelight", "--home", str(home), "serve"]
    url = urlsplit(serve["url"])
    assert (url.scheme, url.netloc, url.path) == ("http", "127.0.0.1:8470", "/")
    [shown_day] = parse_qs(url.query)["date"]
    day = date.fromisoformat(shown_day)
    assert day.year == date.today().year
    assert text[-2:] == [
        f"See it in a browser (On this day, the queue): safelight --home {home} serve",
        f"  then open {serve['url']}",
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

    # Run as printed (on any free port: 8470 may be taken here), it serves that library.
    token = reader_token(database_url)
    process = start_safelight(
        *serve["command"][1:], "--port", "0", env={"SAFELIGHT_DATABASE_URL": database_url}
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("safelight serve: http://127.0.0.1:"), first
        base = first.split()[2]
        configs = get_json(base + "api/configs", token)
        assert [c["root"] for c in configs] == [str((home / "demo-library").resolve())]
        on_the_day = get_json(f"{base}api/on-this-day?date={day.isoformat()}", token)
        assert on_the_day["count"] >= 1
        assert sum(len(y["assets"]) for y in on_the_day["years"]) == on_the_day["count"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
