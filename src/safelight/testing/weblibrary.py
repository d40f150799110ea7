"""A generated library as the web dashboard sees it: asset rows with their proxies
(files under a proxy root, BlurHash values), captured on one day's month and day in
several earlier years and on other days, with every grouping "On this day" knows.

Rows go in through the crawl's own insert (``library.catalogue.assets.insert_asset``); the
groupings a crawl or burst detection would set (bursts, Live Photo pairs, RAW stacks,
soft deletes) are set on them directly. No photo library on disk is made: the page
never reads one. For the web tests and the browser tests; ``make_web_library`` names
each asset it made (:attr:`WebLibrary.ids`) so a test can find it on the page.
"""

from __future__ import annotations

import asyncio
import io
import itertools
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from uuid import UUID

from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.library.catalogue.assets import NewAsset, insert_asset
from safelight.library.catalogue.proxies import ProxyRecord
from safelight.library.proxystore.layout import AttemptTag, proxy_path
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config

# A valid BlurHash (4 x 3 components), as a crawl would store one.
BLURHASH = "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
# Not a playable video: the dashboard serves a proxy's bytes as they are.
FAKE_MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8
_WRITTEN_BY = AttemptTag(1, 1)


def years_before(day: date, years: int) -> date:
    """The same month and day ``years`` earlier; 28 February for a 29th that year lacks."""
    try:
        return day.replace(year=day.year - years)
    except ValueError:
        return day.replace(year=day.year - years, day=28)


def thumbnail_jpeg(seed: int, size: tuple[int, int] = (24, 16)) -> bytes:
    image = Image.new("RGB", size, ((seed * 53) % 256, (seed * 97) % 256, (seed * 31) % 256))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=70)
    return out.getvalue()


@dataclass
class WebLibrary:
    config_id: UUID
    today: date
    proxy_root: Path
    ids: dict[str, int] = field(default_factory=dict)
    """Each generated asset's id by its name (``photo-1y``, ``burst-3y-a``, ...)."""


