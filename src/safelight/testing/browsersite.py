"""What the browser tests share beside their fixtures (``tests/browser/conftest.py``): the
site's days, owners and passwords, the served site, and a way to run a coroutine from a
test that Playwright's synchronous API owns."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from safelight.settings import Settings
from safelight.testing.samplegen import Manifest

if TYPE_CHECKING:
    from playwright.sync_api import Page

# The day the tests ask for, and the years of each library's photos of that day.
ASKED_DAY = date(2025, 6, 15)
YEARS = (2016, 2019, 2021, 2024)
OTHER_DAY = date(2025, 7, 20)
OTHER_YEARS = (2015, 2018, 2020)
# The owners of the two libraries, each a user of that name, and an admin who sees both.
OWNER = "browser"
OTHER_OWNER = "other"
ADMIN = "admin"
PASSWORD = "a long family password, 28 June"
PASSWORDS = {
    OWNER: "first family passphrase",
    OTHER_OWNER: "second family passphrase",
    ADMIN: PASSWORD,
}

PageOf = Callable[[str], "Page"]
"""``page_of(url)``: a fresh page on ``url`` (the ``page_of`` fixture)."""

T = TypeVar("T")


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

    def asset_ids(self, owner: str) -> set[int]:
        """Every asset of ``owner``'s configs."""
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT a.id FROM assets a JOIN storage_configs c ON c.id = a.storage_config_id"
                " WHERE c.owner = %s",
                (owner,),
            ).fetchall()
        return {int(row[0]) for row in rows}

    def config_id(self, owner: str) -> str:
        """The id of ``owner``'s one config."""
        with self.connect() as conn:
            [(config_id,)] = conn.execute(
                "SELECT id::text FROM storage_configs WHERE owner = %s", (owner,)
            ).fetchall()
        return str(config_id)

    def crawls_pending(self, config_id: str) -> int:
        """Crawls of a config queued and not started (nothing runs them here)."""
        with self.connect() as conn:
            [(count,)] = conn.execute(
                "SELECT count(*) FROM work_items WHERE kind = 'crawl'"
                " AND storage_config_id = %s AND status = 'queued'",
                (config_id,),
            ).fetchall()
        return int(count)
