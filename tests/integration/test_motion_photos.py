"""Android motion photos through the real crawl on real PostgreSQL: the embedded video
becomes the still's web_video proxy and the asset is marked; a still whose claimed
video is not there stays a plain still with its reason."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.media.motionphotos import MOTION_VIDEO_NAME
from safelight.library.proxystore.layout import STAGING_FOLDER
from safelight.testing.handlers import crawl_result, make_harness, write
from safelight.testing.motionphotos import (
    google_motion_jpeg,
    heic_with_mpvd,
    micro_video_jpeg,
    samsung_motion_jpeg,
    still_jpeg,
    tiny_mp4,
)
from safelight.testing.samples import needs_samples, samples_dir
from safelight.work.model import Status

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
        reason="ffmpeg/ffprobe not installed",
    ),
]


def probe(path: Path) -> str:
    return subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
         "stream=codec_name,width,height", "-of", "csv=p=0", str(path)],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


async def test_motion_photos_get_their_video_as_web_video_and_stills_do_not(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    video = tiny_mp4(tmp_path / "tiny.mp4", size="96x64")
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "google.jpg", google_motion_jpeg(video))
    write(root, "micro.jpg", micro_video_jpeg(video))
    write(root, "samsung.jpg", samsung_motion_jpeg(video))
    write(root, "samsung.heic", heic_with_mpvd(video))
    write(root, "plain.jpg", still_jpeg((1, 2, 3)))
    # Claims a video, but the offset points into the still.
    write(root, "wrong-offset.jpg", google_motion_jpeg(video, length=len(video) + 40))
    # A Samsung trailer whose block is not an MP4.
    write(root, "not-mp4.jpg", samsung_motion_jpeg(b"\x00\x00\x00\x10notanmp4" + bytes(64)))
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.errors == ()
    rows = await h.rows(
        "SELECT a.file_path, a.media_type, a.motion_photo, a.motion_photo_issue, p.path"
        " FROM assets a LEFT JOIN proxy_files p"
        "   ON p.asset_id = a.id AND p.proxy_type = 'web_video'"
        " WHERE a.storage_config_id = %s",
        config,
    )
    by_path = {r[0]: r[1:] for r in rows}
    assert set(by_path) == {
        "google.jpg", "micro.jpg", "samsung.jpg", "samsung.heic", "plain.jpg",
        "wrong-offset.jpg", "not-mp4.jpg",
    }  # fmt: skip
    motion = {"google.jpg", "micro.jpg", "samsung.jpg", "samsung.heic"}
    for path, (media_type, marked, issue, web_video) in by_path.items():
        assert media_type == "image", path
        assert marked is (path in motion), path
        assert (web_video is not None) is (path in motion), path
        if path in motion:
            assert issue is None
            # The web video is an H.264 MP4 of the embedded video, under the proxy root.
            assert probe(h.proxy_root / web_video) == "h264,96,64", path
    assert by_path["plain.jpg"][2] is None
    assert "no MP4 where the XMP" in by_path["wrong-offset.jpg"][2]
    assert "no MP4 where the Samsung trailer" in by_path["not-mp4.jpg"][2]
    # The issues are in the result; each still still has its image proxies.
    issues = {e.path: e.reason for e in result.motion_photo_issues}
    assert set(issues) == {"wrong-offset.jpg", "not-mp4.jpg"}
    counts = await h.rows(
        "SELECT a.file_path, count(p.*) FROM assets a JOIN proxy_files p ON p.asset_id = a.id"
        " WHERE a.storage_config_id = %s GROUP BY a.file_path",
        config,
    )
    assert {path: n for path, n in counts} == {p: 4 if p in motion else 3 for p in by_path}
    # Nothing left in the staging area, and nothing written beside the originals.
    staging = h.proxy_root / STAGING_FOLDER
    assert not list(staging.rglob(MOTION_VIDEO_NAME)) if staging.exists() else True
    assert sorted(p.name for p in root.iterdir()) == sorted(by_path)


async def test_a_motion_video_ffmpeg_cannot_read_leaves_a_still_with_the_reason(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    # An ftyp box and then garbage: found, but not a playable video.
    broken = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(2000)
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "broken.jpg", google_motion_jpeg(broken))
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.ingested == 1
    [(marked, issue)] = await h.rows(
        "SELECT motion_photo, motion_photo_issue FROM assets WHERE storage_config_id = %s",
        config,
    )
    assert marked is False
    assert issue.startswith("its motion video could not be made into a web video: ")
    assert [e.path for e in result.motion_photo_issues] == ["broken.jpg"]


@pytest.mark.samples
@needs_samples
async def test_the_sample_motion_photos_are_crawled_as_motion_photos(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    folder = samples_dir()
    assert folder is not None
    motion = sorted(p for p in folder.rglob("*") if p.is_file() and "motionphoto" in str(p))
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    for path in motion:
        write(root, path.name, path.read_bytes())
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert result.errors == ()
    rows = await h.rows(
        "SELECT a.file_path, a.motion_photo, p.path FROM assets a LEFT JOIN proxy_files p"
        "   ON p.asset_id = a.id AND p.proxy_type = 'web_video'"
        " WHERE a.storage_config_id = %s",
        config,
    )
    assert sorted(r[0] for r in rows) == sorted(p.name for p in motion)
    for path, marked, web_video in rows:
        assert marked is True and web_video is not None, path
        assert probe(h.proxy_root / web_video).startswith("h264,"), path
