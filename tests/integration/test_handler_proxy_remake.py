"""Remaking a config's proxies on real PostgreSQL (ADR 0059): the missing ones exactly,
all of them after a change of size, never a proxy missing meanwhile, nothing written
by an attempt that lost its item, and never beside a crawl of the same config."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.crawl.attempt import Attempt
from safelight.handlers.proxy_remake import making
from safelight.handlers.proxy_remake import run as remaking
from safelight.library.catalogue import proxies as catalogue_proxies
from safelight.library.catalogue.proxies import (
    AssetProxies,
    ProxyRecord,
    picture_hash_from_bigint,
)
from safelight.library.grouping.fingerprints import fingerprint
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import LEASE, START, Harness, jpeg, make_harness, write
from safelight.testing.motionphotos import samsung_motion_jpeg, tiny_mp4
from safelight.testing.web import Web
from safelight.web.proxies import proxy_url
from safelight.work.model import Status
from safelight.work.outcome import Succeeded

pytestmark = pytest.mark.integration

PHOTOS = ("a.jpg", "b.jpg", "c.jpg")


async def crawled_library(h: Harness, root: Path) -> UUID:
    for seed, name in enumerate(PHOTOS):
        write(root, name, jpeg(seed, size=(600, 400)))
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    return config


async def named(h: Harness, file_path: str) -> dict[str, str]:
    """Proxy type -> the path its row names (BlurHash: its value), of the live asset."""
    rows = await h.rows(
        "SELECT p.proxy_type, coalesce(p.path, p.value) FROM proxy_files p"
        " JOIN assets a ON a.id = p.asset_id WHERE a.file_path = %s AND NOT a.is_deleted",
        file_path,
    )
    return dict(rows)


async def all_named(h: Harness) -> dict[str, dict[str, str]]:
    return {name: await named(h, name) for name in PHOTOS}


def files_of(h: Harness, rows: dict[str, str]) -> dict[str, Path]:
    return {t: h.proxy_root / p for t, p in rows.items() if t != "blurhash"}


def later_harness(pool: AsyncConnectionPool[Any], tmp_path: Path, **overrides: Any) -> Harness:
    """The same home and proxy root an hour later (a remake is asked for after the
    crawl), with other settings if given."""
    return make_harness(
        pool, tmp_path, clock=FakeClock(start=START + timedelta(hours=1)), **overrides
    )


async def test_remake_missing_restores_exactly_the_missing_proxies(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path / "library")
    before = await all_named(h)
    (h.proxy_root / before["a.jpg"]["thumbnail"]).unlink()
    (h.proxy_root / before["b.jpg"]["full_preview"]).write_bytes(b"")  # damaged: empty
    later = later_harness(pool, tmp_path)

    item = await later.run("proxy_remake", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    assert item.result == {
        "mode": "missing",
        "total": 3,
        "checked": 3,
        "missing": 2,
        "remade": 2,
        "proxies": 6,
        "failed": 0,
        "old_deleted": 3,  # a's preview, b's thumbnail and empty preview
        "failures": [],
        "old_not_deleted": [],
    }
    # Progress as it went, an asset at a time, saved with the item as a crawl's is.
    reports = later.progress[item.id]
    assert [r["checked"] for r in reports][:3] == [1, 2, 3]
    assert reports[-1] == {
        "total": 3, "checked": 3, "missing": 2, "remade": 2, "proxies": 6, "failed": 0
    }  # fmt: skip
    assert item.progress is not None and item.progress["counts"] == reports[-1]
    after = await all_named(h)
    assert after["c.jpg"] == before["c.jpg"]  # nothing missing: untouched
    for name in ("a.jpg", "b.jpg"):
        assert set(after[name]) == {"thumbnail", "full_preview", "blurhash"}
        assert after[name]["blurhash"] == before[name]["blurhash"]  # the same picture
        for proxy_type, path in files_of(h, after[name]).items():
            assert path.stat().st_size > 0, path
            assert after[name][proxy_type] != before[name][proxy_type]
        for old in files_of(h, before[name]).values():
            assert not old.exists(), old
    # The remade thumbnail's picture hash is stored with it, at the remake's time.
    [(stored, hashed_at)] = await h.rows(
        "SELECT picture_hash, picture_hashed_at FROM assets WHERE file_path = 'a.jpg'"
    )
    assert picture_hash_from_bigint(stored) == fingerprint(
        h.proxy_root / after["a.jpg"]["thumbnail"]
    )
    assert hashed_at >= START + timedelta(hours=1)
    # Nothing is missing now: a second remake finds nothing to do.
    again = await later.run("proxy_remake", config_id=config)
    assert again.result is not None
    assert (again.result["missing"], again.result["remade"]) == (0, 0)


async def test_remake_missing_restores_a_row_that_was_lost(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path / "library")
    async with pool.connection() as conn:
        await conn.execute(
            "DELETE FROM proxy_files p USING assets a WHERE a.id = p.asset_id"
            " AND a.file_path = 'c.jpg' AND p.proxy_type = 'blurhash'"
        )

    item = await later_harness(pool, tmp_path).run("proxy_remake", config_id=config)

    assert item.result is not None
    assert (item.result["missing"], item.result["remade"]) == (1, 1)
    assert set(await named(h, "c.jpg")) == {"thumbnail", "full_preview", "blurhash"}


async def test_remake_all_after_a_change_of_preview_width_gives_the_new_sizes(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)  # preview_width 256
    config = await crawled_library(h, tmp_path / "library")
    before = await all_named(h)
    later = later_harness(pool, tmp_path, preview_width=128)

    item = await later.run("proxy_remake", config_id=config, payload={"mode": "all"})

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    assert (item.result["remade"], item.result["missing"], item.result["failed"]) == (3, 0, 0)
    widths = await h.rows("SELECT p.width FROM proxy_files p WHERE p.proxy_type = 'full_preview'")
    assert sorted(w for (w,) in widths) == [128, 128, 128]
    for name in PHOTOS:
        rows = await named(h, name)
        with Image.open(h.proxy_root / rows["full_preview"]) as preview:
            assert preview.width == 128
        assert not any(p.exists() for p in files_of(h, before[name]).values())
    # A retried or second remake asked for before these rows were made has nothing left.
    item_again = await later.run("proxy_remake", config_id=config, payload={"mode": "all"})
    assert item_again.result is not None
    assert item_again.result["remade"] == 0


async def served(web: Web, asset_id: int, rows: dict[str, str]) -> dict[str, bytes]:
    """Each file proxy of ``rows`` as the dashboard serves it, by the URL its row gives
    (the version of the path it names)."""
    got = {}
    for proxy_type, path in rows.items():
        if proxy_type == "blurhash":
            continue
        url = proxy_url(asset_id, proxy_type, path)
        assert url is not None
        response = await web.client.get(url)
        assert response.status_code == 200, (proxy_type, response.status_code)
        got[proxy_type] = response.content
    return got


async def test_no_proxy_is_missing_while_a_remake_makes_the_new_ones(
    pool: AsyncConnectionPool[Any], tmp_path: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overlap forced: between making an asset's new proxies and switching its rows,
    the dashboard serves the old rows' files, and the new files are already there beside
    them; right after the switch it serves the new ones."""
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path / "library")
    before = await all_named(h)
    seen: list[str] = []
    real_switch = remaking.switch

    async def switch(
        remake: Attempt, asset: AssetProxies, records: list[ProxyRecord], tally: Any
    ) -> bool:
        rows = await named(h, asset.file_path)
        assert rows == before[asset.file_path]
        old = await served(web, asset.asset_id, rows)
        assert old == {t: p.read_bytes() for t, p in files_of(h, rows).items()}
        assert all(len(data) > 0 for data in old.values())
        assert all((h.proxy_root / r.path).is_file() for r in records if r.path is not None)
        seen.append(asset.file_path)
        switched = await real_switch(remake, asset, records, tally)
        # And right after: the new rows, their files served, none missing.
        now = await named(h, asset.file_path)
        assert now != rows
        new = await served(web, asset.asset_id, now)
        assert all(len(data) > 0 for data in new.values())
        return switched

    real_replace = catalogue_proxies.replace_of_asset
    names = dict(await h.rows("SELECT id, file_path FROM assets"))
    replaced: list[str] = []

    async def replace_of_asset(
        conn: Any, asset_id: int, records: Sequence[ProxyRecord], now: datetime
    ) -> list[str]:
        # Inside the switch's transaction: the old files are all still there.
        name = names[asset_id]
        assert all(p.is_file() for p in files_of(h, before[name]).values())
        replaced.append(name)
        return await real_replace(conn, asset_id, records, now)

    monkeypatch.setattr(remaking, "switch", switch)
    monkeypatch.setattr(catalogue_proxies, "replace_of_asset", replace_of_asset)

    item = await later_harness(pool, tmp_path).run(
        "proxy_remake", config_id=config, payload={"mode": "all"}
    )

    assert item.status is Status.SUCCEEDED, item.error
    assert seen == list(PHOTOS)
    assert replaced == list(PHOTOS)


