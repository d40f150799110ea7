"""The crawl's unchanged path compares keys, not objects (``decisions.StatKey``): the
walk gives out each file as its key, the known rows begin with theirs, and runs of them
are compared at once (``KnownInPathOrder.match_keys``). These check that a key says what
``decisions.by_stat`` says, that the matching is exact wherever a run, a batch or a
page ends, and that a digest of keys (``stat_keys_digest``) tells every list of keys
from every other."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import random
from pathlib import Path

import pytest

from safelight.library.catalogue.assets import KnownAsset, KnownRow, known_asset
from safelight.library.files.originals import StorageRoot
from safelight.library.media.sidecars import SidecarFile
from safelight.library.walk import matching as match_module
from safelight.library.walk.decisions import StatKey, Unchanged, by_stat, stat_key
from safelight.library.walk.matching import KnownInPathOrder, stat_keys_digest
from safelight.library.walk.walker import WalkedFile, Walker, walked_file
from safelight.testing.walking import known_row

SIDECARS = [None, SidecarFile("a.xmp", 3, 4), SidecarFile("a.xmp", 3, 5),
            SidecarFile("a.xmp", 2, 4), SidecarFile("a.JPG.xmp", 3, 4)]  # fmt: skip


def test_equal_keys_are_exactly_what_by_stat_calls_unchanged() -> None:
    stats = list(itertools.product((1, 2), (10, 11), SIDECARS))
    for known, walked in itertools.product(stats, repeat=2):
        asset = KnownAsset(7, "a.jpg", "0" * 16, known[0], known[1], "image", known[2])
        same = by_stat(asset, *walked)
        key = stat_key("a.jpg", *walked)
        assert (key == known_row(asset)[:6]) == isinstance(same, Unchanged), (known, walked)


def test_a_row_and_an_asset_are_one_another() -> None:
    for sidecar in SIDECARS:
        asset = KnownAsset(7, "a/b.jpg", "f" * 16, 5, 6, "video", sidecar)
        assert known_asset(known_row(asset)) == asset


def test_a_walked_file_and_its_key_are_one_another() -> None:
    for walked in (
        WalkedFile("a/b.JPG", 5, 6, "image"),
        WalkedFile("a/b.JPG", 5, 6, "image", sidecar=SidecarFile("a/b.xmp", 1, 2)),
        WalkedFile("c.mov", 5, 6, "video"),
    ):
        assert walked_file(walked.key) == walked


def _row(path: str, size: int = 1, asset_id: int = 1) -> KnownRow:
    return (path, size, 10, None, None, None, asset_id, "0" * 16, "image")


def _oracle(
    walked: list[StatKey], known: list[KnownRow]
) -> tuple[set[str], dict[str, int | None], set[int]]:
    """What matching must find, by dictionaries: the differing paths, the asset at each
    walked path, the assets no file has."""
    by_path = {row[0]: row for row in known}
    at = {key[0]: (by_path[key[0]][6] if key[0] in by_path else None) for key in walked}
    differing = {k[0] for k in walked if k[0] not in by_path or by_path[k[0]][:6] != k}
    unseen = {row[6] for row in known if row[0] not in at}
    return differing, at, unseen


def _match_in_pieces(
    walked: list[StatKey], known: list[KnownRow], batch: int, page: int
) -> tuple[set[str], dict[str, int | None], set[int]]:
    """As the crawl matches: per batch, the rows of its range (after the batch before,
    up to its last path; the last batch's, to the end), fed a page at a time."""
    matcher = KnownInPathOrder()
    known_paths = [row[0] for row in known]
    differing: set[str] = set()
    at: dict[str, int | None] = {}
    unseen: set[int] = set()
    read = 0
    for start in range(0, len(walked), batch):
        keys = walked[start : start + batch]
        last = start + batch >= len(walked)
        end = len(known) if last else bisect.bisect_right(known_paths, keys[-1][0])
        for i in range(read, end, page):
            matcher.feed_rows(known[i : min(i + page, end)])
        read = end
        matched = matcher.match_keys(keys)
        assert len(matched.at_path) == len(keys)
        differing |= {keys[i][0] for i in matched.differing}
        at |= {k[0]: (r[6] if r else None) for k, r in zip(keys, matched.at_path, strict=True)}
        unseen |= {row[6] for row in matched.unseen}
    matcher.feed_rows(known[read:])
    unseen |= {a.id for a in matcher.rest()}
    return differing, at, unseen


@pytest.mark.parametrize("seed", range(12))
def test_matching_in_runs_is_exact_wherever_batches_and_pages_end(seed: int) -> None:
    """Libraries of unchanged files with changed, new and deleted ones at random places
    (none, one, many, at either end), matched in batches and pages of every size from
    one to more than all: the same as by dictionaries."""
    rng = random.Random(seed)
    paths = sorted(f"f{n:04d}/{m}.jpg" for n in range(rng.randint(1, 9)) for m in range(40))
    known = [_row(p, asset_id=i) for i, p in enumerate(paths)]
    walked: list[StatKey] = []
    for path in paths:
        roll = rng.random() * (1 if seed % 3 else 0.05)  # some libraries barely change
        if roll < 0.05:
            continue  # deleted: an asset no file has
        walked.append((path, 2 if roll < 0.1 else 1, 10, None, None, None))  # changed
        if roll > 0.97:
            walked.append((path + "0", 1, 10, None, None, None))  # a new file after it
    walked.sort()
    expected = _oracle(walked, known)
    for batch, page in itertools.product((1, 3, 16, 17, 50, 1000), (1, 2, 15, 33, 1000)):
        assert _match_in_pieces(walked, known, batch, page) == expected, (batch, page)


@pytest.mark.parametrize("at", [0, 1, 15, 16, 17, 47, 48, 49, 111, 299])
def test_a_run_ends_at_its_first_difference(at: int) -> None:
    keys: list[StatKey] = [(f"{n:04d}", 1, 1, None, None, None) for n in range(300)]
    known = list(keys)
    known[at] = (known[at][0], 9, 1, None, None, None)
    assert match_module._equal_run(keys, 0, known, 0) == at
    assert match_module._equal_run(keys, at + 1, known, at + 1) == 300 - at - 1
    assert match_module._equal_run(keys, 0, known[:at], 0) == at  # the shorter one ends it


def test_only_the_keys_that_differ_are_merged_path_by_path() -> None:
    """An unchanged file is matched as part of a run of equal keys, compared at once: no
    path of it is compared with another by order, as the merge by path does."""
    ordered: list[str] = []

    class Ordered(str):
        """A path that notes each time it is compared by order."""

        def __lt__(self, other: str) -> bool:
            ordered.append(str(self))
            return str.__lt__(self, other)

    known = [_row(Ordered(f"{n:04d}.jpg"), asset_id=n) for n in range(300)]
    keys: list[StatKey] = [row[:6] for row in known]
    keys[150] = (keys[150][0], 2, *keys[150][2:])  # a changed file
    matcher = KnownInPathOrder()
    matcher.feed_rows(known)
    matched = matcher.match_keys(keys)
    assert matched.at_path == known and matched.differing == [150] and matched.unseen == []
    assert set(ordered) <= {"0150.jpg"}


def test_the_walks_keys_are_its_files_and_runs_split_across_steps(tmp_path: Path) -> None:
    """A folder's files between its subfolders are given out as runs, split wherever a
    step's files end; each key is that file's, its sidecar's stat included."""
    for name in ("a.jpg", "a/b.jpg", "a0.jpg", "a1.jpg", "a-b/c.jpg", "b.jpg", "c.jpg"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * len(name))
    (tmp_path / "b.xmp").write_bytes(b"<x/>")
    os.utime(tmp_path / "b.xmp", ns=(5, 1_000_000_007))
    with StorageRoot(tmp_path) as storage:
        walker = Walker(storage)
        keys: list[StatKey] = []
        while not walker.done:
            walker.step(max_folders=1, max_files=2)
            batch = walker.take_batch()
            assert len(batch.listed) <= 2 and batch.followed == []
            keys += batch.listed
    paths = [k[0] for k in keys]
    assert paths == ["a-b/c.jpg", "a.jpg", "a/b.jpg", "a0.jpg", "a1.jpg", "b.jpg", "c.jpg"]
    for key in keys:
        st = os.stat(tmp_path / key[0])
        assert key[1:3] == (st.st_size, st.st_mtime_ns)
    by_path = {k[0]: k[3:] for k in keys}
    assert by_path["b.jpg"] == ("b.xmp", 4, 1_000_000_007)
    assert by_path["a.jpg"] == (None, None, None)


def test_a_digest_of_keys_is_of_every_field_and_of_their_order() -> None:
    keys: list[StatKey] = [
        ("a.jpg", 1, 10, None, None, None),
        ("b.jpg", 2, -20, "b.xmp", 3, 30),  # an mtime before 1970 is negative
    ]
    digest = stat_keys_digest(keys)
    assert digest == stat_keys_digest(list(keys)) and len(digest) == 32
    assert stat_keys_digest([]) == stat_keys_digest([])
    others: list[list[StatKey]] = [
        [],
        keys[:1],
        keys[::-1],
        [keys[0], ("b.jpg", 2, -20, None, None, None)],
        [keys[0], ("b.jpg", 2, -20, "b.XMP", 3, 30)],
        [keys[0], ("b.jpg", 2, -20, "b.xmp", 4, 30)],
        [keys[0], ("b.jpg", 2, -20, "b.xmp", 3, 31)],
        [keys[0], ("b.jpg", 2, 20, "b.xmp", 3, 30)],
        [keys[0], ("b.jpg", 3, -20, "b.xmp", 3, 30)],
        [keys[0], ("c.jpg", 2, -20, "b.xmp", 3, 30)],
    ]
    digests = [stat_keys_digest(other) for other in others]
    assert digest not in digests and len(set(digests)) == len(digests)


def test_a_digest_is_of_the_text_the_database_aggregates() -> None:
    """The text of ``assets_live_of_config_digest_in_range`` (queries.sql), written out:
    each path prefixed by its length in characters, the fields separated by U+001F, the
    keys by U+001E, none for no keys (tests/integration/test_crawl_digest.py holds the
    query and the function together on PostgreSQL)."""
    keys: list[StatKey] = [
        ("a.jpg", 1, 10, None, None, None),
        ("é/b.jpg", 2, -20, "é/b.xmp", 3, 30),
    ]
    text = "5:a.jpg\x1f1\x1f10\x1e7:é/b.jpg\x1f2\x1f-20\x1f7:é/b.xmp\x1f3\x1f30"
    assert stat_keys_digest(keys) == hashlib.sha256(text.encode()).digest()
    assert stat_keys_digest(keys[:1]) == hashlib.sha256(b"5:a.jpg\x1f1\x1f10").digest()
    assert stat_keys_digest([]) == hashlib.sha256(b"").digest()


def test_no_name_makes_two_lists_of_keys_digest_alike() -> None:
    """The separators may be in a name; a path's length before it keeps each list of
    keys its own encoding: without it, these pairs would encode alike."""
    pairs: list[tuple[list[StatKey], list[StatKey]]] = [
        ([("a", 1, 2, "3", 4, 5)], [("a\x1f1\x1f2\x1f3", 4, 5, None, None, None)]),
        (
            [("a", 1, 2, None, None, None), ("b", 3, 4, None, None, None)],
            [("a\x1f1\x1f2\x1eb", 3, 4, None, None, None)],
        ),
        ([("1:a", 1, 2, None, None, None)], [("a", 1, 2, None, None, None)]),
    ]
    for one, other in pairs:
        assert stat_keys_digest(one) != stat_keys_digest(other), (one, other)
