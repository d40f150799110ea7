"""The crawl handler on real PostgreSQL, through the real store and executor."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.crawl.result import COUNTERS
from safelight.library.files.originals import StorageRoot
from safelight.library.render.decoding import ImageDecoder
from safelight.testing.handlers import (
    LEASE,
    copy_library,
    crawl_result,
    jpeg,
    make_harness,
    touch_later,
    write,
)
from safelight.testing.samplegen import Manifest
from safelight.work.model import Status
from safelight.work.outcome import Retrying, Succeeded

pytestmark = pytest.mark.integration

RESULT_KEYS = {
    "total",
    "found",
    "unchanged",
    "ingested",
    "moved",
    "reread",
    "duplicates",
    "deleted",
    "proxies",
    "errors",
    "skipped",
    "images",
    "videos",
    "proxies_renamed",
    "proxy_errors",
    "motion_photo_issues",
    "misnamed",
    "cut_short",
    "not_retried",
    "other_files",
}


@pytest.fixture
def sample(generated_library: Manifest) -> Manifest:
    """The session's generated library; the tests crawl copies of it."""
    return generated_library


async def live_paths(h: Any, config_id: Any) -> dict[str, int]:
    rows = await h.rows(
        "SELECT file_path, id FROM assets WHERE storage_config_id = %s AND NOT is_deleted",
        config_id,
    )
    return {path: asset_id for path, asset_id in rows}


async def test_a_generated_library_is_crawled_as_its_manifest_says(
    pool: AsyncConnectionPool[Any], tmp_path: Path, sample: Manifest
) -> None:
    root = copy_library(sample.root, tmp_path / "library")
    h = make_harness(pool, tmp_path)
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None and set(item.result) == RESULT_KEYS  # as stored
    result = crawl_result(item)
    media = len(sample.photos) + len(sample.videos)
    assert result.total == result.found == media + len(sample.errors)
    assert result.ingested == media
    assert (result.images, result.videos) == (len(sample.photos), len(sample.videos))
    assert result.unchanged == result.moved == result.deleted == 0
    assert result.duplicates == ()
    # Every expected bad file is reported with its path and a reason, and nothing else.
    errors = {e.path: e.reason for e in result.errors}
    assert set(errors) == {e.path for e in sample.errors}
    assert "empty" in errors["broken/empty.jpg"]
    assert "decode" in errors["broken/truncated.jpg"] or "corrupt" in errors["broken/truncated.jpg"]
    recorded = await h.rows(
        "SELECT file_path, reason, failures FROM asset_errors WHERE storage_config_id = %s",
        config,
    )
    assert {(p, r) for p, r, _ in recorded} == set(errors.items())

    # Rows: one asset per manifest file, nothing ignored indexed.
    paths = await live_paths(h, config)
    assert set(paths) == {p.path for p in sample.photos} | {v.path for v in sample.videos}
    assert not set(paths) & set(sample.ignored)
    photo = sample.photos[0]
    [(width, height, source)] = await h.rows(
        "SELECT width, height, captured_at_source FROM assets WHERE id = %s", paths[photo.path]
    )
    assert (width, height, source) == (photo.width, photo.height, photo.captured_at_source)

    # Proxies: every image has a thumbnail, a preview and a BlurHash; files on disk with
    # the recorded sizes, within the configured widths.
    proxies = await h.rows(
        "SELECT a.file_path, a.media_type, p.proxy_type, p.path, p.size_bytes, p.width, p.value"
        " FROM proxy_files p JOIN assets a ON a.id = p.asset_id WHERE a.storage_config_id = %s",
        config,
    )
    by_asset: dict[str, set[str]] = {}
    for file_path, _media_type, proxy_type, path, size, width_px, value in proxies:
        by_asset.setdefault(file_path, set()).add(proxy_type)
        if proxy_type == "blurhash":
            assert value
            continue
        on_disk = h.proxy_root / path
        assert on_disk.is_file(), path
        assert on_disk.stat().st_size == size
        assert path.startswith(f"{config}/")
        limit = (
            h.settings.thumbnail_width if proxy_type == "thumbnail" else h.settings.preview_width
        )
        if proxy_type != "web_video":
            with Image.open(on_disk) as image:
                assert image.width == width_px <= limit
    for p in sample.photos:
        assert {"thumbnail", "full_preview", "blurhash"} <= by_asset[p.path]
    for v in sample.videos:
        assert {"thumbnail", "web_video"} <= by_asset[v.path]
    assert result.proxies == len(proxies)

    # Progress used exactly the agreed counter names, and ended at the totals.
    reports = h.progress[item.id]
    assert all(set(r) == set(COUNTERS) for r in reports)
    assert reports[-1]["found"] == reports[-1]["total"] == result.total

    # The follow-up burst detection was queued (and, run by the harness's queue, done).
    follow = await h.rows(
        "SELECT kind, dedup_key FROM work_items WHERE kind = 'burst_detection'"
        " AND storage_config_id = %s",
        config,
    )
    assert follow == [("burst_detection", f"burst_detection:{config}")]


