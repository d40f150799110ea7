"""The people edits and reads of ``library.catalogue.people`` on real PostgreSQL (ADR
0068): naming, merging, splitting and moving, each kept when the grouping runs again
(its rerun simulated by new ``cluster`` faces), refused across configs and for ids
that are not there or not the viewer's; the People reads with their counts and cover;
and who is in a year's photos for "On this day"."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.catalogue import people
from safelight.library.catalogue.configs import StorageConfigs
from safelight.testing.fakeclock import FakeClock
from safelight.testing.people import Family, add_face, faces_of, make_family, person_exists
from safelight.testing.web import TODAY

pytestmark = pytest.mark.integration

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)
LATER = datetime(2026, 6, 16, 8, 30, tzinfo=UTC)
EVERYONE: dict[str, Any] = {"owner": None}


@pytest.fixture
async def family(pool: AsyncConnectionPool[Any], tmp_path: Path) -> AsyncIterator[Family]:
    yield await make_family(pool, tmp_path / "proxies", TODAY, NOW)


async def _name_of(pool: AsyncConnectionPool[Any], person_id: int) -> tuple[Any, ...]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT name, named_by, named_at FROM people WHERE id = %s", (person_id,)
        )
        row = await cur.fetchone()
    assert row is not None
    return tuple(row)


# --- naming --------------------------------------------------------------------------


async def test_a_person_is_named_renamed_and_cleared_with_who_and_when(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        named = await people.name_person(
            conn, family.unnamed, "  Uncle Jo  ", by="alice", now=NOW, **EVERYONE
        )
        assert named.name == "Uncle Jo"  # trimmed
        assert await _name_of(pool, family.unnamed) == ("Uncle Jo", "alice", NOW)
        renamed = await people.name_person(
            conn, family.unnamed, "Joe", by="admin", now=LATER, **EVERYONE
        )
        assert (renamed.name, renamed.named_by, renamed.named_at) == ("Joe", "admin", LATER)
        cleared = await people.name_person(
            conn, family.unnamed, None, by="alice", now=NOW, **EVERYONE
        )
    assert cleared.name is None
    assert await _name_of(pool, family.unnamed) == (None, "alice", NOW)


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("   ", "must not be blank"),
        ("x" * 201, r"at most 200 characters \(201 given\)"),
        ("Ana\u202egpj", "control or format characters"),
        ("Ana\nBob", "control or format characters"),
    ],
    ids=["blank", "too-long", "bidi-override", "newline"],
)
async def test_a_name_that_cannot_be_one_is_refused_and_nothing_changes(
    pool: AsyncConnectionPool[Any], family: Family, given: str, problem: str
) -> None:
    async with pool.connection() as conn:
        with pytest.raises(people.PeopleError, match=problem):
            await people.name_person(conn, family.grandma, given, by="a", now=LATER, **EVERYONE)
    assert await _name_of(pool, family.grandma) == ("Grandma", "alice", NOW)


async def test_a_name_of_200_characters_is_kept_whole(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        named = await people.name_person(
            conn, family.ana, "é" * 200, by="alice", now=NOW, **EVERYONE
        )
    assert named.name == "é" * 200


async def test_a_name_is_kept_when_the_grouping_places_new_faces(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    """A re-crawl's grouping deletes a person's cluster faces and places new ones; the
    name is the person's, not the faces', and stays."""
    async with pool.connection() as conn:
        await people.name_person(conn, family.unnamed, "Jo", by="alice", now=NOW, **EVERYONE)
        await conn.execute(
            "DELETE FROM faces WHERE person_id = %s AND placed_by = 'cluster'", (family.unnamed,)
        )
        for asset in ("tokyo-4y", "live-2y", "photo-1y"):
            await add_face(conn, family.alice.ids[asset], LATER, person_id=family.unnamed, seed=9)
        person = await people.get_person(conn, family.unnamed, **EVERYONE)
    assert (person.name, person.face_count, person.photo_count) == ("Jo", 3, 3)


# --- merging -------------------------------------------------------------------------


async def test_a_merge_moves_every_face_marks_them_a_users_and_deletes_the_source(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        before = await faces_of(conn, family.unnamed)
        merged = await people.merge_people(conn, family.unnamed, family.ana, **EVERYONE)
        after = await faces_of(conn, family.ana)
        gone = not await person_exists(conn, family.unnamed)
    assert gone
    assert merged.faces_moved == 2
    assert merged.person.name == "Ana"  # the target keeps its name
    assert (merged.person.photo_count, merged.person.face_count) == (4, 4)
    assert set(before) <= set(after)
    # Each moved face is a user's now: the grouping leaves it with Ana.
    assert {after[face] for face in before} == {"person"}
    # Ana's own faces are as the grouping placed them.
    assert after[family.faces["ana:motion-3y"]] == "cluster"


async def test_an_unnamed_target_takes_the_sources_name_with_who_named_it(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        merged = await people.merge_people(conn, family.grandma, family.unnamed, **EVERYONE)
    assert merged.person.name == "Grandma"
    assert await _name_of(pool, family.unnamed) == ("Grandma", "alice", NOW)


async def test_a_merge_across_configs_is_refused_and_nothing_moves(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        with pytest.raises(people.OtherConfig, match="different storage configs"):
            await people.merge_people(conn, family.bobs, family.ana, **EVERYONE)
        assert await person_exists(conn, family.bobs)
        assert list(await faces_of(conn, family.bobs)) == [family.faces["bobs:photo-1y"]]
        assert len(await faces_of(conn, family.ana)) == 2


async def test_a_merge_into_itself_or_an_unknown_person_is_refused(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        with pytest.raises(people.PeopleError, match="cannot be merged into itself"):
            await people.merge_people(conn, family.ana, family.ana, **EVERYONE)
        with pytest.raises(people.NoSuchPerson, match="there is no person 999999"):
            await people.merge_people(conn, family.ana, 999999, **EVERYONE)
        assert await person_exists(conn, family.ana)


# --- splitting and moving ------------------------------------------------------------


async def test_a_split_moves_the_chosen_faces_to_a_new_person_of_the_same_config(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    chosen = [family.faces["grandma:jpeg-3y"], family.faces["grandma:burst-3y-a"]]
    async with pool.connection() as conn:
        new = await people.split_person(conn, family.grandma, chosen, now=LATER, **EVERYONE)
        moved = await faces_of(conn, new.id)
        left = await faces_of(conn, family.grandma)
    assert new.id not in (family.grandma, family.ana, family.unnamed, family.bobs)
    assert (new.name, new.storage_config_id, new.created_at) == (
        None,
        family.alice.config_id,
        LATER,
    )
    assert moved == dict.fromkeys(chosen, "person")
    assert set(left) == {family.faces["grandma:photo-1y"], family.faces["grandma:deleted-1y"]}


@pytest.mark.parametrize(
    ("which", "problem"),
    [
        ("none", "choose at least one face"),
        ("anas", "is not one of person"),
        ("all", "leaves at least one"),
        ("unknown", "there is no face 999999"),
    ],
)
async def test_a_split_of_no_face_anothers_face_or_all_is_refused(
    pool: AsyncConnectionPool[Any], family: Family, which: str, problem: str
) -> None:
    faces = family.faces
    chosen = {
        "none": [],
        "anas": [faces["grandma:jpeg-3y"], faces["ana:motion-3y"]],
        "all": [faces["grandma:photo-1y"], faces["grandma:jpeg-3y"], faces["grandma:burst-3y-a"]],
        "unknown": [faces["grandma:jpeg-3y"], 999999],
    }[which]
    async with pool.connection() as conn:
        with pytest.raises(people.PeopleError, match=problem):
            await people.split_person(conn, family.grandma, chosen, now=LATER, **EVERYONE)
        assert len(await faces_of(conn, family.grandma)) == 4
        cur = await conn.execute("SELECT count(*) FROM people")
        assert (await cur.fetchone()) == (4,)


async def test_a_moved_face_is_a_users_and_an_unnamed_person_left_without_faces_goes(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        for asset in ("tokyo-4y", "live-2y"):
            face = family.faces[f"unnamed:{asset}"]
            person = await people.move_face(conn, face, family.ana, **EVERYONE)
            assert (await faces_of(conn, family.ana))[face] == "person"
        assert person.face_count == 4
        assert not await person_exists(conn, family.unnamed)
        # A named person keeps their name when their last face moves away.
        await people.move_face(conn, family.faces["ana:motion-3y"], family.grandma, **EVERYONE)
        for face in list(await faces_of(conn, family.ana)):
            await people.move_face(conn, face, family.grandma, **EVERYONE)
        assert await person_exists(conn, family.ana)


async def test_a_face_moves_only_to_a_person_of_its_own_config(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    face = family.faces["bobs:photo-1y"]
    async with pool.connection() as conn:
        with pytest.raises(people.OtherConfig, match="of its own config"):
            await people.move_face(conn, face, family.ana, **EVERYONE)
        with pytest.raises(people.NoSuchFace):
            await people.move_face(conn, 999999, family.ana, **EVERYONE)
        assert list(await faces_of(conn, family.bobs)) == [face]


async def test_a_split_and_a_move_are_kept_when_the_grouping_runs_again(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    """The grouping moves only ``cluster`` faces: a rerun (simulated as the grouping
    does it, every cluster face taken off its person and placed again) leaves a user's
    split and move where they are."""
    chosen = family.faces["grandma:jpeg-3y"]
    async with pool.connection() as conn:
        new = await people.split_person(conn, family.grandma, [chosen], now=NOW, **EVERYONE)
        await people.move_face(conn, family.faces["ana:motion-3y"], family.grandma, **EVERYONE)
        await conn.execute("UPDATE faces SET person_id = NULL WHERE placed_by = 'cluster'")
        await add_face(conn, family.alice.ids["jpeg-3y"], LATER, person_id=family.grandma)
        assert await faces_of(conn, new.id) == {chosen: "person"}
        grandma = await faces_of(conn, family.grandma)
    assert grandma[family.faces["ana:motion-3y"]] == "person"
    assert list(grandma.values()).count("cluster") == 1


# --- reads ---------------------------------------------------------------------------


async def test_the_people_list_counts_live_photos_and_covers_with_the_newest_largest_face(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        listed = await people.list_people(conn, owner="alice")
    by_id = {p.id: p for p in listed}
    assert [p.id for p in listed] == [family.grandma, family.ana, family.unnamed]
    grandma = by_id[family.grandma]
    # deleted-1y's face is not counted: a soft-deleted photo is not shown.
    assert (grandma.photo_count, grandma.face_count) == (3, 3)
    assert grandma.cover_face_id == family.faces["grandma:photo-1y"]
    assert grandma.cover_asset_id == family.alice.ids["photo-1y"]
    assert grandma.cover_preview_path is not None
    assert grandma.cover_box == pytest.approx((0.2, 0.1, 0.7, 0.8))
    assert by_id[family.ana].cover_face_id == family.faces["ana:photo-1y"]


async def test_a_cover_prefers_a_photo_with_a_preview_and_the_largest_face(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        # bare-5y has no proxies: never a cover, however new or large its face.
        await conn.execute(
            "UPDATE assets SET captured_at = %s WHERE id = %s", (LATER, family.alice.ids["bare-5y"])
        )
        await add_face(
            conn, family.alice.ids["bare-5y"], NOW, person_id=family.ana, box=(0, 0, 1, 1)
        )
        # A second, larger face of Ana in photo-1y: the largest face of the newest photo.
        larger = await add_face(
            conn, family.alice.ids["photo-1y"], NOW, person_id=family.ana, box=(0.1, 0.1, 0.5, 0.9)
        )
        ana = await people.get_person(conn, family.ana, owner="alice")
    assert ana.cover_face_id == larger
    assert (ana.photo_count, ana.face_count) == (3, 4)


async def test_a_persons_photos_come_newest_first_with_their_faces(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        photos = await people.person_photos(conn, family.grandma, owner="alice")
    ids = family.alice.ids
    assert [p["id"] for p in photos] == [ids["photo-1y"], ids["burst-3y-a"], ids["jpeg-3y"]]
    assert photos[0]["faces"] == [
        {"id": family.faces["grandma:photo-1y"], "box": pytest.approx((0.2, 0.1, 0.7, 0.8))}
    ]
    assert all(p["thumbnail_path"] and p["preview_path"] for p in photos)


async def test_a_viewer_of_another_config_sees_and_edits_nothing_of_it(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        assert [p.id for p in await people.list_people(conn, owner="bob")] == [family.bobs]
        assert await people.list_people(conn, owner="carol") == []
        with pytest.raises(people.NoSuchPerson):
            await people.get_person(conn, family.grandma, owner="bob")
        assert await people.person_photos(conn, family.grandma, owner="bob") == []
        assert await people.face_source(conn, family.faces["grandma:photo-1y"], owner="bob") is None
        with pytest.raises(people.NoSuchPerson, match=f"there is no person {family.grandma}$"):
            await people.name_person(conn, family.grandma, "Mine", by="bob", now=NOW, owner="bob")
        with pytest.raises(people.NoSuchPerson):
            await people.merge_people(conn, family.ana, family.grandma, owner="bob")
        with pytest.raises(people.NoSuchPerson):
            await people.split_person(
                conn, family.grandma, [family.faces["grandma:jpeg-3y"]], now=NOW, owner="bob"
            )
        with pytest.raises(people.NoSuchFace):
            await people.move_face(conn, family.faces["grandma:jpeg-3y"], family.bobs, owner="bob")
        # Bob's face named in alice's split is as a face that does not exist to her.
        bobs_face = family.faces["bobs:photo-1y"]
        with pytest.raises(people.NoSuchFace, match=f"there is no face {bobs_face}$"):
            await people.split_person(
                conn,
                family.grandma,
                [family.faces["grandma:jpeg-3y"], bobs_face],
                now=NOW,
                owner="alice",
            )
        named = await people.named_people_on_days(
            conn, month=6, days=[15], years=[2025, 2023], owner="bob"
        )
    assert named == {}
    assert await _name_of(pool, family.grandma) == ("Grandma", "alice", NOW)


async def test_a_disabled_configs_people_are_the_operators_alone(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    await StorageConfigs(pool, FakeClock(NOW)).disable(family.bob.config_id)
    async with pool.connection() as conn:
        assert await people.list_people(conn, owner=None) != []
        assert family.bobs not in [p.id for p in await people.list_people(conn, owner=None)]
        listed = await people.list_people(conn, owner=None, with_disabled=True)
        assert family.bobs in [p.id for p in listed]
        with pytest.raises(people.NoSuchPerson):
            await people.name_person(conn, family.bobs, "B", by="bob", now=NOW, owner="bob")


async def test_the_named_people_of_each_years_photos_on_a_day(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    async with pool.connection() as conn:
        # Ana in one more photo of 2023 than Grandma: she comes first that year.
        await add_face(conn, family.alice.ids["burst-3y-b"], NOW, person_id=family.ana)
        await add_face(conn, family.alice.ids["burst-3y-c"], NOW, person_id=family.ana)
        named = await people.named_people_on_days(
            conn, month=6, days=[15], years=[2025, 2024, 2023, 2022], owner=None
        )
    # 2025: photo-1y has both, the same count: by name. 2022's tokyo-4y: nobody named.
    # deleted-1y (Grandma's) and other-day-1y are not of the day's shown photos.
    assert named == {2025: ["Ana", "Grandma"], 2023: ["Ana", "Grandma"]}


# --- races ---------------------------------------------------------------------------


async def test_a_merge_waiting_on_a_person_another_edit_deletes_moves_nothing(
    pool: AsyncConnectionPool[Any], family: Family
) -> None:
    """Two edits of one person at once: the second waits on the first's lock (held here
    by hand, as a merge of Ana into Grandma holds it), and once the first has deleted
    the person, the second is told there is no such person; no face is left with a
    person that is gone."""
    async with pool.connection() as holder, pool.connection() as editor:
        await holder.set_autocommit(False)
        await holder.execute("SELECT id FROM people WHERE id = %s FOR UPDATE", (family.ana,))
        waiting = asyncio.create_task(
            people.merge_people(editor, family.ana, family.unnamed, **EVERYONE)
        )
        # The merge is blocked on the lock: PostgreSQL says so, no sleep decides it.
        blocked = False
        while not blocked and not waiting.done():
            blocked = await _waits_on_a_lock(pool)
        await people.merge_people(holder, family.ana, family.grandma, **EVERYONE)
        await holder.commit()
        with pytest.raises(people.NoSuchPerson, match=f"there is no person {family.ana}$"):
            await waiting
    async with pool.connection() as conn:
        assert len(await faces_of(conn, family.grandma)) == 6
        assert len(await faces_of(conn, family.unnamed)) == 2
        cur = await conn.execute(
            "SELECT count(*) FROM faces f WHERE f.person_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM people p WHERE p.id = f.person_id)"
        )
        assert await cur.fetchone() == (0,)


async def _waits_on_a_lock(pool: AsyncConnectionPool[Any]) -> bool:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        row = await cur.fetchone()
    return row is not None and row[0] > 0
