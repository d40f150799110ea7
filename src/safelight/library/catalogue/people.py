"""The people of a config as its users see and edit them (ADR 0068): the one owner of
a user's edits to people (name, merge, split, move a face) and of the people reads
(the People page, a person's photos, who is in a year's photos "On this day"). The
face grouping (``library/faces/``) finds faces and places them; this module never
groups.

What an edit promises, and the grouping relies on:

- A person never spans two configs (the faces' composite key says so too): a merge,
  a split and a move stay inside one config, and an edit across two is refused with a
  :class:`PeopleError` that says so.
- A face a user placed (a merge's, a split's, a move's) is ``placed_by = 'person'``:
  the grouping leaves it where it is, so a rerun never undoes an edit.
- A name is a user's: the grouping never sets or clears it, so it survives a re-crawl
  and a re-clustering. A merge keeps the target's name, or takes the source's when the
  target has none.

Every edit runs in one transaction that first locks the rows it changes (people in id
order, then faces), so two edits, or an edit and the grouping, cannot interleave
halfway. Each read and edit takes ``owner``, keyword-only and without a default, so no
caller can forget it: the viewer's ``Viewer.owner`` (None: every owner, an admin's or
the CLI's; ADR 0044), and ``with_disabled`` (the CLI's: a disabled config's people too;
the dashboard shows nothing of a disabled config). A person or a face outside them is
answered exactly as one that does not exist. Every query is a named block of
``people.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from safelight.core.sql import load_queries
from safelight.terminal import is_unsafe, printable

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "people.sql")

Conn = psycopg.AsyncConnection[Any]

MAX_NAME_LENGTH = 200
"""As the table's check (migration 0023): a name, not a story."""
PHOTOS_SHOWN = 500
"""A person's photos read at most at once (their newest): a page, not the library."""


class PeopleError(ValueError):
    """An edit of people that cannot be made; the message is for the user."""


class NoSuchPerson(PeopleError):
    """No person of that id, or none the viewer may see (the same answer)."""

    def __init__(self, person_id: int) -> None:
        super().__init__(f"there is no person {person_id}")
        self.person_id = person_id


class NoSuchFace(PeopleError):
    """No face of that id, or none the viewer may see (the same answer)."""

    def __init__(self, face_id: int) -> None:
        super().__init__(f"there is no face {face_id}")
        self.face_id = face_id


class OtherConfig(PeopleError):
    """An edit across two configs: people and faces of one config stay with it."""


@dataclass(frozen=True, slots=True)
class Person:
    id: int
    storage_config_id: UUID
    name: str | None
    named_by: str | None
    named_at: datetime | None
    created_at: datetime
    face_count: int
    """Faces on live assets."""
    photo_count: int
    """Live assets with at least one of its faces."""
    cover_face_id: int | None
    """The largest face of its newest photo with a preview (a crop of it is its picture)."""
    cover_asset_id: int | None
    cover_box: tuple[float, float, float, float] | None
    cover_preview_path: str | None
    """The cover's photo's preview (None: it has none, and the cover shows no picture)."""

    def document(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "storage_config_id": self.storage_config_id,
            "name": self.name,
            "named_by": self.named_by,
            "named_at": self.named_at,
            "created_at": self.created_at,
            "face_count": self.face_count,
            "photo_count": self.photo_count,
            "cover_face_id": self.cover_face_id,
            "cover_asset_id": self.cover_asset_id,
        }


@dataclass(frozen=True, slots=True)
class FaceSource:
    """A face's box (fractions of the upright picture) and the preview proxy it is cut
    from: ``preview_path`` under the proxy root, which must be a proxy of the asset's
    ``storage_config_id`` and ``content_hash``."""

    id: int
    asset_id: int
    box: tuple[float, float, float, float]
    """left, top, right, bottom."""
    storage_config_id: UUID
    content_hash: str
    preview_path: str


