"""The dashboard's pause switches (ADR 0060): a kind is an admin's to pause, a config its
owner's (or an admin's); both through the session and CSRF checks every action has;
what is paused shows on the queue page with who paused it and a resume button."""

from __future__ import annotations

import pytest

from safelight.testing.web import Web, as_viewer, library_of, store_of
from safelight.work.pausing import Pauses

pytestmark = pytest.mark.integration


async def test_an_admin_pauses_and_resumes_a_kind_on_the_queue_page(web: Web) -> None:
    page = (await web.client.get("/queue")).text
    assert 'data-action="/api/kinds/crawl/pause"' in page
    assert "nothing is paused" in page
    assert "heavy hours: always (SAFELIGHT_HEAVY_HOURS unset)" in page

    paused = await web.client.post("/api/kinds/crawl/pause")
    assert (paused.status_code, paused.json()["outcome"]) == (200, "paused")
    again = await web.client.post("/api/kinds/crawl/pause")
    assert again.json()["outcome"] == "unchanged"
    page = (await web.client.get("/queue")).text
    assert "paused (by admin at " in page
    assert 'data-action="/api/kinds/crawl/resume"' in page
    status = (await web.client.get("/api/status")).json()
    assert [p["kind"] for p in status["paused"]] == ["crawl"]

    resumed = await web.client.post("/api/kinds/crawl/resume")
    assert (resumed.status_code, resumed.json()["outcome"]) == (200, "resumed")
    assert await Pauses(web.pool, web.clock).paused() == []
    missing = await web.client.post("/api/kinds/no-such-kind/pause")
    assert missing.status_code == 404


async def test_an_owner_pauses_their_own_config_and_no_kind(web: Web) -> None:
    library = await library_of(web)  # alice's
    config = library.config_id
    alice = await as_viewer(web, "alice")
    bob = await as_viewer(web, "bob")

    refused = await alice.post("/api/kinds/crawl/pause")
    assert refused.status_code == 403
    assert "only an admin" in refused.json()["error"]
    assert 'data-action="/api/kinds/crawl/pause"' not in (await alice.get("/queue")).text
    assert (await bob.post(f"/api/configs/{config}/pause")).status_code == 404

    configs = (await alice.get("/configs")).text
    assert f'data-action="/api/configs/{config}/pause"' in configs
    paused = await alice.post(f"/api/configs/{config}/pause")
    assert (paused.status_code, paused.json()["outcome"]) == (200, "paused")
    (shown,) = await Pauses(web.pool, web.clock).paused()
    assert (shown.config_id, shown.paused_by) == (config, "alice")
    page = (await alice.get("/queue")).text
    assert "paused (by alice at " in page
    assert f'data-action="/api/configs/{config}/resume"' in page
    # Bob sees nothing of alice's paused config.
    assert "nothing is paused" in (await bob.get("/queue")).text

    item = await store_of(web).enqueue("crawl", config_id=config)
    assert await store_of(web).claim("w", ["crawl"], lease_seconds=60) is None
    assert (await alice.post(f"/api/configs/{config}/resume")).status_code == 200
    claimed = await store_of(web).claim("w", ["crawl"], lease_seconds=60)
    assert claimed is not None and claimed.id == item


async def test_a_pause_without_the_sessions_csrf_token_is_refused(web: Web) -> None:
    web.client.headers.pop("x-csrf-token")
    response = await web.client.post("/api/kinds/crawl/pause")
    assert response.status_code == 403
    assert await Pauses(web.pool, web.clock).paused() == []
