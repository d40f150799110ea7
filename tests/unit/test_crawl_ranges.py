"""The crawl reads its config's assets range by range of the walk's batches
(``library.walk.matching.KnownRanges``): a range compared by its digest is done if that is the
walk's, and read in pages if not, each range after the last one's end. The walk runs in
a thread of its own, a bounded number of steps ahead (``handlers.crawl.ahead.WalkAhead``),
and is stopped and waited for however the crawl leaves it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from uuid import uuid4

import pytest

from safelight.handlers.crawl import ahead
from safelight.library.catalogue import assets
from safelight.library.catalogue.assets import KnownRow
from safelight.library.walk import matching
from safelight.library.walk.decisions import StatKey
from safelight.library.walk.matching import stat_keys_digest
from safelight.library.walk.walker import RootUnavailable, WalkBatch


def _row(path: str, size: int = 1) -> KnownRow:
    return (path, size, 1, None, None, None, 1, "0" * 16, "image")


def _key(path: str, size: int = 1) -> StatKey:
    return (path, size, 1, None, None, None)


class _Assets:
    """The two queries of a config's live assets, over ``rows``, recording each ask."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, rows: list[KnownRow]) -> None:
        self.rows = rows
        self.asked: list[tuple[str, str, str | None]] = []
        monkeypatch.setattr(assets, "live_after_path", self.live_after_path)
        monkeypatch.setattr(assets, "live_digest_in_range", self.live_digest_in_range)

    def _in(self, after: str, upto: str | None) -> list[KnownRow]:
        return [r for r in self.rows if r[0] > after and (upto is None or r[0] <= upto)]

    async def live_after_path(
        self, conn: Any, config_id: Any, after: str, upto: str | None, limit: int
    ) -> list[KnownRow]:
        self.asked.append(("rows", after, upto))
        return self._in(after, upto)[:limit]

    async def live_digest_in_range(
        self, conn: Any, config_id: Any, after: str, upto: str
    ) -> tuple[int, bytes]:
        self.asked.append(("digest", after, upto))
        found = self._in(after, upto)
        return len(found), stat_keys_digest([r[:6] for r in found])


def _ranges() -> matching.KnownRanges:
    return matching.KnownRanges(object(), uuid4())  # type: ignore[arg-type]


async def test_a_range_whose_digest_is_the_walks_is_done_without_a_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = _Assets(monkeypatch, [_row("a"), _row("b"), _row("c"), _row("d")])
    ranges = _ranges()
    assert await ranges.unchanged([_key("a"), _key("b")])
    assert await ranges.unchanged([_key("c")])  # after b, up to c
    assert await ranges.rows_through(None) == [_row("d")]  # the rest: after c
    assert db.asked == [("digest", "", "b"), ("digest", "b", "c"), ("rows", "c", None)]


@pytest.mark.parametrize(
    "walked",
    [
        [_key("a"), _key("b", size=2)],  # a changed file
        [_key("b")],  # an asset before it that no file has
        [_key("a"), _key("a1"), _key("b")],  # a new file
    ],
)
async def test_a_range_whose_digest_is_not_the_walks_is_still_to_be_read(
    monkeypatch: pytest.MonkeyPatch, walked: list[StatKey]
) -> None:
    db = _Assets(monkeypatch, [_row("a"), _row("b"), _row("c")])
    ranges = _ranges()
    assert not await ranges.unchanged(walked)
    assert await ranges.rows_through("b") == [_row("a"), _row("b")]
    assert await ranges.rows_through(None) == [_row("c")]
    assert db.asked[1:] == [("rows", "", "b"), ("rows", "b", None)]


async def test_a_range_is_read_in_pages_each_after_the_last_path_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = [f"p{n:02d}" for n in range(8)]
    db = _Assets(monkeypatch, [_row(p) for p in paths])
    monkeypatch.setattr(matching, "KNOWN_PAGE", 3)
    ranges = _ranges()
    assert [r[0] for r in await ranges.rows_through("p06")] == paths[:7]
    # Past a range that ends at no asset's path, the next starts at its end.
    assert await ranges.rows_through("p065") == []
    assert [r[0] for r in await ranges.rows_through(None)] == paths[7:]
    assert db.asked == [
        ("rows", "", "p06"), ("rows", "p02", "p06"), ("rows", "p05", "p06"),
        ("rows", "p06", "p065"), ("rows", "p065", None),
    ]  # fmt: skip


