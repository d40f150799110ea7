"""The faces kind's reads and writes (ADR 0067): which photos' faces are due, the faces
found in each, and their placement in people by the grouping (``library.faces.grouping``).

Naming, merging and splitting people, and the reads of the People pages, are
``catalogue.people``'s. Writes take the connection of the caller's fenced transaction
(``ctx.fenced()``), so an attempt that lost its item writes nothing. Every query is a
named block of ``faces.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from safelight.core.sql import load_queries

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "faces.sql")

Conn = psycopg.AsyncConnection[Any]


@dataclass(frozen=True, slots=True)
class DuePhoto:
    """A live photo whose faces are to be found, and its preview's path under the proxy
    root."""

    id: int
    file_path: str
    content_hash: str
    preview: str


@dataclass(frozen=True, slots=True)
class FaceRow:
    """A face as it is written: its box (fractions of the upright picture) and its
    stored descriptor (512 bytes)."""

    left: float
    top: float
    right: float
    bottom: float
    descriptor: bytes


@dataclass(frozen=True, slots=True)
class Found:
    """What was found in one photo: ``faces`` on the content ``content_hash``."""

    photo: DuePhoto
    faces: Sequence[FaceRow]


async def due_page(conn: Conn, config_id: UUID, after_id: int, limit: int) -> list[DuePhoto]:
    """The next ``limit`` photos of the config after ``after_id`` whose faces are due."""
    cur = await conn.execute(
        QUERIES["assets_faces_due_of_config"],
        {"config_id": config_id, "after_id": after_id, "limit": limit},
    )
    return [DuePhoto(*row) for row in await cur.fetchall()]


async def write_found(conn: Conn, config_id: UUID, found: Found, now: datetime) -> list[int]:
    """Replace the photo's faces with those found on its content, unplaced; the new
    faces' ids, or none when the photo no longer holds that content (nothing written)."""
    photo = found.photo
    cur = await conn.execute(
        QUERIES["asset_faces_found"],
        {"asset_id": photo.id, "config_id": config_id, "content_hash": photo.content_hash},
    )
    if await cur.fetchone() is None:
        return []
    await conn.execute(
        QUERIES["faces_of_asset_delete"], {"asset_id": photo.id, "config_id": config_id}
    )
    ids: list[int] = []
    for face in found.faces:
        cur = await conn.execute(
            QUERIES["face_insert"],
            {
                "asset_id": photo.id,
                "config_id": config_id,
                "left": face.left,
                "top": face.top,
                "right": face.right,
                "bottom": face.bottom,
                "descriptor": face.descriptor,
                "now": now,
            },
        )
        row = await cur.fetchone()
        assert row is not None
        ids.append(int(row[0]))
    return ids


@dataclass(frozen=True, slots=True)
class StoredFaces:
    ids: list[int]
    descriptors: list[bytes]
    people: list[int]
    """The person of each face (placed faces); empty for unplaced ones."""


async def placed_faces(conn: Conn, config_id: UUID) -> StoredFaces:
    """The config's faces that have a person (of deleted photos too)."""
    cur = await conn.execute(QUERIES["faces_placed_of_config"], {"config_id": config_id})
    rows = await cur.fetchall()
    return StoredFaces([r[0] for r in rows], [bytes(r[2]) for r in rows], [r[1] for r in rows])


async def unplaced_faces(conn: Conn, config_id: UUID) -> StoredFaces:
    """The config's faces of live photos the grouping may place."""
    cur = await conn.execute(QUERIES["faces_unplaced_of_config"], {"config_id": config_id})
    rows = await cur.fetchall()
    return StoredFaces([r[0] for r in rows], [bytes(r[1]) for r in rows], [])


async def place(conn: Conn, config_id: UUID, joins: Mapping[int, int]) -> int:
    """Place each face of ``joins`` in its person, where it is still unplaced and the
    grouping's to place, and the person is still there; how many were placed."""
    if not joins:
        return 0
    # A person a user's merge deleted meanwhile takes no face (it stays unplaced).
    cur = await conn.execute(
        QUERIES["people_lock_to_place"],
        {"config_id": config_id, "person_ids": sorted(set(joins.values()))},
    )
    there = {int(row[0]) for row in await cur.fetchall()}
    joins = {face: person for face, person in joins.items() if person in there}
    if not joins:
        return 0
    face_ids = sorted(joins)
    cur = await conn.execute(
        QUERIES["faces_place"],
        {"config_id": config_id, "face_ids": face_ids, "person_ids": [joins[f] for f in face_ids]},
    )
    return len(await cur.fetchall())


async def add_person(
    conn: Conn, config_id: UUID, face_ids: Sequence[int], now: datetime
) -> int | None:
    """A new person of the config with ``face_ids`` placed in it (those still unplaced);
    its id, or None when none of them could be (and so no person was kept)."""
    cur = await conn.execute(QUERIES["person_insert"], {"config_id": config_id, "now": now})
    row = await cur.fetchone()
    assert row is not None
    person_id = int(row[0])
    if await place(conn, config_id, dict.fromkeys(face_ids, person_id)):
        return person_id
    await conn.execute(
        QUERIES["person_delete_if_empty"], {"config_id": config_id, "person_id": person_id}
    )
    return None
