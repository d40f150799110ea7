"""Serving proxies: ``/proxies/{asset id}/{proxy type}/{version}``.

A proxy is found by its asset's id and its type, never by a path from the URL: the
path is the one its row names, which must be a name of the proxy layout
(``layout.parse_proxy_name``) under the asset's own config and content hash, and it is
opened below the proxy root without following a link at any level
(``proxytree.open_file``). Originals are never served: no route reads a storage root.

Only what its viewer may see is served (ADR 0044): a live asset of one of the viewer's
enabled configs (any owner's, for an admin). An asset soft-deleted, of a disabled config
or of another owner, a proxy type not served, a version not the current one: each is the
same 404 as an asset that does not exist, so ids cannot be walked.

The ``version`` is a digest of the row's path, which changes whenever an attempt
writes the proxy again (a proxy's name carries its attempt, ADR 0016), and is the
ETag. The browser alone keeps the bytes (``private``) and asks again each time
(``no-cache``): a 304 while the photo may still be seen, a 404 once it may not.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import anyio.to_thread
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from safelight.library.proxystore.layout import parse_proxy_name
from safelight.library.proxystore.proxytree import UnsafeProxyPath, open_file
from safelight.web import reads
from safelight.web.caching import PROXY
from safelight.web.viewer import viewer_of

_log = logging.getLogger(__name__)

# The proxy types a page shows, and the content type of each extension written.
SERVED_TYPES = frozenset({"thumbnail", "full_preview", "web_video"})
CONTENT_TYPES = {"jpg": "image/jpeg", "mp4": "video/mp4"}
# The one answer for every proxy not served, whatever the reason (no such asset, not the
# viewer's, no signed-in user: ``auth``): none says which ids exist.
NO_PROXY = "there is no such proxy"
CHUNK_BYTES = 256 * 1024
_VERSION = re.compile(r"[0-9a-f]{16}")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def proxy_version(path: str) -> str:
    """16 hex digits that change with the file the row names."""
    return hashlib.blake2b(path.encode("utf-8"), digest_size=8).hexdigest()


def proxy_url(asset_id: int, proxy_type: str, path: str | None) -> str | None:
    """The URL of an asset's proxy, or None when it has none."""
    if path is None:
        return None
    return f"/proxies/{asset_id}/{proxy_type}/{proxy_version(path)}"


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one range ``bytes=a-b`` (or ``a-``, ``-n``) asks for, as ``(first, last)``
    inclusive; None for no header or one this does not serve (several ranges: the whole
    file is sent). Raises ``HTTPException(416)`` for a range outside the file."""
    if header is None:
        return None
    match = _RANGE.fullmatch(header.strip())
    if match is None:
        return None
    first_text, last_text = match.groups()
    if not first_text and not last_text:
        return None
    if not first_text:  # the last n bytes
        length = int(last_text)
        if length == 0 or size == 0:
            raise HTTPException(416, headers={"Content-Range": f"bytes */{size}"})
        return max(0, size - length), size - 1
    first = int(first_text)
    last = min(int(last_text), size - 1) if last_text else size - 1
    if first >= size or first > last:
        raise HTTPException(416, headers={"Content-Range": f"bytes */{size}"})
    return first, last


async def serve_proxy(request: Request) -> Response:
    pool = request.app.state.web.pool
    root: Path = request.app.state.web.proxy_root
    asset_id: int = request.path_params["asset_id"]
    proxy_type: str = request.path_params["proxy_type"]
    version: str = request.path_params["version"]
    owner = viewer_of(request).owner
    if proxy_type not in SERVED_TYPES or not _VERSION.fullmatch(version):
        raise HTTPException(404, NO_PROXY)
    found = await reads.proxy_of_asset(pool, asset_id, proxy_type, owner=owner)
    if found is None:
        raise HTTPException(404, NO_PROXY)
    name = parse_proxy_name(found.path)
    extension = found.path.rsplit(".", 1)[-1]
    if (
        name is None
        or name.config_id != found.storage_config_id
        or name.content_hash != found.content_hash
        or extension not in CONTENT_TYPES
    ):
        # A row naming anything else was not written by safelight: never read it.
        _log.warning(
            "asset %s: its %s row names %r, not one of its proxies",
            asset_id,
            proxy_type,
            found.path,
        )
        raise HTTPException(404, NO_PROXY)
    current = proxy_version(found.path)
    if version != current:
        # Never a redirect to the current one: that would name it to whoever guessed.
        raise HTTPException(404, NO_PROXY)
    etag = f'"{current}"'
    headers = {"ETag": etag, "Cache-Control": PROXY, "Accept-Ranges": "bytes"}
    if etag in (request.headers.get("if-none-match") or ""):
        return Response(status_code=304, headers=headers)
    stack = contextlib.ExitStack()
    try:
        file = await anyio.to_thread.run_sync(stack.enter_context, open_file(root, found.path))
    except FileNotFoundError:
        raise HTTPException(404, f"asset {asset_id}'s {proxy_type} file is missing") from None
    except UnsafeProxyPath as error:
        _log.warning("asset %s: not served: %s", asset_id, error)
        raise HTTPException(404, NO_PROXY) from None
    try:
        size = os.fstat(file.fileno()).st_size
        if_range = request.headers.get("if-range")
        wanted = None if if_range not in (None, etag) else request.headers.get("range")
        span = byte_range(wanted, size)
    except BaseException:
        stack.close()
        raise
    status = 200
    first, last = 0, size - 1
    if span is not None:
        status = 206
        first, last = span
        headers["Content-Range"] = f"bytes {first}-{last}/{size}"
    headers["Content-Length"] = str(last - first + 1)
    return StreamingResponse(
        _chunks(file, first, last - first + 1, stack),
        status_code=status,
        headers=headers,
        media_type=CONTENT_TYPES[extension],
        # Closed here too when the response never starts its body (a client gone).
        background=BackgroundTask(stack.close),
    )


async def _chunks(
    file: IO[bytes], offset: int, length: int, stack: contextlib.ExitStack
) -> AsyncIterator[bytes]:
    try:
        await anyio.to_thread.run_sync(file.seek, offset)
        left = length
        while left > 0:
            chunk = await anyio.to_thread.run_sync(file.read, min(CHUNK_BYTES, left))
            if not chunk:
                break  # the file shrank: a proxy is never rewritten in place, but say no more
            left -= len(chunk)
            yield chunk
    finally:
        stack.close()
