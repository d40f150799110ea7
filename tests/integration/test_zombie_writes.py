"""Late file effects of a stale attempt (the window of docs/reliability.md: frozen
between ``ensure_alive()`` and the syscall) on real PostgreSQL: each proxy name carries
the attempt that wrote it (ADR 0016), so a late rename only adds an orphan and a late
unlink only removes a name its own rows named; neither reaches a file a newer attempt
wrote, or the rows that name it.

The window is forced, not timed: the stale attempt's ``ensure_alive`` passes (its check
ran before it lost its item) and its syscall runs after the newer attempt finished.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.proxystore import proxytree, purge
from safelight.library.proxystore.layout import AttemptTag
from safelight.library.render.images import make_image_proxies
from safelight.library.walk.publishing import publish_image_proxies
from safelight.testing.handlers import Harness, jpeg, later, make_harness, write
from safelight.testing.specs import DEFAULT_SPEC
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def named_files(h: Harness, file_path: str) -> dict[str, str]:
    """Proxy type -> the path its row names, of the live asset at ``file_path``."""
    rows = await h.rows(
        "SELECT p.proxy_type, p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
        " WHERE a.file_path = %s AND NOT a.is_deleted AND p.path IS NOT NULL",
        file_path,
    )
    return dict(rows)


def fingerprint(root: Path, named: dict[str, str]) -> dict[str, tuple[bytes, int]]:
    """Each named file's bytes and inode: a replacement changes the inode even if it
    wrote the same bytes."""
    return {t: ((root / p).read_bytes(), (root / p).stat().st_ino) for t, p in named.items()}


def all_files(root: Path, config: UUID) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / str(config)).rglob("*") if p.is_file()}


async def test_a_stale_crawl_s_late_rename_only_adds_an_orphan_the_sweep_removes(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    library = tmp_path / "library"
    library.mkdir()
    config = await h.add_config(library)
    # The stale attempt: a crawl of the config that lost its item. Its last check passed
    # before the newer attempt began; its renames land only once that one is done.
    stale = await h.run("crawl", config_id=config)
    original = write(library, "a.jpg", jpeg(3))
    newer = await h.run("crawl", config_id=config)
    assert newer.status is Status.SUCCEEDED, newer.error
    named = await named_files(h, "a.jpg")
    assert set(named) == {"thumbnail", "full_preview"}
    before = fingerprint(h.proxy_root, named)
    content_hash = await h.value("SELECT content_hash FROM assets WHERE file_path = 'a.jpg'")
    # Made with other settings than the newer attempt's: a replacement would show.
    proxies = make_image_proxies(original, DEFAULT_SPEC)

    late = publish_image_proxies(
        proxies,
        h.proxy_root,
        config,
        content_hash,
        lambda: None,  # the check it passed before it lost its item
        written_by=AttemptTag(stale.id, stale.attempt),
    )

    orphans = {r.path for r in late if r.path is not None}
    assert len(orphans) == 2 and orphans.isdisjoint(named.values())
    assert fingerprint(h.proxy_root, named) == before, "the late rename replaced a named file"
    assert await named_files(h, "a.jpg") == named
    assert all_files(h.proxy_root, config) == set(named.values()) | orphans
    # Younger than the sweep's floor: left alone.
    young = await make_harness(pool, tmp_path, clock=later(0.5)).run("proxy_sweep")
    assert young.result is not None and young.result["deleted"] == 0
    # Past it: the orphans go, and only they.
    old = await make_harness(pool, tmp_path, clock=later(2)).run("proxy_sweep")
    assert old.status is Status.SUCCEEDED, old.error
    assert old.result is not None and old.result["deleted"] == 2
    assert all_files(h.proxy_root, config) == set(named.values())
    assert fingerprint(h.proxy_root, named) == before


async def test_a_stale_purge_s_late_unlink_cannot_remove_what_a_newer_attempt_wrote(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(pool, tmp_path)
    library = tmp_path / "library"
    original = write(library, "a.jpg", jpeg(3))
    write(library, "b.jpg", jpeg(4))
    config = await h.add_config(library)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    dead = await named_files(h, "a.jpg")
    content_hash = await h.value("SELECT content_hash FROM assets WHERE file_path = 'a.jpg'")
    original.rename(tmp_path / "away.jpg")
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    newer_files: dict[str, str] = {}
    written: dict[str, tuple[bytes, int]] = {}
    real_delete = proxytree.delete_file  # what purge imported

    def late_delete(root: Path, relative: str, ensure_alive: Any) -> bool:
        if not newer_files:
            # The purge froze right after its check; meanwhile it lost its item and a
            # newer attempt of the config published this content's proxies again.
            records = publish_image_proxies(
                make_image_proxies(tmp_path / "away.jpg", DEFAULT_SPEC),
                root,
                config,
                content_hash,
                lambda: None,
                written_by=AttemptTag(10**6, 2),
            )
            newer_files.update({r.proxy_type: r.path for r in records if r.path is not None})
            written.update(fingerprint(root, newer_files))
        return real_delete(root, relative, ensure_alive)

    monkeypatch.setattr(purge, "delete_file", late_delete)
    item = await h.run("purge", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert set(newer_files) == {"thumbnail", "full_preview"}
    assert item.result == {"purged": 1, "files_deleted": 2, "kept_shared": 0, "refused": []}
    assert not any((h.proxy_root / p).exists() for p in dead.values())
    assert all((h.proxy_root / p).is_file() for p in newer_files.values()), (
        "the late unlink removed a file the newer attempt wrote"
    )
    assert fingerprint(h.proxy_root, newer_files) == written
    assert {os.path.dirname(p) for p in newer_files.values()} == {
        os.path.dirname(p) for p in dead.values()
    }  # the same folder, which the purge therefore kept