class _FakeWalker:
    """``steps`` steps of one file each; a step can be held (``hold``) until released."""

    def __init__(self, steps: int, ahead_of: list[int] | None = None) -> None:
        self.steps = steps
        self.stepped = 0
        self.taken = ahead_of
        self.too_far: list[int] = []
        self.hold: threading.Event | None = None
        self.holding = threading.Event()
        self.fail: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.stepped == self.steps

    def step(self) -> None:
        if self.taken is not None and self.stepped >= self.taken[0] + ahead.WALK_AHEAD:
            self.too_far.append(self.stepped)
        if self.hold is not None:
            self.holding.set()
            self.hold.wait()
        if self.fail is not None:
            raise self.fail
        self.stepped += 1

    def take_batch(self) -> WalkBatch:
        return WalkBatch([_key(f"f{self.stepped:03d}")], [])


async def test_the_walk_ahead_gives_every_batch_in_order_and_says_which_is_last() -> None:
    started = [0]  # how many batches the crawl has asked for
    walker = _FakeWalker(7, ahead_of=started)
    got: list[tuple[str, bool]] = []
    async with ahead.WalkAhead(walker) as walk:  # type: ignore[arg-type]
        last = False
        while not last:
            started[0] += 1
            batch, last = await walk.next()
            got.append((batch.listed[0][0], last))
    assert got == [(f"f{n:03d}", n == 7) for n in range(1, 8)]
    # Never more steps than _WALK_AHEAD past the batches asked for.
    assert walker.too_far == []


async def test_a_walk_that_fails_raises_in_the_crawl() -> None:
    walker = _FakeWalker(5)
    walker.fail = RootUnavailable("the storage root cannot be listed")
    with pytest.raises(RootUnavailable, match="cannot be listed"):
        async with ahead.WalkAhead(walker) as walk:  # type: ignore[arg-type]
            await walk.next()


async def _leaving_during_a_step() -> tuple[_FakeWalker, threading.Event, asyncio.Task[None]]:
    """A walk left (its ``__aexit__`` under way) while its first step is held."""
    walker = _FakeWalker(100)
    walker.hold = hold = threading.Event()
    walk = ahead.WalkAhead(walker)  # type: ignore[arg-type]
    await walk.__aenter__()
    await asyncio.to_thread(walker.holding.wait)  # the first step is under way
    return walker, hold, asyncio.create_task(walk.__aexit__(None, None, None))


async def test_leaving_the_walk_stops_it_and_waits_for_its_step() -> None:
    walker, hold, leaving = await _leaving_during_a_step()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not leaving.done()  # the step still runs: the storage must stay open
    hold.set()
    await leaving
    assert walker.stepped == 1  # stopped after the step under way, with room for more


async def test_a_cancelled_crawl_still_waits_for_the_walks_step() -> None:
    walker = _FakeWalker(100)
    walker.hold = threading.Event()

    async def crawl() -> None:
        async with ahead.WalkAhead(walker) as walk:  # type: ignore[arg-type]
            await walk.next()

    task = asyncio.create_task(crawl())
    await asyncio.to_thread(walker.holding.wait)  # the first step is under way
    task.cancel()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()  # cancelled, but waiting for the step to end
    walker.hold.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert walker.stepped == 1


async def test_a_crawl_cancelled_while_it_waits_for_the_walk_still_waits_then_is_cancelled() -> (
    None
):
    walker, hold, leaving = await _leaving_during_a_step()
    for _ in range(5):
        await asyncio.sleep(0)
    leaving.cancel()  # while it waits for the step
    for _ in range(20):
        await asyncio.sleep(0)
    assert not leaving.done()  # the cancellation does not cut the wait short
    hold.set()
    with pytest.raises(asyncio.CancelledError):
        await leaving  # and it is not swallowed either
    assert walker.stepped == 1


async def test_the_walk_runs_in_a_thread_of_its_own_that_never_holds_the_process() -> None:
    seen: list[tuple[str, bool]] = []

    class Recording(_FakeWalker):
        def step(self) -> None:
            thread = threading.current_thread()
            seen.append((thread.name, thread.daemon))
            super().step()

    async with ahead.WalkAhead(Recording(1)) as walk:  # type: ignore[arg-type]
        assert await walk.next() == (WalkBatch([_key("f001")], []), True)
    # Named for a profile or a stack dump; a daemon, so that a second signal's exit at
    # once is never held by a step under way.
    assert seen == [("safelight-walk", True)]
