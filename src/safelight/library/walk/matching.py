"""The walk's files matched with a config's live assets, both in path order, batch by
batch (ADR 0033): a range of assets compared by its digest first, read as rows only
where that is not the walk's, and the keys of the two sides merged a run at a time.
Neither side is ever held whole."""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg

from safelight.library.catalogue import assets
from safelight.library.catalogue.assets import KnownAsset, KnownRow, known_asset
from safelight.library.walk.decisions import StatKey
from safelight.library.walk.walker import WalkBatch, WalkedFile, walked_file

KNOWN_PAGE = 5000
"""Known assets read per page (``KnownRanges``)."""


class KnownInPathOrder:
    """A config's live assets, read in path order and matched with the walk's files,
    given out in the same order, batch by batch: neither side is ever held whole,
    whatever the library's size.

    The crawl reads, for each batch of the walk, the rows (``assets.KnownRow``) of its
    range: after the last path of the batch before (the first: every path) and up to
    its own last path (the last batch: to the end), in short queries of a page each, so
    no transaction is held for the walk. It first asks the database for the digest of
    that range's keys (``stat_keys_digest``): equal, every file of the batch is its
    asset, unchanged, and no row is read at all. A range is read only once the walk has
    given out its batch, and the crawl writes an asset only at a path the walk has given
    out (or moves one away from its old path), so a range shows the assets as they were
    when the crawl began, except an asset this crawl moved away from a path in it: it
    comes up at its old path if the range was read before the move (the crawl keeps
    those, ``kept``), and no longer does if not.

    Each row begins with its asset's ``decisions.StatKey``, and each file the walk gives
    out is one (``WalkBatch.listed``): equal keys are an unchanged file, compared a run at
    a time as tuples (``match_keys``), so an unchanged file costs no object and no call;
    only where the keys differ does the merge go by path, file by file.
    """

    def __init__(self) -> None:
        self._rows: list[KnownRow] = []
        self._keys: list[StatKey] = []
        """``_rows``' keys; both from ``_at`` on are read and not yet matched."""
        self._at = 0

    def feed_rows(self, rows: Sequence[KnownRow]) -> None:
        """The rows of the next range (in path order, after the last)."""
        if self._at:
            del self._rows[: self._at], self._keys[: self._at]
            self._at = 0
        self._rows += rows
        self._keys += map(_STAT_KEY_OF_ROW, rows)

    def match_keys(self, keys: list[StatKey]) -> Matched:
        """Each file of a batch (its key; in path order, after every earlier batch; the
        rows of its range fed) with the known asset at its path, and the known assets
        before that path that no file has: not walked."""
        rows, known, j = self._rows, self._keys, self._at
        at_path: list[KnownRow | None] = []
        differing: list[int] = []
        unseen: list[KnownRow] = []
        i = 0
        while i < len(keys):
            run = _equal_run(keys, i, known, j)
            if run:
                at_path += rows[j : j + run]
                i += run
                j += run
                if i == len(keys):
                    break
            # The keys differ here: a changed file, a new one, or assets not walked.
            path = keys[i][0]
            while j < len(rows) and rows[j][0] < path:
                unseen.append(rows[j])
                j += 1
            if j < len(rows) and rows[j][0] == path:
                at_path.append(rows[j])
                if known[j] != keys[i]:
                    differing.append(i)
                j += 1
            else:
                at_path.append(None)
                differing.append(i)
            i += 1
        self._at = j
        return Matched(at_path, differing, unseen)

    def rest(self) -> list[KnownAsset]:
        """What is left once the walk is done (and the last range read): not walked."""
        rest = [known_asset(row) for row in self._rows[self._at :]]
        self._rows, self._keys, self._at = [], [], 0
        return rest


_STAT_KEY_OF_ROW: Callable[[KnownRow], StatKey] = operator.itemgetter(slice(0, 6))
"""A known row's ``decisions.StatKey``: its first six columns."""

_FIRST_RUN = 16
"""The first run of keys ``_equal_run`` compares at once; each next one is twice as long."""


def stat_keys_digest(keys: Sequence[StatKey]) -> bytes:
    """The SHA-256 of ``keys`` (in path order) as the database computes it for the same
    keys of its assets (``assets.live_digest_in_range``, the query
    ``assets_live_of_config_digest_in_range`` says how): each key as its path prefixed by
    its length, its size and its mtime, then, if it has one, its sidecar's path (so
    prefixed), size and mtime, separated by U+001F; the keys separated by U+001E."""
    text = "\x1e".join(
        [
            f"{len(path)}:{path}\x1f{size}\x1f{mtime}"
            if sidecar is None
            else f"{len(path)}:{path}\x1f{size}\x1f{mtime}"
            f"\x1f{len(sidecar)}:{sidecar}\x1f{sidecar_size}\x1f{sidecar_mtime}"
            for path, size, mtime, sidecar, sidecar_size, sidecar_mtime in keys
        ]
    )
    return hashlib.sha256(text.encode()).digest()