class _Maker:
    def __init__(
        self, pool: AsyncConnectionPool[Any], proxy_root: Path, config_id: UUID, now: datetime
    ) -> None:
        self.pool = pool
        self.proxy_root = proxy_root
        self.config_id = config_id
        self.now = now
        self.seeds = itertools.count(1)

    async def add(
        self,
        name: str,
        captured: datetime,
        *,
        media_type: str = "image",
        extension: str = "jpg",
        proxies: bool = True,
        video: bool = False,
        motion_photo: bool = False,
        duration_seconds: float | None = None,
    ) -> int:
        seed = next(self.seeds)
        content_hash = f"{seed:016x}"
        local = captured.replace(tzinfo=None)
        records: list[ProxyRecord] = []
        if proxies:
            for proxy_type in ("thumbnail", "full_preview"):
                records.append(self._write(content_hash, proxy_type, "jpg", thumbnail_jpeg(seed)))
            records.append(ProxyRecord("blurhash", None, value=BLURHASH))
            if video or motion_photo or media_type == "video":
                records.append(self._write(content_hash, "web_video", "mp4", FAKE_MP4))
        asset = NewAsset(
            file_path=f"{local.year}/{name}.{extension}",
            file_name=f"{name}.{extension}",
            content_hash=content_hash,
            size_bytes=1000 + seed,
            modified_at=self.now,
            modified_ns=seed,
            media_type=media_type,  # type: ignore[arg-type]  # "image" or "video"
            captured_at=captured if captured.tzinfo else captured.replace(tzinfo=UTC),
            captured_local=local,
            captured_at_source="video" if media_type == "video" else "exif",
            camera_make="Generated",
            camera_model="Camera",
            width=24,
            height=16,
            duration_seconds=duration_seconds,
            motion_photo=motion_photo,
        )
        async with self.pool.connection() as conn:
            return await insert_asset(conn, self.config_id, asset, records, self.now)

    def _write(self, content_hash: str, proxy_type: str, ext: str, body: bytes) -> ProxyRecord:
        target = proxy_path(
            self.proxy_root, self.config_id, content_hash, proxy_type, ext, _WRITTEN_BY
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        relative = target.relative_to(self.proxy_root).as_posix()
        return ProxyRecord(proxy_type, relative, size_bytes=len(body), width=24, height=16)

    async def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(sql.encode(), params)


async def make_web_library(
    pool: AsyncConnectionPool[Any],
    proxy_root: Path,
    today: date,
    *,
    now: datetime | None = None,
    owner: str = "alice",
    root: str = "/photos/alice",
) -> WebLibrary:
    """A config of ``owner`` and its assets around ``today``:

    ==================  =====================================================
    ``photo-1y``         a photo a year before, 10:00 at +02:00
    ``deleted-1y``       a photo of that day, soft-deleted (never shown)
    ``other-day-1y``     a photo of the next day (not shown)
    ``video-2y``         a video two years before, with its web video
    ``live-2y``          a Live Photo's image, paired with ``live-2y-video``
    ``motion-3y``        a motion photo (its video in the file: a web video)
    ``burst-3y-a/b/c``   a burst, ``a`` its primary
    ``jpeg-3y``          the JPEG of a RAW+JPEG pair, ``raw-3y`` stacked on it
    ``tokyo-4y``         00:30 at +09:00 (15:30 UTC the day before): its own day
    ``bare-5y``          a photo without proxies
    ``this-year``        today itself (not an earlier year: not shown)
    ==================  =====================================================
    """
    now = now or datetime.combine(today, datetime.min.time(), UTC) + timedelta(hours=12)
    await asyncio.to_thread(proxy_root.mkdir, parents=True, exist_ok=True)
    config_id = await add_config(pool, FakeClock(now), owner, root)
    made = _Maker(pool, proxy_root, config_id, now)
    library = WebLibrary(config_id, today, proxy_root)
    ids = library.ids

    def at(years: int, hour: int, minute: int = 0, zone: timezone = UTC, days: int = 0) -> datetime:
        day = years_before(today, years) + timedelta(days=days)
        return datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)

    plus2 = timezone(timedelta(hours=2))
    ids["photo-1y"] = await made.add("photo-1y", at(1, 10, zone=plus2))
    ids["deleted-1y"] = await made.add("deleted-1y", at(1, 11))
    ids["other-day-1y"] = await made.add("other-day-1y", at(1, 12, days=1))
    ids["video-2y"] = await made.add(
        "video-2y", at(2, 9), media_type="video", extension="mp4", duration_seconds=12.5
    )
    ids["live-2y-video"] = await made.add(
        "live-2y-video", at(2, 8), media_type="video", extension="mov", duration_seconds=2.9
    )
    ids["live-2y"] = await made.add("live-2y", at(2, 8), extension="heic")
    ids["motion-3y"] = await made.add("motion-3y", at(3, 18), motion_photo=True)
    for n, letter in enumerate("abc"):
        ids[f"burst-3y-{letter}"] = await made.add(f"burst-3y-{letter}", at(3, 12, n))
    ids["jpeg-3y"] = await made.add("jpeg-3y", at(3, 7))
    ids["raw-3y"] = await made.add("raw-3y", at(3, 7), extension="dng")
    ids["tokyo-4y"] = await made.add("tokyo-4y", at(4, 0, 30, zone=timezone(timedelta(hours=9))))
    ids["bare-5y"] = await made.add("bare-5y", at(5, 15), proxies=False)
    ids["this-year"] = await made.add("this-year", at(0, 9))

    await made.execute(
        "UPDATE assets SET is_deleted = true, deleted_at = %s WHERE id = %s",
        (now, ids["deleted-1y"]),
    )
    await made.execute(
        "UPDATE assets SET paired_asset_id = %s, content_identifier = 'live-2y' WHERE id = %s",
        (ids["live-2y-video"], ids["live-2y"]),
    )
    await made.execute(
        "UPDATE assets SET stack_primary_id = %s, stack_kind = 'raw' WHERE id = %s",
        (ids["jpeg-3y"], ids["raw-3y"]),
    )
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO bursts (storage_config_id, burst_key, primary_asset_id, created_at)"
            " VALUES (%s, 'burst-3y', %s, %s) RETURNING id",
            (config_id, ids["burst-3y-a"], now),
        )
        burst = await cur.fetchone()
        assert burst is not None
        await conn.execute(
            "UPDATE assets SET burst_id = %s WHERE id = ANY(%s)",
            (burst[0], [ids[f"burst-3y-{x}"] for x in "abc"]),
        )
    return library
