"""Similar shots (ADR 0066): near-identical photos of one scene and time, shown as one
tile like a burst. Pure rules on plain values, unit-tested.

Two photos are linked when both hold for the pair:

- their picture hashes (``fingerprints``, stored with the asset) are at most
  ``SIMILAR_MAX_BITS`` apart: the threshold ``bench/similar.py`` measured;
- their capture times, each read from the photo itself (not its file's time, which
  says when it was copied), are at most ``WINDOW`` apart: two pictures that look alike
  but were taken at other moments (the same view on two days, two blue skies) are two
  memories, and a hash alone cannot tell them apart.

A group is what the links join (single linkage), of two photos or more: a reshoot of a
reshoot joins its first. Only photos shown as themselves take part: one stacked on
another (a RAW, a copy, a format, ADR 0027/0056) is already behind its primary, and one
in a burst is already folded into the burst's tile (the burst_detection handler leaves
both out before calling ``group_similar``).

Each group's primary, the photo its tile shows, is the earliest (by capture time, then
path, then id), so that it does not move when a later reshoot joins.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from safelight.library.grouping.fingerprints import distance

SIMILAR_MAX_BITS = 12
"""The largest Hamming distance between the picture hashes of two similar shots. On the
labelled set of bench/similar.py (95 distinct sample photos, 14 variants of each), no
two distinct photos are within 12 bits even without the time window (the nearest are
14 apart); re-encodes, resizes, colour and brightness edits fall within it (nine in ten
at 4 bits or less), crops of 10% and more mostly do not."""

WINDOW = timedelta(minutes=2)
"""The longest time between two linked shots. A reshoot of one scene (the framing
fixed, eyes open this time, a second exposure) follows within a minute or two; later,
the light, the people and the framing have moved on, and it is another moment."""


@dataclass(frozen=True, slots=True)
class Picture:
    id: int
    file_path: str
    captured_at: datetime
    picture_hash: int


@dataclass(frozen=True, slots=True)
class SimilarGroup:
    primary_id: int
    asset_ids: tuple[int, ...]
    """Members in capture order, the primary first."""


def _order(picture: Picture) -> tuple[datetime, str, int]:
    return (picture.captured_at, picture.file_path, picture.id)


def similar(a: Picture, b: Picture) -> bool:
    """Whether two photos are linked: alike, and taken within the window."""
    return (
        abs(a.captured_at - b.captured_at) <= WINDOW
        and distance(a.picture_hash, b.picture_hash) <= SIMILAR_MAX_BITS
    )


def group_similar(pictures: Iterable[Picture]) -> list[SimilarGroup]:
    """The similar groups among ``pictures``, ordered by primary; each photo is in at
    most one. A photo is compared only with those taken within the window of it."""
    ordered = sorted(pictures, key=_order)
    times = [p.captured_at for p in ordered]
    parent = list(range(len(ordered)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for i, picture in enumerate(ordered):
        end = bisect_right(times, picture.captured_at + WINDOW, lo=i + 1)
        for j in range(i + 1, end):
            if similar(picture, ordered[j]):
                parent[root(j)] = root(i)
    members: dict[int, list[Picture]] = defaultdict(list)
    for n, picture in enumerate(ordered):
        members[root(n)].append(picture)
    groups = [
        SimilarGroup(group[0].id, tuple(p.id for p in group))
        for group in members.values()
        if len(group) >= 2
    ]
    groups.sort(key=lambda g: g.primary_id)
    return groups


def reuse_ids(
    groups: Iterable[SimilarGroup], current: Mapping[int, int | None]
) -> list[tuple[int | None, SimilarGroup]]:
    """Each group with the id of the stored group it continues, None for a new one:
    the stored group most of its members are in now (the lowest id on a tie), each
    stored group continued by one found group at most. ``current``: each photo's
    stored group. So a rerun over the same photos keeps every id, and a group that
    gains or loses a member keeps its id."""
    listed = list(groups)
    claims: list[tuple[int, int, int]] = []
    for number, group in enumerate(listed):
        counts: dict[int, int] = defaultdict(int)
        for asset_id in group.asset_ids:
            stored = current.get(asset_id)
            if stored is not None:
                counts[stored] += 1
        claims.extend((-count, stored, number) for stored, count in counts.items())
    taken: set[int] = set()
    chosen: dict[int, int] = {}
    for _, stored, number in sorted(claims):
        if stored not in taken and number not in chosen:
            taken.add(stored)
            chosen[number] = stored
    return [(chosen.get(number), group) for number, group in enumerate(listed)]
