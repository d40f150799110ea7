"""Issue 27's hostile videos in a crawl: the timestamp-gap video becomes an asset with a
web video of two frames; the huge-frame video is a per-file error whose recorded reason
is the pixel cap; the photo beside them is crawled as usual."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.walk.walker import FileError
from safelight.testing.handlers import crawl_result, jpeg, make_harness, write
from safelight.testing.hostilevideos import hostile_videos
from safelight.work.model import Status

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
        reason="ffmpeg/ffprobe not installed",
    ),
]


async def test_the_hostile_videos_are_bounded_and_their_reasons_recorded(
    pool: AsyncConnectionPool[Any], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    videos = hostile_videos(tmp_path_factory.getbasetemp() / "hostile-videos")
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "2024/photo.jpg", jpeg(1))
    write(root, "2024/gap.mkv", videos.timestamp_gap.read_bytes())
    write(root, "2024/huge.mkv", videos.huge_frame.read_bytes())
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert (result.images, result.videos) == (1, 1)
    reason = "a frame of 16000x16000 (256.0 MP) is larger than the pixel cap of 250 MP"
    assert result.errors == (FileError("2024/huge.mkv", reason),)
    recorded = await h.rows(
        "SELECT file_path, reason FROM asset_errors WHERE storage_config_id = %s", config
    )
    assert recorded == [("2024/huge.mkv", reason)]
    [(path, size)] = await h.rows(
        "SELECT p.path, p.size_bytes FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
        " WHERE a.file_path = '2024/gap.mkv' AND p.proxy_type = 'web_video'"
    )
    assert size == (h.proxy_root / path).stat().st_size < 16 * 1024
