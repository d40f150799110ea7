"""Faces into people, per config, incrementally: a pure function of descriptors.

- A face found now (``fresh``) joins the person of the nearest placed face, if that face
  is nearer than :data:`THRESHOLD` (Euclidean, between descriptors): the nearest face,
  not the nearest mean, so a person seen young and old keeps both.
- The fresh faces that join nobody, with the unplaced faces near one of them, are
  clustered among themselves (:func:`clusters`, label propagation over the pairs nearer
  than the threshold); each cluster of at least :data:`MIN_FACES` becomes a new person.
  A face left alone stays unplaced, and may join a person found later.
- Nothing else moves: a placed face stays with its person (the grouping only places
  unplaced faces), and a face a user placed (``placed_by = 'person'``) or took out of
  every person is not among the candidates at all (``catalogue.faces`` reads them so).

Faces of one config only: a person never spans configs (the caller reads one config).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from safelight.library.faces.descriptors import DIMENSIONS, Vectors

THRESHOLD = 0.5
"""The distance under which two faces are one person. dlib documents 0.6 (its model was
trained to keep identities in balls of radius 0.6, and LFW's pairs split there); on the
faces at hand (docs/benchmarks.md, "Faces") 0.6 put 4 of 89 pairs of different people
together and 0.5 none, while the same faces made over fell either well under 0.45 or
over 0.65: 0.5 loses no pair 0.6 finds there. A person split in two is merged in a
click; a stranger in someone's photos is worse."""
MIN_FACES = 2
"""Faces a new person starts with: a face seen once (a stranger in the background)
makes no person on its own."""
ROUNDS = 50
"""Label propagation stops once no label changes, or after this many passes."""
_CHUNK = 1024
"""Rows of a distance matrix computed at once (1024 x n float32)."""


@dataclass(frozen=True, slots=True)
class Faces:
    """Faces by id, with their descriptors (one row each) and, when placed, people."""

    ids: Sequence[int]
    vectors: Vectors
    people: Sequence[int] = ()
    """The person of each face (placed faces only)."""

    def __post_init__(self) -> None:
        if self.vectors.shape != (len(self.ids), DIMENSIONS):
            raise ValueError(f"{len(self.ids)} ids but descriptors of shape {self.vectors.shape}")
        if self.people and len(self.people) != len(self.ids):
            raise ValueError(f"{len(self.ids)} faces but {len(self.people)} people")


NO_FACES = Faces((), np.zeros((0, DIMENSIONS), dtype=np.float32))


@dataclass(frozen=True, slots=True)
class Grouping:
    joins: dict[int, int] = field(default_factory=dict)
    """Face id -> the existing person it joins."""
    new_people: list[list[int]] = field(default_factory=list)
    """Each new person's faces, by id (ascending; people in order of their first face)."""


def group(
    placed: Faces, unplaced: Faces, fresh: frozenset[int], threshold: float = THRESHOLD
) -> Grouping:
    """Where the ``fresh`` faces (ids of ``unplaced``) go, and the unplaced faces near them.

    ``placed``: the config's faces that have a person (``people`` given); ``unplaced``:
    its faces that have none and may be placed, the fresh ones among them."""
    if not fresh:
        return Grouping()
    index = {face_id: i for i, face_id in enumerate(unplaced.ids)}
    fresh_rows = sorted(index[f] for f in fresh if f in index)
    near = _near_any(unplaced.vectors, unplaced.vectors[fresh_rows], threshold)
    rows = sorted(set(fresh_rows) | set(np.flatnonzero(near).tolist()))
    candidates = unplaced.vectors[rows]
    joins: dict[int, int] = {}
    alone: list[int] = []
    nearest, distance = _nearest(candidates, placed.vectors)
    for k, row in enumerate(rows):
        if nearest[k] >= 0 and distance[k] < threshold:
            joins[unplaced.ids[row]] = placed.people[nearest[k]]
        else:
            alone.append(row)
    new_people: list[list[int]] = []
    for members in clusters(unplaced.vectors[alone], threshold):
        if len(members) >= MIN_FACES:
            new_people.append(sorted(unplaced.ids[alone[m]] for m in members))
    new_people.sort(key=lambda ids: ids[0])
    return Grouping(joins, new_people)


def clusters(vectors: Vectors, threshold: float = THRESHOLD) -> list[list[int]]:
    """The rows of ``vectors`` in clusters: label propagation (Chinese whispers, in a
    fixed order so the result is the same each run) over the pairs nearer than
    ``threshold``, each pair of weight one. Every row is in exactly one cluster."""
    n = len(vectors)
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for start in range(0, n, _CHUNK):
        block = _distances(vectors[start : start + _CHUNK], vectors)
        for i, j in zip(*np.nonzero(block < threshold), strict=True):
            if start + int(i) != int(j):
                neighbours[start + int(i)].append(int(j))
    labels = list(range(n))
    for _ in range(ROUNDS):
        changed = False
        for node in range(n):
            if not neighbours[node]:
                continue
            weight: dict[int, int] = {}
            for other in neighbours[node]:
                weight[labels[other]] = weight.get(labels[other], 0) + 1
            best = min(weight, key=lambda label: (-weight[label], label))
            if best != labels[node]:
                labels[node], changed = best, True
        if not changed:
            break
    by_label: dict[int, list[int]] = {}
    for node, label in enumerate(labels):
        by_label.setdefault(label, []).append(node)
    return sorted(by_label.values(), key=lambda members: members[0])


def _distances(a: Vectors, b: Vectors) -> npt.NDArray[np.float32]:
    """Euclidean distances, (len(a), len(b))."""
    squared = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    distances: npt.NDArray[np.float32] = np.sqrt(np.maximum(squared, 0.0)).astype(np.float32)
    return distances


def _nearest(a: Vectors, b: Vectors) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """For each row of ``a``, the nearest row of ``b`` (-1 when ``b`` is empty) and its
    distance."""
    if len(b) == 0:
        return np.full(len(a), -1, dtype=np.int64), np.full(len(a), np.inf, dtype=np.float32)
    nearest = np.empty(len(a), dtype=np.int64)
    distance = np.empty(len(a), dtype=np.float32)
    for start in range(0, len(a), _CHUNK):
        best = np.full(min(_CHUNK, len(a) - start), np.inf, dtype=np.float32)
        where = np.full(len(best), -1, dtype=np.int64)
        for other in range(0, len(b), _CHUNK):
            block = _distances(a[start : start + _CHUNK], b[other : other + _CHUNK])
            closest = block.argmin(1)
            value = block[np.arange(len(closest)), closest]
            better = value < best
            best[better], where[better] = value[better], closest[better] + other
        nearest[start : start + len(best)], distance[start : start + len(best)] = where, best
    return nearest, distance


def _near_any(vectors: Vectors, of: Vectors, threshold: float) -> npt.NDArray[np.bool_]:
    """For each row of ``vectors``: whether some row of ``of`` is nearer than ``threshold``."""
    if len(of) == 0:
        return np.zeros(len(vectors), dtype=np.bool_)
    _, distance = _nearest(vectors, of)
    return distance < threshold
