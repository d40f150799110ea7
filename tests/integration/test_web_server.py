"""The dashboard on a real port: uvicorn serving the app that ``safelight serve`` serves,
started by the tests' ``dashboard_in_thread`` (a browser test's way in), read with a
personal token."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.accounts.store import Accounts
from safelight.testing.fakeclock import FakeClock
from safelight.testing.web import TODAY, clock_on, web_settings
from safelight.testing.weblibrary import make_web_library
from safelight.testing.webserver import dashboard_in_thread

pytestmark = pytest.mark.integration


def fetch(url: str, token: str | None = None) -> tuple[int, str, bytes]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with urllib.request.urlopen(
        urllib.request.Request(url, headers=headers), timeout=30
    ) as response:
        return response.status, response.headers["Content-Type"], response.read()


async def test_the_dashboard_serves_on_a_real_port(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(database_url, tmp_path)
    library = await make_web_library(pool, settings.proxies, TODAY)
    accounts = Accounts(pool, FakeClock())
    await accounts.add("alice", password=None, admin=False)
    token = await accounts.new_token("alice")
    with dashboard_in_thread(settings, clock=clock_on(TODAY)) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        with pytest.raises(urllib.error.HTTPError) as unsigned:
            await asyncio.to_thread(fetch, url + "api/on-this-day")
        assert unsigned.value.code == 401
        unsigned.value.close()
        status, kind, body = await asyncio.to_thread(fetch, url + "api/on-this-day", token)
        assert (status, kind) == (200, "application/json")
        document = json.loads(body)
        assert document["date"] == "2026-06-15" and document["count"] == 8
        thumbnail = document["years"][0]["assets"][0]["thumbnail"]
        status, kind, body = await asyncio.to_thread(fetch, url + thumbnail.lstrip("/"), token)
        assert (status, kind) == (200, "image/jpeg") and body[:2] == b"\xff\xd8"
        status, kind, body = await asyncio.to_thread(fetch, url + "static/blurhash.js")
        assert status == 200 and kind.startswith("text/javascript") and b"decode83" in body
        status, _, page = await asyncio.to_thread(fetch, url, token)
        assert f'data-asset-id="{library.ids["photo-1y"]}"'.encode() in page
    # Stopped: the port is closed again.
    with pytest.raises(OSError):
        await asyncio.to_thread(fetch, url)
