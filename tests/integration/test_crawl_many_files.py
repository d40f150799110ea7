"""A crawl of a library of many files finds exactly what changed, moved and went, while
it streams the walk and the known assets in path order, batch by batch and page by page
(``library.walk.matching.KnownInPathOrder``): the batches and pages here are small and of sizes
that never line up, and the names sort differently by bytes and by other rules."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.crawl import attempt
from safelight.library.catalogue import assets
from safelight.library.walk import matching
from safelight.library.walk import walker as walk_module
from safelight.testing.handlers import Harness, crawl_result, make_harness
from safelight.testing.tinylibrary import (
    ASSET_COLUMNS,
    asset_rows,
    generate_tree,
    relative_path,
    write_photo,
)
from safelight.work.model import Status

pytestmark = pytest.mark.integration

COUNT = 2000
PER_FOLDER = 45
ODD_NAMES = ["a.jpg", "a/b.jpg", "a0.jpg", "a-b/c.jpg", "A.jpg", "é.jpg", "z/é/ü.jpg", "ß.jpg"]
"""Byte order puts ``a.jpg`` before ``a/b.jpg`` before ``a0.jpg``, ``A`` before ``a``,
``é`` after ``z``: the walk and the database must agree on it."""


async def seed(pool: AsyncConnectionPool[Any], config: Any, root: Path) -> dict[str, int]:
    """The assets a first crawl would have recorded (the tree's real hashes and stats),
    written straight in: 2,000 decodes would only make the test slow."""
    photos = [(relative_path(n, PER_FOLDER), n) for n in range(COUNT)]
    for offset, name in enumerate(ODD_NAMES):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        write_photo(root / name, COUNT + offset)
        photos.append((name, COUNT + offset))
    async with pool.connection() as conn:
        async with conn.cursor().copy(f"COPY assets ({ASSET_COLUMNS}) FROM STDIN") as copy:
            for row in asset_rows(config, root, photos):
                await copy.write_row(row)
        cur = await conn.execute(
            "SELECT file_path, id FROM assets WHERE storage_config_id = %s", (config,)
        )
        return dict(await cur.fetchall())


async def seeded_library(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> tuple[Harness, Any, Path, dict[str, int]]:
    """The tree of ``COUNT`` photos and the odd names, its config, and its assets (path to
    id) as a first crawl would have recorded them."""
    root = tmp_path / "library"
    generate_tree(root, COUNT, PER_FOLDER)
    h = make_harness(pool, tmp_path)
    config = await h.add_config(root)
    return h, config, root, await seed(pool, config, root)


async def test_a_crawl_of_many_files_finds_exactly_what_changed_moved_and_went(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk_module, "WALK_FOLDERS_PER_STEP", 3)
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 37)
    monkeypatch.setattr(matching, "KNOWN_PAGE", 53)
    h, config, root, ids = await seeded_library(pool, tmp_path)

    unchanged = await h.run("crawl", config_id=config)
    assert unchanged.status is Status.SUCCEEDED, unchanged.error
    unchanged_result = crawl_result(unchanged)
    total = COUNT + len(ODD_NAMES)
    assert (unchanged_result.unchanged, unchanged_result.total) == (total, total)
    assert h.progress[unchanged.id][-1]["hashed"] == 0

    # One percent: new content at 7 paths, 7 files moved (to folders before and after
    # theirs in path order), 6 deleted; and one odd name of each.
    changed = [relative_path(n, PER_FOLDER) for n in range(0, COUNT, 300)] + ["a/b.jpg"]
    for n in range(0, COUNT, 300):
        write_photo(root / relative_path(n, PER_FOLDER), n, generation=1)
    write_photo(root / "a/b.jpg", COUNT + ODD_NAMES.index("a/b.jpg"), generation=1)
    moves = {relative_path(n, PER_FOLDER): f"moved/{n}.jpg" for n in range(1, COUNT, 300)}
    moves[relative_path(COUNT - 1, PER_FOLDER)] = "0-first/last.jpg"
    moves["é.jpg"] = "a/é.jpg"
    for source, target in moves.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        os.rename(root / source, root / target)
    deleted = [relative_path(n, PER_FOLDER) for n in range(2, COUNT, 400)] + ["a0.jpg"]
    for path in deleted:
        (root / path).unlink()

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.errors == () and result.duplicates == ()
    assert result.ingested == len(changed)
    assert result.moved == len(moves)
    assert result.deleted == len(deleted) + len(changed)
    assert result.unchanged == total - len(changed) - len(moves) - len(deleted)
    assert result.total == result.found == total - len(deleted)
    assert h.progress[item.id][-1]["hashed"] == len(changed) + len(moves)
    rows = await h.rows(
        "SELECT file_path, id FROM assets WHERE storage_config_id = %s AND NOT is_deleted",
        config,
    )
    live = dict(rows)
    # Exactly: the moved keep their asset at the new path, the changed are new assets,
    # the deleted and the old contents are gone, everything else is as it was.
    for source, target in moves.items():
        assert live[target] == ids[source]
    for path in changed:
        assert live[path] not in ids.values()
    untouched = set(ids) - set(changed) - set(moves) - set(deleted)
    assert {p: live[p] for p in untouched} == {p: ids[p] for p in untouched}
    assert set(live) == untouched | set(changed) | set(moves.values())
    gone = await h.rows("SELECT id FROM assets WHERE storage_config_id = %s AND is_deleted", config)
    assert {i for (i,) in gone} == {ids[p] for p in deleted + changed}


def _changes(root: Path) -> tuple[list[str], dict[str, str], list[str]]:
    """New content at every 50th path, every 50th (+1) moved, every 50th (+2) deleted."""
    changed = [relative_path(n, PER_FOLDER) for n in range(0, COUNT, 50)]
    for n in range(0, COUNT, 50):
        write_photo(root / relative_path(n, PER_FOLDER), n, generation=1)
    moves = {relative_path(n, PER_FOLDER): f"moved/{n}.jpg" for n in range(1, COUNT, 50)}
    for source, target in moves.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        os.rename(root / source, root / target)
    deleted = [relative_path(n, PER_FOLDER) for n in range(2, COUNT, 50)]
    for path in deleted:
        (root / path).unlink()
    return changed, moves, deleted


@pytest.mark.parametrize(
    ("page", "files_per_step"),
    [(1, 5000), (2, 1), (45, 45), (46, 44), (999, 7), (COUNT + len(ODD_NAMES), 5000),
     (COUNT + len(ODD_NAMES) + 1, 1000)],
)  # fmt: skip
async def test_pages_and_batches_that_end_anywhere_match_exactly(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    page: int,
    files_per_step: int,
) -> None:
    """Pages of one asset, of a folder's files (45) and one more or less, of every asset
    and of one more than every asset; batches of one file to more than a page: wherever
    a page or a batch ends (inside a run of unchanged files, at a changed one, a moved
    or a deleted one), the crawl finds exactly what changed."""
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", files_per_step)
    monkeypatch.setattr(matching, "KNOWN_PAGE", page)
    h, config, root, ids = await seeded_library(pool, tmp_path)
    total = COUNT + len(ODD_NAMES)
    changed, moves, deleted = _changes(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.errors == () and result.duplicates == ()
    assert (result.ingested, result.moved) == (len(changed), len(moves))
    assert result.deleted == len(deleted) + len(changed)
    assert result.unchanged == total - len(changed) - len(moves) - len(deleted)
    assert h.progress[item.id][-1]["hashed"] == len(changed) + len(moves)
    live = dict(
        await h.rows(
            "SELECT file_path, id FROM assets WHERE storage_config_id = %s AND NOT is_deleted",
            config,
        )
    )
    untouched = set(ids) - set(changed) - set(moves) - set(deleted)
    assert {p: live[p] for p in untouched} == {p: ids[p] for p in untouched}
    assert {live[t] for t in moves.values()} == {ids[s] for s in moves}
    assert set(live) == untouched | set(changed) | set(moves.values())


class _RecordingQueue(asyncio.Queue[Any]):
    """An ``asyncio.Queue`` that records how full it got and whether a put waited; the
    ones made during the test are in ``made`` (asyncio.Queue is replaced for all)."""

    made: list[_RecordingQueue] = []

    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)
        self.peak = 0
        self.waited = 0
        _RecordingQueue.made.append(self)

    async def put(self, item: Any) -> None:
        if self.full():
            self.waited += 1
        await super().put(item)
        self.peak = max(self.peak, self.qsize())


async def test_a_crawl_with_more_files_to_hash_than_its_queue_holds_completes(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue of files to hash is bounded: the walk waits for the workers (it holds
    no transaction open while it waits), and every file is dealt with all the same."""
    monkeypatch.setattr(attempt, "PENDING_FILES", 2)
    monkeypatch.setattr(matching, "KNOWN_PAGE", 30)
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 100)
    monkeypatch.setattr(asyncio, "Queue", _RecordingQueue)  # as the crawl makes its queue
    _RecordingQueue.made.clear()
    h, config, root, _ = await seeded_library(pool, tmp_path)
    changed, moves, deleted = _changes(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert (result.ingested, result.moved) == (len(changed), len(moves))
    assert result.deleted == len(deleted) + len(changed)
    assert result.errors == ()
    (pending,) = [q for q in _RecordingQueue.made if q.maxsize == 2]  # the crawl's
    assert pending.peak <= 2 and pending.waited > 0


async def test_an_unchanged_library_is_compared_by_digests_reading_only_the_last_range(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing changed: every batch but the last is its range's digest, no row sent; the
    last range is read to the end (what lies past the walk's last file is not walked)."""
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 37)
    read: list[tuple[str, str | None]] = []
    digests: list[tuple[str, str]] = []
    live_after_path, live_digest_in_range = assets.live_after_path, assets.live_digest_in_range

    async def reading(conn: Any, config: Any, after: str, upto: str | None, limit: int) -> Any:
        read.append((after, upto))
        return await live_after_path(conn, config, after, upto, limit)

    async def digesting(conn: Any, config: Any, after: str, upto: str) -> tuple[int, bytes]:
        digests.append((after, upto))
        return await live_digest_in_range(conn, config, after, upto)

    monkeypatch.setattr(assets, "live_after_path", reading)
    monkeypatch.setattr(assets, "live_digest_in_range", digesting)
    h, config, _, _ = await seeded_library(pool, tmp_path)
    total = COUNT + len(ODD_NAMES)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert (result.unchanged, result.deleted) == (total, 0)
    assert len(digests) > total // 37 - 2  # a digest per batch but the last
    assert [after for after, _ in digests[1:]] == [upto for _, upto in digests[:-1]]
    assert read == [(digests[-1][1], None)]  # only the last range, after the last digest


async def test_a_range_that_changed_is_read_up_to_its_batch_and_no_further(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One changed file in the first batch: only that batch's range is read as rows (up
    to its last path), the batches after it go by their digests again, and only the last
    range is read to the end: never the library's rows for one file."""
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 37)
    read: list[tuple[str, str | None, int]] = []
    live_after_path = assets.live_after_path

    async def reading(conn: Any, config: Any, after: str, upto: str | None, limit: int) -> Any:
        rows = await live_after_path(conn, config, after, upto, limit)
        read.append((after, upto, len(rows)))
        return rows

    monkeypatch.setattr(assets, "live_after_path", reading)
    h, config, root, _ = await seeded_library(pool, tmp_path)
    first = sorted(str(p.relative_to(root)) for p in root.rglob("*.jpg"))[0]
    write_photo(root / first, 0, generation=1)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.ingested == 1
    (changed, *middle), last = read[:-1], read[-1]
    assert changed[0] == "" and changed[1] is not None and changed[2] <= 37
    assert middle == []  # every batch after the changed one: its digest
    assert last[1] is None and last[0] > changed[1]


async def test_every_batch_with_an_unchanged_file_reports_progress(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of one file: each unchanged one is counted in a progress report of its
    own, not only every 50 files or every 0.1 s (the clock here stands still)."""
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 1)
    h, config, _, _ = await seeded_library(pool, tmp_path)
    total = COUNT + len(ODD_NAMES)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    reported = {report["unchanged"] for report in h.progress[item.id]}
    assert set(range(1, total + 1)) <= reported


async def test_the_walks_errors_of_many_batches_are_each_reported_once(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names that are not UTF-8 in folders far apart, found by batches far apart: each is
    in the result once, and the count says as many."""
    monkeypatch.setattr(walk_module, "WALK_FILES_PER_STEP", 37)
    h, config, root, _ = await seeded_library(pool, tmp_path)
    folders = sorted({p.parent for p in root.rglob("*.jpg")})
    bad = [folders[0], folders[len(folders) // 2], folders[-1]]
    for folder in bad:
        fd = os.open(os.fsencode(folder) + b"/bad\xff.jpg", os.O_WRONLY | os.O_CREAT)
        os.close(fd)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    not_utf8 = [e for e in result.errors if "not valid UTF-8" in e.reason]
    assert len(not_utf8) == len(bad) == len(result.errors)
    assert h.progress[item.id][-1]["errors"] == len(bad)
