"""``faces`` (scoped, heavy, opt-in with ``SAFELIGHT_FACES=1``): find the faces in a
config's photos and group them into people (ADR 0067, docs/faces.md).

Photos whose faces were not found for the content they hold (``faces_content_hash``
differs from ``content_hash``: new photos, and edited ones) are taken a page at a time,
in id order. Each one's preview proxy (safelight's own upright JPEG, never the
original) is read from the proxy root without following a link, and its faces found in a
decode process (``library.faces.finding``). Each page's faces are written, replacing
what the photo had, and grouped in one fenced transaction (``library.faces.grouping``):
each joins the nearest person of the config, or, with others like it, makes a new one.
A named person is never dropped nor renamed, a face a user placed never moved.

Low priority: an item finds at most :data:`PHOTOS_PER_ITEM` photos, then queues its
follow-up at the back of the queue and ends, so its config's crawl (and anything else
queued meanwhile) waits for at most that many; it runs one photo at a time, on one
decode process; it is heavy, so it keeps to ``SAFELIGHT_HEAVY_HOURS`` and winds down
between photos when they end; it is queued only by a crawl (never on a schedule of its
own), and paused like any kind.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from safelight.handlers.contract import (
    HandlerContext,
    HandlerFailed,
    WoundDown,
    config_id_of,
    stop_if_cancelled,
)
from safelight.handlers.guards import active_config
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import faces as stored
from safelight.library.catalogue.faces import DuePhoto, FaceRow, Found
from safelight.library.faces import grouping, models
from safelight.library.faces.descriptors import unpack
from safelight.library.faces.finding import MAX_BYTES, FoundFace, UnreadablePreview, find_faces
from safelight.library.files.errors import MediaError
from safelight.library.proxystore.proxytree import UnsafeProxyPath, open_file
from safelight.work.kinds import Scope

PAGE = 20
"""Photos whose faces are written in one fenced transaction: a lost lease costs at most
a page's finding, done again by the next attempt."""
PHOTOS_PER_ITEM = 200
"""Photos an item finds faces in before it queues its follow-up and ends (about three
minutes of one core at the measured cost): how long its config's crawl may wait."""
LISTED = 100
"""At most this many unreadable previews are named in a result (all are counted)."""

OFF = (
    "finding faces is off: set SAFELIGHT_FACES=1 to turn it on "
    f"(`{models.SETUP_COMMAND}` installs what it needs)"
)


@dataclass(slots=True)
class Tally:
    photos: int = 0
    faces: int = 0
    joined: int = 0
    people: int = 0
    unreadable: list[dict[str, str]] = field(default_factory=list)
    unreadable_count: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "photos": self.photos,
            "faces": self.faces,
            "joined": self.joined,
            "people": self.people,
            "unreadable": self.unreadable_count,
        }


async def run_faces(ctx: HandlerContext, services: Services, payload: NoPayload) -> dict[str, Any]:
    if not services.settings.faces:
        raise HandlerFailed(OFF)
    lacking = models.missing()
    if lacking is not None:
        raise HandlerFailed(f"faces cannot be found: {lacking}")
    config_id = config_id_of(ctx)
    await _check_config(services, config_id)
    tally = Tally()
    try:
        more = await _find_pages(ctx, services, config_id, tally)
    finally:
        ctx.progress(**tally.counts())
    if more and ctx.winding_down.is_set():
        raise WoundDown(
            f"stopped at the end of heavy hours after the faces of {tally.photos} photos"
        )
    if more:
        await _queue_next(ctx, services, config_id)
    return {**tally.counts(), "more": more, "errors": tally.unreadable[:LISTED]}


async def _check_config(services: Services, config_id: UUID) -> None:
    async with services.pool.connection() as conn:
        await active_config(conn, config_id)


