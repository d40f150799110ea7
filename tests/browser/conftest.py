"""Browser tests: the real dashboard, driven by a real Chromium.

``site`` (once per session) makes a database of its own, generates two "On this day"
libraries (``generate_day_library``) of two owners (``OWNER``'s of ``ASKED_DAY``
in ``YEARS``, ``OTHER_OWNER``'s of ``OTHER_DAY`` in ``OTHER_YEARS``: the admin's
page of either day shows one owner's photos), crawls each with ``safelight run
--user NAME`` (real proxies, BlurHashes, bursts and Live Photos), adds a user of each
owner's name and an admin (``ADMIN``; passwords in ``PASSWORDS``), and serves the
dashboard with uvicorn on a free port of 127.0.0.1, in a thread of this process with
an event loop of its own, exactly as ``safelight serve`` builds it (``create_app``,
``WebServer``).

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
import contextlib
import json
import logging
import os
import queue
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from playwright.sync_api import Browser, Page, expect, sync_playwright

from safelight.accounts.store import Accounts
from safelight.appdb import open_app_database
from safelight.cli.main import cli
from safelight.core.clock import SystemClock
from safelight.logs import CHATTY_LIBRARIES
from safelight.settings import Settings
from safelight.testing.browsersite import (
    ADMIN,
    ASKED_DAY,
    OTHER_DAY,
    OTHER_OWNER,
    OTHER_YEARS,
    OWNER,
    PASSWORD,
    PASSWORDS,
    YEARS,
    PageOf,
    Site,
    run_async,
)
from safelight.testing.samplegen import generate_day_library
from safelight.web.app import create_app
from safelight.web.server import WebServer
from tests.acceptance.harness import safelight_process
from tests.dbserver import PgTestServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("SAFELIGHT_TEST_ARTIFACTS") or ROOT / "tests" / "artifacts")
CHROMIUM_COMMANDS = ("chromium", "chromium-browser")

# The whole run waits on the page, never on a clock: a generous bound for a busy machine.
EXPECT_TIMEOUT_MS = 15_000
START_TIMEOUT_SECONDS = 60
# A guard against a demo that hangs, not a tested deadline: it generates and crawls.
DEMO_GUARD_SECONDS = 600


def chromium_executable() -> str | None:
    given = os.environ.get("SAFELIGHT_TEST_CHROMIUM")
    if given:
        return given
    for command in CHROMIUM_COMMANDS:
        found = shutil.which(command)
        if found:
            return found
    return None


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


def _invoke(args: list[str], database_url: str, home: Path) -> Any:
    """``safelight ARGS --json``, in this process, as the acceptance tests run commands;
    the JSON it printed."""
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
        result = CliRunner().invoke(cli, [*args, "--json"], env=env, catch_exceptions=False)
    finally:
        for handler in [h for h in root_logger.handlers if h not in handlers]:
            root_logger.removeHandler(handler)
        root_logger.setLevel(level)
        for name, chatty_level in chatty.items():
            logging.getLogger(name).setLevel(chatty_level)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _crawl(root: Path, database_url: str, home: Path, owner: str) -> None:
    """``safelight run ROOT --user OWNER``."""
    _invoke(["run", str(root), "--user", owner], database_url, home)


def _demo_summary(database_url: str, home: Path) -> Any:
    """``safelight demo --json`` into ``home``, as a process, as a new user runs it (not in
    this thread: Playwright's event loop runs here): its summary, with the serve command."""
    result = safelight_process(
        "demo",
        "--json",
        env={
            "SAFELIGHT_DATABASE_URL": database_url,
            "SAFELIGHT_HOME": str(home),
        },
        timeout=DEMO_GUARD_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _add_users(settings: Settings) -> None:
    async def add() -> None:
        database = await open_app_database(settings, concurrency=1)
        try:
            accounts = Accounts(database.pool, SystemClock())
            for name, password in PASSWORDS.items():
                await accounts.add(name, password=password, admin=name == ADMIN)
        finally:
            await database.close()

    run_async(add)


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
        _crawl(library, database_url, home, OWNER)
        other = tmp_path_factory.mktemp("browser-library-other") / "photos"
        generate_day_library(other, OTHER_DAY.month, OTHER_DAY.day, OTHER_YEARS, seed=1)
        _crawl(other, database_url, home, OTHER_OWNER)
        settings = Settings.load({"database_url": database_url, "home": home}, env={})
        _add_users(settings)
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


@pytest.fixture
def page_problems() -> list[str]:
    """What the page reported: script errors, console errors (a refused resource, a
    failed request). A test that makes a request fail on purpose takes its own out."""
    return []


@contextlib.contextmanager
def open_page(
    browser: Browser, problems: list[str], request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Page]]:
    """A factory of pages, each in a fresh browser context (no cookie, no storage) on the
    URL it is given; when the block ends, each is photographed (the first as the test's
    artifact, the next ones with ``-2``, ``-3`` ...), and any script or console error of
    any of them fails the test."""
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    opened: list[tuple[Any, Page]] = []

    def new_page(url: str) -> Page:
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        made = context.new_page()
        made.on("pageerror", lambda error: problems.append(f"script error: {error}"))
        made.on(
            "console",
            lambda message: (
                problems.append(
                    f"console error: {message.text} ({message.location.get('url', '')})"
                )
                if message.type == "error"
                else None
            ),
        )
        opened.append((context, made))
        return made

    try:
        yield new_page
        assert problems == [], "the page reported errors"
    finally:
        path = artifact_path(request.node)
        path.parent.mkdir(parents=True, exist_ok=True)
        for index, (context, made) in enumerate(opened, 1):
            shot = path if index == 1 else path.with_name(f"{path.stem}-{index}{path.suffix}")
            try:
                made.screenshot(path=str(shot), full_page=True)
            finally:
                context.close()


@pytest.fixture
def demo_summary() -> Callable[[str, Path], Any]:
    """``demo_summary(database_url, home)``: ``safelight demo --json`` into ``home``, as a
    process, as a new user runs it (not in this thread: Playwright's event loop runs
    here): its summary, with the serve command."""
    return _demo_summary


@pytest.fixture
def page_of(
    browser: Browser, page_problems: list[str], request: pytest.FixtureRequest
) -> Iterator[PageOf]:
    """``page_of(url)``: a fresh browser context's page on ``url`` (signed in as nobody),
    watched and photographed as the ``page`` fixture's."""
    with open_page(browser, page_problems, request) as opener:
        yield opener


@pytest.fixture
def anonymous_page(
    site: Site, browser: Browser, page_problems: list[str], request: pytest.FixtureRequest
) -> Iterator[Page]:
    with open_page(browser, page_problems, request) as new_page:
        yield new_page(site.url)


@pytest.fixture
def page(anonymous_page: Page) -> Page:
    """A fresh page signed in as the admin."""
    sign_in(anonymous_page)
    return anonymous_page