@dataclass(frozen=True, slots=True)
class Merged:
    person: Person
    faces_moved: int


def name_problem(name: str) -> str | None:
    """Why ``name`` (already trimmed) cannot be a person's name, or None: 1 to
    ``MAX_NAME_LENGTH`` characters, none a terminal would act on or hide."""
    if not name:
        return "a name must not be blank (clear a name with --clear, or the clear button)"
    if len(name) > MAX_NAME_LENGTH:
        return f"a name has at most {MAX_NAME_LENGTH} characters ({len(name)} given)"
    unsafe = sorted({char for char in name if is_unsafe(char)})
    if unsafe:
        shown = ", ".join(printable(char) for char in unsafe)
        return f"a name must not hold control or format characters ({shown})"
    return None


def _params(owner: str | None, with_disabled: bool, **more: Any) -> dict[str, Any]:
    return {"owner": owner, "with_disabled": with_disabled, **more}


# --- reads ---------------------------------------------------------------------------


async def list_people(
    conn: Conn,
    *,
    owner: str | None,
    with_disabled: bool = False,
    config_id: UUID | None = None,
) -> list[Person]:
    """The people of ``owner``'s configs (of the one ``config_id``, if given), those in
    most photos first."""
    return await _people(conn, owner, with_disabled, config_id=config_id, person_id=None)


async def get_person(
    conn: Conn, person_id: int, *, owner: str | None, with_disabled: bool = False
) -> Person:
    """One person of ``owner``'s configs; :class:`NoSuchPerson` otherwise."""
    found = await _people(conn, owner, with_disabled, config_id=None, person_id=person_id)
    if not found:
        raise NoSuchPerson(person_id)
    return found[0]


async def _people(
    conn: Conn,
    owner: str | None,
    with_disabled: bool,
    *,
    config_id: UUID | None,
    person_id: int | None,
) -> list[Person]:
    cur = conn.cursor(row_factory=dict_row)
    # Never prepared: a prepared statement's generic plan (PostgreSQL's after five runs)
    # cannot drop the filters a call leaves NULL, and chose a lookup per face for the
    # whole list: 1.5 s instead of 0.3 s at 73k faces (bench/people.py). Planned for
    # its values each time (a few ms), it reads the faces in one pass.
    await cur.execute(
        QUERIES["people_list"],
        _params(owner, with_disabled, config_id=config_id, person_id=person_id),
        prepare=False,
    )
    return [_person(row) for row in await cur.fetchall()]


def _person(row: Mapping[str, Any]) -> Person:
    box = row["cover_box"]
    return Person(
        **{
            **row,
            "face_count": int(row["face_count"]),
            "photo_count": int(row["photo_count"]),
            "cover_box": None if box is None else _box(box),
        }
    )


def _box(values: Sequence[float]) -> tuple[float, float, float, float]:
    left, top, right, bottom = (float(value) for value in values)
    return left, top, right, bottom


