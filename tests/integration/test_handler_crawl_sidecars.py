"""A crawl reads a photo's XMP sidecar: its capture time and orientation win over the
embedded ones (ADR 0026 decision 6), in threads and in decode processes alike; the
sidecar is never an asset, and one that is a link is reported, not read.
A sidecar added, changed or removed later has its photo read again, in place."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.crawl import ingesting
from safelight.handlers.crawl.result import CrawlResult
from safelight.library.media import sidecars
from safelight.testing.decoders import decoder_or_threads
from safelight.testing.exif import exif_bytes
from safelight.testing.handlers import crawl_result, make_harness, touch_later, write
from safelight.testing.oriented import assert_shows, quadrant_colours, quadrants, turned
from safelight.testing.samplegen import INVERSE_TRANSPOSE
from safelight.testing.sidecars import photo, sidecar_xml
from safelight.work.model import Status

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("processes", [0, 1], ids=["threads", "processes"])
async def test_the_sidecar_dates_and_turns_the_photo(
    pool: AsyncConnectionPool[Any], tmp_path: Path, processes: int
) -> None:
    async with decoder_or_threads(processes) as decoder:
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
        result = crawl_result(item)
        assert result.errors == () and result.skipped == ()
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
    result = crawl_result(item)
    assert [(e.path, e.reason) for e in result.skipped] == [
        ("IMG_1.xmp", "symbolic link: not followed")
    ]
    assert result.errors == ()
    assert await h.rows(
        "SELECT file_path, captured_at_source, orientation FROM assets"
        " WHERE storage_config_id = %s",
        config,
    ) == [("IMG_1.JPG", "exif", 1)]


# --- a sidecar added, changed, removed later: the photo read again in place -------------

STORED_FOR = 6
"""The photo's pixels are stored for orientation 6 while its EXIF says 1: as stored it
shows sideways, as a sidecar that says 6 turns it, upright."""
TAKEN = datetime(2020, 1, 2, 3, 4, 5)


def sideways_photo() -> bytes:
    stored = quadrants(400, 240).transpose(INVERSE_TRANSPOSE[STORED_FOR])
    out = io.BytesIO()
    stored.save(out, "JPEG", quality=92, exif=exif_bytes(orientation=1, captured_at=TAKEN))
    return out.getvalue()


def shown(orientation: int) -> list[tuple[int, int, int]]:
    """The quadrant colours of the photo's stored pixels turned by ``orientation``."""
    stored = quadrants(400, 240).transpose(INVERSE_TRANSPOSE[STORED_FOR])
    return quadrant_colours(turned(stored, orientation))  # type: ignore[return-value]


class Photo:
    """One crawl's view of the photo's asset: its row and its proxies."""

    def __init__(self, h: Any, config: Any) -> None:
        self.h, self.config = h, config

    async def row(self) -> tuple[Any, ...]:
        (row,) = await self.h.rows(
            "SELECT id, file_path, captured_at, captured_at_source, orientation, width, height,"
            " sidecar_path FROM assets WHERE storage_config_id = %s AND NOT is_deleted",
            self.config,
        )
        return tuple(row)

    async def proxies(self) -> dict[str, str]:
        rows = await self.h.rows(
            "SELECT p.proxy_type, coalesce(p.path, p.value) FROM proxy_files p"
            " JOIN assets a ON a.id = p.asset_id WHERE a.storage_config_id = %s",
            self.config,
        )
        return dict(rows)

    async def assert_shows(self, orientation: int) -> None:
        proxies = await self.proxies()
        for kind in ("full_preview", "thumbnail"):
            with Image.open(self.h.proxy_root / proxies[kind]) as image:
                assert_shows(image.convert("RGB"), shown(orientation))


async def crawl(h: Any, config: Any) -> CrawlResult:
    item = await h.run("crawl", config_id=config)
    assert item.status is Status.SUCCEEDED, item.error
    return crawl_result(item)


