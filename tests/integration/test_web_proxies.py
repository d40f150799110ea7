"""Proxies served by asset id and type only from the proxy root (never a path from the
URL, never through a link, never a row's path outside the asset's own folder), with
their content types, private revalidated cache headers, ETags and byte ranges; and what
every response carries: the security headers, a Host check, no secret. (Whose proxies
are served, and which not: test_web_scope.py.)"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.web import (
    BASE_URL,
    COOKIE,
    FORM,
    TODAY,
    Web,
    clock_on,
    library_of,
    open_web,
    session_for,
    web_settings,
)
from safelight.testing.weblibrary import FAKE_MP4, WebLibrary
from safelight.web.app import MAX_BODY_BYTES
from safelight.web.caching import PROXY
from safelight.web.guard import SECURITY_HEADERS
from safelight.web.proxies import NO_PROXY

pytestmark = pytest.mark.integration

PASSWORD = "s3cret-password-of-the-db"


async def tile(web: Web, library: WebLibrary, name: str) -> dict[str, Any]:
    document = (await web.client.get("/api/on-this-day")).json()
    wanted = library.ids[name]
    found: dict[str, Any] = next(
        a for y in document["years"] for a in y["assets"] if a["id"] == wanted
    )
    return found


async def proxy_path_of(web: Web, asset_id: int, proxy_type: str) -> Path:
    async with web.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT path FROM proxy_files WHERE asset_id = %s AND proxy_type = %s",
            (asset_id, proxy_type),
        )
        row = await cur.fetchone()
    assert row is not None
    return web.settings.proxies / str(row[0])


async def test_a_thumbnail_is_served_with_its_type_kept_privately_and_revalidated(
    web: Web,
) -> None:
    library = await library_of(web)
    url = (await tile(web, library, "photo-1y"))["thumbnail"]
    response = await web.client.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/jpeg"
    # The browser alone keeps it, and asks each time (ADR 0044): never public, never a year.
    assert response.headers["cache-control"] == PROXY == "private, no-cache"
    path = await proxy_path_of(web, library.ids["photo-1y"], "thumbnail")
    assert response.content == path.read_bytes()
    assert response.headers["content-length"] == str(len(response.content))
    etag = response.headers["etag"]
    assert etag == '"' + url.rsplit("/", 1)[1] + '"'
    cached = await web.client.get(url, headers={"If-None-Match": etag})
    assert (cached.status_code, cached.content) == (304, b"")
    assert cached.headers["cache-control"] == PROXY and cached.headers["etag"] == etag


async def test_a_video_is_served_in_byte_ranges(web: Web) -> None:
    library = await library_of(web)
    url = (await tile(web, library, "video-2y"))["video"]
    whole = await web.client.get(url)
    assert (whole.status_code, whole.headers["content-type"]) == (200, "video/mp4")
    assert whole.content == FAKE_MP4 and whole.headers["accept-ranges"] == "bytes"
    size = len(FAKE_MP4)
    first = await web.client.get(url, headers={"Range": "bytes=0-9"})
    assert first.status_code == 206
    assert first.headers["content-range"] == f"bytes 0-9/{size}"
    assert first.content == FAKE_MP4[:10]
    tail = await web.client.get(url, headers={"Range": "bytes=-5"})
    assert (tail.status_code, tail.content) == (206, FAKE_MP4[-5:])
    middle = await web.client.get(url, headers={"Range": "bytes=100-"})
    assert (middle.content, middle.headers["content-length"]) == (FAKE_MP4[100:], str(size - 100))
    outside = await web.client.get(url, headers={"Range": f"bytes={size}-"})
    assert outside.status_code == 416
    assert outside.headers["content-range"] == f"bytes */{size}"
    several = await web.client.get(url, headers={"Range": "bytes=0-1,5-6"})
    assert (several.status_code, several.content) == (200, FAKE_MP4)


async def test_an_old_version_is_a_404_never_a_redirect_to_the_current_one(web: Web) -> None:
    """A redirect would name the current URL to whoever walks ids with any version."""
    library = await library_of(web)
    current = (await tile(web, library, "photo-1y"))["preview"]
    old = current.rsplit("/", 1)[0] + "/0123456789abcdef"
    response = await web.client.get(old)
    assert response.status_code == 404 and "location" not in response.headers
    assert response.json()["error"] == NO_PROXY
    assert response.headers["cache-control"] == "no-store"
    assert (await web.client.get(current)).status_code == 200


@pytest.mark.parametrize(
    "suffix",
    [
        "blurhash/0123456789abcdef",  # a value, not a file
        "original/0123456789abcdef",  # originals are never served
        "thumbnail/..%2F..%2Fetc",
        "thumbnail/not-a-version",
    ],
)
async def test_what_is_not_a_served_proxy_is_a_404(web: Web, suffix: str) -> None:
    library = await library_of(web)
    response = await web.client.get(f"/proxies/{library.ids['photo-1y']}/{suffix}")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"


async def test_an_asset_without_proxies_or_without_a_row_is_a_404(web: Web) -> None:
    library = await library_of(web)
    for asset_id in (library.ids["bare-5y"], 999999):
        response = await web.client.get(f"/proxies/{asset_id}/thumbnail/0123456789abcdef")
        assert response.status_code == 404


async def test_a_row_naming_anything_but_its_own_proxy_is_never_read(
    web: Web, tmp_path: Path
) -> None:
    """The path comes from the row, and even so only a layout name under the asset's own
    config and content hash is opened: not one of another asset, not one outside."""
    library = await library_of(web)
    secret = tmp_path / "secret.jpg"
    secret.write_bytes(b"not a proxy")
    photo, other = library.ids["photo-1y"], library.ids["video-2y"]
    other_path = (await proxy_path_of(web, other, "thumbnail")).relative_to(web.settings.proxies)
    for path in (str(other_path), "../secret.jpg", str(secret), "x/y.jpg"):
        async with web.pool.connection() as conn:
            await conn.execute(
                "UPDATE proxy_files SET path = %s WHERE asset_id = %s AND proxy_type = 'thumbnail'",
                (path, photo),
            )
        url = (await tile(web, library, "photo-1y"))["thumbnail"]
        response = await web.client.get(url)
        assert response.status_code == 404, path
        assert b"not a proxy" not in response.content


async def test_a_proxy_replaced_by_a_link_is_not_followed(web: Web, tmp_path: Path) -> None:
    library = await library_of(web)
    target = tmp_path / "elsewhere.jpg"
    target.write_bytes(b"outside the proxy root")
    path = await proxy_path_of(web, library.ids["photo-1y"], "thumbnail")
    path.unlink()
    os.symlink(target, path)
    url = (await tile(web, library, "photo-1y"))["thumbnail"]
    response = await web.client.get(url)
    assert response.status_code == 404
    assert b"outside" not in response.content
    path.unlink()
    missing = await web.client.get(url)
    assert missing.status_code == 404 and "missing" in missing.json()["error"]


async def test_every_response_carries_the_security_headers(web: Web) -> None:
    await library_of(web)
    for path in ("/", "/queue", "/api/status", "/static/app.css", "/nowhere"):
        response = await web.client.get(path)
        policy = response.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy, path
        assert "frame-ancestors 'none'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "same-origin"
    page = await web.client.get("/")
    assert page.headers["cache-control"] == "no-store"
    assert "<script>" not in page.text  # no inline script: the policy would block it


async def test_the_answers_starlette_gives_itself_carry_the_security_headers_too(
    web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body over the limit (413) and an unexpected error (500) are answered by
    Starlette's own middleware, outside every route (issue #27 item 7)."""
    expected = {name.decode(): value.decode() for name, value in SECURITY_HEADERS}

    def security_headers(response: httpx.Response) -> dict[str, str]:
        return {name: response.headers.get(name, "") for name in expected}

    body = b"token=" + b"x" * MAX_BODY_BYTES
    too_large = await web.client.post("/login", content=body, headers=FORM)
    assert too_large.status_code == 413
    assert security_headers(too_large) == expected

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"x" * 1024

    streamed = await web.client.post("/login", content=chunks(), headers=FORM)
    assert streamed.status_code == 413
    assert security_headers(streamed) == expected

    monkeypatch.setattr(web.app.state, "web", None)  # every route now fails of a bug
    transport = httpx.ASGITransport(app=web.app, raise_app_exceptions=False)
    cookies = web.client.cookies  # signed in: the request gets past the sign-in
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, cookies=cookies) as client:
        failed = await client.get("/api/status")
    assert failed.status_code == 500
    assert security_headers(failed) == expected
    assert failed.headers["cache-control"] == "no-store"  # an API answer (ADR 0044)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8470", "192.168.1.5"])
