"""Where, offline (ADR 0065), through the real crawl and the place fill on real
PostgreSQL: a crawl fills the place and zone of each asset with a position and applies
the zone rule to its capture times (a phone video's UTC-only creation time gets its
local day); the place fill does the same for rows catalogued before places were looked
up, once, and writes nothing once its attempt lost the item; On this day names each
year's places."""

from __future__ import annotations

import io
import shutil
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import place_fill
from safelight.handlers.place_fill import PLACE_FILL
from safelight.library.catalogue import places as catalogue_places
from safelight.library.catalogue.places import PlaceRow, Unchecked
from safelight.testing.dateplaces import exif_with_gps
from safelight.testing.exif import exif_bytes
from safelight.testing.fakeclock import FakeClock
from safelight.testing.familyvideos import quicktime_clip
from safelight.testing.handlers import LEASE, START, Harness, make_harness, write
from safelight.web.onthisday import on_this_day
from safelight.work.model import Status
from safelight.work.outcome import Succeeded

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
        reason="ffmpeg/ffprobe not installed",
    ),
]

LISBON = (38.72, -9.14)
KEHL = (48.5722, 7.8150)
NEW_YORK = "+40.7128-074.0060/"

COLUMNS = (
    "file_path, place_city, place_country, place_country_code, time_zone, zone_source,"
    " captured_at, captured_local, captured_month, captured_day,"
    " places_checked_at IS NOT NULL"
)

EXPECTED = {
    # A wall clock without an offset (most EXIF), read in Lisbon's summer time (+01:00).
    "lisbon.jpg": (
        "Lisbon", "Portugal", "PT", "Europe/Lisbon", "position",
        datetime(2023, 7, 14, 22, 30, tzinfo=UTC), datetime(2023, 7, 14, 23, 30), 7, 14, True,
    ),
    # The file's own offset (+02:00) is kept; the place and the zone are filled all the same.
    "kehl.jpg": (
        "Kehl", "Germany", "DE", "Europe/Berlin", "file",
        datetime(2022, 7, 14, 10, 0, tzinfo=UTC), datetime(2022, 7, 14, 12, 0), 7, 14, True,
    ),
    # A phone's video: only the UTC creation time, 02:30 on 15 July, which is 22:30 on
    # 14 July in New York: its local day is the 14th.
    "phone.mp4": (
        "New York City", "United States", "US", "America/New_York", "position",
        datetime(2024, 7, 15, 2, 30, tzinfo=UTC), datetime(2024, 7, 14, 22, 30), 7, 14, True,
    ),
    # No position: no place, no zone, the wall clock read as UTC (ADR 0064), not looked up.
    "nowhere.jpg": (
        None, None, None, None, None,
        datetime(2021, 7, 14, 9, 0, tzinfo=UTC), datetime(2021, 7, 14, 9, 0), 7, 14, False,
    ),
}  # fmt: skip


def _jpeg(exif: bytes) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (24, 16), (30, 140, 90)).save(out, format="JPEG", exif=exif)
    return out.getvalue()


def _library(root: Path) -> None:
    in_lisbon = datetime(2023, 7, 14, 23, 30)  # no offset
    write(root, "lisbon.jpg", _jpeg(exif_with_gps(*LISBON, captured_at=in_lisbon)))
    in_kehl = datetime(2022, 7, 14, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    write(root, "kehl.jpg", _jpeg(exif_with_gps(*KEHL, captured_at=in_kehl)))
    write(root, "nowhere.jpg", _jpeg(exif_bytes(captured_at=datetime(2021, 7, 14, 9, 0))))
    quicktime_clip(root / "phone.mp4", creation_time="2024-07-15T02:30:00Z", location=NEW_YORK)


async def _rows(h: Harness, config: UUID) -> dict[str, tuple[Any, ...]]:
    rows = await h.rows(
        f"SELECT {COLUMNS} FROM assets WHERE storage_config_id = %s ORDER BY file_path",
        config,
    )
    return {r[0]: tuple(r[1:]) for r in rows}


async def _crawled(h: Harness, root: Path) -> UUID:
    _library(root)
    config = await h.add_config(root)
    item = await h.run("crawl", config_id=config)
    assert item.status is Status.SUCCEEDED, item.error
    return config


async def _as_before_places(h: Harness, config: UUID) -> None:
    """The rows as a crawl of before migration 0023 left them: no place, no zone, and a
    time without an offset stored as its wall clock read as UTC (a photo's wall clock,
    a video's UTC instant)."""
    async with h.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET place_city = NULL, place_region = NULL, place_country = NULL,"
            " place_country_code = NULL, time_zone = NULL, places_checked_at = NULL,"
            " captured_at = CASE WHEN zone_source = 'position' AND media_type = 'image'"
            "   THEN captured_local AT TIME ZONE 'UTC' ELSE captured_at END,"
            " captured_local = CASE WHEN zone_source = 'position' AND media_type = 'video'"
            "   THEN captured_at AT TIME ZONE 'UTC' ELSE captured_local END,"
            " zone_source = NULL WHERE storage_config_id = %s",
            (config,),
        )
        await conn.execute(
            "UPDATE assets SET captured_year = extract(year FROM captured_local),"
            " captured_month = extract(month FROM captured_local),"
            " captured_day = extract(day FROM captured_local) WHERE storage_config_id = %s",
            (config,),
        )


async def _queued(h: Harness, kind: str, config: UUID) -> list[int]:
    rows = await h.rows(
        "SELECT id FROM work_items WHERE kind = %s AND storage_config_id = %s"
        " AND status = 'queued' ORDER BY id",
        kind,
        config,
    )
    return [r[0] for r in rows]


