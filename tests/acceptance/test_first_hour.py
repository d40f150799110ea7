"""``safelight run`` as a new user meets it (issue #31, item 6): a crawl another run left
queued is labelled by its own folder and listed as other work, and a run of a folder
already being crawled says that it waits for that crawl."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from safelight.app import app_store
from safelight.core.clock import SystemClock
from safelight.db.database import open_database
from safelight.settings import Settings
from safelight.testing.invoking import Invoke
from safelight.testing.samplegen import generate_jpegs

pytestmark = pytest.mark.acceptance


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def folder(tmp_path: Path, name: str, photos: int, seed: int) -> Path:
    root = tmp_path / name
    generate_jpegs(root, photos, 0.05, seed=seed)
    return root


def test_a_leftover_crawl_of_another_folder_is_labelled_by_its_folder_and_listed(
    invoke: Invoke, tmp_path: Path
) -> None:
    first, second = folder(tmp_path, "first", 3, seed=1), folder(tmp_path, "second", 2, seed=2)
    # What an interrupted `run first` leaves: its crawl, queued.
    config_id = last_line(invoke("config", "add", str(first)).stdout)
    assert invoke("enqueue", "crawl", "--config", config_id).exit_code == 0

    done = invoke("run", str(second))
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert "crawl first: succeeded" in lines and "crawl second: succeeded" in lines
    # No progress line of the first folder's crawl under the second's name.
    assert not [line for line in lines if line.startswith("crawl second · ") and "/3 files" in line]
    headline = next(line for line in lines if line.startswith("Done in"))
    assert "(2 files" in headline and "the other work below" in headline
    also = next(line for line in lines if line.startswith("also ran"))
    assert "crawl first: succeeded (3 files)" in also


def test_a_run_of_a_folder_being_crawled_says_it_waits(
    invoke: Invoke, database_url: str, tmp_path: Path
) -> None:
    root = folder(tmp_path, "busy", 2, seed=3)
    config_id = last_line(invoke("config", "add", str(root)).stdout)
    running_id = int(last_line(invoke("enqueue", "crawl", "--config", config_id).stdout))

    async def claim() -> None:
        # Another Worker's crawl of this folder, whose lease runs out in a few seconds
        # (as if that Worker had died): this run's Workers take it back, then go on.
        database = await open_database(database_url, Path("/nonexistent"))
        try:
            store = app_store(database, Settings(), SystemClock())
            item = await store.claim("other-worker", ["crawl"], lease_seconds=2)
            assert item is not None and item.id == running_id
        finally:
            await database.close()

    asyncio.run(claim())
    done = invoke(
        "--lease-seconds",
        "4",
        "--heartbeat-seconds",
        "1",
        "run",
        str(root),
        env={"SAFELIGHT_RECOVERY_INTERVAL_SECONDS": "1"},
    )
    assert done.exit_code == 0, done.output
    assert (
        f"crawl busy: already running (item #{running_id}, Worker other-worker); waiting for "
        "it to end, then this run crawls what is left\n"
    ) in done.stderr
    assert "Done in" in done.stdout
