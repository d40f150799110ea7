"""A hostile or misconfigured host: settings that put safelight's folders inside a
library (or around one), two databases sharing one proxy root, proxy rows that name
what they should not, and links where safelight deletes. Originals survive them all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from safelight.handlers import proxy_deletion
from safelight.library.proxystore.layout import PROXY_ROOT_MARKER
from safelight.testing.handlers import Harness, jpeg, later, make_harness, write
from safelight.work.model import Status
from tests.dbserver import PgTestServer

pytestmark = pytest.mark.integration


def originals(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.jpg")}


async def crawled(h: Harness, root: Path, count: int = 2, seed: int = 40) -> UUID:
    for i in range(count):
        write(root, f"p{i}.jpg", jpeg(seed + i))
    config = await h.add_config(root)
    item = await h.run("crawl", config_id=config)
    assert item.status is Status.SUCCEEDED, item.error
    return config


async def proxy_files(h: Harness, config: UUID) -> list[str]:
    rows = await h.rows(
        "SELECT p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
        " WHERE a.storage_config_id = %s AND p.path IS NOT NULL ORDER BY p.path",
        config,
    )
    return [r[0] for r in rows]


async def test_a_proxy_root_inside_a_library_is_refused_and_its_sweep_deletes_no_original(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """SAFELIGHT_PROXY_ROOT set to the library itself: once the crawl would have written
    proxies there, and an hour later the sweep deleted every original."""
    library = tmp_path / "library"
    for i in range(3):
        write(library, f"2019/IMG_{i}.jpg", jpeg(10 + i))
    before = originals(library)
    h = make_harness(pool, tmp_path, proxy_root=library)
    config = await h.add_config(library)

    crawl = await h.run("crawl", config_id=config)
    sweep = await make_harness(pool, tmp_path, proxy_root=library, clock=later(48)).run(
        "proxy_sweep"
    )

    assert crawl.status is Status.FAILED and crawl.error is not None
    assert "RootOverlap" in crawl.error and f"{library} is safelight's proxy root" in (crawl.error)
    assert sweep.status is Status.FAILED and sweep.error is not None
    assert "RootOverlap" in sweep.error
    assert originals(library) == before
    assert sorted(p.name for p in library.iterdir()) == ["2019"]  # nothing written
    assert await h.value("SELECT count(*) FROM assets") == 0


async def test_a_library_around_the_proxy_root_is_refused_before_anything_is_written(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    library = tmp_path / "library"
    write(library, "a.jpg", jpeg(20))
    h = make_harness(pool, tmp_path, proxy_root=library / ".safelight-proxies")
    config = await h.add_config(library)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.FAILED and item.error is not None
    assert "set SAFELIGHT_PROXY_ROOT outside" in item.error
    assert sorted(p.name for p in library.iterdir()) == ["a.jpg"]


@pytest.fixture
def second_database(pg_server: PgTestServer) -> Iterator[str]:
    name, url = pg_server.new_database()
    try:
        yield url
    finally:
        pg_server.drop_database(name)


async def test_two_databases_sharing_a_proxy_root_cannot_sweep_each_others_proxies(
    pool: AsyncConnectionPool[Any], tmp_path: Path, second_database: str
) -> None:
    """The embedded database of ``safelight demo`` and, later, a server, with one home."""
    first = make_harness(pool, tmp_path)
    config = await crawled(first, tmp_path / "library")
    kept = await proxy_files(first, config)
    assert kept and (first.proxy_root / PROXY_ROOT_MARKER).is_file()

    other_pool = await open_pool(second_database, min_size=1, max_size=8)
    try:
        other = make_harness(other_pool, tmp_path, clock=later(48))
        other_config = await other.add_config(tmp_path / "library")
        sweep = await other.run("proxy_sweep")
        crawl = await other.run("crawl", config_id=other_config)
    finally:
        await other_pool.close()

    for item in (sweep, crawl):
        assert item.status is Status.FAILED and item.error is not None
        assert "ProxyRootTaken" in item.error and f"the proxy root {first.proxy_root}" in (
            item.error
        )
    assert all((first.proxy_root / p).is_file() for p in kept)


async def test_a_purge_deletes_only_in_its_own_assets_folder(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    mine = await crawled(h, tmp_path / "library", count=2)
    theirs = await crawled(h, tmp_path / "other", count=1, seed=60)
    their_files = await proxy_files(h, theirs)
    # A tampered row of the asset to purge names the other config's thumbnail.
    await h.rows(
        "UPDATE proxy_files SET path = %s WHERE proxy_type = 'thumbnail' AND asset_id ="
        " (SELECT id FROM assets WHERE storage_config_id = %s AND file_path = 'p0.jpg')"
        " RETURNING id",
        their_files[-1],
        mine,
    )
    (tmp_path / "library" / "p0.jpg").unlink()
    assert (await h.run("crawl", config_id=mine)).status is Status.SUCCEEDED

    item = await h.run("purge", config_id=mine)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None and item.result["purged"] == 1
    assert item.result["refused"] == [
        {"path": their_files[-1], "reason": "not a file of this asset's proxy folder: left alone"}
    ]
    assert all((h.proxy_root / p).is_file() for p in their_files)


async def test_a_purge_never_deletes_through_a_link(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled(h, tmp_path / "library", count=2)
    (thumbnail,) = await h.rows(
        "SELECT p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
        " WHERE a.file_path = 'p0.jpg' AND p.proxy_type = 'thumbnail'"
    )
    thumbnail = thumbnail[0]
    secret = tmp_path / "secret.jpg"
    secret.write_bytes(b"not a proxy")
    (h.proxy_root / thumbnail).unlink()
    (h.proxy_root / thumbnail).symlink_to(secret)
    (tmp_path / "library" / "p0.jpg").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    item = await h.run("purge", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    assert item.result["refused"] == [
        {"path": thumbnail, "reason": "is a symbolic link: not deleted"}
    ]
    assert secret.read_bytes() == b"not a proxy"


async def test_proxy_deletion_checks_every_row_before_the_first_unlink(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One asset per batch: the bad row is in the second batch, which the deletion of
    before reached only after it had deleted the first batch's files."""
    monkeypatch.setattr(proxy_deletion, "_BATCH", 1)
    h = make_harness(pool, tmp_path)
    config = await crawled(h, tmp_path / "library", count=2)
    other = await crawled(h, tmp_path / "other", count=1, seed=70)
    ids = [r[0] for r in await h.rows("SELECT id FROM assets WHERE storage_config_id = %s"
                                      " ORDER BY id", config)]  # fmt: skip
    foreign = (await proxy_files(h, other))[0]
    await h.rows(
        "UPDATE proxy_files SET path = %s WHERE asset_id = %s AND proxy_type = 'thumbnail'"
        " RETURNING id",
        foreign,
        ids[1],
    )
    files = await proxy_files(h, config)

    item = await h.run("proxy_deletion", config_id=config, payload={"asset_ids": ids})

    assert item.status is Status.FAILED and item.error is not None
    assert "not in its own proxy folder" in item.error
    assert all((h.proxy_root / p).is_file() for p in files)
    assert await h.value("SELECT count(*) FROM proxy_files WHERE asset_id = ANY(%s)", ids) == 6


async def test_proxy_deletion_refuses_a_link_in_its_payload(
    pool: AsyncConnectionPool[Any], tmp_path: Path, database_url: str
) -> None:
    h = make_harness(pool, tmp_path)
    config = await crawled(h, tmp_path / "library", count=1)
    (thumbnail,) = [p for p in await proxy_files(h, config) if "/thumbnail." in p]
    original = tmp_path / "library" / "p0.jpg"
    (h.proxy_root / thumbnail).unlink()
    (h.proxy_root / thumbnail).symlink_to(original)

    item = await h.run("proxy_deletion", config_id=config, payload={"paths": [thumbnail]})

    assert item.status is Status.FAILED and item.error is not None
    assert "symbolic link" in item.error
    assert original.is_file() and (h.proxy_root / thumbnail).is_symlink()
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT count(*) FROM proxy_files WHERE path = %s", (thumbnail,))
        assert row.fetchone() == (1,)
