"""People and faces as the face grouping leaves them, written directly: the tests of
the People pages, the ``people`` commands and "On this day"'s names need no face
detector (no dlib), only rows. A descriptor is synthetic (128 little-endian float32 of
a seed, as the table holds them); a face is ``placed_by = 'cluster'`` unless a test says
otherwise. The grouping's own writes belong to ``library/faces/``: these are the rows
it makes, not its code."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg_pool import AsyncConnectionPool

from safelight.testing.weblibrary import WebLibrary, make_web_library

Conn = psycopg.AsyncConnection[Any]

DESCRIPTOR_FLOATS = 128
MIDDLE = (0.3, 0.3, 0.6, 0.7)
"""A face's box (left, top, right, bottom) near the middle of a picture."""


def descriptor(seed: int) -> bytes:
    """512 bytes: 128 float32, distinct for each seed."""
    values = [((seed * 7919 + i * 104729) % 1000) / 1000.0 for i in range(DESCRIPTOR_FLOATS)]
    return struct.pack(f"<{DESCRIPTOR_FLOATS}f", *values)


async def add_person(
    conn: Conn,
    config_id: UUID,
    now: datetime,
    name: str | None = None,
    *,
    named_by: str | None = "alice",
) -> int:
    """A person of ``config_id``, named ``name`` (by ``named_by`` at ``now``) or not."""
    cur = await conn.execute(
        "INSERT INTO people (storage_config_id, name, named_by, named_at, created_at) "
        "VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (
            config_id,
            name,
            named_by if name is not None else None,
            now if name is not None else None,
            now,
        ),
    )
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def add_face(
    conn: Conn,
    asset_id: int,
    now: datetime,
    *,
    person_id: int | None = None,
    box: tuple[float, float, float, float] = MIDDLE,
    placed_by: str = "cluster",
    seed: int = 0,
) -> int:
    """A face in asset ``asset_id`` (of its config), with ``person_id`` or nobody."""
    cur = await conn.execute(
        "INSERT INTO faces (asset_id, storage_config_id, box_left, box_top, box_right, "
        "box_bottom, descriptor, person_id, placed_by, created_at) "
        "SELECT a.id, a.storage_config_id, %s, %s, %s, %s, %s, %s, %s, %s "
        "FROM assets a WHERE a.id = %s RETURNING id",
        (*box, descriptor(seed), person_id, placed_by, now, asset_id),
    )
    row = await cur.fetchone()
    assert row is not None, f"no asset {asset_id}"
    return int(row[0])


async def faces_of(conn: Conn, person_id: int) -> dict[int, str]:
    """A person's faces: each one's id and who placed it (``cluster``, ``person``)."""
    cur = await conn.execute(
        "SELECT id, placed_by FROM faces WHERE person_id = %s ORDER BY id", (person_id,)
    )
    return {int(face_id): str(placed) for face_id, placed in await cur.fetchall()}


async def person_exists(conn: Conn, person_id: int) -> bool:
    cur = await conn.execute("SELECT 1 FROM people WHERE id = %s", (person_id,))
    return await cur.fetchone() is not None


@dataclass
class Family:
    """Two owners' libraries (``make_web_library``'s) and the people in them:

    ==============  ==========================================================
    ``grandma``     alice's, named "Grandma": faces in photo-1y (a large one),
                    jpeg-3y, burst-3y-a, and deleted-1y (soft-deleted: unseen)
    ``ana``         alice's, named "Ana": photo-1y (a small face), motion-3y
    ``unnamed``     alice's, not named: tokyo-4y, live-2y
    ``bobs``        bob's, not named: bob's photo-1y
    ==============  ==========================================================

    ``faces``: each face's id by ``person:asset`` (``grandma:photo-1y``).
    """

    alice: WebLibrary
    bob: WebLibrary
    now: datetime
    grandma: int = 0
    ana: int = 0
    unnamed: int = 0
    bobs: int = 0
    faces: dict[str, int] = field(default_factory=dict)


LARGE = (0.2, 0.1, 0.7, 0.8)
SMALL = (0.75, 0.2, 0.85, 0.35)


async def make_family(
    pool: AsyncConnectionPool[Any], proxy_root: Path, today: date, now: datetime
) -> Family:
    alice = await make_web_library(pool, proxy_root, today, owner="alice", root="/photos/alice")
    bob = await make_web_library(pool, proxy_root, today, owner="bob", root="/photos/bob")
    family = Family(alice, bob, now)
    seeds = itertools.count(1)
    async with pool.connection() as conn:
        family.grandma = await add_person(conn, alice.config_id, now, "Grandma")
        family.ana = await add_person(conn, alice.config_id, now, "Ana")
        family.unnamed = await add_person(conn, alice.config_id, now)
        family.bobs = await add_person(conn, bob.config_id, now)
        placed = [
            ("grandma", family.grandma, alice, "photo-1y", LARGE),
            ("grandma", family.grandma, alice, "jpeg-3y", MIDDLE),
            ("grandma", family.grandma, alice, "burst-3y-a", MIDDLE),
            ("grandma", family.grandma, alice, "deleted-1y", MIDDLE),
            ("ana", family.ana, alice, "photo-1y", SMALL),
            ("ana", family.ana, alice, "motion-3y", MIDDLE),
            ("unnamed", family.unnamed, alice, "tokyo-4y", MIDDLE),
            ("unnamed", family.unnamed, alice, "live-2y", MIDDLE),
            ("bobs", family.bobs, bob, "photo-1y", MIDDLE),
        ]
        for who, person_id, library, asset, box in placed:
            family.faces[f"{who}:{asset}"] = await add_face(
                conn, library.ids[asset], now, person_id=person_id, box=box, seed=next(seeds)
            )
    return family