@pytest.mark.parametrize("processes", [0, 1], ids=["threads", "processes"])
async def test_a_sidecar_added_changed_and_removed_later_rereads_the_photo_in_place(
    pool: AsyncConnectionPool[Any], tmp_path: Path, processes: int
) -> None:
    async with decoder_or_threads(processes) as decoder:
        h = make_harness(pool, tmp_path, decoder=decoder)
        root = tmp_path / "library"
        write(root, "IMG_1.JPG", sideways_photo())
        config = await h.add_config(root)
        photo = Photo(h, config)

        first = await crawl(h, config)
        asset_id, *_ = before = await photo.row()
        assert first.ingested == 1 and first.reread == 0
        assert before[1:] == ("IMG_1.JPG", TAKEN.replace(tzinfo=UTC), "exif", 1, 240, 400, None)
        await photo.assert_shows(1)
        old_proxies = await photo.proxies()

        # Added: the sidecar's date and orientation win; new proxies, upright.
        sidecar = write(
            root, "IMG_1.JPG.xmp", sidecar_xml(orientation="6", CreateDate="2021-05-06T07:08:09Z")
        )
        added = await crawl(h, config)
        assert (added.reread, added.ingested, added.unchanged, added.proxies) == (
            1, 0, 0, 3,
        )  # fmt: skip
        assert added.errors == () and added.skipped == ()
        assert await photo.row() == (
            asset_id, "IMG_1.JPG", datetime(2021, 5, 6, 7, 8, 9, tzinfo=UTC), "sidecar", 6,
            400, 240, "IMG_1.JPG.xmp",
        )  # fmt: skip
        await photo.assert_shows(6)
        remade = await photo.proxies()
        for kind in ("full_preview", "thumbnail"):
            assert remade[kind] != old_proxies[kind]
            assert not (h.proxy_root / old_proxies[kind]).exists()  # the old files go
        assert remade["blurhash"] != old_proxies["blurhash"]

        # Unchanged: nothing read.
        again = await crawl(h, config)
        assert (again.reread, again.unchanged, again.proxies) == (0, 1, 0)

        # Edited: another date only; the proxies stay as they are.
        sidecar.write_bytes(sidecar_xml(orientation="6", CreateDate="2022-02-03T04:05:06Z"))
        touch_later(sidecar)
        dated = await crawl(h, config)
        assert (dated.reread, dated.proxies) == (1, 0)
        assert (await photo.row())[2:5] == (datetime(2022, 2, 3, 4, 5, 6, tzinfo=UTC), "sidecar", 6)
        assert await photo.proxies() == remade

        # Edited: another date and orientation; proxies remade again.
        sidecar.write_bytes(sidecar_xml(orientation="3", CreateDate="2023-03-04T05:06:07Z"))
        touch_later(sidecar, 120)
        turned = await crawl(h, config)
        assert (turned.reread, turned.proxies) == (1, 3)
        assert (await photo.row())[2:7] == (
            datetime(2023, 3, 4, 5, 6, 7, tzinfo=UTC), "sidecar", 3, 240, 400,
        )  # fmt: skip
        await photo.assert_shows(3)

        # Removed: the photo's own metadata again.
        sidecar.unlink()
        removed = await crawl(h, config)
        assert (removed.reread, removed.proxies) == (1, 3)
        assert await photo.row() == (
            asset_id, "IMG_1.JPG", TAKEN.replace(tzinfo=UTC), "exif", 1, 240, 400, None,
        )  # fmt: skip
        await photo.assert_shows(1)
        assert (
            await h.value("SELECT count(*) FROM assets WHERE storage_config_id = %s", config) == 1
        )  # in place: no other asset, live or deleted