async def test_a_remake_that_lost_its_item_writes_nothing_after(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path / "library")
    before = await all_named(h)
    folders = {name: files_of(h, rows)["thumbnail"].parent for name, rows in before.items()}
    listed = {name: set(folder.iterdir()) for name, folder in folders.items()}
    later = later_harness(pool, tmp_path)
    real_make: Callable[..., Awaitable[list[ProxyRecord]]] = making.make_proxies
    calls: list[str] = []

    async def make_proxies(
        remake: Attempt, asset: AssetProxies, sets: list[tuple[str, ...]]
    ) -> list[ProxyRecord]:
        calls.append(asset.file_path)
        if len(calls) == 2:
            # The Worker froze past its lease and another took the item back.
            item = remake.ctx.item
            assert await later.store.release(item.id, item.attempt)
            later.clock.jump(LEASE)
        return await real_make(remake, asset, sets)

    monkeypatch.setattr(making, "make_proxies", make_proxies)
    item_id = await later.store.enqueue("proxy_remake", config_id=config, payload={"mode": "all"})
    claimed = await later.store.claim("w1", ["proxy_remake"], lease_seconds=LEASE)
    assert claimed is not None and claimed.id == item_id

    ran = await later.executor.run(claimed)

    assert not isinstance(ran.outcome, Succeeded)
    assert calls == ["a.jpg", "b.jpg"]
    after = await all_named(h)
    assert after["a.jpg"] != before["a.jpg"]  # remade before the item was lost
    for name in ("b.jpg", "c.jpg"):
        assert after[name] == before[name]
        assert set(folders[name].iterdir()) == listed[name]  # no file written either
    stored = await later.store.get(item_id)
    assert stored is not None and stored.status is Status.QUEUED  # for another attempt

    # The next attempt goes on where this one stopped: a.jpg's new proxies are kept.
    monkeypatch.undo()
    retried = await later.run_queued(item_id)
    assert retried.status is Status.SUCCEEDED, retried.error
    assert retried.result is not None and retried.result["remade"] == 2
    final = await all_named(h)
    assert final["a.jpg"] == after["a.jpg"]
    assert all(final[name] != before[name] for name in ("b.jpg", "c.jpg"))


