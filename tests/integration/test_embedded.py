"""The fresh-machine path: no database URL, so safelight starts the embedded PostgreSQL.

This runs in every test run, whichever server the rest of the suite uses.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from safelight.db.database import open_database
from safelight.work.fakeclock import FakeClock
from safelight.work.store import WorkStore
from tests.integration.storefixtures import TEST_KINDS

pytestmark = pytest.mark.integration


async def test_embedded_database_starts_migrates_and_persists() -> None:
    # Not pytest's tmp_path: pytest resets its base folder to mode 0700 at every session
    # start, and when tests run as root the embedded server runs as another user, who
    # must be able to traverse to its data folder.
    home = Path(tempfile.mkdtemp(prefix="safelight-embedded-")) / "home"
    clock = FakeClock()
    db = await open_database(None, home)
    try:
        assert db.embedded_handle is not None
        assert (home / "pgdata" / "PG_VERSION").exists()
        store = WorkStore(db.pool, clock, TEST_KINDS)
        item_id = await store.enqueue("noop", payload={"kept": True})
    finally:
        await db.close()
        db.embedded_handle.cleanup()  # the last handle: the server stops

    # A second start finds the same data: the queue survives a restart.
    db = await open_database(None, home)
    try:
        store = WorkStore(db.pool, clock, TEST_KINDS)
        item = await store.get(item_id)
        assert item is not None and item.payload == {"kept": True}
    finally:
        await db.close()
        db.embedded_handle.cleanup()
        shutil.rmtree(home.parent, ignore_errors=True)
