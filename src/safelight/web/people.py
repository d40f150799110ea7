"""The People pages (ADR 0068): ``/people``, each person of the viewer's configs with
a face and counts; ``/people/{id}``, a person's photos by date, renamed, merged and
split from there; their JSON under ``/api/people``; and a face's picture,
``/proxies/faces/{face id}/{version}``.

Every read and edit goes through ``library.catalogue.people`` with the viewer's
``owner``: a person or a face of a config the viewer may not see is answered exactly
as one that does not exist (404, the same words; ADR 0044). An edit is an action
(``acting.may_act``: signed in, not read-only, from this site, a session's CSRF token),
by the config's owner or an admin.

A face's picture is cut here from its photo's preview proxy, which is found by the
face's id, never by a path from the URL, and opened under the proxy root without
following a link (``proxytree.open_file``), as a proxy is served; what it serves is
kept as a proxy is (``private, no-cache`` with its ETag): its version is a digest of
the preview's path and the face's box, so it changes when either does, and a viewer
who may no longer see the face gets a 404.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from datetime import date
from typing import Any

import anyio.to_thread
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from safelight.library.catalogue import people
from safelight.library.proxystore.layout import parse_proxy_name
from safelight.library.proxystore.proxytree import UnsafeProxyPath, open_file
from safelight.library.render.facecrop import NotAPreview, cut_face
from safelight.views.capturetimes import capture_time_text
from safelight.web import api, pages
from safelight.web.acting import may_act
from safelight.web.caching import PROXY
from safelight.web.proxies import NO_PROXY, proxy_url
from safelight.web.viewer import viewer_of
from safelight.words import plural

_log = logging.getLogger(__name__)

_VERSION = re.compile(r"[0-9a-f]{16}")
FACES_DOC = "docs/faces.md"
"""Where turning faces on is told (the faces kind's own page)."""
MAX_SPLIT_FACES = 1000
"""Faces one split may name: a page's worth, far beyond a person's photos shown."""


def face_version(preview_path: str, box: Sequence[float]) -> str:
    """16 hex digits that change with the preview a face is cut from and its box."""
    text = preview_path + "|" + ",".join(f"{value:.6f}" for value in box)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def face_url(face_id: int, preview_path: str | None, box: Sequence[float] | None) -> str | None:
    """The URL of a face's picture; None when its photo has no preview to cut it from."""
    if preview_path is None or box is None:
        return None
    return f"/proxies/faces/{face_id}/{face_version(preview_path, box)}"


# --- documents -----------------------------------------------------------------------


def _person_document(person: people.Person) -> dict[str, Any]:
    cover = person.cover_face_id
    return {
        **person.document(),
        "cover": None
        if cover is None
        else face_url(cover, person.cover_preview_path, person.cover_box),
    }


def _photo_document(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "file_name": row["file_name"],
        "media_type": row["media_type"],
        "captured_local": row["captured_local"],
        "captured_shown": capture_time_text(
            row["captured_at"], row["captured_local"], row["captured_at_source"], row["zone_source"]
        ),
        "date": (row["captured_local"] or row["captured_at"]).date(),
        "width": row["width"],
        "height": row["height"],
        "thumbnail": proxy_url(row["id"], "thumbnail", row["thumbnail_path"]),
        "preview": proxy_url(row["id"], "full_preview", row["preview_path"]),
        "faces": [
            {"id": face["id"], "picture": face_url(face["id"], row["preview_path"], face["box"])}
            for face in row["faces"]
        ],
    }


async def people_document(request: Request) -> list[dict[str, Any]]:
    """The viewer's people (of enabled configs), those in most photos first."""
    owner = viewer_of(request).owner
    async with api.web(request).pool.connection() as conn:
        found = await people.list_people(conn, owner=owner)
    return [_person_document(person) for person in found]


async def person_document(request: Request, person_id: int) -> dict[str, Any]:
    """A person of the viewer's with their photos, newest first (``photos_shown_max``
    at most), and the other people of their config (what they can be merged into)."""
    owner = viewer_of(request).owner
    async with api.web(request).pool.connection() as conn:
        try:
            person = await people.get_person(conn, person_id, owner=owner)
        except people.NoSuchPerson as error:
            raise HTTPException(404, str(error)) from None
        photos = await people.person_photos(conn, person_id, owner=owner)
        others = await people.list_people(conn, owner=owner, config_id=person.storage_config_id)
    return {
        **_person_document(person),
        "photos": [_photo_document(row) for row in photos],
        "photos_shown_max": people.PHOTOS_SHOWN,
        "others": [
            {"id": other.id, "name": other.name, "photo_count": other.photo_count}
            for other in others
            if other.id != person.id
        ],
    }


# --- pages ---------------------------------------------------------------------------


def _faces_setting(request: Request) -> bool | None:
    """Whether faces are on (``SAFELIGHT_FACES``), where the settings say; None where
    they do not (the faces kind adds the setting): the page then goes by the people
    found."""
    value = getattr(api.web(request).settings, "faces", None)
    return value if isinstance(value, bool) else None


async def people_page(request: Request) -> Response:
    found = await people_document(request)
    return pages.render(
        request,
        "people.html",
        {
            "page": "people",
            "people": found,
            "faces_on": _faces_setting(request),
            "faces_doc": FACES_DOC,
        },
    )


def _by_date(photos: list[dict[str, Any]]) -> list[tuple[date, list[dict[str, Any]]]]:
    days: list[tuple[date, list[dict[str, Any]]]] = []
    for photo in photos:
        if not days or days[-1][0] != photo["date"]:
            days.append((photo["date"], []))
        days[-1][1].append(photo)
    return days


async def person_page(request: Request) -> Response:
    document = await person_document(request, request.path_params["person_id"])
    return pages.render(
        request,
        "person.html",
        {
            "page": "people",
            "person": document,
            "days": _by_date(document["photos"]),
            "max_name_length": people.MAX_NAME_LENGTH,
        },
    )


# --- the API -------------------------------------------------------------------------


async def people_api(request: Request) -> Response:
    return api.json_response(await people_document(request))


async def person_api(request: Request) -> Response:
    return api.json_response(await person_document(request, request.path_params["person_id"]))


async def _body(request: Request, shape: str) -> dict[str, Any]:
    """The request's JSON object; a 400 that shows ``shape`` for anything else."""
    try:
        document = json.loads(await request.body())
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise HTTPException(400, f"send {shape} as JSON")
    return document


def _id_field(document: dict[str, Any], name: str, shape: str) -> int:
    value = document.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise HTTPException(400, f"{name} must be an id (a positive whole number): send {shape}")
    return value


def _edit_error(error: people.PeopleError) -> HTTPException:
    """A refused edit as its HTTP answer: 404 for a person or face not there (or not the
    viewer's: the same), 409 for people of two configs, 400 for the rest."""
    if isinstance(error, people.NoSuchPerson | people.NoSuchFace):
        return HTTPException(404, str(error))
    if isinstance(error, people.OtherConfig):
        return HTTPException(409, str(error))
    return HTTPException(400, str(error))


def _done(outcome: str, message: str, person: people.Person) -> Response:
    return api.json_response(
        {"ok": True, "outcome": outcome, "message": message, "person": _person_document(person)}
    )


def _called(person: people.Person) -> str:
    return f"person {person.id}" if person.name is None else person.name


async def name(request: Request) -> Response:
    """POST ``{"name": "Grandma"}`` (``{"name": null}``: clear it)."""
    viewer = may_act(request)
    shape = '{"name": "..."} (or {"name": null} to clear it)'
    document = await _body(request, shape)
    given = document.get("name")
    if given is not None and not isinstance(given, str):
        raise HTTPException(400, f"name must be text or null: send {shape}")
    web = api.web(request)
    async with web.pool.connection() as conn:
        try:
            person = await people.name_person(
                conn,
                request.path_params["person_id"],
                given,
                by=viewer.name,
                now=web.clock.now(),
                owner=viewer.owner,
            )
        except people.PeopleError as error:
            raise _edit_error(error) from None
    if person.name is None:
        return _done("cleared", f"person {person.id} has no name now", person)
    return _done("named", f"person {person.id} is {person.name} now", person)


async def merge(request: Request) -> Response:
    """POST ``{"into": ID}``: this person merged into that one (the same config's)."""
    viewer = may_act(request)
    shape = '{"into": ID}'
    into = _id_field(await _body(request, shape), "into", shape)
    async with api.web(request).pool.connection() as conn:
        try:
            merged = await people.merge_people(
                conn, request.path_params["person_id"], into, owner=viewer.owner
            )
        except people.PeopleError as error:
            raise _edit_error(error) from None
    return _done(
        "merged",
        f"merged into {_called(merged.person)}: {plural(merged.faces_moved, 'face')} moved",
        merged.person,
    )


async def split(request: Request) -> Response:
    """POST ``{"faces": [ID, ...]}``: those faces of this person to a new person."""
    viewer = may_act(request)
    shape = '{"faces": [ID, ...]}'
    faces = (await _body(request, shape)).get("faces")
    if (
        not isinstance(faces, list)
        or not faces
        or len(faces) > MAX_SPLIT_FACES
        or not all(isinstance(f, int) and not isinstance(f, bool) and f > 0 for f in faces)
    ):
        raise HTTPException(
            400, f"faces must be a list of 1 to {MAX_SPLIT_FACES} face ids: send {shape}"
        )
    web = api.web(request)
    async with web.pool.connection() as conn:
        try:
            person = await people.split_person(
                conn,
                request.path_params["person_id"],
                faces,
                now=web.clock.now(),
                owner=viewer.owner,
            )
        except people.PeopleError as error:
            raise _edit_error(error) from None
    moved = plural(len(set(faces)), "face is", "faces are")
    return _done("split", f"{moved} person {person.id} now", person)


async def move(request: Request) -> Response:
    """POST ``{"person": ID}``: this face placed with that person (its config's)."""
    viewer = may_act(request)
    shape = '{"person": ID}'
    person_id = _id_field(await _body(request, shape), "person", shape)
    face_id = request.path_params["face_id"]
    async with api.web(request).pool.connection() as conn:
        try:
            person = await people.move_face(conn, face_id, person_id, owner=viewer.owner)
        except people.PeopleError as error:
            raise _edit_error(error) from None
    return _done("moved", f"face {face_id} is {_called(person)}'s now", person)


# --- a face's picture ----------------------------------------------------------------


async def face_picture(request: Request) -> Response:
    face_id: int = request.path_params["face_id"]
    version: str = request.path_params["version"]
    if not _VERSION.fullmatch(version):
        raise HTTPException(404, NO_PROXY)
    web = api.web(request)
    async with web.pool.connection() as conn:
        found = await people.face_source(conn, face_id, owner=viewer_of(request).owner)
    if found is None:
        raise HTTPException(404, NO_PROXY)
    name = parse_proxy_name(found.preview_path)
    if (
        name is None
        or name.config_id != found.storage_config_id
        or name.content_hash != found.content_hash
        or not found.preview_path.endswith(".jpg")
    ):
        # A row naming anything else was not written by safelight: never read it.
        _log.warning("face %s: its preview row names %r, not a proxy", face_id, found.preview_path)
        raise HTTPException(404, NO_PROXY)
    current = face_version(found.preview_path, found.box)
    if version != current:
        raise HTTPException(404, NO_PROXY)  # never a redirect: it would name the current
    etag = f'"{current}"'
    headers = {"ETag": etag, "Cache-Control": PROXY}
    if etag in (request.headers.get("if-none-match") or ""):
        return Response(status_code=304, headers=headers)

    def cut() -> bytes:
        with open_file(web.proxy_root, found.preview_path) as preview:
            return cut_face(preview, found.box)

    try:
        body = await anyio.to_thread.run_sync(cut)
    except FileNotFoundError:
        raise HTTPException(404, f"face {face_id}'s preview file is missing") from None
    except (UnsafeProxyPath, NotAPreview) as error:
        _log.warning("face %s: not cut: %s", face_id, error)
        raise HTTPException(404, NO_PROXY) from None
    return Response(body, headers=headers, media_type="image/jpeg")


def routes() -> list[Route]:
    return [
        Route("/people", people_page, name="people"),
        Route("/people/{person_id:int}", person_page, name="person"),
        Route("/api/people", people_api),
        Route("/api/people/{person_id:int}", person_api),
        Route("/api/people/{person_id:int}/name", name, methods=["POST"]),
        Route("/api/people/{person_id:int}/merge", merge, methods=["POST"]),
        Route("/api/people/{person_id:int}/split", split, methods=["POST"]),
        Route("/api/faces/{face_id:int}/move", move, methods=["POST"]),
        Route("/proxies/faces/{face_id:int}/{version}", face_picture, name="face"),
    ]
