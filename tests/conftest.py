from __future__ import annotations

import ctypes
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from safelight.testing.samplegen import Manifest, generate_library
from safelight.testing.serverusers import remove_users_of_gone_homes
from tests.dbserver import PgTestServer, start_test_server, stop_test_server

TESTS = Path(__file__).resolve().parent

# Tests whose session-scoped fixtures are costly to build twice run in one xdist worker
# (``scripts/test`` runs ``--dist loadgroup``): the fault run's private cluster, the
# browser tests' crawled site and Chromium.
GROUPED_FOLDERS = {"faults": "faults", "browser": "browser"}

# What ``scripts/test --quick`` (``-m "not slow"``) leaves out, by cost (ADR 0048): the
# folders that start real processes or a browser, and the modules whose tests took the
# longest each (``--junitxml`` times of a run on 2 workers; ADR 0048 has the figures).
# Modules are named by file name, wherever under tests/ they live, so that moving one
# keeps its mark; a name no file bears any more stops the run, so a rename cannot drop
# it from the list unseen.
SLOW_FOLDERS = {"acceptance", "browser", "faults"}
SLOW_MODULES = {
    # Embedded PostgreSQL servers started and stopped, several a test.
    "test_embedded.py",
    "test_embedded_private.py",
    "test_embedded_watch.py",
    "test_embedded_backup.py",
    # Whole generated libraries crawled, with decode processes; thousands of files.
    "test_handler_crawl.py",
    "test_handler_bursts.py",
    "test_crawl_many_files.py",
    "test_store_stress.py",
    "test_crawl_pages_plan.py",
    "test_handler_crawl_originals.py",
    "test_handler_crawl_raw.py",
    "test_handler_crawl_sidecars.py",
    "test_crawl_file_dates.py",
    "test_handler_copies.py",
    "test_handler_crawl_content.py",
    "test_handler_proxy_remake.py",
    # Password hashes made and checked at their real cost, many a test.
    "test_accounts.py",
    # ffmpeg encodes, decode processes, large images decoded under memory limits.
    "test_decoding.py",
    "test_hostile_videos.py",  # tests/unit's and tests/integration's
    "test_limits.py",
    "test_raw.py",
    "test_samplegen.py",
    "test_video.py",
    "test_video_posters.py",
}


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _interrupted_with_the_controller() -> None:
    """An xdist worker whose controller dies (a SIGTERM'd or SIGKILL'd ``scripts/test``)
    would run on, orphaned, with its servers: the kernel sends it SIGINT instead, and it
    stops as on Ctrl-C, through its fixtures' teardowns. The controller's main thread
    started it (execnet's popen), so that thread's end is the controller's."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGINT, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_PDEATHSIG): {os.strerror(error)}")
    if os.getppid() == 1:  # gone already, before the signal was asked for
        raise KeyboardInterrupt


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        _interrupted_with_the_controller()
    gone = sorted(SLOW_MODULES - {path.name for path in TESTS.rglob("test_*.py")})
    if gone:
        raise pytest.UsageError(f"tests/conftest.py SLOW_MODULES names no file: {gone}")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests ``slow`` and ``xdist_group`` by where they live. First, so that
    xdist's own hook sees the groups (and only with xdist there, which registers it)."""
    xdist = config.pluginmanager.hasplugin("xdist")
    for item in items:
        relative = Path(item.path).resolve().relative_to(TESTS)
        folder = relative.parts[0]
        if folder in SLOW_FOLDERS or relative.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if xdist and folder in GROUPED_FOLDERS:
            item.add_marker(pytest.mark.xdist_group(GROUPED_FOLDERS[folder]))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """As root, every home a test started the embedded server in made an OS user (ADR
    0037): remove those of the temporary homes that are gone (the CLI's, in acceptance
    tests, as well as the fixtures')."""
    remove_users_of_gone_homes(Path(tempfile.gettempdir()))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgTestServer]:
    server = start_test_server()
    try:
        yield server
    finally:
        stop_test_server(server)


@pytest.fixture(scope="session")
def generated_library(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    """The sample generator's library (its default seed), made once a session (a worker):
    tests that read it share it, and crawl a copy of it when the crawl may change it."""
    return generate_library(tmp_path_factory.mktemp("sample") / "library")


@pytest.fixture
def database_url(pg_server: PgTestServer) -> Iterator[str]:
    """A fresh, migrated database of this test's own."""
    name, url = pg_server.new_database()
    try:
        yield url
    finally:
        pg_server.drop_database(name)


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[AsyncConnectionPool[Any]]:
    p = await open_pool(database_url, min_size=1, max_size=12)
    try:
        yield p
    finally:
        await p.close()
