"""RAW files in a crawl, on real PostgreSQL: assets with the RAW's camera, time and
orientation, upright proxies (in threads and in the decode processes), a per-file error
for a broken one, and the RAW of a RAW+JPEG pair stacked on its JPEG by burst detection
(never a burst of its own), unstacked when the JPEG goes."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.library.files.confinement import confined
from safelight.testing.decoders import decoder_or_threads
from safelight.testing.dng import dng_bytes
from safelight.testing.handlers import Harness, crawl_result, jpeg, make_harness, write
from safelight.testing.samplegen import GREEN, RED, marker_picture
from safelight.views.queries import library_counts, list_assets
from safelight.work.model import Status

pytestmark = pytest.mark.integration

TAKEN = datetime(2023, 9, 14, 16, 5, 12)


def library(root: Path) -> Path:
    upright = marker_picture(48, 64, seed=2)
    stored = upright.transpose(Image.Transpose.ROTATE_90)  # shown by orientation 6
    write(
        root,
        "shoot/IMG_0001.JPG",
        jpeg(1, size=(64, 48), make="Canon", model="Canon EOS 6D", taken=TAKEN),
    )
    write(root, "shoot/IMG_0001.DNG", dng_bytes(preview=stored, orientation=6, captured_at=TAKEN))
    later = TAKEN + timedelta(hours=1)
    write(root, "shoot/IMG_0002.DNG", dng_bytes(captured_at=later))  # no preview: demosaiced
    write(root, "shoot/broken.NEF", b"II*\0\x08\0\0\0" + b"\xff" * 300)
    return root


def upright(image: Image.Image) -> bool:
    rgb = image.convert("RGB")

    def near(fx: float, fy: float, colour: tuple[int, int, int]) -> bool:
        value = rgb.getpixel((int(rgb.width * fx), int(rgb.height * fy)))
        assert isinstance(value, tuple)
        return all(abs(a - b) <= 45 for a, b in zip(value, colour, strict=True))

    return near(0.08, 0.06, RED) and near(0.92, 0.06, GREEN)


async def preview_of(h: Harness, path: str) -> Image.Image:
    relative = await h.value(
        "SELECT p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
        " WHERE a.file_path = %s AND p.proxy_type = 'full_preview'",
        path,
    )
    image = Image.open(io.BytesIO(confined(h.proxy_root, relative).read_bytes()))
    image.load()
    return image


@pytest.mark.parametrize("processes", [0, 1], ids=["threads", "processes"])
async def test_raw_files_become_assets_with_upright_proxies(
    pool: AsyncConnectionPool[Any], tmp_path: Path, processes: int
) -> None:
    async with decoder_or_threads(processes) as decoder:
        h = make_harness(pool, tmp_path, decoder=decoder)
        config = await h.add_config(library(tmp_path / "library"))

        item = await h.run("crawl", config_id=config)

        assert item.status is Status.SUCCEEDED, item.error
        result = crawl_result(item)
        assert result.ingested == 3
        [error] = result.errors
        assert error.path == "shoot/broken.NEF"
        rows = await h.rows(
            "SELECT file_path, media_type, camera_make, camera_model, captured_at,"
            " captured_at_source, orientation, width, height FROM assets"
            " WHERE file_name LIKE '%%.DNG' ORDER BY file_path"
        )
        assert rows == [
            ("shoot/IMG_0001.DNG", "image", "Canon", "Canon EOS 6D", TAKEN.replace(tzinfo=UTC),
             "exif", 6, 48, 64),
            ("shoot/IMG_0002.DNG", "image", "Canon", "Canon EOS 6D",
             (TAKEN + timedelta(hours=1)).replace(tzinfo=UTC), "exif", 1, 64, 48),
        ]  # fmt: skip
        kinds = await h.rows(
            "SELECT a.file_path, array_agg(p.proxy_type ORDER BY p.proxy_type) FROM assets a"
            " JOIN proxy_files p ON p.asset_id = a.id GROUP BY a.file_path ORDER BY 1"
        )
        assert [k for _, k in kinds] == [["blurhash", "full_preview", "thumbnail"]] * 3
        preview = await preview_of(h, "shoot/IMG_0001.DNG")
        assert preview.size == (48, 64) and upright(preview)
        assert (await preview_of(h, "shoot/IMG_0002.DNG")).size == (32, 24)  # half of 64 x 48


async def test_a_raw_and_its_jpeg_are_stacked_not_a_burst_and_unstacked_when_it_goes(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = library(tmp_path / "library")
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    item = await h.run("burst_detection", config_id=config)

    assert item.result == {
        "bursts": 0,
        "burst_assets": 0,
        "live_photos": 0,
        "stacks": 1,
        "copies": 0,
        "picture_hashes": 0,
        "similar_groups": 0,
        "similar_assets": 0,
    }
    stacked = await h.rows(
        "SELECT r.file_path, p.file_path FROM assets r JOIN assets p ON p.id = r.stack_primary_id"
    )
    assert stacked == [("shoot/IMG_0001.DNG", "shoot/IMG_0001.JPG")]
    assert (await library_counts(pool, config))["stacks"] == 1
    listed = {r["file_path"]: r for r in await list_assets(pool, config_id=config)}
    assert listed["shoot/IMG_0001.DNG"]["stack_primary_id"] == listed["shoot/IMG_0001.JPG"]["id"]
    assert listed["shoot/IMG_0002.DNG"]["stack_primary_id"] is None

    (root / "shoot/IMG_0001.JPG").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    again = await h.run("burst_detection", config_id=config)

    assert again.result is not None and again.result["stacks"] == 0
    assert await h.value("SELECT count(*) FROM assets WHERE stack_primary_id IS NOT NULL") == 0
    assert (await library_counts(pool, config))["stacks"] == 0
