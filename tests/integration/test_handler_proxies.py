"""Proxy deletion (confined to its root) and the proxy sweep (age floor, re-check)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import PROXY_DELETION, PayloadRejected, proxy_sweep
from safelight.testing.handlers import (
    Harness,
    jpeg,
    later,
    make_harness,
    share_proxy_files,
    write,
)
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def library(h: Harness, root: Path, count: int = 2) -> UUID:
    for i in range(count):
        write(root, f"p{i}.jpg", jpeg(30 + i))
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    return config


async def proxy_rows(h: Harness, file_path: str) -> dict[str, str]:
    rows = await h.rows(
        "SELECT p.proxy_type, p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
        " WHERE a.file_path = %s AND p.path IS NOT NULL",
        file_path,
    )
    return dict(rows)


async def test_proxy_deletion_by_path_deletes_the_file_and_its_row(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await library(h, tmp_path / "library")
    thumb = (await proxy_rows(h, "p0.jpg"))["thumbnail"]

    item = await h.run("proxy_deletion", config_id=config, payload={"paths": [thumb, thumb]})

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result == {"files_deleted": 1, "rows_deleted": 1, "missing": 0, "refused": []}
    assert not (h.proxy_root / thumb).exists()
    assert "thumbnail" not in await proxy_rows(h, "p0.jpg")
    # Unscoped, the same works for any config's files; a file already gone is "missing".
    preview = (await proxy_rows(h, "p0.jpg"))["full_preview"]
    (h.proxy_root / preview).unlink()
    item = await h.run("proxy_deletion", payload={"paths": [preview]})
    assert item.result == {"files_deleted": 0, "rows_deleted": 1, "missing": 1, "refused": []}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"paths": ["../outside.txt"]}, "outside"),
        ({"paths": ["/etc/passwd"]}, "relative"),
        ({"paths": ["escape/secret.txt"]}, "symbolic link"),
        ({"paths": ["00000000-0000-0000-0000-000000000000/ab/x.jpg"]}, "storage config"),
        ({"paths": ["CONFIG"]}, "not a file under"),
        # Refused at enqueue (its shape); here, items queued before that check.
        ({"paths": "p0.jpg"}, 'payload field "paths": expected a list, got "p0.jpg"'),
        ({"paths": [3]}, 'payload field "paths[1]": expected a string, got 3'),
        ({"asset_ids": ["1"]}, 'payload field "asset_ids[0]": expected a whole number'),
        ({"asset_ids": [True]}, 'payload field "asset_ids[0]": expected a whole number'),
        ({"asset_ids": [0]}, 'payload field "asset_ids[0]": expected a number > 0, got 0'),
        ({}, 'payload: it takes exactly one of "paths", "asset_ids"'),
        ({"paths": [], "asset_ids": []}, 'payload: it takes exactly one of "paths", "asset_ids"'),
        ({"paths": [], "force": True}, 'payload field "force" is not one it takes'),
    ],
)
async def test_proxy_deletion_refuses_a_bad_payload_and_deletes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path, payload: dict[str, Any], message: str
) -> None:
    h = make_harness(pool, tmp_path)
    config = await library(h, tmp_path / "library")
    (tmp_path / "outside.txt").write_text("not a proxy")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.txt").write_text("not a proxy either")
    (h.proxy_root / "escape").symlink_to(tmp_path / "elsewhere")
    good = (await proxy_rows(h, "p1.jpg"))["thumbnail"]
    if "paths" in payload and isinstance(payload["paths"], list):
        paths = [str(config) if p == "CONFIG" else p for p in payload["paths"]]
        payload = {**payload, "paths": [good, *paths]}
    before = sorted(p.relative_to(h.proxy_root) for p in h.proxy_root.rglob("*"))

    try:
        PROXY_DELETION.check_payload(payload)
    except PayloadRejected:
        item = await h.run_stored("proxy_deletion", config_id=config, payload=payload)
    else:
        item = await h.run("proxy_deletion", config_id=config, payload=payload)

    assert item.status is Status.FAILED
    assert item.error is not None and "MalformedPayload" in item.error and message in item.error
    assert sorted(p.relative_to(h.proxy_root) for p in h.proxy_root.rglob("*")) == before
    assert (tmp_path / "outside.txt").exists() and (tmp_path / "elsewhere/secret.txt").exists()
    assert "thumbnail" in await proxy_rows(h, "p1.jpg")


async def test_proxy_deletion_by_asset_keeps_a_file_another_asset_still_names(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await library(h, root)
    dead = await h.value("SELECT id FROM assets WHERE file_path = 'p0.jpg'")
    # The dead asset's content comes back under another name: a live asset with the
    # same proxy files (legacy names, shared before names carried their attempt).
    (root / "p0.jpg").rename(root / "gone.tmp")
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    (root / "gone.tmp").rename(root / "p0 again.jpg")
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    live = await h.value("SELECT id FROM assets WHERE file_path = 'p0 again.jpg'")
    await share_proxy_files(h, dead, live)
    shared = await proxy_rows(h, "p0 again.jpg")
    p1 = await h.value("SELECT id FROM assets WHERE file_path = 'p1.jpg'")
    p1_files = await proxy_rows(h, "p1.jpg")
    other_config = await library(h, tmp_path / "other", count=1)
    foreign = await h.value("SELECT id FROM assets WHERE storage_config_id = %s", other_config)

    refused = await h.run("proxy_deletion", config_id=config, payload={"asset_ids": [foreign]})
    assert refused.status is Status.FAILED and refused.error is not None
    assert "not of storage config" in refused.error

    item = await h.run("proxy_deletion", config_id=config, payload={"asset_ids": [dead]})
    assert item.result == {"files_deleted": 0, "rows_deleted": 3, "missing": 0, "refused": []}
    assert all((h.proxy_root / f).exists() for f in shared.values())

    item = await h.run("proxy_deletion", config_id=config, payload={"asset_ids": [p1, 999999]})
    assert item.status is Status.SUCCEEDED, item.error
    assert item.result == {"files_deleted": 2, "rows_deleted": 3, "missing": 1, "refused": []}
    assert not any((h.proxy_root / f).exists() for f in p1_files.values())


async def test_the_sweep_deletes_old_orphans_only_and_rechecks_before_each_delete(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crawler = make_harness(pool, tmp_path)
    config = await library(crawler, tmp_path / "library")
    root = crawler.proxy_root
    named = sorted(p for p in root.rglob("*") if p.is_file())
    orphan = root / str(config) / "ab" / ("ab" + "0" * 14) / "thumbnail.jpg"
    temp = root / ".staging" / ".thumbnail.jpg.x1y2z3w4.tmp"
    claimed = root / str(config) / "ef" / ("ef" + "1" * 14) / "full_preview.jpg"
    for path in (orphan, temp, claimed):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    empty = root / str(uuid4()) / "0a"
    empty.mkdir(parents=True)

    # Half an hour on: everything is too young.
    young = make_harness(pool, tmp_path, clock=later(0.5))
    item = await young.run("proxy_sweep")
    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None and item.result["deleted"] == 0
    assert orphan.exists() and temp.exists() and empty.exists()

    # Two hours on: old orphans go, named files stay, and a file that a row names by the
    # time of the re-check right before its delete stays too.
    real_recheck = proxy_sweep.still_orphan

    async def recheck(conn: Any, root_: Path, relative: str, now: float) -> bool:
        if relative.endswith("full_preview.jpg") and relative.startswith(f"{config}/ef/"):
            with psycopg.connect(database_url, autocommit=True) as other:
                other.execute(
                    "INSERT INTO proxy_files (asset_id, proxy_type, path, created_at)"
                    " SELECT min(id), 'web_video', %s, now() FROM assets",
                    (relative,),
                )
        return await real_recheck(conn, root_, relative, now)

    monkeypatch.setattr(proxy_sweep, "still_orphan", recheck)
    old = make_harness(pool, tmp_path, clock=later(2))
    item = await old.run("proxy_sweep")

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None and item.result["deleted"] == 2
    assert not orphan.exists() and not temp.exists()
    assert claimed.exists()
    assert all(p.exists() for p in named)
    assert not empty.parent.exists()
    assert not orphan.parent.exists()


async def test_the_sweep_leaves_what_is_not_safelights_alone_and_says_so(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """Files under the proxy root that safelight did not make survive any sweep, however
    old: an original in a misplaced proxy root, a stray file, a link and its target."""
    crawler = make_harness(pool, tmp_path)
    config = await library(crawler, tmp_path / "library")
    root = crawler.proxy_root
    secret = tmp_path / "elsewhere" / "secret.jpg"
    write(secret.parent, secret.name, jpeg(7))
    foreign = {
        root / "2019" / "holiday" / "IMG_0001.JPG": jpeg(5),
        root / "notes.txt": b"mine",
        root / str(config) / "ab" / "IMG_0002.JPG": jpeg(6),  # wrong depth
        root / str(config) / "cd" / ("ab" + "2" * 14) / "thumbnail.jpg": b"wrong prefix",
        root / ".staging" / "photo.jpg": b"not a temporary name",
    }
    for path, data in foreign.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    link = root / str(config) / "ef" / ("ef" + "3" * 14) / "thumbnail.jpg"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    (root / "linked-folder").symlink_to(secret.parent, target_is_directory=True)

    item = await make_harness(pool, tmp_path, clock=later(24 * 365)).run("proxy_sweep")

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None and item.result["deleted"] == 0
    assert all(path.read_bytes() == data for path, data in foreign.items())
    assert link.is_symlink() and secret.exists() and (root / "linked-folder").is_symlink()
    left_alone = {entry["path"] for entry in item.result["left_alone"]}
    assert left_alone >= {
        "2019/",
        "notes.txt",
        f"{config}/ab/IMG_0002.JPG",
        f"{config}/cd/{'ab' + '2' * 14}/",
        ".staging/photo.jpg",
        f"{config}/ef/{'ef' + '3' * 14}/thumbnail.jpg",
        "linked-folder",
    }
    assert item.result["foreign"] == len(item.result["left_alone"])
