"""A similar group's tile on "On this day" in Chromium (ADR 0066): reshoots of one
scene and time are one tile with their count, like a burst, and the preview steps
through them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from safelight.testing.browsersite import Site
from safelight.testing.similarshots import similar_library
from tests.acceptance.harness import safelight_process

pytestmark = pytest.mark.browser

# An owner and a day of its own: the site's other days and counts stay as they are.
OWNER = "similar-shots-owner"
TAKEN = datetime(2022, 9, 9, 10, 0, 0)
DAY_URL = "/?date=2025-09-09"
# A real guard for a crawl that would otherwise hang a broken test; no tested deadline.
GUARD_SECONDS = 300


@pytest.fixture
def reshoots(site: Site, tmp_path: Path) -> Iterator[None]:
    """The similar library crawled (and grouped) for the owner; its config taken out of
    the shared site after the test."""
    library = similar_library(tmp_path / "photos", TAKEN)
    env = {
        "SAFELIGHT_DATABASE_URL": site.database_url,
        "SAFELIGHT_HOME": str(site.settings.home),
        "SAFELIGHT_DECODE_PROCESSES": "0",
    }
    done = safelight_process(
        "run", str(library.root), "--user", OWNER, env=env, timeout=GUARD_SECONDS
    )
    assert done.returncode == 0, done.stderr
    yield
    with site.connect() as conn:
        conn.execute("DELETE FROM storage_configs WHERE owner = %s", (OWNER,))


@pytest.mark.usefixtures("reshoots")
def test_a_similar_group_is_one_tile_that_counts_its_shots(page: Page) -> None:
    page.goto(DAY_URL)

    tiles = page.locator("li.tile")
    # Four reshoots, one other scene, a pair, a third scene: four tiles.
    expect(tiles).to_have_count(4)
    groups = page.locator("li.tile.similar")
    expect(groups).to_have_count(2)
    counts = sorted(
        int(c) for c in groups.evaluate_all("(ts) => ts.map((t) => t.dataset.similarCount)")
    )
    assert counts == [2, 4]
    four = page.locator('li.tile.similar[data-similar-count="4"]')
    expect(four.locator(".badge.similar-count")).to_have_text("4")
    expect(four.locator("img.thumb")).to_have_attribute("alt", "DSC_0100.JPG")

    # The API's tile says the same, with the members, the shown one first.
    document = page.request.get("/api/on-this-day?date=2025-09-09").json()
    tiles_of_api = [a for y in document["years"] for a in y["assets"]]
    [group] = [a["similar"] for a in tiles_of_api if a["similar"] and a["similar"]["count"] == 4]
    assert group["members"][0]["file_name"] == "DSC_0100.JPG"
    assert len(group["members"]) == 4

    four.locator("button.open").click()
    position = page.locator("#preview-position")
    expect(position).to_contain_text("similar 1 of 4")
    page.keyboard.press("ArrowRight")
    expect(position).to_contain_text("similar 2 of 4")
    page.keyboard.press("Escape")
    expect(page.locator("#preview")).to_be_hidden()
