"""A crawl follows what each file holds, not its name (ADR 0052), on real PostgreSQL: a
JPEG named .nef and a PNG named .jpg become photos with the note of their name in
``assets.read_note`` and in the result's ``misnamed``; a JPEG missing its last bytes is a
photo noted as cut short, one cut in half an error; a photo named .mp4 and a video named
.jpg are errors that say what they hold."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.crawl.result import CrawlCounts
from safelight.library.walk.walker import FileError
from safelight.testing.decoders import decoder_or_threads
from safelight.testing.handlers import crawl_result, jpeg, make_harness, write
from safelight.views.queries import list_assets
from safelight.work.model import Status

pytestmark = pytest.mark.integration


def noisy_jpeg() -> bytes:
    rng = np.random.default_rng(11)
    pixels = rng.integers(0, 255, size=(240, 320, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (10, 120, 200)).save(buffer, "PNG")
    return buffer.getvalue()


MP4_HEAD = b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41" + b"\0" * 200


def library(root: Path) -> Path:
    cut = noisy_jpeg()
    write(root, "2024/DSC_0001.nef", jpeg(1, make="NIKON CORPORATION", model="NIKON D70"))
    write(root, "2024/IMG_0002.jpg", png())
    write(root, "2024/IMG_0003.jpg", jpeg(3))
    write(root, "2024/IMG_0004.jpg", cut[:-100])
    write(root, "2024/IMG_0005.jpg", cut[: len(cut) // 2])
    write(root, "2024/IMG_0006.jpg", MP4_HEAD)
    write(root, "2024/clip.mp4", jpeg(7))
    return root


@pytest.mark.parametrize("processes", [0, 1], ids=["threads", "processes"])
async def test_a_crawl_reads_what_files_hold_and_says_when_their_name_lies(
    pool: AsyncConnectionPool[Any], tmp_path: Path, processes: int
) -> None:
    async with decoder_or_threads(processes) as decoder:
        h = make_harness(pool, tmp_path, decoder=decoder)
        config = await h.add_config(library(tmp_path / "library"))

        item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    rows = await h.rows("SELECT file_path, media_type, read_note FROM assets ORDER BY file_path")
    cut_note = "cut short: its last bytes are missing, decoded as far as it goes"
    assert rows == [
        ("2024/DSC_0001.nef", "image", "holds a JPEG, named .nef"),
        ("2024/IMG_0002.jpg", "image", "holds a PNG, named .jpg"),
        ("2024/IMG_0003.jpg", "image", None),
        ("2024/IMG_0004.jpg", "image", cut_note),
    ]
    result = crawl_result(item)
    assert sorted(result.misnamed, key=lambda e: e.path) == [
        FileError("2024/DSC_0001.nef", "holds a JPEG, named .nef"),
        FileError("2024/IMG_0002.jpg", "holds a PNG, named .jpg"),
    ]
    assert result.cut_short == (FileError("2024/IMG_0004.jpg", cut_note),)
    reasons = {e.path: e.reason for e in result.errors}
    assert reasons.keys() == {"2024/IMG_0005.jpg", "2024/IMG_0006.jpg", "2024/clip.mp4"}
    assert reasons["2024/IMG_0005.jpg"].startswith("cannot decode image: truncated (the file")
    assert reasons["2024/IMG_0006.jpg"] == "holds an MP4 video, named .jpg: not read as a photo"
    assert reasons["2024/clip.mp4"] == "holds a JPEG, named .mp4: not read as a video"
    counts = CrawlCounts.from_json(item.result)
    assert (counts.misnamed, counts.cut_short, counts.errors) == (2, 1, 3)
    stored = await h.rows("SELECT file_path FROM asset_errors ORDER BY file_path")
    assert stored == [("2024/IMG_0005.jpg",), ("2024/IMG_0006.jpg",), ("2024/clip.mp4",)]
    # `safelight assets` shows the note with the asset.
    listed = {r["file_path"]: r for r in await list_assets(pool, config_id=config)}
    assert listed["2024/DSC_0001.nef"]["read_note"] == "holds a JPEG, named .nef"
    assert listed["2024/IMG_0003.jpg"]["read_note"] is None
    # Its metadata is the JPEG's own, read as the JPEG it is.
    nef = listed["2024/DSC_0001.nef"]
    assert (nef["camera_make"], nef["camera_model"]) == ("NIKON CORPORATION", "NIKON D70")


async def test_an_unchanged_file_is_not_noted_again_and_its_note_stays(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "DSC_0001.nef", jpeg(1))
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    again = await h.run("crawl", config_id=config)

    assert crawl_result(again).misnamed == ()  # this crawl read nothing new
    assert await h.value("SELECT read_note FROM assets") == "holds a JPEG, named .nef"
