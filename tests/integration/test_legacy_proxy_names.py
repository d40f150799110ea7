"""Proxies under the names of before ADR 0016 get the crawl attempt's name (ADR 0017,
``library.proxystore.legacynames``): linked, the rows repointed in the fenced transaction, the old
name deleted once no row names it; never a row naming a missing file, never a link
followed, and every file that could not be renamed reported."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.proxystore import legacynames
from safelight.library.proxystore.layout import parse_proxy_name
from safelight.testing.handlers import (
    Harness,
    crawl_result,
    jpeg,
    later,
    make_harness,
    write,
)
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def proxy_rows(h: Harness) -> dict[tuple[int, str], str]:
    """(asset id, proxy type) -> the path its row names, for every proxy file row."""
    rows = await h.rows("SELECT asset_id, proxy_type, path FROM proxy_files WHERE path IS NOT NULL")
    return {(a, t): p for a, t, p in rows}


async def make_legacy(h: Harness) -> dict[tuple[int, str], str]:
    """Rename every proxy file to its legacy name ``<type>.<ext>`` and point its row
    there, as the version before ADR 0016 left them; returns the rows."""
    legacy: dict[tuple[int, str], str] = {}
    async with h.pool.connection() as conn:
        for (asset_id, proxy_type), path in (await proxy_rows(h)).items():
            name = parse_proxy_name(path)
            assert name is not None and name.written_by is not None
            kind, _, ext = name.file_name.split(".")
            old = f"{name.folder}/{kind}.{ext}"
            os.rename(h.proxy_root / path, h.proxy_root / old)
            await conn.execute(
                "UPDATE proxy_files SET path = %s WHERE asset_id = %s AND proxy_type = %s",
                (old, asset_id, proxy_type),
            )
            legacy[(asset_id, proxy_type)] = old
    return legacy


async def crawled_library(h: Harness, tmp_path: Path, photos: int = 2) -> Any:
    library = tmp_path / "library"
    library.mkdir()
    for n in range(photos):
        write(library, f"p{n}.jpg", jpeg(n + 1))
    config = await h.add_config(library)
    first = await h.run("crawl", config_id=config)
    assert first.status is Status.SUCCEEDED, first.error
    return config


async def test_a_crawl_gives_legacy_proxies_its_own_names_keeping_each_file(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path)
    legacy = await make_legacy(h)
    assert len(legacy) == 4  # two photos, a thumbnail and a preview each
    before = {
        k: ((h.proxy_root / p).read_bytes(), (h.proxy_root / p).stat().st_ino)
        for k, p in legacy.items()
    }

    second = await h.run("crawl", config_id=config)

    assert second.status is Status.SUCCEEDED, second.error
    second_result = crawl_result(second)
    assert second_result.proxies_renamed == 4
    assert second_result.proxy_errors == ()
    rows = await proxy_rows(h)
    assert rows.keys() == legacy.keys()
    for key, path in rows.items():
        name = parse_proxy_name(path)
        assert name is not None and name.written_by is not None
        assert (name.written_by.item_id, name.written_by.attempt) == (second.id, second.attempt)
        # The same file under its new name (a hard link), the old name gone.
        assert ((h.proxy_root / path).read_bytes(), (h.proxy_root / path).stat().st_ino) == before[
            key
        ]
        assert not (h.proxy_root / legacy[key]).exists()
    third = await h.run("crawl", config_id=config)
    third_result = crawl_result(third)
    assert third_result.proxies_renamed == 0
    assert await proxy_rows(h) == rows


async def test_an_old_name_another_row_still_names_is_kept_until_that_row_goes(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path, photos=1)
    legacy = await make_legacy(h)
    (asset_id,) = {a for a, _ in legacy}
    # A soft-deleted asset of the same content whose rows name the same legacy files, as
    # two assets of one content shared them before ADR 0016.
    async with h.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO assets (storage_config_id, file_path, file_name, content_hash,"
            " size_bytes, modified_at, modified_ns, media_type, captured_at, captured_local,"
            " captured_at_source, captured_year, captured_month, captured_day, is_deleted,"
            " deleted_at, last_seen_at, created_at)"
            " SELECT storage_config_id, 'gone.jpg', 'gone.jpg', content_hash, size_bytes,"
            " modified_at, modified_ns, media_type, captured_at, captured_local,"
            " captured_at_source, captured_year, captured_month, captured_day, true, %s,"
            " last_seen_at, created_at FROM assets WHERE id = %s RETURNING id",
            (h.clock.now(), asset_id),
        )
        row = await cur.fetchone()
        assert row is not None
        await conn.execute(
            "INSERT INTO proxy_files (asset_id, proxy_type, path, size_bytes, width, height,"
            " created_at) SELECT %s, proxy_type, path, size_bytes, width, height, created_at"
            " FROM proxy_files WHERE asset_id = %s AND path IS NOT NULL",
            (row[0], asset_id),
        )
    dead = row[0]

    second = await h.run("crawl", config_id=config)

    second_result = crawl_result(second)
    assert second_result.proxies_renamed == 2
    rows = await proxy_rows(h)
    for proxy_type in ("thumbnail", "full_preview"):
        assert rows[(dead, proxy_type)] == legacy[(asset_id, proxy_type)]
        assert (h.proxy_root / legacy[(asset_id, proxy_type)]).is_file()
        assert rows[(asset_id, proxy_type)] != legacy[(asset_id, proxy_type)]
        assert (h.proxy_root / rows[(asset_id, proxy_type)]).is_file()


async def test_a_legacy_name_that_is_a_link_is_not_followed_and_is_reported(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path, photos=1)
    legacy = await make_legacy(h)
    thumbnail = next(p for (_, t), p in legacy.items() if t == "thumbnail")
    secret = tmp_path / "secret.txt"
    secret.write_text("not a proxy")
    (h.proxy_root / thumbnail).unlink()
    (h.proxy_root / thumbnail).symlink_to(secret)

    second = await h.run("crawl", config_id=config)

    assert second.status is Status.SUCCEEDED, second.error
    second_result = crawl_result(second)
    assert second_result.proxies_renamed == 1  # the preview
    (error,) = second_result.proxy_errors
    assert error.path == thumbnail
    assert "not renamed" in error.reason and "symbolic link" in error.reason
    rows = await proxy_rows(h)
    assert thumbnail in rows.values()  # its row unchanged
    assert (h.proxy_root / thumbnail).is_symlink() and secret.read_text() == "not a proxy"
    named = {parse_proxy_name(p) for p in rows.values()}
    assert all(n is not None for n in named)
    folder = h.proxy_root / thumbnail.rsplit("/", 1)[0]
    assert not [
        p for p in folder.iterdir() if p.name.startswith("thumbnail.") and p.name != "thumbnail.jpg"
    ]


async def test_a_missing_legacy_file_is_reported_and_its_row_left_alone(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path, photos=1)
    legacy = await make_legacy(h)
    preview = next(p for (_, t), p in legacy.items() if t == "full_preview")
    (h.proxy_root / preview).unlink()

    second = await h.run("crawl", config_id=config)

    second_result = crawl_result(second)
    (error,) = second_result.proxy_errors
    assert error.path == preview and "not renamed" in error.reason
    assert preview in (await proxy_rows(h)).values()


async def test_without_hard_links_the_file_is_copied_under_its_new_name(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path, photos=1)
    legacy = await make_legacy(h)
    before = {k: (h.proxy_root / p).read_bytes() for k, p in legacy.items()}

    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(legacynames, "link_file", no_links)
    second = await h.run("crawl", config_id=config)

    second_result = crawl_result(second)
    assert second_result.proxies_renamed == 2 and second_result.proxy_errors == ()
    for key, path in (await proxy_rows(h)).items():
        assert (h.proxy_root / path).read_bytes() == before[key]
        assert not (h.proxy_root / legacy[key]).exists()
    assert not list((h.proxy_root / ".staging").glob("*.tmp"))


async def test_a_crawl_that_dies_between_link_and_repoint_leaves_only_orphans(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crash ADR 0016 feared of a rename: the new names exist, the rows still name
    the old ones (which are still there), the next crawl renames under its own names,
    and the sweep deletes the dead attempt's names past its age floor."""
    h = make_harness(pool, tmp_path)
    config = await crawled_library(h, tmp_path, photos=1)
    legacy = await make_legacy(h)

    async def crash(*args: object) -> set[str]:
        raise RuntimeError("the Worker died here")

    monkeypatch.setattr(legacynames, "repoint", crash)
    died = await h.run("crawl", config_id=config)
    assert died.status is Status.FAILED
    assert await proxy_rows(h) == legacy
    for path in legacy.values():
        assert (h.proxy_root / path).is_file()
    folder = h.proxy_root / next(iter(legacy.values())).rsplit("/", 1)[0]
    orphans = {p.name for p in folder.iterdir() if f".{died.id}-{died.attempt}." in p.name}
    assert len(orphans) == 2

    monkeypatch.undo()
    again = await h.run("crawl", config_id=config)
    again_result = crawl_result(again)
    assert again_result.proxies_renamed == 2
    rows = await proxy_rows(h)
    assert all(f".{again.id}-{again.attempt}." in p for p in rows.values())
    swept = await make_harness(pool, tmp_path, clock=later(2)).run("proxy_sweep")
    assert swept.result is not None and swept.result["deleted"] == 2
    assert {p.name for p in folder.iterdir()} == {p.rsplit("/", 1)[1] for p in rows.values()}
