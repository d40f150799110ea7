"""The web dashboard served for a test on a real port, in a thread of its own: for a
browser test (Playwright drives it from the test's thread), with the test's clock.
``safelight serve`` itself is the same :class:`~safelight.web.server.WebServer` on the
same :func:`~safelight.web.app.create_app`.

    with dashboard_in_thread(settings, clock=FakeClock(...)) as url:
        page.goto(url)   # "http://127.0.0.1:PORT/"
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, tzinfo
from typing import Any

from safelight.core.clock import Clock
from safelight.db.database import open_database
from safelight.settings import Settings
from safelight.web.app import create_app
from safelight.web.server import WebServer

READY_SECONDS = 60.0


@contextmanager
def dashboard_in_thread(
    settings: Settings,
    *,
    clock: Clock,
    read_only: bool = False,
    zone: tzinfo | None = UTC,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[str]:
    """Serve the dashboard of ``settings``' database (opened, and migrated, in the
    thread's own event loop) until the block ends; yields its URL once it listens."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        database = await open_database(settings.database_url, settings.home, max_size=4)
        try:
            app = create_app(database, settings, clock=clock, zone=zone, read_only=read_only)
            server = WebServer(app, host, port, settings.web_limits(), access_log=False)
            state["server"], state["loop"] = server, asyncio.get_running_loop()
            ready.set()
            await server.serve()
        finally:
            await database.close()

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as error:  # handed to the test's thread below
            state["error"] = error
        finally:
            ready.set()

    thread = threading.Thread(target=run, name="safelight-dashboard", daemon=True)
    thread.start()
    if not ready.wait(READY_SECONDS) or "server" not in state:
        thread.join(READY_SECONDS)
        raise RuntimeError("the dashboard did not start") from state.get("error")
    try:
        yield state["server"].url
    finally:
        state["loop"].call_soon_threadsafe(state["server"].stop)
        thread.join(READY_SECONDS)
        if "error" in state:
            raise RuntimeError("the dashboard failed") from state["error"]
