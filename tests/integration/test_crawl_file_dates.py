"""A crawl dates a photo by the best date the file holds (ADR 0053), never by the file's
time on disk while the file holds one: EXIF's ModifyDate, FLIR's own block, a PNG's
``tIME``, and XMP with junk around its packet; the source is recorded, and the run's
counts tell the photos dated by a less certain source from those dated by the file."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.library.media.xmp import NS_XMP
from safelight.testing.dateplaces import with_segment, xmp_packet
from safelight.testing.decoders import decoder_or_threads
from safelight.testing.filedates import (
    app1_xmp,
    exif_with_modify_date,
    flir_segments,
    png_with,
    time_chunk,
    xmp_itxt_chunk,
)
from safelight.testing.handlers import crawl_result, make_harness, write
from safelight.views.queries import library_counts
from safelight.web.onthisday import on_this_day
from safelight.work.model import Status

pytestmark = pytest.mark.integration

ON_DISK = datetime(2024, 8, 9, 10, 11, 12, tzinfo=UTC)
"""Every file's modification time: what a copy to a NAS leaves."""


def _jpeg(**save: Any) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (24, 16), (30, 140, 90)).save(out, format="JPEG", **save)
    return out.getvalue()


def _zone(hours: int) -> timezone:
    return timezone(timedelta(hours=hours))


@pytest.mark.parametrize("processes", [0, 1], ids=["threads", "processes"])
async def test_the_crawl_takes_the_date_the_file_holds_with_its_source(
    pool: AsyncConnectionPool[Any], tmp_path: Path, processes: int
) -> None:
    edited = datetime(2019, 5, 6, 7, 8, 9, tzinfo=_zone(2))
    shot = datetime(2018, 3, 4, 10, 11, 12, 345000, tzinfo=_zone(-5))
    packet = xmp_packet({(NS_XMP, "CreateDate"): "2016-02-03T04:05:06+01:00"})
    flir = _jpeg()
    for segment in reversed(flir_segments(shot)):
        flir = with_segment(flir, 0xE1, segment)
    files = {
        "edited.jpg": _jpeg(exif=exif_with_modify_date(edited)),
        "thermal.jpg": flir,
        "saved.png": png_with(time_chunk(datetime(2017, 1, 2, 3, 4, 5, tzinfo=UTC))),
        "itxt_junk.png": png_with(
            xmp_itxt_chunk(packet + b"\0\0garbage" + packet[:60]), after_pixels=False
        ),
        "app1_junk.jpg": with_segment(_jpeg(), 0xE1, app1_xmp(b"\0junk" + packet + b"\0\xff")),
        "bare.png": png_with(),
    }
    async with decoder_or_threads(processes) as decoder:
        h = make_harness(pool, tmp_path, decoder=decoder)
        root = tmp_path / "library"
        for name, data in files.items():
            write(root, name, data, mtime=ON_DISK)
        config = await h.add_config(root)

        item = await h.run("crawl", config_id=config)

        assert item.status is Status.SUCCEEDED, item.error
        result = crawl_result(item)
        assert result.errors == () and result.skipped == ()
        rows = await h.rows(
            "SELECT file_path, captured_at, captured_local, captured_at_source FROM assets"
            " WHERE storage_config_id = %s ORDER BY file_path",
            config,
        )
        counts = await library_counts(pool, config)
        day = await on_this_day(pool, date(2026, 5, 6), owner=None)
    found = {r[0]: (r[1], r[2], r[3]) for r in rows}
    assert found == {
        "app1_junk.jpg": (
            datetime(2016, 2, 3, 3, 5, 6, tzinfo=UTC),
            datetime(2016, 2, 3, 4, 5, 6),
            "xmp",
        ),
        "bare.png": (ON_DISK, ON_DISK.replace(tzinfo=None), "file"),
        "edited.jpg": (edited, datetime(2019, 5, 6, 7, 8, 9), "modified"),
        "itxt_junk.png": (
            datetime(2016, 2, 3, 3, 5, 6, tzinfo=UTC),
            datetime(2016, 2, 3, 4, 5, 6),
            "xmp",
        ),
        # tIME is UTC by the PNG spec: its local time is the UTC wall clock.
        "saved.png": (
            datetime(2017, 1, 2, 3, 4, 5, tzinfo=UTC),
            datetime(2017, 1, 2, 3, 4, 5),
            "png",
        ),
        "thermal.jpg": (shot, datetime(2018, 3, 4, 10, 11, 12, 345000), "maker"),
    }
    assert (counts["photos_dated_by_file"], counts["photos_dated_by_last_edit"]) == (1, 2)
    # The dashboard says so on the tile (its title and the preview's caption).
    (tile,) = [a for year in day["years"] for a in year["assets"]]
    assert (tile["file_name"], tile["captured_at_source"]) == ("edited.jpg", "modified")
    assert tile["date_note"] == "date from the file's last edit (less certain)"