async def test_a_moved_or_touched_photo_is_read_with_the_sidecar_it_has_now(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "a/IMG_1.JPG", sideways_photo())
    write(root, "a/IMG_1.xmp", sidecar_xml(orientation="6"))
    config = await h.add_config(root)
    photo = Photo(h, config)
    await crawl(h, config)
    asset_id, *_ = await photo.row()

    # Moved with its sidecar: the same asset, read with the sidecar at its new place.
    (root / "b").mkdir()
    (root / "a/IMG_1.JPG").rename(root / "b/IMG_1.JPG")
    (root / "a/IMG_1.xmp").rename(root / "b/IMG_1.xmp")
    moved = await crawl(h, config)
    assert (moved.moved, moved.reread, moved.proxies) == (1, 1, 0)
    assert (await photo.row())[:2] == (asset_id, "b/IMG_1.JPG")
    assert (await photo.row())[4:] == (6, 400, 240, "b/IMG_1.xmp")

    # Touched (same bytes, new mtime) while its sidecar went: read without it.
    (root / "b/IMG_1.xmp").unlink()
    touch_later(root / "b/IMG_1.JPG")
    touched = await crawl(h, config)
    assert (touched.unchanged, touched.reread, touched.proxies) == (1, 1, 3)
    assert (await photo.row())[4:] == (1, 240, 400, None)
    await photo.assert_shows(1)


async def test_a_sidecar_swapped_for_a_link_is_refused_and_the_photo_falls_back(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """A sidecar that becomes a symbolic link (to a file outside the root) is reported
    and never read: the photo is read again with its own metadata."""
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "IMG_1.JPG", sideways_photo())
    sidecar = write(root, "IMG_1.JPG.xmp", sidecar_xml(orientation="6"))
    outside = write(tmp_path / "outside", "IMG_1.JPG.xmp", sidecar_xml(orientation="3"))
    config = await h.add_config(root)
    photo = Photo(h, config)
    await crawl(h, config)
    assert (await photo.row())[4:] == (6, 400, 240, "IMG_1.JPG.xmp")

    sidecar.unlink()
    sidecar.symlink_to(outside)
    linked = await crawl(h, config)

    assert [(e.path, e.reason) for e in linked.skipped] == [
        ("IMG_1.JPG.xmp", "symbolic link: not followed")
    ]
    assert linked.reread == 1 and linked.errors == ()
    assert (await photo.row())[3:] == ("exif", 1, 240, 400, None)
    await photo.assert_shows(1)


async def test_a_sidecar_swapped_for_a_link_after_the_walk_is_reported_not_read(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk listed a regular sidecar; by the time it is read it is a link to a file
    outside the root: refused (never followed), reported as an error, and the photo is
    ingested with its own metadata and no sidecar, so the next crawl looks again."""
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "IMG_1.JPG", sideways_photo())
    sidecar = write(root, "IMG_1.JPG.xmp", sidecar_xml(orientation="6"))
    outside = write(tmp_path / "outside", "IMG_1.JPG.xmp", sidecar_xml(orientation="3"))
    real = sidecars.read_sidecar

    def swapped_then_read(storage: Any, listed: Any) -> Any:
        sidecar.unlink()
        sidecar.symlink_to(outside)
        return real(storage, listed)

    monkeypatch.setattr(ingesting, "read_sidecar", swapped_then_read)
    config = await h.add_config(root)
    photo = Photo(h, config)

    first = await crawl(h, config)

    assert [(e.path, e.reason) for e in first.errors] == [
        ("IMG_1.JPG.xmp", "XMP sidecar not read: symbolic link: not followed")
    ]
    assert (first.ingested, first.skipped) == (1, ())
    assert (await photo.row())[3:] == ("exif", 1, 240, 400, None)
    assert await h.rows(
        "SELECT file_path FROM asset_errors WHERE storage_config_id = %s", config
    ) == [("IMG_1.JPG.xmp",)]

    monkeypatch.setattr(ingesting, "read_sidecar", real)
    second = await crawl(h, config)  # the walk sees the link now: skipped, nothing to read

    assert second.errors == () and (second.unchanged, second.reread) == (1, 0)
    assert [e.path for e in second.skipped] == ["IMG_1.JPG.xmp"]
    assert (
        await h.rows("SELECT file_path FROM asset_errors WHERE storage_config_id = %s", config)
        == []
    )
