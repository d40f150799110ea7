"""A crawl reads a photo's XMP sidecar: its capture time and orientation win over the
embedded ones (ADR 0026 decision 6), in threads and in decode processes alike; the
sidecar is never an asset nor an error, and one that is a link is reported, not read."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.library.decoding import ImageDecoder
from safelight.work.model import Status
from tests.integration.handlerfixtures import make_harness, write
from tests.unit.test_sidecars import photo, sidecar_xml

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
async def test_the_sidecar_dates_and_turns_the_photo(
    pool: AsyncConnectionPool[Any], tmp_path: Path, processes: bool
) -> None:
    decoder = ImageDecoder(1) if processes else None
    try:
        h = make_harness(pool, tmp_path, decoder=decoder)
        root = tmp_path / "library"
        write(root, "IMG_1.JPG", photo("2020:01:02 03:04:05", 1))
        write(
            root, "IMG_1.xmp", sidecar_xml(orientation="6", CreateDate="2021-05-06T07:08:09-04:00")
        )
        write(root, "plain.jpg", photo("2020:01:02 03:04:06", 1))
        write(root, "orphan.xmp", sidecar_xml(orientation="8"))
        config = await h.add_config(root)

        item = await h.run("crawl", config_id=config)

        assert item.status is Status.SUCCEEDED, item.error
        assert item.result is not None
        assert item.result["errors"] == [] and item.result["skipped"] == []
        rows = await h.rows(
            "SELECT file_path, captured_at, captured_local, captured_at_source, orientation,"
            " width, height FROM assets WHERE storage_config_id = %s ORDER BY file_path",
            config,
        )
        minus_four = timezone(-timedelta(hours=4))
        assert [r[0] for r in rows] == ["IMG_1.JPG", "plain.jpg"]  # no sidecar is an asset
        edited, plain = rows
        assert edited[1] == datetime(2021, 5, 6, 7, 8, 9, tzinfo=minus_four)
        assert edited[2:] == (datetime(2021, 5, 6, 7, 8, 9), "sidecar", 6, 40, 60)
        assert plain[2:] == (datetime(2020, 1, 2, 3, 4, 6), "exif", 1, 60, 40)
        (preview,) = await h.rows(
            "SELECT p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
            " WHERE a.file_path = 'IMG_1.JPG' AND p.proxy_type = 'full_preview'"
            " AND a.storage_config_id = %s",
            config,
        )
        with Image.open(h.proxy_root / preview[0]) as image:
            assert image.width < image.height  # turned as the stored orientation says
    finally:
        if decoder is not None:
            await asyncio.to_thread(decoder.shutdown)


async def test_a_sidecar_that_is_a_link_is_reported_and_the_photo_keeps_its_own(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "IMG_1.JPG", photo("2020:01:02 03:04:05", 1))
    outside = write(tmp_path / "outside", "IMG_1.xmp", sidecar_xml(orientation="6"))
    (root / "IMG_1.xmp").symlink_to(outside)
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    assert [(e["path"], e["reason"]) for e in item.result["skipped"]] == [
        ("IMG_1.xmp", "symbolic link: not followed")
    ]
    assert item.result["errors"] == []
    assert await h.rows(
        "SELECT file_path, captured_at_source, orientation FROM assets"
        " WHERE storage_config_id = %s",
        config,
    ) == [("IMG_1.JPG", "exif", 1)]
