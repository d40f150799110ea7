"""A file a crawl could not ingest is read again only when it changed, when asked, or
after its backoff (ADR 0057), on real PostgreSQL; the crawls in between list it unread.

"Not read" is proven by two seams of the crawl: the ``hashed`` counter of its progress
(hashing reads every byte, and comes before anything else reads the file) and the
decode call of ``ingesting``, counted here."""

from __future__ import annotations

import os
import re
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.crawl import ingesting
from safelight.handlers.crawl.result import CrawlResult
from safelight.library.catalogue import assets
from safelight.library.render.decoding import decode_image
from safelight.testing.handlers import Harness, crawl_result, jpeg, make_harness, touch_later, write
from safelight.views.queries import asset_errors
from safelight.web import actions
from safelight.work.model import Status

pytestmark = pytest.mark.integration

BROKEN = b"\xff\xd8\xff this is no JPEG at all, only its first three bytes"
DAY = 86400.0


class Decodes:
    """``ingesting.decode_image`` counted by the file it was asked to decode (by inode)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.inodes: list[int] = []
        real = decode_image

        def counted(ref: Any, *args: Any) -> Any:
            self.inodes.append(ref.inode)
            return real(ref, *args)

        monkeypatch.setattr(ingesting, "decode_image", counted)

    def of(self, path: Path) -> int:
        return self.inodes.count(path.stat().st_ino)


async def crawl(h: Harness, config: UUID) -> tuple[CrawlResult, int]:
    """One crawl: its result, and how many files it hashed."""
    item = await h.run("crawl", config_id=config)
    assert item.status is Status.SUCCEEDED, item.error
    return crawl_result(item), h.progress[item.id][-1]["hashed"]


async def error_row(h: Harness, path: str) -> tuple[Any, ...]:
    rows = await h.rows(
        "SELECT failures, size, modified_ns, inode, retry_after FROM asset_errors"
        " WHERE file_path = %s",
        path,
    )
    assert len(rows) == 1, rows
    return rows[0]


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> Decodes:
    return Decodes(monkeypatch)


async def broken_library(h: Harness, root: Path) -> tuple[UUID, Path]:
    write(root, "good.jpg", jpeg(1))
    write(root, "notes.txt", b"no photo: left alone, counted")
    broken = write(root, "broken.jpg", BROKEN)
    return await h.add_config(root), broken


async def test_a_broken_file_fails_once_and_is_not_read_again_while_unchanged(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path)
    config, broken = await broken_library(h, tmp_path / "library")

    first, hashed = await crawl(h, config)
    assert (first.ingested, hashed, decodes.of(broken)) == (1, 2, 1)
    assert first.other_files == first.counts.other_files == 1  # notes.txt
    [error] = first.errors
    assert error.path == "broken.jpg" and error.reason
    st = broken.stat()
    failed_at = h.clock.now()
    assert await error_row(h, "broken.jpg") == (
        1,
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
        failed_at + timedelta(days=1),
    )

    for _ in range(2):
        again, hashed = await crawl(h, config)
        # Neither hashed nor decoded: not one byte of it was read.
        assert (hashed, decodes.of(broken)) == (0, 1)
        assert again.errors == ()
        assert [(e.path, e.reason) for e in again.not_retried] == [("broken.jpg", error.reason)]
        assert again.counts.not_retried == 1 and again.unchanged == 1
        # The record stays as it was, and what the CLI lists still names it.
        assert await error_row(h, "broken.jpg") == (
            1,
            st.st_size,
            st.st_mtime_ns,
            st.st_ino,
            failed_at + timedelta(days=1),
        )
        listed = await asset_errors(pool, config)
        assert [(r["file_path"], r["reason"]) for r in listed] == [("broken.jpg", error.reason)]


async def test_a_broken_file_is_read_again_when_its_bytes_or_its_time_change(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path)
    config, broken = await broken_library(h, tmp_path / "library")
    await crawl(h, config)

    # Other bytes, the same size and time: the size and time say nothing, so this is
    # not noticed; other bytes and a later time are.
    write(tmp_path / "library", "broken.jpg", BROKEN + b" and more garbage")
    touch_later(broken)
    again, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (1, 2)
    assert [e.path for e in again.errors] == ["broken.jpg"] and again.not_retried == ()
    assert (await error_row(h, "broken.jpg"))[0] == 2

    # Only its time changed (touched): read again.
    touch_later(broken)
    again, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (1, 3)
    failures, size, modified_ns, _, retry_after = await error_row(h, "broken.jpg")
    assert (failures, size, modified_ns) == (3, broken.stat().st_size, broken.stat().st_mtime_ns)
    # The backoff doubles with each crawl it failed: one day, two, four.
    assert retry_after == h.clock.now() + timedelta(days=4)

    # Fixed: ingested, and its error forgotten.
    write(tmp_path / "library", "broken.jpg", jpeg(2))
    touch_later(broken, 120)
    fixed, _ = await crawl(h, config)
    assert fixed.ingested == 1 and fixed.errors == () and fixed.not_retried == ()
    assert await h.rows("SELECT * FROM asset_errors") == []


async def test_a_broken_file_replaced_by_another_with_the_same_size_and_time_is_read_again(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config, broken = await broken_library(h, root)
    await crawl(h, config)
    before = broken.stat()

    # Another file under the name, of the same size and time: only its inode tells.
    other = write(root, "other.bin", BROKEN)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, broken)
    after = broken.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ino != before.st_ino

    again, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (1, 1)  # the new inode's first decode
    assert [e.path for e in again.errors] == ["broken.jpg"]
    assert (await error_row(h, "broken.jpg"))[3] == after.st_ino


async def test_asked_to_retry_failed_files_the_next_crawl_reads_them_once(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path)
    config, broken = await broken_library(h, tmp_path / "library")
    await crawl(h, config)

    # What ``run --retry-failed`` and ``config retry-failed`` do before the crawl.
    async with pool.connection() as conn:
        assert await assets.errors_due_now(conn, config, h.clock.now()) == 1
        # Asked twice: nothing more waits.
        assert await assets.errors_due_now(conn, config, h.clock.now()) == 0
    again, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (1, 2)
    assert [e.path for e in again.errors] == ["broken.jpg"] and again.not_retried == ()

    # Asked once: the crawl after that leaves it alone again.
    after, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (0, 2)
    assert [e.path for e in after.not_retried] == ["broken.jpg"]


async def test_the_dashboards_retry_makes_the_failed_files_due_and_queues_a_crawl(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path)
    config, broken = await broken_library(h, tmp_path / "library")
    await crawl(h, config)

    done = await actions.retry_failed(h.store, pool, config, h.clock.now())

    assert (done.status_code, done.outcome) == (200, "queued"), done.message
    assert done.message.startswith("1 failed file will be read again")
    assert done.item_id is not None
    queued = await h.store.get(done.item_id)
    assert queued is not None and (queued.kind, queued.storage_config_id) == ("crawl", config)
    ran = await h.run_queued(done.item_id)
    assert ran.status is Status.SUCCEEDED and decodes.of(broken) == 2


async def test_an_unchanged_broken_file_is_read_again_after_its_backoff(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path)
    config, broken = await broken_library(h, tmp_path / "library")
    await crawl(h, config)

    await h.clock.advance(DAY - 1)
    _, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (0, 1)  # not yet

    await h.clock.advance(1)  # a day after it failed
    again, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (1, 2)
    assert [e.path for e in again.errors] == ["broken.jpg"]
    failures, *_, retry_after = await error_row(h, "broken.jpg")
    assert (failures, retry_after) == (2, h.clock.now() + timedelta(days=2))

    await h.clock.advance(2 * DAY - 1)
    _, hashed = await crawl(h, config)
    assert decodes.of(broken) == 2
    await h.clock.advance(1)
    _, hashed = await crawl(h, config)
    assert decodes.of(broken) == 3


async def test_the_backoff_is_a_setting_and_stops_growing_at_its_longest(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path, failed_file_retry_days=2.0, failed_file_retry_max_days=3.0)
    config, broken = await broken_library(h, tmp_path / "library")
    await crawl(h, config)
    assert (await error_row(h, "broken.jpg"))[4] == h.clock.now() + timedelta(days=2)
    await h.clock.advance(2 * DAY)
    await crawl(h, config)
    assert (await error_row(h, "broken.jpg"))[4] == h.clock.now() + timedelta(days=3)
    assert decodes.of(broken) == 2


async def test_an_error_recorded_before_the_file_was_is_read_again_once(
    pool: AsyncConnectionPool[Any], tmp_path: Path, decodes: Decodes
) -> None:
    h = make_harness(pool, tmp_path)
    config, broken = await broken_library(h, tmp_path / "library")
    await crawl(h, config)
    # A row as migration 0021 left those of before it: nothing of the file known.
    await h.rows(
        "UPDATE asset_errors SET size = NULL, modified_ns = NULL, inode = NULL,"
        " retry_after = NULL RETURNING file_path"
    )

    _, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (1, 2)
    failures, size, *_ = await error_row(h, "broken.jpg")
    assert (failures, size) == (2, broken.stat().st_size)
    _, hashed = await crawl(h, config)
    assert (hashed, decodes.of(broken)) == (0, 2)


def no_moov(seed: int) -> bytes:
    """An MP4 with its file type box and no movie box (other bytes for each ``seed``):
    ffprobe says "[mov,mp4,... @ 0x...] moov atom not found" and names the file it
    read, /dev/fd/N."""
    return (
        b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"
        + b"\x00\x00\x00\x10free"
        + seed.to_bytes(8, "big")
        + b"\x00\x00\x01\x00mdat"
        + b"\x00" * 248
    )


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs ffmpeg and ffprobe")
async def test_files_broken_alike_fail_with_one_reason_free_of_addresses_and_descriptors(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    for seed, name in enumerate(("a.mp4", "b/c.mp4", "d.mov")):
        write(root, name, no_moov(seed))
    config = await h.add_config(root)

    first, _ = await crawl(h, config)
    async with pool.connection() as conn:
        await assets.errors_due_now(conn, config, h.clock.now())
    again, _ = await crawl(h, config)  # another run: other descriptors, other addresses

    reasons = {e.reason for e in first.errors + again.errors}
    assert len(first.errors) == len(again.errors) == 3
    assert len(reasons) == 1, reasons
    [reason] = reasons
    assert "moov atom not found" in reason
    assert not re.search(r"0x[0-9a-fA-F]{4,}|/dev/fd/\d|/proc/\d", reason)
    stored = {r for (r,) in await h.rows("SELECT reason FROM asset_errors")}
    assert stored == reasons
