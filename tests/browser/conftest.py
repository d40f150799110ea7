"""Browser tests: the real dashboard, driven by a real Chromium.

``site`` (once per session) makes a database of its own, generates an "On this day"
library (``generate_day_library``), crawls it with ``safelight run`` (real proxies,
BlurHashes, bursts and Live Photos), and serves the dashboard with uvicorn on a free
port of 127.0.0.1, in a thread of this process with an event loop of its own, exactly
as ``safelight serve`` builds it (``create_app``, ``WebServer``), with an admin user
(``ADMIN``, ``PASSWORD``).

``browser`` is the system's Chromium (``chromium`` or ``chromium-browser`` on PATH, or
``SAFELIGHT_TEST_CHROMIUM``; ``scripts/setup --dev`` installs Debian's) driven by
Playwright, which never downloads a browser of its own here; without one, the browser
tests skip with the reason. ``page`` is a fresh browser context's page on the site,
signed in as the admin through the sign-in page (``anonymous_page``: signed in as nobody);
when its test ends, a screenshot of the whole page goes to
``tests/artifacts/browser/<module>/<test>.png`` (``SAFELIGHT_TEST_ARTIFACTS`` moves
``tests/artifacts``), failed or not, and a script error or a refused resource (the
Content-Security-Policy's) on the page fails the test.

Tests wait on what the page shows (Playwright's auto-waiting ``expect``), never on a
sleep.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import re
import shutil
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from click.testing import CliRunner
from playwright.sync_api import Browser, Page, expect, sync_playwright

from safelight.accounts.store import Accounts
from safelight.app import open_app_database
from safelight.cli.main import cli
from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.logs import CHATTY_LIBRARIES
from safelight.settings import Settings
from safelight.testing.samplegen import Manifest, generate_day_library
from safelight.web.app import create_app
from safelight.web.server import WebServer
from tests.dbserver import PgTestServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("SAFELIGHT_TEST_ARTIFACTS") or ROOT / "tests" / "artifacts")
CHROMIUM_COMMANDS = ("chromium", "chromium-browser")

# The day the tests ask for, and the years of the library's photos of that day.
ASKED_DAY = date(2025, 6, 15)
YEARS = (2016, 2019, 2021, 2024)
# The whole run waits on the page, never on a clock: a generous bound for a busy machine.
EXPECT_TIMEOUT_MS = 15_000
START_TIMEOUT_SECONDS = 60
ADMIN = "admin"
PASSWORD = "a long family password, 28 June"

T = TypeVar("T")


def chromium_executable() -> str | None:
    given = os.environ.get("SAFELIGHT_TEST_CHROMIUM")
    if given:
        return given
    for command in CHROMIUM_COMMANDS:
        found = shutil.which(command)
        if found:
            return found
    return None


def run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine in a thread of its own with its own event loop: the tests are
    synchronous (Playwright's sync API owns this thread), the store is async."""
    results: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def main() -> None:
        try:
            results.put((True, asyncio.run(make())))
        except BaseException as error:
            results.put((False, error))

    thread = threading.Thread(target=main, name="browser-test-async")
    thread.start()
    thread.join()
    ok, value = results.get_nowait()
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Site:
    url: str
    """``http://127.0.0.1:<port>/``"""
    database_url: str
    settings: Settings
    manifest: Manifest

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.database_url, autocommit=True)


