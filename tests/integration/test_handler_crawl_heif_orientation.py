"""A crawl stores a phone HEIC's displayed shape and makes its thumbnail upright, with or
without the container's transforms (ADR 0055), on real PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.testing.handlers import make_harness
from safelight.testing.oriented import BLUE, WHITE, assert_shows, oriented_photo
from safelight.testing.samplegen import GREEN, RED
from safelight.work.model import Status

pytestmark = pytest.mark.integration

UPRIGHT = (240, 400)
"""Portrait, as the phone was held; the sensor stored it landscape."""


async def test_portrait_heics_are_stored_portrait_with_upright_thumbnails(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    root = tmp_path / "library"
    root.mkdir()
    kinds = {
        "samsung_exif_only.heic": oriented_photo("heif", 6, size=UPRIGHT, container=False),
        "apple_both.heic": oriented_photo("heif", 6, size=UPRIGHT),
        "heif_enc_irot_only.heic": oriented_photo("heif", 6, size=UPRIGHT, exif_reset=True),
    }
    for name, data in kinds.items():
        (root / name).write_bytes(data)
    h = make_harness(pool, tmp_path)
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    rows = await h.rows(
        "SELECT a.file_path, a.width, a.height, a.orientation, p.path FROM assets a"
        " JOIN proxy_files p ON p.asset_id = a.id AND p.proxy_type = 'thumbnail'"
    )
    assert {r[0] for r in rows} == set(kinds)
    for name, width, height, orientation, thumbnail in rows:
        assert (width, height, orientation) == (*UPRIGHT, 6), name
        with Image.open(h.proxy_root / thumbnail) as image:
            assert image.width < image.height, name
            assert_shows(image.convert("RGB"), [RED, GREEN, BLUE, WHITE])
