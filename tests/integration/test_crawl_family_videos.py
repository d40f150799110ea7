"""Videos a family films through the real crawl on real PostgreSQL (ADR 0054): every
format and every short clip gets its poster and web video, and a video's own local-time
tag gives its local date, the one On this day shows."""

from __future__ import annotations

import shutil
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageStat
from psycopg_pool import AsyncConnectionPool

from safelight.testing.familyvideos import (
    avchd_clip,
    claim_duration,
    family_format_clip,
    quicktime_clip,
    short_clip,
)
from safelight.testing.handlers import crawl_result, make_harness
from safelight.web.onthisday import on_this_day
from safelight.work.model import Status

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
        reason="ffmpeg/ffprobe not installed",
    ),
]

PARIS_SUMMER = timezone(timedelta(hours=2))


async def test_family_videos_are_crawled_with_posters_and_their_local_dates(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    root.mkdir()
    # Shot at 01:03 on 15 July 2024 in Paris; the UTC creation time says 14 July.
    quicktime_clip(
        root / "IMG_0001.MOV",
        creation_time="2024-07-14T23:03:12Z",
        creationdate="2024-07-15T01:03:12+0200",
    )
    # Only the UTC creation time: its date is the UTC date, as ever.
    quicktime_clip(root / "utc-only.mp4", creation_time="2024-07-14T23:03:12Z")
    # A camcorder's clip, recorded at 23:40 on 15 July 2023 in Paris (21:40 UTC).
    stream = root / "PRIVATE/AVCHD/BDMV/STREAM"
    stream.mkdir(parents=True)
    avchd_clip(
        stream / "00001.MTS",
        recorded=datetime(2023, 7, 15, 23, 40, 0, tzinfo=PARIS_SUMMER),
    )
    for suffix in (".3gp", ".3g2", ".m2v", ".m2ts"):
        family_format_clip(root / f"old{suffix}")
    short_clip(root / "one-frame.mp4", frames=1)
    short_clip(root / "blink.mp4", frames=5)
    short_clip(root / "lying.mp4", frames=1, audio_seconds=5.0)
    claim_duration(short_clip(root / "claims-100s.mp4", frames=5), 100.0)
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.errors == ()
    assert result.videos == 11
    rows = await h.rows(
        "SELECT a.file_path, a.captured_at, a.captured_local, a.captured_at_source,"
        "       a.captured_month, a.captured_day, p.path"
        " FROM assets a LEFT JOIN proxy_files p"
        "   ON p.asset_id = a.id AND p.proxy_type = 'full_preview'"
        " WHERE a.storage_config_id = %s",
        config,
    )
    by_path = {r[0]: r[1:] for r in rows}
    assert len(by_path) == 11
    for path, (*_, preview) in by_path.items():
        assert preview is not None, f"{path} has no poster"
        with Image.open(h.proxy_root / preview) as poster:
            spread = ImageStat.Stat(poster.convert("L")).stddev[0]
        assert spread > 20, f"{path}'s poster is blank"

    local = by_path["IMG_0001.MOV"]
    assert local[0] == datetime(2024, 7, 14, 23, 3, 12, tzinfo=UTC)  # the instant
    assert local[1:5] == (datetime(2024, 7, 15, 1, 3, 12), "video", 7, 15)
    utc = by_path["utc-only.mp4"]
    assert utc[1:5] == (datetime(2024, 7, 14, 23, 3, 12), "video", 7, 14)
    mts = by_path["PRIVATE/AVCHD/BDMV/STREAM/00001.MTS"]
    assert mts[0] == datetime(2023, 7, 15, 21, 40, tzinfo=UTC)
    assert mts[1:5] == (datetime(2023, 7, 15, 23, 40), "video", 7, 15)
    assert by_path["old.m2v"][2] == "file"  # a raw stream holds no date

    # On this day shows each by its local date.
    on_15th = await on_this_day(pool, date(2026, 7, 15), owner=None)
    names = {a["file_name"]: a for y in on_15th["years"] for a in y["assets"]}
    assert set(names) == {"IMG_0001.MOV", "00001.MTS"}
    assert names["IMG_0001.MOV"]["captured_local"] == "2024-07-15T01:03:12"
    assert names["IMG_0001.MOV"]["video"] is not None
    on_14th = await on_this_day(pool, date(2026, 7, 14), owner=None)
    assert [a["file_name"] for y in on_14th["years"] for a in y["assets"]] == ["utc-only.mp4"]