async def _find_pages(
    ctx: HandlerContext, services: Services, config_id: UUID, tally: Tally
) -> bool:
    """Find faces a page at a time, up to the item's share; whether photos are left."""
    after = 0
    while True:
        stop_if_cancelled(ctx)
        room = PHOTOS_PER_ITEM - tally.photos
        if room <= 0 or ctx.winding_down.is_set():
            async with services.pool.connection() as conn:
                return bool(await stored.due_page(conn, config_id, after, 1))
        async with services.pool.connection() as conn:
            page = await stored.due_page(conn, config_id, after, min(PAGE, room))
        if not page:
            return False
        found: list[Found] = []
        try:
            for photo in page:
                # A clean point: the photos found so far are written below, and the
                # rest wait for the next window (ADR 0060).
                stop_if_cancelled(ctx)
                if ctx.winding_down.is_set():
                    break
                found.append(Found(photo, await _find(services, photo, tally)))
                after = photo.id
        finally:
            await _write(ctx, config_id, found, tally)


async def _find(services: Services, photo: DuePhoto, tally: Tally) -> list[FaceRow]:
    """The faces of one photo's preview; none, counted and listed, when it cannot be
    read (it is not tried again until its content changes)."""
    try:
        data = await asyncio.to_thread(_read_preview, services, photo.preview)
        if services.decoder is not None:
            faces = await services.decoder.run(find_faces, data, about=photo.file_path)
        else:
            faces = await asyncio.to_thread(find_faces, data)
    except (MediaError, UnsafeProxyPath, OSError) as error:
        tally.unreadable_count += 1
        if len(tally.unreadable) < LISTED:
            reason = error.reason if isinstance(error, MediaError | UnsafeProxyPath) else str(error)
            tally.unreadable.append({"path": photo.file_path, "reason": reason})
        return []
    return [_row(face) for face in faces]


def _read_preview(services: Services, relative: str) -> bytes:
    """Blocking: the preview's bytes, reached under the proxy root without following a
    link; at most ``MAX_BYTES``."""
    with open_file(services.settings.proxies, relative) as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise UnreadablePreview(f"the preview is larger than {MAX_BYTES >> 20} MiB")
    return data


def _row(face: FoundFace) -> FaceRow:
    box = face.box
    return FaceRow(box.left, box.top, box.right, box.bottom, face.descriptor)


async def _write(ctx: HandlerContext, config_id: UUID, found: list[Found], tally: Tally) -> None:
    """Write a page's faces and group them, in one fenced transaction: no face is left
    written but not grouped, whatever stops the attempt."""
    if not found:
        return
    now = ctx.clock.now()
    fresh: list[int] = []
    async with ctx.fenced() as conn:
        for one in found:
            fresh += await stored.write_found(conn, config_id, one, now)
        joined, people = await _group(conn, config_id, fresh, now)
    tally.photos += len(found)
    tally.faces += len(fresh)
    tally.joined += joined
    tally.people += people
    ctx.progress(**tally.counts())


async def _group(
    conn: stored.Conn, config_id: UUID, fresh: list[int], now: datetime
) -> tuple[int, int]:
    """Place the faces just written, and the unplaced faces near them: how many joined a
    person, and how many new people were made. Reads what it places in the writing
    transaction; a user's move meanwhile is left alone by the writes' guards."""
    if not fresh:
        return 0, 0
    placed = await stored.placed_faces(conn, config_id)
    unplaced = await stored.unplaced_faces(conn, config_id)
    result = await asyncio.to_thread(
        grouping.group,
        grouping.Faces(placed.ids, unpack(placed.descriptors), placed.people),
        grouping.Faces(unplaced.ids, unpack(unplaced.descriptors)),
        frozenset(fresh),
    )
    joined = await stored.place(conn, config_id, result.joins)
    people = 0
    for members in result.new_people:
        if await stored.add_person(conn, config_id, members, now) is not None:
            people += 1
    return joined, people


async def _queue_next(ctx: HandlerContext, services: Services, config_id: UUID) -> None:
    """The follow-up, at the back of the queue (in the fenced transaction: an attempt
    that lost its item queues nothing)."""
    async with ctx.fenced() as conn:
        await services.store.enqueue_in(
            conn, FACES.name, config_id=config_id, dedup_key=FACES.dedup_key(config_id)
        )


FACES = Kind(
    "faces",
    Scope.REQUIRED,
    run_faces,
    heavy=True,  # about a second of CPU a photo (ADR 0060, ADR 0067)
)