async def test_a_second_crawl_of_an_unchanged_library_rehashes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path, sample: Manifest
) -> None:
    root = copy_library(sample.root, tmp_path / "library")
    h = make_harness(pool, tmp_path)
    config = await h.add_config(root)
    first = await h.run("crawl", config_id=config)
    before = await h.rows("SELECT id, file_path FROM assets ORDER BY id")

    second = await h.run("crawl", config_id=config)

    assert second.status is Status.SUCCEEDED, second.error
    second_result = crawl_result(second)
    media = len(sample.photos) + len(sample.videos)
    assert second_result.unchanged == media
    assert second_result.ingested == second_result.moved == second_result.deleted == 0
    assert second_result.proxies == 0
    # No file is hashed again: the files that failed are unchanged since (ADR 0057),
    # left unread and listed with the reason they failed with.
    assert h.progress[second.id][-1]["hashed"] == 0
    assert await h.rows("SELECT id, file_path FROM assets ORDER BY id") == before
    assert {e.path for e in second_result.not_retried} == {e.path for e in sample.errors}
    assert second_result.counts.not_retried == len(sample.errors)
    failures = await h.rows("SELECT failures FROM asset_errors")
    assert sorted(f for (f,) in failures) == [1] * len(sample.errors)
    first_result = crawl_result(first)
    assert first_result.images == second_result.images


async def small_library(h: Any, root: Path, count: int = 3) -> Any:
    for i in range(count):
        write(root, f"2024/img_{i}.jpg", jpeg(i + 1))
    config = await h.add_config(root)
    item = await h.run("crawl", config_id=config)
    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.ingested == count
    return config


