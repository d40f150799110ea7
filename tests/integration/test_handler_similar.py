"""Similar shots (ADR 0066) on real PostgreSQL, through the executor: the crawl stores
each thumbnail's picture hash, burst_detection fills the ones missing and groups
near-identical shots of one scene and time, and a rerun changes nothing."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageEnhance
from psycopg_pool import AsyncConnectionPool

from safelight.library.catalogue.proxies import picture_hash_from_bigint
from safelight.library.grouping.fingerprints import fingerprint
from safelight.testing.exif import exif_bytes
from safelight.testing.handlers import Harness, make_harness
from safelight.testing.samples import IMAGES, needs_samples
from safelight.testing.similarshots import similar_library
from safelight.views.queries import library_counts
from safelight.work.model import Status

pytestmark = pytest.mark.integration

T0 = datetime(2024, 5, 1, 10, 0, 0)


async def groups_of(h: Harness, config: Any) -> dict[int, tuple[frozenset[str], str | None]]:
    """``{group id: (member paths, primary path)}`` of the config's similar groups."""
    rows = await h.rows(
        "SELECT g.id, a.file_path, p.file_path FROM similar_groups g"
        " JOIN assets a ON a.similar_group_id = g.id"
        " LEFT JOIN assets p ON p.id = g.primary_asset_id"
        " WHERE g.storage_config_id = %s",
        config,
    )
    members: dict[int, set[str]] = {}
    primary: dict[int, str | None] = {}
    for group_id, path, primary_path in rows:
        members.setdefault(group_id, set()).add(path)
        primary[group_id] = primary_path
    return {g: (frozenset(m), primary[g]) for g, m in members.items()}


