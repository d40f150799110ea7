"""A machine without ffmpeg (the set-up could not install it): each video gets a recorded
reason naming the missing tool, and the photos beside it are crawled as usual."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.walk.walker import FileError
from safelight.testing.handlers import crawl_result, jpeg, make_harness, write
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def test_a_video_is_reported_with_the_missing_tool_and_the_photos_are_crawled(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PATH with no ffmpeg or ffprobe on it, as on a machine where setup only warned.
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "2024/photo.jpg", jpeg(1))
    # Not a real clip: the crawl never gets as far as reading it.
    write(root, "2024/clip.mp4", b"\x00\x00\x00\x18ftypmp42 not a whole video")
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert (result.ingested, result.images, result.videos) == (1, 1, 0)
    missing = "ffprobe is not installed"
    assert result.errors == (FileError("2024/clip.mp4", missing),)
    recorded = await h.rows(
        "SELECT file_path, reason FROM asset_errors WHERE storage_config_id = %s", config
    )
    assert recorded == [("2024/clip.mp4", missing)]
