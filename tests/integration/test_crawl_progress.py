"""A crawl saves what it has done as it goes (the item's ``progress``, migration 0010):
with its heartbeats, and once more when it is stopped, so a crawl interrupted by Ctrl-C
still says what it did, in ``safelight run``'s summary and in ``items show``."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool
from rich.console import Console

from safelight.cli.summary import INTERRUPTED, build_summary, render_summary, saved_counts
from safelight.handlers.crawl import attempt, walking
from safelight.handlers.crawl import result as crawl_result
from safelight.handlers.crawl.result import CrawlResult
from safelight.library.files import hashing
from safelight.library.walk import walker as walk_module
from safelight.library.walk.walker import FileError
from safelight.testing.handlers import KINDS, LEASE, jpeg, make_harness, write
from safelight.views.documents import item_document, progress_line
from safelight.work.model import Beat, Status
from safelight.work.outcome import Released

pytestmark = pytest.mark.integration

PHOTOS = 8
DONE = 3
"""Files the crawl finishes before it is interrupted, as the next one starts."""


async def test_a_crawl_interrupted_after_n_files_saved_what_it_did(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One file at a time, a progress report after each: the point of the interrupt is
    # exact, and the heartbeat finds the latest counts to save.
    h = make_harness(pool, tmp_path, max_concurrent_files=1)
    monkeypatch.setattr(attempt, "PROGRESS_EVERY_FILES", 1)
    root = tmp_path / "library"
    for n in range(PHOTOS):
        write(root, f"p{n}.jpg", jpeg(n))
    config = await h.add_config(root)
    item_id = await h.store.enqueue("crawl", config_id=config)
    item = await h.store.claim("w1", KINDS, lease_seconds=LEASE)
    assert item is not None and item.id == item_id

    # The barrier: the (DONE + 1)th file's hash tells the test and holds its thread.
    loop = asyncio.get_running_loop()
    paused = asyncio.Event()
    hold = threading.Event()
    hashed = 0
    real_hash = hashing.hash_descriptor

    def hash_then_hold(fd: int, **kwargs: Any) -> Any:
        nonlocal hashed
        hashed += 1
        if hashed == DONE + 1:
            loop.call_soon_threadsafe(paused.set)
            hold.wait(timeout=60)
        return real_hash(fd, **kwargs)

    monkeypatch.setattr("safelight.handlers.crawl.deciding.hash_descriptor", hash_then_hold)
    beats: list[Beat] = []
    beaten = asyncio.Event()
    real_heartbeat = h.store.heartbeat

    async def heartbeat(*args: Any) -> Beat:
        beat = await real_heartbeat(*args)
        beats.append(beat)
        beaten.set()
        return beat

    monkeypatch.setattr(h.store, "heartbeat", heartbeat)

    shutdown = asyncio.Event()
    run = asyncio.create_task(h.executor.run(item, shutdown))
    try:
        await asyncio.wait_for(paused.wait(), timeout=60)
        # As it goes: the next heartbeat saves the counts of the files done so far.
        await h.clock.advance(h.settings.heartbeat_seconds)
        await asyncio.wait_for(beaten.wait(), timeout=60)
        running = await h.store.get(item_id)
        assert running is not None and running.status is Status.RUNNING
        assert beats == [Beat.ALIVE]
        assert running.progress is not None and running.progress["attempt"] == 1
        assert running.progress["counts"] == {
            **dict.fromkeys(crawl_result.COUNTERS, 0),
            "total": PHOTOS,
            "found": DONE,
            "hashed": DONE,
            "ingested": DONE,
            "proxies": 3 * DONE,
        }
        # Ctrl-C: the Worker shuts down; the crawl stops in the middle of a file.
        shutdown.set()
        result = await asyncio.wait_for(run, timeout=60)
    finally:
        hold.set()
    assert result.outcome == Released() and result.applied

    released = await h.store.get(item_id)
    assert released is not None and released.status is Status.QUEUED
    assert released.result is None
    assert released.progress is not None
    counts = released.progress["counts"]
    # The (DONE + 1)th file was stopped in its hash: the counts say what is done.
    assert counts["ingested"] == DONE and counts["hashed"] == DONE
    assert counts["found"] == DONE and counts["total"] == PHOTOS
    # What the database holds, counted the other way.
    assert await h.value("SELECT count(*) FROM assets") == counts["ingested"]
    assert await h.value("SELECT count(*) FROM proxy_files") == counts["proxies"] == 3 * DONE
    assert released.progress == {"attempt": 1, "counts": counts}

    # What `items show` prints of it.
    assert item_document(released)["progress"] == released.progress
    assert progress_line(released.progress) == (
        "attempt 1: found 3, hashed 3, ingested 3, proxies 9, total 8"
    )

    # And the summary `safelight run` prints after the Ctrl-C.
    summary = build_summary(
        status=INTERRUPTED,
        exit_code=130,
        database="test",
        config={"id": config, "owner": "alice", "root": str(root)},
        crawl={
            "item_id": item_id,
            "status": released.status.value,
            "error": None,
            "result": released.result,
            "progress": saved_counts(released.progress),
        },
        library={
            "images": DONE,
            "videos": 0,
            "soft_deleted": 0,
            "bursts": 0,
            "burst_assets": 0,
            "live_photos": 0,
            "stacks": 0,
            "proxy_files": 3 * DONE,
        },
        stored_errors=[],
        proxy_folder=h.proxy_root / str(config),
        seconds=1.5,
        items=[],
    )
    assert (summary["files"], summary["new"], summary["proxies"]["made"]) == (PHOTOS, DONE, 9)
    out = io.StringIO()
    render_summary(Console(file=out, width=200, color_system=None), summary)
    text = out.getvalue()
    assert "Interrupted after 1.5 s" in text
    assert f"{DONE} new, 0 moved, 0 duplicates, 0 unchanged, 0 soft-deleted" in text
    assert f"{3 * DONE} made (thumbnails, previews, BlurHashes)" in text


async def test_a_stale_attempt_saves_no_progress(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """Every progress write is fenced by (id, attempt) and status = 'running'."""
    h = make_harness(pool, tmp_path)
    item_id = await h.store.enqueue("noop")
    item = await h.store.claim("w1", KINDS, lease_seconds=LEASE)
    assert item is not None
    done = {"attempt": 1, "counts": {"found": 2}}
    assert await h.store.heartbeat(item_id, 1, LEASE, done) is Beat.ALIVE
    assert await h.store.save_progress(item_id, 1, {"attempt": 1, "counts": {"found": 3}})
    stale = {"attempt": 1, "counts": {"found": 99}}
    assert await h.store.heartbeat(item_id, 2, LEASE, stale) is Beat.LOST
    assert not await h.store.save_progress(item_id, 2, stale)
    assert await h.store.release(item_id, 1)
    assert not await h.store.save_progress(item_id, 1, stale)  # queued: not running
    assert await h.store.heartbeat(item_id, 1, LEASE, stale) is Beat.LOST
    after = await h.store.get(item_id)
    assert after is not None and after.progress == {"attempt": 1, "counts": {"found": 3}}
    # A heartbeat with nothing new keeps what was saved.
    again = await h.store.claim("w1", KINDS, lease_seconds=LEASE)
    assert again is not None and again.attempt == 2
    assert await h.store.heartbeat(item_id, 2, LEASE) is Beat.ALIVE
    kept = await h.store.get(item_id)
    assert kept is not None and kept.progress == {"attempt": 1, "counts": {"found": 3}}


async def test_the_walks_end_reports_every_file_found_before_any_is_dealt_with(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The total is known once the walk ends: it is reported then, whatever the files'
    workers have done, not only with the next file done or at the crawl's end."""
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    for n in range(PHOTOS):
        write(root, f"p{n}.jpg", jpeg(n))
    config = await h.add_config(root)
    # The barrier: every file's hash waits until the walk has ended, so no file is
    # dealt with before the walk's last report; the clock stands still, so no report
    # is due by time either.
    walk_ended = threading.Event()
    real_walk = walking.walk
    real_hash = hashing.hash_descriptor

    async def walk(crawl: Any, walker: Any) -> None:
        try:
            await real_walk(crawl, walker)
        finally:
            walk_ended.set()

    def hash_after_the_walk(fd: int, **kwargs: Any) -> Any:
        walk_ended.wait(timeout=60)  # a guard against a hang, never reached when it passes
        return real_hash(fd, **kwargs)

    monkeypatch.setattr(walking, "walk", walk)
    monkeypatch.setattr("safelight.handlers.crawl.deciding.hash_descriptor", hash_after_the_walk)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    reports = h.progress[item.id]
    assert reports[0] == {**dict.fromkeys(crawl_result.COUNTERS, 0), "total": PHOTOS}
    assert reports[-1]["found"] == reports[-1]["ingested"] == PHOTOS


async def test_the_reports_made_during_the_walk_count_what_it_skipped_so_far(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second crawl, the walk a file per step: each batch of unchanged files is
    reported as it is matched, with the links the walk has skipped by then."""
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    for n in range(3):
        write(root, f"p{n}.jpg", jpeg(n))
    # Listed with the root, in the first step: skipped from the first batch on.
    (root / "link.jpg").symlink_to(root / "p0.jpg")
    config = await h.add_config(root)
    first = await h.run("crawl", config_id=config)
    assert first.status is Status.SUCCEEDED, first.error
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 1)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    skipped = CrawlResult.from_json(item.result or {}).skipped
    assert skipped == (FileError("link.jpg", "symbolic link: not followed"),)
    zero = dict.fromkeys(crawl_result.COUNTERS, 0)
    # The first two batches' reports, made while the walk still had files to give out.
    assert h.progress[item.id][:2] == [
        {**zero, "total": n, "found": n, "unchanged": n, "skipped": 1} for n in (1, 2)
    ]