async def test_a_remake_never_runs_beside_a_crawl_of_its_config(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path / "library")
    other = await crawled_library(h, tmp_path / "other")
    crawl = await h.store.enqueue("crawl", config_id=config)
    remake = await h.store.enqueue("proxy_remake", config_id=config)
    remake_other = await h.store.enqueue("proxy_remake", config_id=other)

    kinds = ["crawl", "proxy_remake"]
    first = await h.store.claim("w1", kinds, lease_seconds=LEASE)
    second = await h.store.claim("w2", kinds, lease_seconds=LEASE)
    third = await h.store.claim("w3", kinds, lease_seconds=LEASE)

    assert first is not None and first.id == crawl
    # The other config's remake may run; this config's waits for its crawl.
    assert second is not None and second.id == remake_other
    assert third is None
    queued = await h.store.get(remake)
    assert queued is not None and queued.status is Status.QUEUED


async def test_a_proxy_remake_is_refused_an_unknown_mode(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path / "library")
    with pytest.raises(ValueError, match='payload field "mode"'):
        await h.store.enqueue("proxy_remake", config_id=config, payload={"mode": "some"})
    assert await h.value("SELECT count(*) FROM work_items WHERE kind = 'proxy_remake'") == 0


@pytest.mark.skipif(
    shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
    reason="ffmpeg/ffprobe not installed",
)
async def test_a_lost_web_video_remakes_a_video_s_proxies_whole_and_a_motion_photo_s_video(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """A video's proxies are one ffmpeg run: all are remade. A motion photo's web video is
    remade from its embedded video, and its still's proxies stay as they were."""
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    video = tiny_mp4(tmp_path / "tiny.mp4", size="96x64")
    write(root, "clip.mp4", video)
    write(root, "motion.jpg", samsung_motion_jpeg(video))
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    clip, motion = await named(h, "clip.mp4"), await named(h, "motion.jpg")
    assert "web_video" in clip and "web_video" in motion
    for rows in (clip, motion):
        (h.proxy_root / rows["web_video"]).unlink()

    item = await later_harness(pool, tmp_path).run("proxy_remake", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    assert (item.result["missing"], item.result["remade"], item.result["failed"]) == (2, 2, 0)
    assert item.result["proxies"] == 4 + 1
    clip_now, motion_now = await named(h, "clip.mp4"), await named(h, "motion.jpg")
    assert all(clip_now[t] != clip[t] for t in ("thumbnail", "full_preview", "web_video"))
    assert motion_now["web_video"] != motion["web_video"]
    assert {t: motion_now[t] for t in ("thumbnail", "full_preview", "blurhash")} == {
        t: motion[t] for t in ("thumbnail", "full_preview", "blurhash")
    }
    for rows in (clip_now, motion_now):
        assert all(p.stat().st_size > 0 for p in files_of(h, rows).values())


async def test_an_original_that_changed_since_its_crawl_is_not_remade_and_is_listed(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await crawled_library(h, root)
    before = await all_named(h)
    (h.proxy_root / before["a.jpg"]["thumbnail"]).unlink()
    write(root, "a.jpg", jpeg(99, size=(600, 400)))  # other bytes: the next crawl's
    (root / "b.jpg").unlink()  # gone: the next crawl's too
    (h.proxy_root / before["b.jpg"]["thumbnail"]).unlink()

    item = await later_harness(pool, tmp_path).run("proxy_remake", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    assert (item.result["missing"], item.result["remade"], item.result["failed"]) == (2, 0, 2)
    assert item.result["failures"] == [
        {
            "path": "a.jpg",
            "reason": "the original changed since it was crawled: the next crawl reads it",
        },
        {"path": "b.jpg", "reason": "file vanished before it could be read"},
    ]
    assert await all_named(h) == before  # nothing switched
