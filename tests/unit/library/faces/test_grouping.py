"""Faces into people with synthetic descriptors (``library.faces.grouping``): a fresh face
joins the person of the nearest placed face under the threshold; faces that join nobody
cluster into new people of at least two; a lone face stays unplaced; placed faces never
move; unplaced faces near a fresh one come along; the result is the same each run."""

from __future__ import annotations

import numpy as np
import pytest

from safelight.library.faces.descriptors import DIMENSIONS
from safelight.library.faces.grouping import (
    NO_FACES,
    THRESHOLD,
    Faces,
    Grouping,
    clusters,
    group,
)

RNG = np.random.default_rng(32)


def centre(n: int) -> np.ndarray:
    """The n-th axis: people's centres are 1.41 apart, far beyond the threshold."""
    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    vector[n] = 1.0
    return vector


def near(person: int, distance: float = 0.2) -> np.ndarray:
    """A face of ``person``: its centre moved ``distance`` in a random direction."""
    step = RNG.normal(size=DIMENSIONS).astype(np.float32)
    return centre(person) + distance * step / np.linalg.norm(step)


def faces(ids: list[int], vectors: list[np.ndarray], people: list[int] | None = None) -> Faces:
    return Faces(ids, np.stack(vectors).astype(np.float32), people or ())


def test_a_fresh_face_joins_the_person_of_the_nearest_placed_face() -> None:
    placed = faces([1, 2, 3], [near(0), near(0), near(1)], [10, 10, 11])
    unplaced = faces([4, 5], [near(1), near(0)])
    assert group(placed, unplaced, frozenset({4, 5})) == Grouping({4: 11, 5: 10}, [])


def test_the_nearest_face_counts_not_the_mean() -> None:
    # Person 10 has two faces far apart (young and old): a face near the old one joins,
    # though it is beyond the threshold from the person's mean.
    young, old = centre(0), centre(0) + 1.4 * centre(5)
    placed = faces([1, 2], [young, old], [10, 10])
    face = old + 0.1 * centre(6)
    assert np.linalg.norm(face - (young + old) / 2) > THRESHOLD
    unplaced = faces([3], [face])
    assert group(placed, unplaced, frozenset({3})).joins == {3: 10}


@pytest.mark.parametrize(
    ("distance", "joins"), [(THRESHOLD - 0.01, True), (THRESHOLD + 0.01, False)]
)
def test_a_face_beyond_the_threshold_joins_nobody(distance: float, joins: bool) -> None:
    placed = faces([1], [centre(0)], [10])
    unplaced = faces([2], [centre(0) + distance * centre(1)])
    assert (group(placed, unplaced, frozenset({2})).joins == {2: 10}) is joins


def test_faces_that_join_nobody_make_new_people_and_a_lone_face_stays_unplaced() -> None:
    unplaced = faces([1, 2, 3, 4, 5, 6], [near(0), near(1), near(0), near(1), near(0), near(2)])
    # Face 6, alone, is no person: it stays unplaced, for a face of its person to come.
    assert group(NO_FACES, unplaced, frozenset(range(1, 7))) == Grouping({}, [[1, 3, 5], [2, 4]])


def test_unplaced_faces_near_a_fresh_one_come_along_and_others_wait() -> None:
    # Face 1 was found before, alone; face 2 of the same person is found now: the two
    # make a person. Face 3, of someone else and near no fresh face, stays as it is.
    unplaced = faces([1, 2, 3], [near(0), near(0), near(1)])
    assert group(NO_FACES, unplaced, frozenset({2})) == Grouping({}, [[1, 2]])


def test_an_unplaced_face_near_a_fresh_one_also_joins_a_person_it_is_near() -> None:
    placed = faces([1], [near(0)], [10])
    unplaced = faces([2, 3], [near(0), near(0)])
    assert group(placed, unplaced, frozenset({3})) == Grouping({2: 10, 3: 10}, [])


def test_placed_faces_are_never_placed_again() -> None:
    """Only unplaced faces are in the result, however near a placed face is to another
    person: placed faces are only what others join."""
    placed = faces([1, 2], [near(0), near(0)], [10, 11])
    unplaced = faces([3], [near(0)])
    result = group(placed, unplaced, frozenset({3}))
    assert set(result.joins) == {3} and result.joins[3] in (10, 11)
    assert result.new_people == []


def test_nothing_fresh_places_nothing() -> None:
    unplaced = faces([1, 2], [near(0), near(0)])
    assert group(NO_FACES, unplaced, frozenset()) == Grouping()


def test_the_same_faces_group_the_same_way_each_run() -> None:
    vectors = [near(n % 4, 0.25) for n in range(40)]
    unplaced = faces(list(range(1, 41)), vectors)
    first = group(NO_FACES, unplaced, frozenset(range(1, 41)))
    assert [group(NO_FACES, unplaced, frozenset(range(1, 41))) for _ in range(3)] == [first] * 3
    assert sorted(first.new_people) == [list(range(k, 41, 4)) for k in (1, 2, 3, 4)]


def test_clusters_keep_two_groups_apart_across_one_face_between_them() -> None:
    """Two tight groups, 0.9 apart, and one face half-way, within the threshold of both:
    label propagation keeps the groups apart (single linkage would make one of all)."""
    a = [centre(0) + 0.05 * centre(10 + i) for i in range(5)]
    b = [centre(0) + 0.9 * centre(1) + 0.05 * centre(20 + i) for i in range(5)]
    between = centre(0) + 0.45 * centre(1)
    found = clusters(np.stack([*a, *b, between]).astype(np.float32))
    assert len(found) == 2
    assert {0, 1, 2, 3, 4} <= set(found[0]) and {5, 6, 7, 8, 9} <= set(found[1])


def test_faces_that_do_not_fit_their_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="2 ids but descriptors"):
        Faces([1, 2], np.zeros((1, DIMENSIONS), dtype=np.float32))
    with pytest.raises(ValueError, match="2 faces but 1 people"):
        Faces([1, 2], np.zeros((2, DIMENSIONS), dtype=np.float32), [10])