def _equal_run(walked: list[StatKey], i: int, known: list[StatKey], j: int) -> int:
    """How many keys from ``walked[i]`` on equal those from ``known[j]`` on, one after
    the other. Compared as lists, a run at a time (the runs doubling while they are
    equal), so the interpreter does a few steps per run, not one per file."""
    limit = min(len(walked) - i, len(known) - j)
    run, size = 0, _FIRST_RUN
    while run < limit:
        size = min(size, limit - run)
        these, those = walked[i + run : i + run + size], known[j + run : j + run + size]
        if these != those:
            return run + list(map(operator.eq, these, those)).index(False)
        run += size
        size *= 2
    return run


@dataclass(frozen=True, slots=True)
class Matched:
    """A batch's keys matched with the known assets (``KnownInPathOrder.match_keys``)."""

    at_path: list[KnownRow | None]
    """Per key, the row of the asset at its path, or None."""
    differing: list[int]
    """The indexes of the keys that are not their asset's: a file new or changed."""
    unseen: list[KnownRow]
    """The assets the walk passed without a file: not walked."""


class KnownRanges:
    """The config's live assets, range by range of the walk's batches
    (``KnownInPathOrder``): each range after the last one's end, compared by its digest
    first (``unchanged``), read as rows, a page at a time, only if that is not the
    walk's (``rows_through``). Each query is its own, on the walk's connection, outside
    any transaction: a walk that waits on its workers holds nothing open."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], config_id: UUID) -> None:
        self._conn = conn
        self._config_id = config_id
        self._after = ""
        """Where the ranges compared or read so far end ("": before every path)."""

    async def unchanged(self, keys: list[StatKey]) -> bool:
        """Whether the assets after the last range, up to the last of ``keys``, are
        those keys exactly (their count and digest): then that range is done; if not,
        it is still to be read (``rows_through``)."""
        upto = keys[-1][0]
        count, digest = await assets.live_digest_in_range(
            self._conn, self._config_id, self._after, upto
        )
        if count != len(keys) or digest != stat_keys_digest(keys):
            return False
        self._after = upto
        return True

    async def rows_through(self, upto: str | None) -> list[KnownRow]:
        """Every row after the last range and up to ``upto`` (None: to the end)."""
        rows: list[KnownRow] = []
        while True:
            page = await assets.live_after_path(
                self._conn, self._config_id, self._after, upto, KNOWN_PAGE
            )
            rows += page
            if page:
                self._after = page[-1][0]
            if len(page) < KNOWN_PAGE:
                break
        if upto is not None:
            self._after = upto
        return rows


@dataclass(frozen=True, slots=True)
class MatchedBatch:
    """One step's files matched with the known assets (``WalkMatcher.match``)."""

    differing: list[tuple[WalkedFile, KnownAsset | None]]
    """The files whose key is not their asset's (new, changed, or a followed link's),
    each with the live asset at its path, if any: only these become objects."""
    not_walked: list[KnownAsset]
    """The assets the matching passed without a file."""


class WalkMatcher:
    """The walk's batches, in path order, matched with the config's live assets: the
    one place that pairs a walked file with the asset at its path. ``conn``: the walk's
    own connection (autocommit), each query its own (``KnownRanges``)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], config_id: UUID) -> None:
        self._conn = conn
        self._config_id = config_id
        self._ranges = KnownRanges(conn, config_id)
        self._known = KnownInPathOrder()

    async def match(self, batch: WalkBatch, last: bool) -> MatchedBatch:
        """``batch`` (``last``: the walk's last) matched: the files that differ from
        their asset, and the assets no file was listed for."""
        listed = batch.listed
        differing: list[tuple[WalkedFile, KnownAsset | None]] = []
        not_walked: list[KnownAsset] = []
        if listed and not last and await self._ranges.unchanged(listed):
            pass  # the batch's range holds exactly its files' keys: all unchanged
        elif listed or last:
            # The last range is read to the end before the followed links' files are
            # decided: an asset moved to or ingested at a link's path must not come up
            # in a range read after that, as not walked.
            self._known.feed_rows(await self._ranges.rows_through(None if last else listed[-1][0]))
            if listed:
                matched = self._known.match_keys(listed)
                not_walked += [known_asset(row) for row in matched.unseen]
                differing = [
                    (walked_file(listed[i]), _known_or_none(matched.at_path[i]))
                    for i in matched.differing
                ]
            if last:
                not_walked += self._known.rest()
        # The files of followed links (given out last, once the walk is done) are at
        # paths the matching has passed: those are looked up.
        followed = batch.followed
        if followed:
            found = await assets.live_at_paths(
                self._conn, self._config_id, [f.path for f in followed]
            )
            at = {a.file_path: a for a in found}
            differing += [(f, at.get(f.path)) for f in followed]
        return MatchedBatch(differing, not_walked)


def _known_or_none(row: KnownRow | None) -> KnownAsset | None:
    return None if row is None else known_asset(row)