class _Served:
    """The dashboard in a thread: its own event loop, database pool and uvicorn."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._started: queue.Queue[WebServer | BaseException] = queue.Queue()
        self._thread = threading.Thread(target=self._main, name="browser-test-site")
        self.server: WebServer | None = None

    def _main(self) -> None:
        async def serve() -> None:
            database = await open_app_database(self._settings, concurrency=2)
            try:
                app = create_app(database, self._settings)
                server = WebServer(
                    app, "127.0.0.1", 0, self._settings.web_limits(), access_log=False
                )
                self._started.put(server)
                await server.serve()
            finally:
                await database.close()

        try:
            asyncio.run(serve())
        except BaseException as error:
            self._started.put(error)

    def start(self) -> str:
        self._thread.start()
        started = self._started.get(timeout=START_TIMEOUT_SECONDS)
        if isinstance(started, BaseException):
            raise started
        self.server = started
        return started.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        self._thread.join(START_TIMEOUT_SECONDS)
        assert not self._thread.is_alive(), "the dashboard did not stop"


def _crawl(root: Path, database_url: str, home: Path) -> None:
    """``safelight run ROOT``, in this process, as the acceptance tests run commands."""
    env: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("SAFELIGHT_")
    }
    env |= {
        "SAFELIGHT_DATABASE_URL": database_url,
        "SAFELIGHT_HOME": str(home),
        "SAFELIGHT_DECODE_PROCESSES": "0",  # small photos: threads start faster
    }
    root_logger = logging.getLogger()
    handlers, level = list(root_logger.handlers), root_logger.level
    chatty = {name: logging.getLogger(name).level for name in CHATTY_LIBRARIES}
    try:
        result = CliRunner().invoke(
            cli, ["run", str(root), "--user", "browser", "--json"], env=env, catch_exceptions=False
        )
    finally:
        for handler in [h for h in root_logger.handlers if h not in handlers]:
            root_logger.removeHandler(handler)
        root_logger.setLevel(level)
        for name, chatty_level in chatty.items():
            logging.getLogger(name).setLevel(chatty_level)
    assert result.exit_code == 0, result.output


async def add_user(database_url: str, name: str, password: str, *, admin: bool) -> None:
    pool = await open_pool(database_url, min_size=1, max_size=1)
    try:
        await Accounts(pool, SystemClock()).add(name, password=password, admin=admin)
    finally:
        await pool.close()


def sign_in(page: Page, name: str = ADMIN, password: str = PASSWORD, next_path: str = "/") -> None:
    """Sign ``page`` in through the sign-in page, as a person does; it ends on ``next_path``."""
    page.goto(f"/login?next={next_path}")
    page.locator("#login-username").fill(name)
    page.locator("#login-password").fill(password)
    page.locator("#login-submit").click()
    expect(page).to_have_url(re.compile(re.escape(next_path) + "$"))
    expect(page.locator("#access")).to_have_attribute("data-access", "signed-in")


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium to drive; without one every browser test skips, before anything is
    built for it."""
    executable = chromium_executable()
    if executable is None:
        pytest.skip(
            "no Chromium: scripts/setup --dev installs Debian's chromium "
            "(or set SAFELIGHT_TEST_CHROMIUM)"
        )
    return executable


@pytest.fixture(scope="session")
def site(
    chromium: str, pg_server: PgTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    name, database_url = pg_server.new_database()
    served: _Served | None = None
    try:
        home = tmp_path_factory.mktemp("browser-home")
        library = tmp_path_factory.mktemp("browser-library") / "photos"
        manifest = generate_day_library(library, ASKED_DAY.month, ASKED_DAY.day, YEARS)
        _crawl(library, database_url, home)
        settings = Settings.load({"database_url": database_url, "home": home}, env={})
        run_async(lambda: add_user(database_url, ADMIN, PASSWORD, admin=True))
        served = _Served(settings)
        url = served.start()
        yield Site(url, database_url, settings, manifest)
    finally:
        if served is not None:
            served.stop()
        pg_server.drop_database(name)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    """One Chromium per module: Playwright's sync API runs an event loop of its own in
    this thread, which must be gone before another module's async tests start theirs."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium)
        try:
            yield launched
        finally:
            launched.close()


def artifact_path(node: pytest.Item) -> Path:
    module = Path(node.path).stem
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", node.name)
    return ARTIFACTS / "browser" / module / f"{test}.png"


def _is_favicon(url: str) -> bool:
    # Chromium asks every site for /favicon.ico on its own; the dashboard has none.
    return url.endswith("/favicon.ico")


@pytest.fixture
def page_problems() -> list[str]:
    """What the page reported: script errors, console errors (a refused resource, a
    failed request). A test that makes a request fail on purpose takes its own out."""
    return []


@pytest.fixture
def anonymous_page(
    site: Site, browser: Browser, page_problems: list[str], request: pytest.FixtureRequest
) -> Iterator[Page]:
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    context = browser.new_context(base_url=site.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    opened = context.new_page()
    problems = page_problems
    opened.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    opened.on(
        "console",
        lambda message: (
            problems.append(f"console error: {message.text} ({message.location.get('url', '')})")
            if message.type == "error" and not _is_favicon(message.location.get("url", ""))
            else None
        ),
    )
    try:
        yield opened
        assert problems == [], "the page reported errors"
    finally:
        path = artifact_path(request.node)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            opened.screenshot(path=str(path), full_page=True)
        finally:
            context.close()


@pytest.fixture
def page(anonymous_page: Page) -> Page:
    """A fresh page signed in as the admin."""
    sign_in(anonymous_page)
    return anonymous_page