async def test_similar_shots_group_by_scene_and_time_and_a_rerun_changes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    library = similar_library(tmp_path / "library", T0)
    config = await h.add_config(library.root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    # The crawl hashed every thumbnail it made, as a read of the stored file would.
    stored = await h.rows(
        "SELECT a.picture_hash, t.path FROM assets a"
        " JOIN proxy_files t ON t.asset_id = a.id AND t.proxy_type = 'thumbnail'"
        " WHERE a.picture_hashed_at IS NOT NULL"
    )
    assert len(stored) == 9
    for value, relative in stored:
        assert picture_hash_from_bigint(value) == fingerprint(h.proxy_root / relative)

    item = await h.run("burst_detection", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    assert item.result["similar_groups"] == 2
    assert item.result["similar_assets"] == 6
    assert item.result["bursts"] == 0
    assert item.result["copies"] == 0
    found = await groups_of(h, config)
    assert {members for members, _ in found.values()} == library.groups
    assert {primary for _, primary in found.values()} == library.primaries
    in_none = await h.rows("SELECT file_path FROM assets WHERE similar_group_id IS NULL")
    assert {path for (path,) in in_none} == library.alone

    snapshot = "SELECT id, similar_group_id FROM assets ORDER BY id"
    before = await h.rows(snapshot)
    groups_before = await h.rows("SELECT * FROM similar_groups ORDER BY id")
    again = await h.run("burst_detection", config_id=config)
    assert again.result == item.result
    assert await h.rows(snapshot) == before
    assert await h.rows("SELECT * FROM similar_groups ORDER BY id") == groups_before


async def test_a_deleted_member_leaves_its_group_and_a_group_of_one_dissolves(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    library = similar_library(tmp_path / "library", T0)
    config = await h.add_config(library.root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    assert (await h.run("burst_detection", config_id=config)).status is Status.SUCCEEDED
    before = await groups_of(h, config)
    [kept_id] = [g for g, (members, _) in before.items() if len(members) == 4]

    (library.root / "trip/DSC_0101.JPG").unlink()
    (library.root / "trip/DSC_0201.JPG").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    item = await h.run("burst_detection", config_id=config)

    assert item.result is not None and item.result["similar_groups"] == 1
    after = await groups_of(h, config)
    # The group of four keeps its id with three; the pair, down to one, is gone.
    assert after == {
        kept_id: (
            frozenset({"trip/DSC_0100.JPG", "trip/DSC_0103.JPG", "trip/DSC_0104.JPG"}),
            "trip/DSC_0100.JPG",
        )
    }
    assert await h.value("SELECT count(*) FROM similar_groups") == 1
    assert (
        await h.value(
            "SELECT count(*) FROM assets WHERE is_deleted AND similar_group_id IS NOT NULL"
        )
        == 0
    )


async def test_assets_hashed_before_are_filled_from_their_stored_thumbnails(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """Rows from before picture hashes: burst_detection reads each stored thumbnail
    (through no link) and finds the same groups; one whose thumbnail is a link is
    marked tried, without a hash."""
    h = make_harness(pool, tmp_path)
    library = similar_library(tmp_path / "library", T0)
    config = await h.add_config(library.root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    hashes = await h.rows("SELECT id, picture_hash FROM assets ORDER BY id")
    [(linked_id, linked_path)] = await h.rows(
        "SELECT a.id, t.path FROM assets a JOIN proxy_files t ON t.asset_id = a.id"
        " AND t.proxy_type = 'thumbnail' WHERE a.file_path = 'trip/DSC_0202.JPG'"
    )
    thumbnail = h.proxy_root / linked_path
    outside = tmp_path / "outside.jpg"
    outside.write_bytes(thumbnail.read_bytes())
    thumbnail.unlink()
    thumbnail.symlink_to(outside)
    async with pool.connection() as conn:
        await conn.execute("UPDATE assets SET picture_hash = NULL, picture_hashed_at = NULL")

    item = await h.run("burst_detection", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    # The crawl's own follow-up ran first and did the filling; ours found the same.
    runs = [await h.store.get(r.id) for r in h.ran if r.kind == "burst_detection"]
    assert [r.result["picture_hashes"] for r in runs if r and r.result] == [8, 0]
    assert item.result is not None and item.result["similar_groups"] == 2
    assert {m for m, _ in (await groups_of(h, config)).values()} == library.groups
    filled = await h.rows("SELECT id, picture_hash FROM assets ORDER BY id")
    assert filled == [(i, None if i == linked_id else v) for i, v in hashes]
    assert await h.value("SELECT count(*) FROM assets WHERE picture_hashed_at IS NULL") == 0
    again = await h.run("burst_detection", config_id=config)
    assert again.result is not None and again.result["picture_hashes"] == 0


def _variants(path: Path) -> dict[str, bytes]:
    """A sample photo's variants, as reshoots and exports of it."""
    with Image.open(path) as opened:
        picture = opened.convert("RGB")
    picture.thumbnail((1200, 1200))
    out: dict[str, bytes] = {}
    for name, image, quality in (
        ("original", picture, 92),
        ("brighter", ImageEnhance.Brightness(picture).enhance(1.2), 90),
        ("resaved", picture, 50),
        ("smaller", picture.resize((picture.width // 2, picture.height // 2)), 90),
    ):
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=quality)
        out[name] = buffer.getvalue()
    return out


SAMPLE_PHOTOS = (
    "immich-test-assets/albums/nature/el_torcal_rocks.jpg",
    "immich-test-assets/albums/nature/prairie_falcon.jpg",
    "immich-test-assets/albums/nature/notocactus_minimus.jpg",
    "exif-samples/jpg/gps/DSCN0010.jpg",
)


@pytest.mark.samples
@needs_samples
async def test_variants_of_sample_photos_group_by_photo_and_never_across(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """Four distinct sample photos, each with three variants, all taken within one
    minute (so only the hash tells them apart): four groups, each of one photo."""
    by_name = {p.as_posix(): p for p in IMAGES}
    photos = [next(p for n, p in by_name.items() if n.endswith(s)) for s in SAMPLE_PHOTOS]
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    root.mkdir()
    expected: set[frozenset[str]] = set()
    for number, photo in enumerate(photos):
        family: set[str] = set()
        for offset, (variant, data) in enumerate(_variants(photo).items()):
            at = T0 + timedelta(seconds=number * 3 + offset * 12)
            with Image.open(io.BytesIO(data)) as image:
                out = io.BytesIO()
                image.save(out, "JPEG", quality=95, exif=exif_bytes(captured_at=at))
            relative = f"p{number}_{variant}.jpg"
            (root / relative).write_bytes(out.getvalue())
            family.add(relative)
        expected.add(frozenset(family))
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    item = await h.run("burst_detection", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert {members for members, _ in (await groups_of(h, config)).values()} == expected


async def test_the_library_counts_name_the_similar_groups_and_the_people(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """What ``safelight run``'s summary says the folder holds: the groups burst_detection
    made and their live members (a soft-deleted member is no longer counted), and the
    people found, named or not."""
    h = make_harness(pool, tmp_path)
    library = similar_library(tmp_path / "library", T0)
    config = await h.add_config(library.root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    assert (await h.run("burst_detection", config_id=config)).status is Status.SUCCEEDED
    now = h.clock.now()
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO people (storage_config_id, name, named_by, named_at, created_at)"
            " VALUES (%(c)s, 'Grandma', 'alice', %(now)s, %(now)s),"
            " (%(c)s, NULL, NULL, NULL, %(now)s), (%(c)s, NULL, NULL, NULL, %(now)s)",
            {"c": config, "now": now},
        )

    counts = await library_counts(pool, config)

    assert (counts["similar_groups"], counts["similar_assets"]) == (2, 6)
    assert (counts["people"], counts["people_named"]) == (3, 1)
    # Another folder's groups and people are not this one's.
    (tmp_path / "empty").mkdir()
    other = await h.add_config(tmp_path / "empty")
    assert (await library_counts(pool, other))["similar_groups"] == 0
    assert (await library_counts(pool, other))["people"] == 0

    [(member,)] = await h.rows(
        "SELECT id FROM assets WHERE storage_config_id = %s AND similar_group_id IS NOT NULL"
        " ORDER BY id LIMIT 1",
        config,
    )
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET is_deleted = true, deleted_at = %s WHERE id = %s", (now, member)
        )
    assert (await library_counts(pool, config))["similar_assets"] == 5
