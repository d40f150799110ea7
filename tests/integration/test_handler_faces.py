"""The faces kind (ADR 0067) through the real store and executor on real PostgreSQL, with
the real models on faces the tests draw: a crawl with faces on queues them, and they are
found in the previews (in a decode process) and grouped into one person; a named person
keeps its name and gains the face of the edited photo after a re-crawl, and a face a
user took out of every person stays out; an item finds a bounded share and queues the
rest behind what is queued; heavy hours wind it down between photos; a paused kind is not
taken; with faces off nothing is queued and an item fails with one line."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import HEAVY_KINDS
from safelight.handlers import faces as faces_kind
from safelight.library.catalogue import faces as stored_faces
from safelight.library.faces import finding
from safelight.library.render.decoding import ImageDecoder
from safelight.testing.faces import drawn_face, jpeg_of
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import KINDS, LEASE, Harness, make_harness, touch_later, write
from safelight.testing.samples import SAMPLES, needs_samples
from safelight.work.executor import Executor
from safelight.work.hours import HeavyHours, HeavyWindow
from safelight.work.model import Status
from safelight.work.outcome import Deferred
from safelight.work.pausing import Pauses
from safelight.work.worker import Worker

pytestmark = pytest.mark.integration

ON: dict[str, Any] = {"faces": True, "preview_width": 1024}
"""Faces on, and previews large enough for a face a quarter of a 640-pixel photo."""


def face_photo(x: int) -> bytes:
    """A 640x480 photo of the drawn face, centred at ``x``: the same person anywhere."""
    return jpeg_of(drawn_face((640, 480), at=(x, 240), scale=0.7))


def no_face() -> bytes:
    return jpeg_of(Image.new("RGB", (640, 480), (120, 160, 90)))


async def crawled(h: Harness, root: Path) -> UUID:
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    await h.run("noop")  # the crawl's follow-ups (burst detection, faces) run first
    return config


async def faces_by_photo(h: Harness) -> dict[str, list[tuple[Any, ...]]]:
    rows = await h.rows(
        "SELECT a.file_path, f.person_id, f.placed_by, f.box_left, f.box_top, f.box_right,"
        " f.box_bottom, length(f.descriptor) FROM faces f JOIN assets a ON a.id = f.asset_id"
        " WHERE NOT a.is_deleted ORDER BY a.file_path, f.id"
    )
    found: dict[str, list[tuple[Any, ...]]] = {}
    for path, *rest in rows:
        found.setdefault(path, []).append(tuple(rest))
    return found


async def test_a_crawl_queues_the_faces_which_find_them_in_a_decode_process_and_group_them(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    root = tmp_path / "library"
    write(root, "a.jpg", face_photo(200))
    write(root, "b.jpg", face_photo(440))
    write(root, "field.jpg", no_face())
    decoder = ImageDecoder(1)
    try:
        h = make_harness(pool, tmp_path, decoder=decoder, **ON)
        config = await crawled(h, root)
    finally:
        decoder.shutdown()

    ran = [i for i in h.ran if i.kind == "faces"]
    assert len(ran) == 1
    done = await h.store.get(ran[0].id)
    assert done is not None and done.status is Status.SUCCEEDED, done and done.error
    assert done.result is not None
    assert {k: done.result[k] for k in ("photos", "faces", "people", "more")} == {
        "photos": 3,
        "faces": 2,
        "people": 1,
        "more": False,
    }
    found = await faces_by_photo(h)
    assert sorted(found) == ["a.jpg", "b.jpg"]
    (person,) = {face[0] for faces in found.values() for face in faces}
    assert person is not None
    for faces in found.values():
        ((_, placed_by, left, top, right, bottom, size),) = faces
        assert placed_by == "cluster" and size == 512
        assert 0 <= left < right <= 1 and 0 <= top < bottom <= 1
    # a.jpg's face is on the left, b.jpg's on the right: boxes of the picture as shown.
    assert found["a.jpg"][0][2] < 0.4 < found["b.jpg"][0][2]
    assert (
        await h.value(
            "SELECT count(*) FROM people WHERE storage_config_id = %s AND name IS NULL", config
        )
        == 1
    )
    assert (
        await h.value(
            "SELECT count(*) FROM assets WHERE faces_content_hash IS DISTINCT FROM content_hash"
        )
        == 0
    )


async def test_a_named_person_is_kept_across_a_recrawl_and_a_users_choice_stays(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    root = tmp_path / "library"
    write(root, "a.jpg", face_photo(200))
    write(root, "b.jpg", face_photo(440))
    write(root, "c.jpg", face_photo(320))
    h = make_harness(pool, tmp_path, **ON)
    config = await crawled(h, root)
    person = await h.value("SELECT id FROM people")
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE people SET name = 'Ada', named_by = 'alice' WHERE id = %s", (person,)
        )
        # The user took c.jpg's face out of every person ("not Ada").
        await conn.execute(
            "UPDATE faces SET person_id = NULL, placed_by = 'person'"
            " WHERE asset_id = (SELECT id FROM assets WHERE file_path = 'c.jpg')"
        )

    # a.jpg is edited (new content: a new asset, the old one deleted); c.jpg too.
    write(root, "a.jpg", face_photo(260))
    touch_later(root / "a.jpg")
    write(root, "d.jpg", face_photo(380))
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    await h.run("noop")

    assert await h.rows("SELECT id, name FROM people") == [(person, "Ada")]
    found = await faces_by_photo(h)
    assert [f[:2] for f in found["a.jpg"]] == [(person, "cluster")]  # the edited photo's face
    assert [f[:2] for f in found["d.jpg"]] == [(person, "cluster")]  # a new photo's
    assert [f[:2] for f in found["b.jpg"]] == [(person, "cluster")]
    assert [f[:2] for f in found["c.jpg"]] == [(None, "person")]  # left where the user put it
    # The old a.jpg's face is still there, with its deleted asset, until it is purged.
    assert (
        await h.value(
            "SELECT count(*) FROM faces f JOIN assets a ON a.id = f.asset_id WHERE a.is_deleted"
        )
        == 1
    )


async def test_an_item_finds_a_bounded_share_then_queues_the_rest_behind_the_queue(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faces_kind, "PHOTOS_PER_ITEM", 2)
    monkeypatch.setattr(faces_kind, "PAGE", 1)
    root = tmp_path / "library"
    for n in range(5):
        write(root, f"p{n}.jpg", face_photo(200 + 40 * n))
    h = make_harness(pool, tmp_path, **ON)
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    # Queued after the crawl's faces item: a crawl the first faces item must not hold up.
    first = await h.store.enqueue(
        "faces", config_id=config, dedup_key=faces_kind.FACES.dedup_key(config)
    )
    await h.run_queued(first)
    done = await h.store.get(first)
    assert done is not None and done.result is not None
    assert (done.result["photos"], done.result["more"]) == (2, True)
    crawl_again = await h.store.enqueue("crawl", config_id=config)
    queued = await h.rows(
        "SELECT id, kind FROM work_items WHERE status = 'queued' ORDER BY requested_at, id"
    )
    assert [kind for _, kind in queued] == ["burst_detection", "faces", "crawl"] or [
        kind for _, kind in queued
    ][-2:] == ["faces", "crawl"]
    await h.run_queued(crawl_again)
    await h.run("noop")
    assert (
        await h.value(
            "SELECT count(*) FROM assets WHERE faces_content_hash IS DISTINCT FROM content_hash"
        )
        == 0
    )
    assert await h.value("SELECT count(*) FROM faces WHERE person_id IS NOT NULL") == 5


async def test_faces_off_queues_nothing_and_an_item_says_how_to_turn_them_on(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    root = tmp_path / "library"
    write(root, "a.jpg", face_photo(200))
    h = make_harness(pool, tmp_path)
    config = await crawled(h, root)
    assert [i for i in h.ran if i.kind == "faces"] == []
    item = await h.run("faces", config_id=config)
    assert item.status is Status.FAILED
    assert item.error == f"HandlerFailed: {faces_kind.OFF}"
    assert await h.value("SELECT count(*) FROM faces") == 0


WINDOW = HeavyWindow(HeavyHours.parse("01:00-07:00", UTC), HEAVY_KINDS)


async def test_heavy_hours_wind_the_faces_down_between_photos(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert faces_kind.FACES.heavy and "faces" in HEAVY_KINDS
    # All four photos in one page: the wind-down is looked at between photos, not pages.
    assert faces_kind.PAGE >= 4
    clock = FakeClock(start=datetime(2026, 1, 1, 6, 59, 55, tzinfo=UTC))
    root = tmp_path / "library"
    for n in range(4):
        write(root, f"p{n}.jpg", face_photo(200 + 60 * n))
    h = make_harness(pool, tmp_path, clock=clock, **ON)
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    # The crawl's burst detection runs (its item is the oldest); its faces item waits.
    await h.run_queued(await h.value("SELECT id FROM work_items WHERE kind = 'burst_detection'"))
    item_id = await h.value("SELECT id FROM work_items WHERE kind = 'faces'")
    assert (await h.store.get(item_id)).status is Status.QUEUED  # type: ignore[union-attr]

    executor = Executor(
        h.store,
        clock,
        h.handlers,
        dataclasses.replace(h.settings.executor(), heavy=WINDOW),
        logging.getLogger("test.faces"),
    )
    worker = Worker(
        h.store,
        executor,
        clock,
        dataclasses.replace(h.settings.worker("w", frozenset(KINDS)), heavy=WINDOW),
    )
    loop = asyncio.get_running_loop()
    holding, hold = asyncio.Event(), threading.Event()
    calls = 0
    real = finding.find_faces

    def find_then_hold(data: bytes) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            loop.call_soon_threadsafe(holding.set)
            hold.wait(timeout=60)
        return real(data)

    monkeypatch.setattr("safelight.handlers.faces.find_faces", find_then_hold)
    run = asyncio.create_task(worker.run_once())
    try:
        await asyncio.wait_for(holding.wait(), timeout=60)
        await clock.advance(5)  # 07:00: the window ends while the second photo is read
    finally:
        hold.set()
    result = await asyncio.wait_for(run, timeout=60)
    assert result is not None and isinstance(result.outcome, Deferred)
    item = await h.store.get(item_id)
    assert item is not None and item.status is Status.QUEUED and item.retries == 0
    # The photo being read was finished and written, and no other started.
    assert calls == 2
    assert await h.value("SELECT count(*) FROM assets WHERE faces_content_hash IS NOT NULL") == 2


async def test_a_paused_faces_kind_is_not_taken(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    root = tmp_path / "library"
    write(root, "a.jpg", face_photo(200))
    h = make_harness(pool, tmp_path, **ON)
    config = await h.add_config(root)
    pauses = Pauses(pool, h.clock)
    await pauses.pause_kind("faces", "alice")
    item_id = await h.store.enqueue("faces", config_id=config)
    assert await h.store.claim("w1", ["faces"], lease_seconds=LEASE) is None
    await pauses.resume_kind("faces")
    claimed = await h.store.claim("w1", ["faces"], lease_seconds=LEASE)
    assert claimed is not None and claimed.id == item_id


@pytest.mark.samples
@needs_samples
async def test_the_samples_portrait_and_its_turned_copy_are_one_person(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    assert SAMPLES is not None
    folder = SAMPLES / "immich-test-assets" / "metadata" / "faces"
    names = ["portrait.jpg", "portrait-orientation-6.jpg"]
    if not all((folder / n).is_file() for n in names):
        pytest.skip("the samples have no portraits (immich-test-assets/metadata/faces)")
    root = tmp_path / "library"
    for name in names:
        write(root, name, (folder / name).read_bytes())
    h = make_harness(pool, tmp_path, **ON)
    await crawled(h, root)
    found = await faces_by_photo(h)
    (upright,), (turned,) = found["portrait.jpg"], found["portrait-orientation-6.jpg"]
    assert upright[0] is not None and upright[0] == turned[0]  # one person
    # Right side up: the turned file's face is where the upright one's is.
    assert upright[2:6] == pytest.approx(turned[2:6], abs=0.02)


async def test_a_face_is_not_placed_in_a_person_a_users_merge_deleted_meanwhile(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    root = tmp_path / "library"
    write(root, "a.jpg", face_photo(200))
    write(root, "b.jpg", face_photo(440))
    h = make_harness(pool, tmp_path, **ON)
    config = await crawled(h, root)
    person = await h.value("SELECT id FROM people")
    first, second = [r[0] for r in await h.rows("SELECT id FROM faces ORDER BY id")]
    async with pool.connection() as conn:
        await conn.execute("UPDATE faces SET person_id = NULL")
        await conn.execute("DELETE FROM people WHERE id = %s", (person,))
        kept = await conn.execute(
            "INSERT INTO people (storage_config_id, created_at) VALUES (%s, now()) RETURNING id",
            (config,),
        )
        row = await kept.fetchone()
        assert row is not None
        other = row[0]
        async with conn.transaction():
            placed = await stored_faces.place(conn, config, {first: person, second: other})
    assert placed == 1
    assert await h.rows("SELECT id, person_id FROM faces ORDER BY id") == [
        (first, None),
        (second, other),
    ]
