"""The static files and the icon, through the app on real PostgreSQL: what a browser may
keep of each, ``/favicon.ico`` open to anyone and leading to the icon every page links,
and the read-only badge by the server's flag alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight import __version__
from safelight.testing.web import TODAY, Web, clock_on, open_web, session_for, web_settings

pytestmark = pytest.mark.integration


async def test_a_static_file_at_this_versions_url_is_kept_and_any_other_asked_again(
    anonymous: Web,
) -> None:
    versioned = await anonymous.client.get(f"/static/app.css?v={__version__}")
    assert versioned.status_code == 200
    assert versioned.headers["cache-control"] == "public, max-age=31536000, immutable"
    for url in ("/static/app.css", "/static/app.css?v=0.0.1", f"/static/app.css?x=v={__version__}"):
        answer = await anonymous.client.get(url)
        assert answer.status_code == 200, url
        assert answer.headers["cache-control"] == "no-cache", url
        assert answer.headers["etag"], url
    # A file that is not there says nothing to keep.
    missing = await anonymous.client.get(f"/static/nothing.js?v={__version__}")
    assert missing.status_code == 404
    assert "immutable" not in missing.headers.get("cache-control", "")


async def test_favicon_ico_leads_anyone_to_the_icon_every_page_links(
    anonymous: Web, web: Web
) -> None:
    icon_url = f"/static/favicon.svg?v={__version__}"
    for client in (anonymous.client, web.client):  # signed out, signed in
        asked = await client.get("/favicon.ico")
        assert asked.status_code == 302
        assert asked.headers["location"] == icon_url
        assert asked.headers["cache-control"] == "public, max-age=86400"
    icon = await anonymous.client.get(icon_url)
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.lstrip().startswith("<svg") and "<script" not in icon.text
    for client, path in ((anonymous.client, "/login"), (web.client, "/"), (web.client, "/queue")):
        page = await client.get(path)
        assert f'<link rel="icon" href="{icon_url}" type="image/svg+xml">' in page.text, path


async def test_the_read_only_badge_is_the_servers_not_the_viewers(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(database_url, tmp_path)
    for read_only in (False, True):
        async with open_web(pool, settings, clock=clock_on(TODAY), read_only=read_only) as w:
            signed_out = await w.client.get("/login")
            await session_for(w)
            signed_in = await w.client.get("/queue")
            for page in (signed_out, signed_in):
                assert page.status_code == 200
                assert ('id="read-only"' in page.text) is read_only, (read_only, page.text)