async def test_a_foreign_host_is_refused(web: Web, host: str) -> None:
    response = await web.client.get("/api/status", headers={"Host": host})
    assert response.status_code == 421


@pytest.mark.parametrize("host", ["localhost:8470", "127.0.0.1", "[::1]:8470"])
async def test_the_loopback_names_are_answered(web: Web, host: str) -> None:
    # The health probe: a session is bound to its origin, which the Host header names.
    response = await web.client.get("/healthz", headers={"Host": host})
    assert response.status_code == 200


async def test_bound_to_every_address_its_allowed_names_are_answered(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    # Bound to every address, only the names it was given join the loopback's (ADR 0042).
    settings = web_settings(
        database_url, tmp_path, web_host="0.0.0.0", web_allowed_hosts=("photos.lan",)
    )
    async with open_web(pool, settings, clock=clock_on(TODAY)) as web:
        # The health probe: a session is bound to its origin, which the Host header names.
        response = await web.client.get("/healthz", headers={"Host": "Photos.LAN:8470"})
        assert response.status_code == 200
        for foreign in ("evil.example", "192.168.1.5", "0.0.0.0:8470"):
            response = await web.client.get("/api/status", headers={"Host": foreign})
            assert response.status_code == 421


async def test_no_secret_appears_in_any_page_or_document(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    # The app never connects with the settings' URL (it is handed the pool); a URL with
    # a password shows that none of its pages names the database or its password.
    settings = web_settings(f"postgresql://safelight:{PASSWORD}@db.example/safelight", tmp_path)
    async with open_web(pool, settings, clock=clock_on(TODAY)) as web:
        library = await library_of(web)
        store = web.app.state.web.store
        failed = await store.enqueue("noop")
        assert await store.claim("w", ["noop"], lease_seconds=60) is not None
        assert await store.fail(failed, 1, f"could not reach postgresql://u:{PASSWORD}@db/x")
        signed_out = [
            "/",
            "/queue",
            "/configs",
            f"/items/{failed}",
            "/login",
            "/api/status",
            "/api/items",
            f"/api/items/{failed}",
            "/api/configs",
            "/api/on-this-day",
        ]
        bodies = [(await web.client.get(p)).text for p in signed_out]
        csrf = await session_for(web)
        session_id = web.client.cookies[COOKIE]
        bodies += [(await web.client.get(p)).text for p in signed_out]
    assert library.config_id
    for body in bodies:
        assert csrf not in body and session_id not in body
        assert PASSWORD not in body
        assert "db.example" not in body