async def person_photos(
    conn: Conn,
    person_id: int,
    *,
    owner: str | None,
    with_disabled: bool = False,
    limit: int = PHOTOS_SHOWN,
) -> list[dict[str, Any]]:
    """A person's live photos, newest first (at most ``limit``): the asset's id, name,
    capture times, size, its ``thumbnail_path`` and ``preview_path`` (None without) and
    ``faces``, the person's faces in it (``{"id", "box"}``). Empty for a person the
    viewer may not see (:func:`get_person` tells the two apart)."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(
        QUERIES["person_photos"],
        _params(owner, with_disabled, person_id=person_id, limit=limit),
    )
    rows = list(await cur.fetchall())
    for row in rows:
        row["faces"] = [{"id": int(f["id"]), "box": _box(f["box"])} for f in row["faces"]]
    return rows


async def named_people_on_days(
    conn: Conn, *, month: int, days: Sequence[int], years: Sequence[int], owner: str | None
) -> dict[int, list[str]]:
    """Who is in the photos "On this day" shows: for each of ``years``, the names of the
    named people in the live photos of ``owner``'s enabled configs captured on ``month``
    and ``days`` of it, those in most photos first. Unnamed people are left out: a face
    without a name says nothing to whoever reads the day."""
    if not years:
        return {}
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(
        QUERIES["people_named_on_days"],
        {"month": month, "days": list(days), "years": list(years), "owner": owner},
    )
    named: dict[int, list[str]] = {}
    for row in await cur.fetchall():
        named.setdefault(int(row["year"]), []).append(row["name"])
    return named


async def face_source(conn: Conn, face_id: int, *, owner: str | None) -> FaceSource | None:
    """A face the viewer may see (of a live asset of ``owner``'s enabled configs) with
    the preview it is cut from; None otherwise, or when its asset has no preview."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["face_crop_source"], {"face_id": face_id, "owner": owner})
    row = await cur.fetchone()
    if row is None:
        return None
    return FaceSource(
        id=row["id"],
        asset_id=row["asset_id"],
        box=(row["box_left"], row["box_top"], row["box_right"], row["box_bottom"]),
        storage_config_id=row["storage_config_id"],
        content_hash=row["content_hash"],
        preview_path=row["preview_path"],
    )


# --- edits ---------------------------------------------------------------------------


async def _lock_people(
    conn: Conn, ids: Sequence[int], owner: str | None, with_disabled: bool
) -> dict[int, dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["people_lock"], _params(owner, with_disabled, ids=sorted(set(ids))))
    found = {int(row["id"]): row for row in await cur.fetchall()}
    for person_id in ids:
        if person_id not in found:
            raise NoSuchPerson(person_id)
    return found


async def _lock_faces(
    conn: Conn, ids: Sequence[int], owner: str | None, with_disabled: bool
) -> dict[int, dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["faces_lock"], _params(owner, with_disabled, ids=sorted(set(ids))))
    found = {int(row["id"]): row for row in await cur.fetchall()}
    for face_id in ids:
        if face_id not in found:
            raise NoSuchFace(face_id)
    return found


async def name_person(
    conn: Conn,
    person_id: int,
    name: str | None,
    *,
    by: str | None,
    now: datetime,
    owner: str | None,
    with_disabled: bool = False,
) -> Person:
    """Name a person (``name``, trimmed), rename them, or clear their name (None), as
    ``by`` at ``now``; the person as they are then."""
    trimmed = None if name is None else name.strip()
    if trimmed is not None:
        problem = name_problem(trimmed)
        if problem is not None:
            raise PeopleError(problem)
    async with conn.transaction():
        await _lock_people(conn, [person_id], owner, with_disabled)
        await conn.execute(
            QUERIES["person_set_name"],
            {
                "person_id": person_id,
                "name": trimmed,
                # A cleared name keeps who cleared it and when: the last edit's.
                "named_by": by,
                "named_at": now,
            },
        )
        return await get_person(conn, person_id, owner=owner, with_disabled=with_disabled)


async def merge_people(
    conn: Conn,
    from_id: int,
    into_id: int,
    *,
    owner: str | None,
    with_disabled: bool = False,
) -> Merged:
    """Merge person ``from_id`` into ``into_id`` (the same config's): every face of the
    first moves to the second, placed there by a user, and the first is deleted. The
    second keeps its name, or takes the first's when it has none."""
    if from_id == into_id:
        raise PeopleError(f"person {from_id} cannot be merged into itself")
    async with conn.transaction():
        locked = await _lock_people(conn, [from_id, into_id], owner, with_disabled)
        source, target = locked[from_id], locked[into_id]
        if source["storage_config_id"] != target["storage_config_id"]:
            raise OtherConfig(
                f"person {from_id} and person {into_id} are of different storage configs "
                f"({source['storage_config_id']} and {target['storage_config_id']}): "
                "people are merged only within one config"
            )
        cur = await conn.execute(
            QUERIES["faces_move_from_person"],
            {
                "from_id": from_id,
                "into_id": into_id,
                "config_id": target["storage_config_id"],
            },
        )
        moved = cur.rowcount
        if target["name"] is None and source["name"] is not None:
            await conn.execute(
                QUERIES["person_set_name"],
                {
                    "person_id": into_id,
                    "name": source["name"],
                    "named_by": source["named_by"],
                    "named_at": source["named_at"],
                },
            )
        await conn.execute(QUERIES["person_delete"], {"person_id": from_id})
        person = await get_person(conn, into_id, owner=owner, with_disabled=with_disabled)
    return Merged(person, moved)


async def split_person(
    conn: Conn,
    person_id: int,
    face_ids: Sequence[int],
    *,
    now: datetime,
    owner: str | None,
    with_disabled: bool = False,
) -> Person:
    """Move the chosen faces of a person to a new, unnamed person of the same config,
    placed there by a user; the new person. Each face must be the person's, and at
    least one of theirs must stay (to move them all, rename instead)."""
    if not face_ids:
        raise PeopleError("choose at least one face to split off")
    async with conn.transaction():
        person = (await _lock_people(conn, [person_id], owner, with_disabled))[person_id]
        faces = await _lock_faces(conn, face_ids, owner, with_disabled)
        for face_id, face in faces.items():
            if face["person_id"] != person_id:
                raise PeopleError(f"face {face_id} is not one of person {person_id}'s faces")
        left = await get_person(conn, person_id, owner=owner, with_disabled=with_disabled)
        if left.face_count <= len(faces):
            raise PeopleError(
                f"a split leaves at least one of person {person_id}'s faces with them"
                " (to call them all by another name, rename the person)"
            )
        cur = await conn.execute(
            QUERIES["person_insert"], {"config_id": person["storage_config_id"], "now": now}
        )
        row = await cur.fetchone()
        assert row is not None  # an INSERT ... RETURNING returns its row
        new_id = int(row[0])
        await conn.execute(
            QUERIES["faces_place"],
            {
                "person_id": new_id,
                "ids": sorted(faces),
                "config_id": person["storage_config_id"],
            },
        )
        return await get_person(conn, new_id, owner=owner, with_disabled=with_disabled)


async def move_face(
    conn: Conn,
    face_id: int,
    person_id: int,
    *,
    owner: str | None,
    with_disabled: bool = False,
) -> Person:
    """Place one face with a person of its own config, as a user did; the person. The
    face's former person, left without a face and never named, is deleted (a name is a
    user's, and stays)."""
    async with conn.transaction():
        # People before faces, as every edit locks them: the face's person is read first,
        # then both people locked in id order, then the face, which must still be theirs.
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(QUERIES["face_get"], _params(owner, with_disabled, face_id=face_id))
        seen = await cur.fetchone()
        if seen is None:
            raise NoSuchFace(face_id)
        former = seen["person_id"]
        people = [person_id] if former is None else [person_id, former]
        target = (await _lock_people(conn, people, owner, with_disabled))[person_id]
        face = (await _lock_faces(conn, [face_id], owner, with_disabled))[face_id]
        if face["person_id"] != former:
            raise PeopleError(f"face {face_id} was moved meanwhile: try again")
        if face["storage_config_id"] != target["storage_config_id"]:
            raise OtherConfig(
                f"face {face_id} is of storage config {face['storage_config_id']} and person "
                f"{person_id} of {target['storage_config_id']}: a face moves only to a person "
                "of its own config"
            )
        await conn.execute(
            QUERIES["faces_place"],
            {"person_id": person_id, "ids": [face_id], "config_id": face["storage_config_id"]},
        )
        if former is not None and former != person_id:
            await conn.execute(QUERIES["person_delete_if_left_empty"], {"person_id": former})
        return await get_person(conn, person_id, owner=owner, with_disabled=with_disabled)
