"""The crawl reads its config's assets in keyset pages, the next read ahead
(``handlers.crawl._KnownPages``): each page after the last path of the one before, none
after a short one, and a read ahead no longer wanted is stopped."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import pytest

from safelight.handlers import crawl as crawl_module
from safelight.library import assets
from safelight.library.assets import KnownRow


def _row(path: str) -> KnownRow:
    return (path, 1, 1, None, None, None, 1, "0" * 16, "image")


async def test_pages_follow_one_another_and_end_with_a_short_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = [f"p{n:02d}.jpg" for n in range(7)]
    asked: list[tuple[str, int]] = []

    async def live_after_path(conn: Any, config_id: Any, after: str, limit: int) -> list[KnownRow]:
        asked.append((after, limit))
        return [_row(p) for p in paths if p > after][:limit]

    monkeypatch.setattr(assets, "live_after_path", live_after_path)
    monkeypatch.setattr(crawl_module, "_KNOWN_PAGE", 3)
    pages = crawl_module._KnownPages(object(), uuid4())  # type: ignore[arg-type]
    got = [[r[0] for r in await pages.next()] for _ in range(4)]
    await pages.close()
    assert got == [paths[0:3], paths[3:6], paths[6:7], []]
    # Each after the last path read; none after the short third page, not even ahead.
    assert asked == [("", 3), ("p02.jpg", 3), ("p05.jpg", 3)]


async def test_a_read_ahead_no_longer_wanted_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    started = asyncio.Event()
    stopped = asyncio.Event()

    async def live_after_path(conn: Any, config_id: Any, after: str, limit: int) -> list[KnownRow]:
        if not after:
            return [_row("a.jpg"), _row("b.jpg")]
        started.set()
        try:
            await asyncio.Event().wait()  # a query that never ends
        finally:
            stopped.set()
        raise AssertionError("not reached")

    monkeypatch.setattr(assets, "live_after_path", live_after_path)
    monkeypatch.setattr(crawl_module, "_KNOWN_PAGE", 2)
    pages = crawl_module._KnownPages(object(), uuid4())  # type: ignore[arg-type]
    assert [r[0] for r in await pages.next()] == ["a.jpg", "b.jpg"]
    await started.wait()  # the next page is being read ahead
    await pages.close()
    assert stopped.is_set()
