"""The configs page and its API show the originals the scrub found changed (ADR 0062):
a count and a short list per config, each owner their own, on real PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from safelight.testing.web import TODAY, Web, as_viewer
from safelight.testing.weblibrary import WebLibrary, make_web_library

pytestmark = pytest.mark.integration

FOUND = "0123456789abcdef"


async def report_changed(web: Web, library: WebLibrary, names: list[str]) -> None:
    """Record ``names`` as the scrub records an original changed under the same time."""
    now = web.clock.now()
    async with web.pool.connection() as conn:
        for n, name in enumerate(names):
            await conn.execute(
                "UPDATE assets SET content_checked_at = %s, content_mismatch_at = %s,"
                " content_found_hash = %s WHERE id = %s",
                (now, now - timedelta(minutes=n), FOUND, library.ids[name]),
            )


async def test_the_configs_page_counts_and_lists_each_owners_changed_originals(
    web: Web,
) -> None:
    alice = await make_web_library(
        web.pool, web.settings.proxies, TODAY, owner="alice", root="/photos/alice"
    )
    bob = await make_web_library(
        web.pool, web.settings.proxies, TODAY, owner="bob", root="/photos/bob"
    )
    await report_changed(web, bob, ["photo-1y", "jpeg-3y"])
    as_alice, as_bob = await as_viewer(web, "alice"), await as_viewer(web, "bob")

    def changed_of(document: list[dict[str, object]], config: str) -> dict[str, object]:
        (found,) = (c["originals_changed"] for c in document if c["id"] == config)
        assert isinstance(found, dict)
        return found

    bobs = changed_of((await as_bob.get("/api/configs")).json(), str(bob.config_id))
    assert bobs["count"] == 2
    listed = bobs["listed"]
    assert isinstance(listed, list)
    # The last found first.
    assert [o["id"] for o in listed] == [bob.ids["photo-1y"], bob.ids["jpeg-3y"]]
    assert {o["content_found_hash"] for o in listed} == {FOUND}
    alices = changed_of((await as_alice.get("/api/configs")).json(), str(alice.config_id))
    assert alices == {"count": 0, "listed": []}

    page = (await as_bob.get("/configs")).text
    assert "2 originals changed without their time changing" in page
    assert f'data-asset-id="{bob.ids["photo-1y"]}"' in page and FOUND in page
    theirs = (await as_alice.get("/configs")).text
    assert "none found" in theirs and FOUND not in theirs
    assert 'class="originals-changed-list"' not in theirs