async def test_a_crawl_fills_the_place_and_zone_of_what_it_reads(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await _crawled(h, tmp_path / "library")

    assert await _rows(h, config) == EXPECTED
    # Nothing was left unchecked, so no place fill was queued.
    assert await _queued(h, PLACE_FILL.name, config) == []
    # On this day (14 July, the phone video's local day) names each year's places.
    day = await on_this_day(pool, date(2026, 7, 14), owner=None)
    shown = {y["year"]: y["places_shown"] for y in day["years"]}
    assert shown == {
        2024: "New York City, United States",
        2023: "Lisbon, Portugal",
        2022: "Kehl, Germany",
        2021: None,
    }
    tiles = {a["file_name"]: a for y in day["years"] for a in y["assets"]}
    assert tiles["lisbon.jpg"]["place"] == {
        "city": "Lisbon", "region": "Lisbon", "country": "Portugal", "country_code": "PT",
    }  # fmt: skip
    assert tiles["lisbon.jpg"]["place_shown"] == "Lisbon, Portugal"
    assert tiles["lisbon.jpg"]["time_zone"] == "Europe/Lisbon"
    assert tiles["nowhere.jpg"]["place"] is None and tiles["nowhere.jpg"]["place_shown"] is None


async def test_the_place_fill_fills_rows_of_before_places_once(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await _crawled(h, root)
    await _as_before_places(h, config)
    before = await _rows(h, config)
    assert before["lisbon.jpg"][:6] == (
        None,
        None,
        None,
        None,
        None,
        datetime(2023, 7, 14, 23, 30, tzinfo=UTC),
    )
    assert before["phone.mp4"][7:9] == (7, 15)  # the UTC day, as before the rule

    # A crawl that finds such rows queues the fill; the files are unchanged, so it reads
    # none of them again.
    again = await h.run("crawl", config_id=config)
    assert again.status is Status.SUCCEEDED, again.error
    (queued,) = await _queued(h, PLACE_FILL.name, config)
    filled = await h.run_queued(queued)

    assert filled.status is Status.SUCCEEDED, filled.error
    assert filled.result == {"checked": 3, "placed": 3, "retimed": 2}
    # As a crawl of today would have read them: the photo's wall clock is read in
    # Lisbon's zone, the video's UTC instant gets New York's local day, the offset Kehl's
    # file gave is kept, and the photo without a position is left as it was.
    assert await _rows(h, config) == EXPECTED
    # Idempotent: nothing is left to fill, and a second run changes nothing.
    second = await h.run("place_fill", config_id=config)
    assert second.status is Status.SUCCEEDED, second.error
    assert second.result == {"checked": 0, "placed": 0, "retimed": 0}
    assert await _rows(h, config) == EXPECTED
    third = await h.run("crawl", config_id=config)
    assert third.status is Status.SUCCEEDED
    assert await _queued(h, PLACE_FILL.name, config) == []


async def test_a_place_fill_that_lost_its_item_writes_nothing_after(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(pool, tmp_path)
    config = await _crawled(h, tmp_path / "library")
    await _as_before_places(h, config)
    later = make_harness(pool, tmp_path, clock=FakeClock(start=START + timedelta(hours=1)))
    real_look_up = place_fill.look_up
    batches: list[list[str]] = []
    ids = {r[0]: r[1] for r in await h.rows("SELECT id, file_path FROM assets")}

    def look_up(batch: list[Unchecked]) -> list[PlaceRow]:
        batches.append([ids[a.id] for a in batch])
        return real_look_up(batch)

    monkeypatch.setattr(place_fill, "BATCH", 1)
    monkeypatch.setattr(place_fill, "look_up", look_up)
    item_id = await later.store.enqueue(PLACE_FILL.name, config_id=config)
    claimed = await later.store.claim("w1", [PLACE_FILL.name], lease_seconds=LEASE)
    assert claimed is not None and claimed.id == item_id
    real_unchecked = catalogue_places.unchecked
    reads = 0

    async def unchecked_then_lose(*args: Any, **kwargs: Any) -> list[Unchecked]:
        nonlocal reads
        reads += 1
        if reads == 2:
            # The Worker froze past its lease after its first batch; another took the
            # item back. Outside the fenced write, which holds the item's row.
            assert await later.store.release(claimed.id, claimed.attempt)
            later.clock.jump(LEASE)
        return await real_unchecked(*args, **kwargs)

    monkeypatch.setattr(catalogue_places, "unchecked", unchecked_then_lose)

    ran = await later.executor.run(claimed)

    assert not isinstance(ran.outcome, Succeeded)
    # In id order, one a batch; the second batch was looked up but not written.
    first, second, third = sorted(i for i, path in ids.items() if path != "nowhere.jpg")
    assert batches == [[ids[first]], [ids[second]]]
    rows = await _rows(h, config)
    assert rows[ids[first]] == EXPECTED[ids[first]]
    for unwritten in (ids[second], ids[third]):
        assert rows[unwritten][0] is None and rows[unwritten][-1] is False
    stored = await later.store.get(item_id)
    assert stored is not None and stored.status is Status.QUEUED  # for another attempt

    # The next attempt goes on where this one stopped.
    monkeypatch.undo()
    retried = await later.run_queued(item_id)
    assert retried.status is Status.SUCCEEDED, retried.error
    assert retried.result is not None and retried.result["checked"] == 2
    assert await _rows(h, config) == EXPECTED