async def test_a_moved_file_keeps_its_asset_and_proxies(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    before = await live_paths(h, config)
    proxies_before = await h.rows("SELECT id, asset_id, path FROM proxy_files ORDER BY id")
    (root / "moved" / "deeper").mkdir(parents=True)
    os.rename(root / "2024/img_0.jpg", root / "moved/deeper/renamed.jpg")

    item = await h.run("crawl", config_id=config)

    result = crawl_result(item)
    assert (result.moved, result.ingested, result.deleted) == (1, 0, 0)
    after = await live_paths(h, config)
    assert after["moved/deeper/renamed.jpg"] == before["2024/img_0.jpg"]
    assert "2024/img_0.jpg" not in after
    name = await h.value(
        "SELECT file_name FROM assets WHERE id = %s", after["moved/deeper/renamed.jpg"]
    )
    assert name == "renamed.jpg"
    assert await h.rows("SELECT id, asset_id, path FROM proxy_files ORDER BY id") == proxies_before


async def test_a_deleted_file_soft_deletes_its_asset(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    gone = (await live_paths(h, config))["2024/img_1.jpg"]
    (root / "2024/img_1.jpg").unlink()
    await h.clock.advance(5)

    item = await h.run("crawl", config_id=config)

    result = crawl_result(item)
    assert result.deleted == 1
    assert result.images == 2
    deleted, deleted_at = (
        await h.rows("SELECT is_deleted, deleted_at FROM assets WHERE id = %s", gone)
    )[0]
    assert deleted and deleted_at == h.clock.now()
    # Its proxies stay until a purge: the crawl never deletes files.
    assert await h.value("SELECT count(*) FROM proxy_files WHERE asset_id = %s", gone) == 3


async def test_a_changed_file_is_a_new_asset_and_the_old_one_is_soft_deleted(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    old = (await live_paths(h, config))["2024/img_2.jpg"]
    path = write(root, "2024/img_2.jpg", jpeg(99))
    touch_later(path)

    item = await h.run("crawl", config_id=config)

    result = crawl_result(item)
    assert (result.ingested, result.deleted, result.unchanged) == (1, 1, 2)
    new = (await live_paths(h, config))["2024/img_2.jpg"]
    assert new != old
    assert await h.value("SELECT is_deleted FROM assets WHERE id = %s", old) is True


async def test_a_touched_file_is_rehashed_but_unchanged(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    touch_later(root / "2024/img_0.jpg")

    item = await h.run("crawl", config_id=config)

    result = crawl_result(item)
    assert (result.unchanged, result.ingested, result.deleted) == (3, 0, 0)
    assert h.progress[item.id][-1]["hashed"] == 1
    mtime_ns = (root / "2024/img_0.jpg").stat().st_mtime_ns
    assert (
        await h.value("SELECT modified_ns FROM assets WHERE file_path = '2024/img_0.jpg'")
        == mtime_ns
    )


async def test_a_duplicate_copy_is_not_a_second_asset(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "a/photo.jpg", jpeg(7))
    write(root, "b/copy of photo.jpg", jpeg(7))
    write(root, "c/other.jpg", jpeg(8))
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.ingested == 2
    [dup] = result.duplicates
    assert {dup.path, dup.same_as} == {"a/photo.jpg", "b/copy of photo.jpg"}
    live = await live_paths(h, config)
    assert len(live) == 2
    # Recorded after the run: the copy, with the asset whose bytes it holds.
    assert await recorded_duplicates(h, config) == {dup.path: live[dup.same_as]}

    # Deleting the copy that is the asset: the asset follows to the other copy, which
    # is no longer a duplicate.
    kept = dup.same_as
    (root / kept).unlink()
    again = await h.run("crawl", config_id=config)
    again_result = crawl_result(again)
    assert (again_result.moved, again_result.deleted) == (1, 0)
    assert dup.path in await live_paths(h, config)
    assert again_result.duplicates == ()
    assert await recorded_duplicates(h, config) == {}


async def recorded_duplicates(h: Any, config_id: Any) -> dict[str, int]:
    rows = await h.rows(
        "SELECT file_path, asset_id FROM asset_duplicates WHERE storage_config_id = %s",
        config_id,
    )
    return {path: asset_id for path, asset_id in rows}


async def test_a_recorded_duplicate_goes_with_its_file_or_its_asset(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path, follow_links_inside_root=True)
    root = tmp_path / "library"
    write(root, "a.jpg", jpeg(7))
    write(root, "b.jpg", jpeg(8))
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    live = await live_paths(h, config)
    write(root, "copies/a.jpg", jpeg(7))
    write(root, "copies/b.jpg", jpeg(8))
    os.symlink(root / "b.jpg", root / "link-to-b.jpg")

    item = await h.run("crawl", config_id=config)
    result = crawl_result(item)
    assert result.ingested == 0
    assert await recorded_duplicates(h, config) == {
        "copies/a.jpg": live["a.jpg"],
        "copies/b.jpg": live["b.jpg"],
        "link-to-b.jpg": live["b.jpg"],
    }

    # The copy of a goes: its row goes. b's content changes: b's asset is soft-deleted
    # and the rows that named it go in the same transaction (its copy is then either
    # ingested as new content or named again with the asset that now holds it).
    (root / "copies/a.jpg").unlink()
    write(root, "b.jpg", jpeg(9))
    touch_later(root / "b.jpg")
    third = await h.run("crawl", config_id=config)
    assert third.status is Status.SUCCEEDED, third.error
    now_live = await live_paths(h, config)
    recorded = await recorded_duplicates(h, config)
    assert "copies/a.jpg" not in recorded
    assert live["b.jpg"] not in recorded.values()
    assert all(asset_id in now_live.values() for asset_id in recorded.values())
    # The copy of b's old bytes is now the asset of those bytes, not a duplicate.
    assert "copies/b.jpg" in now_live and "copies/b.jpg" not in recorded
    # Back again, it is named again.
    write(root, "copies/a.jpg", jpeg(7))
    await h.run("crawl", config_id=config)
    assert (await recorded_duplicates(h, config))["copies/a.jpg"] == live["a.jpg"]


async def test_a_missing_root_fails_and_soft_deletes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    os.rename(root, tmp_path / "elsewhere")

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.FAILED
    assert item.error is not None and "missing" in item.error and "mounted" in item.error
    assert await h.value("SELECT count(*) FROM assets WHERE is_deleted") == 0


async def test_an_empty_root_of_a_library_with_assets_fails_and_soft_deletes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    # An unmounted share: the mount point is there, empty.
    os.rename(root, tmp_path / "share-contents")
    root.mkdir()

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.FAILED
    # The root as configured, and the live assets the library holds (the three photos).
    assert item.error == (
        f"HandlerFailed: the storage root {root} holds no photos or videos, but the library"
        " has 3 of them: is the share mounted? Nothing was marked deleted"
    )
    assert await h.value("SELECT count(*) FROM assets WHERE is_deleted") == 0


def root_listing_fails(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """Listing the storage root itself fails with ``code``; every other folder lists as
    before. The tests run as root, whom a mode of 000 does not stop: the walk's open of
    the root's folder is the seam (``Walker._list`` turns its error into
    ``RootUnavailable``, caused by it)."""
    real = StorageRoot.open_folder

    def open_folder(self: StorageRoot, relative: str) -> int:
        if not relative:
            raise OSError(code, os.strerror(code))
        return real(self, relative)

    monkeypatch.setattr(StorageRoot, "open_folder", open_folder)


async def test_a_root_that_cannot_be_listed_for_a_while_is_retried_and_soft_deletes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No jitter: the retry's wait is the policy's first delay exactly.
    h = make_harness(pool, tmp_path, retry_jitter=0.0)
    root = tmp_path / "library"
    config = await small_library(h, root)
    before = await live_paths(h, config)
    # An I/O error may pass (a NAS mount whose server restarts): the crawl is retried.
    root_listing_fails(monkeypatch, errno.EIO)
    item_id = await h.store.enqueue("crawl", config_id=config)
    # The crawl only: the first one's burst detection, queued before it, may wait.
    item = await h.store.claim("w1", ["crawl"], lease_seconds=LEASE)
    assert item is not None and item.id == item_id

    ran = await h.executor.run(item)

    error = (
        f"HandlerUnavailable: the storage root {root.resolve()} cannot be listed:"
        " I/O error while reading the file; nothing was changed"
    )
    assert ran.outcome == Retrying(error, h.settings.retry_delay_seconds) and ran.applied
    waiting = await h.store.get(item_id)
    assert waiting is not None
    assert (waiting.status, waiting.retries, waiting.error) == (Status.QUEUED, 1, error)
    assert await live_paths(h, config) == before
    assert await h.value("SELECT count(*) FROM assets WHERE is_deleted") == 0

    # Once the share is back and the wait has passed, the retry crawls it as it was.
    monkeypatch.undo()
    await h.clock.advance(h.settings.retry_delay_seconds)
    again = await h.store.claim("w1", ["crawl"], lease_seconds=LEASE)
    assert again is not None and (again.id, again.attempt) == (item_id, 2)
    assert isinstance((await h.executor.run(again)).outcome, Succeeded)
    done = await h.store.get(item_id)
    assert done is not None
    assert done.status is Status.SUCCEEDED, done.error
    done_result = crawl_result(done)
    assert (done_result.unchanged, done_result.deleted) == (3, 0)
    assert await live_paths(h, config) == before


async def test_a_root_that_cannot_be_listed_for_good_fails_at_once_and_soft_deletes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    before = await live_paths(h, config)
    # A refused permission would be refused again: no retry.
    root_listing_fails(monkeypatch, errno.EACCES)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.FAILED
    assert item.error == (
        f"HandlerFailed: the storage root {root.resolve()} cannot be listed:"
        " permission denied; nothing was changed"
    )
    assert (item.retries, item.attempt) == (0, 1)
    assert await live_paths(h, config) == before
    assert await h.value("SELECT count(*) FROM assets WHERE is_deleted") == 0


async def test_symlinks_are_not_followed_out_of_the_root(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    outside = tmp_path / "outside"
    write(outside, "secret.jpg", jpeg(50))
    write(outside, "folder/also-secret.jpg", jpeg(51))
    write(root, "mine.jpg", jpeg(52))
    (root / "link.jpg").symlink_to(outside / "secret.jpg")
    (root / "linked-folder").symlink_to(outside / "folder")
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.errors == ()
    assert set(await live_paths(h, config)) == {"mine.jpg"}


async def test_bad_files_are_reported_and_the_crawl_goes_on(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "good.jpg", jpeg(1))
    write(root, "zero.jpg", b"")
    write(root, "not-really.jpg", b"this is text, not a JPEG")
    write(root, "cut.jpg", jpeg(2, size=(200, 200))[:400])
    write(root, os.fsdecode(b"caf\xe9.jpg"), jpeg(3))  # Latin-1, not UTF-8
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.ingested == 1
    reasons = {e.path: e.reason for e in result.errors}
    assert set(reasons) == {"zero.jpg", "not-really.jpg", "cut.jpg", "caf\\xe9.jpg"}
    assert "UTF-8" in reasons["caf\\xe9.jpg"]
    assert all(reasons.values())
    rows = await h.rows("SELECT file_path, failures FROM asset_errors ORDER BY file_path")
    assert {p for p, _ in rows} == set(reasons)

    # Fixed files are ingested by the next crawl and their errors forgotten.
    path = write(root, "cut.jpg", jpeg(2, size=(200, 200)))
    touch_later(path)
    (root / "zero.jpg").unlink()
    again = await h.run("crawl", config_id=config)
    again_result = crawl_result(again)
    assert again_result.ingested == 1
    rows = await h.rows("SELECT file_path, failures FROM asset_errors ORDER BY file_path")
    # The name is the walk's error, met again; the text file, unchanged, is not read again.
    assert rows == [("caf\\xe9.jpg", 2), ("not-really.jpg", 1)]


async def test_a_file_overwritten_with_broken_content_loses_its_asset_and_is_reported(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await small_library(h, root)
    old = (await live_paths(h, config))["2024/img_1.jpg"]
    touch_later(write(root, "2024/img_1.jpg", b"\xff\xd8\xff garbage, not a photo"))

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.deleted == 1 and result.ingested == 0
    assert [e.path for e in result.errors] == ["2024/img_1.jpg"]
    assert await h.value("SELECT is_deleted FROM assets WHERE id = %s", old) is True


async def test_a_crawl_with_decode_processes_records_what_one_in_threads_does(
    pool: AsyncConnectionPool[Any], tmp_path: Path, sample: Manifest
) -> None:
    decoder = ImageDecoder(2)
    crawled: dict[str, tuple[Any, ...]] = {}
    try:
        for name, used in (("threads", None), ("processes", decoder)):
            root = copy_library(sample.root, tmp_path / name / "library")
            h = make_harness(pool, tmp_path / name, decoder=used)
            config = await h.add_config(root)

            item = await h.run("crawl", config_id=config)

            assert item.status is Status.SUCCEEDED, item.error
            assets = await h.rows(
                "SELECT file_path, content_hash, media_type, captured_at, captured_local,"
                " captured_at_source, camera_make, camera_model, width, height, orientation,"
                " maker_burst_id, content_identifier, sequence_number, is_deleted"
                " FROM assets WHERE storage_config_id = %s ORDER BY file_path",
                config,
            )
            # Video proxies come from ffmpeg either way; the photos' are what moved.
            proxies = await h.rows(
                "SELECT a.file_path, p.proxy_type, p.path, p.value, p.size_bytes, p.width,"
                " p.height FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
                " WHERE a.storage_config_id = %s AND a.media_type = 'image'"
                " ORDER BY a.file_path, p.proxy_type",
                config,
            )
            files = [
                (path, kind, value, size, width, height, _digest(h.proxy_root / p) if p else None)
                for path, kind, p, value, size, width, height in proxies
            ]
            errors = await h.rows(
                "SELECT file_path, reason FROM asset_errors WHERE storage_config_id = %s"
                " ORDER BY file_path",
                config,
            )
            result = crawl_result(item)
            # The order of a result's errors is the order the files ended in.
            paths = sorted(e.path for e in result.errors)
            crawled[name] = ((dataclasses.replace(result, errors=()), paths), assets, files, errors)
        assert decoder.pids()  # the photos did go through the decode processes
    finally:
        await asyncio.to_thread(decoder.shutdown)

    threads, processes = crawled["threads"], crawled["processes"]
    assert processes[0] == threads[0]
    assert processes[1] == threads[1]
    assert processes[2] == threads[2] and len(threads[2]) >= 3 * len(sample.photos)
    assert processes[3] == threads[3] and threads[3]  # the same bad files, the same reasons


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
