"""The People pages in Chromium (ADR 0068): the people listed with their faces cut from
the crawled previews and their counts, a person's photos by date, renaming, splitting
chosen faces off and merging from the person's page, and "On this day" saying who is
in a year's photos. The people and faces are written as the grouping leaves them
(``testing.people``: no face detector) on the site owner's crawled photos, and taken
out again after each test: the site is shared."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from safelight.db.pool import open_pool
from safelight.testing.browsersite import ASKED_DAY, OWNER, Site, run_async
from safelight.testing.people import add_face, add_person

pytestmark = pytest.mark.browser

NOW = datetime(2026, 1, 2, 12, tzinfo=UTC)
DAY_URL = f"/?date={ASKED_DAY.isoformat()}"


@dataclass(frozen=True)
class Placed:
    """Grandma in photos of 2024 and 2021, Ana in the 2024 one, an unnamed person in
    the 2021 one and another of 2024."""

    grandma: int
    ana: int
    unnamed: int
    photos: dict[str, int]
    """The asset ids: ``2024``, ``2021``, ``2024-other``."""
    faces: dict[str, int]
    """``grandma:2021`` ..."""


def _photos_of_the_day(site: Site, config_id: str) -> dict[int, list[int]]:
    """The owner's shown photos of the asked day with a preview, by year, oldest id first."""
    with site.connect() as conn:
        rows = conn.execute(
            "SELECT a.captured_year, a.id FROM assets a"
            " JOIN proxy_files v ON v.asset_id = a.id AND v.proxy_type = 'full_preview'"
            " WHERE a.storage_config_id = %s AND a.media_type = 'image' AND NOT a.is_deleted"
            " AND a.captured_month = %s AND a.captured_day = %s AND a.stack_primary_id IS NULL"
            " AND a.burst_id IS NULL AND a.paired_asset_id IS NULL AND NOT a.motion_photo"
            " ORDER BY a.id",
            (config_id, ASKED_DAY.month, ASKED_DAY.day),
        ).fetchall()
    by_year: dict[int, list[int]] = {}
    for year, asset_id in rows:
        by_year.setdefault(int(year), []).append(int(asset_id))
    return by_year


def _place(site: Site, config_id: str, photos: dict[str, int]) -> Placed:
    async def place() -> Placed:
        pool = await open_pool(site.database_url, min_size=1, max_size=2)
        try:
            async with pool.connection() as conn:
                config: Any = config_id
                grandma = await add_person(conn, config, NOW, "Grandma")
                ana = await add_person(conn, config, NOW, "Ana")
                unnamed = await add_person(conn, config, NOW)
                faces = {
                    "grandma:2024": await add_face(
                        conn, photos["2024"], NOW, person_id=grandma, box=(0.1, 0.1, 0.4, 0.5)
                    ),
                    "grandma:2021": await add_face(conn, photos["2021"], NOW, person_id=grandma),
                    "ana:2024": await add_face(
                        conn, photos["2024"], NOW, person_id=ana, box=(0.6, 0.2, 0.8, 0.5)
                    ),
                    "unnamed:2021": await add_face(
                        conn, photos["2021"], NOW, person_id=unnamed, box=(0.7, 0.6, 0.9, 0.9)
                    ),
                    "unnamed:2024-other": await add_face(
                        conn, photos["2024-other"], NOW, person_id=unnamed
                    ),
                }
            return Placed(grandma, ana, unnamed, photos, faces)
        finally:
            await pool.close()

    return run_async(place)


@pytest.fixture
def placed(site: Site) -> Iterator[Placed]:
    config_id = site.config_id(OWNER)
    by_year = _photos_of_the_day(site, config_id)
    assert len(by_year.get(2024, [])) >= 2 and by_year.get(2021), by_year
    photos = {"2024": by_year[2024][0], "2024-other": by_year[2024][1], "2021": by_year[2021][0]}
    try:
        yield _place(site, config_id, photos)
    finally:
        with site.connect() as conn:
            conn.execute("DELETE FROM faces WHERE storage_config_id = %s", (config_id,))
            conn.execute("DELETE FROM people WHERE storage_config_id = %s", (config_id,))


def _all_loaded(page: Page, selector: str) -> None:
    page.wait_for_function(
        "(sel) => { const all = [...document.querySelectorAll(sel)];"
        " return all.length > 0 && all.every((i) => i.complete && i.naturalWidth > 0); }",
        arg=selector,
    )


def test_the_people_are_listed_with_their_faces_and_a_person_shows_their_photos_by_date(
    page: Page, placed: Placed
) -> None:
    page.goto("/people")
    expect(page.locator("#nav-people")).to_have_attribute("aria-current", "page")
    cards = page.locator("li.person")
    expect(cards).to_have_count(3)
    grandma = page.locator(f'li.person[data-person-id="{placed.grandma}"]')
    expect(grandma.locator(".person-name")).to_have_text("Grandma")
    expect(grandma.locator('[data-count="photos"]')).to_have_text("2 photos")
    expect(page.locator(f'li.person[data-person-id="{placed.unnamed}"] .person-name')).to_have_text(
        "not named yet"
    )
    _all_loaded(page, "li.person img.face")
    # Each face is a square picture cut from its photo's preview.
    sizes = page.locator("li.person img.face").evaluate_all(
        "(is) => is.map((i) => [i.naturalWidth, i.naturalHeight])"
    )
    assert sizes and all(w == h > 0 for w, h in sizes), sizes

    grandma.locator("a.person-link").click()
    expect(page).to_have_url(re.compile(f"/people/{placed.grandma}$"))
    expect(page.locator("#person-name")).to_have_text("Grandma")
    days = page.locator("section.person-day")
    expect(days).to_have_count(2)
    assert days.evaluate_all("(ds) => ds.map((d) => d.dataset.date.slice(0, 4))") == [
        "2024",
        "2021",
    ]
    _all_loaded(page, "section.person-day img.thumb")
    expect(page.locator("label.face-pick")).to_have_count(2)


def test_a_person_is_renamed_split_and_merged_from_their_page(page: Page, placed: Placed) -> None:
    page.goto(f"/people/{placed.unnamed}")
    expect(page.locator("#person-name")).to_contain_text("not named yet")
    page.locator("#rename-input").fill("  Uncle Jo ")
    page.locator("#rename-submit").click()
    expect(page.locator("#flash")).to_have_attribute("data-ok", "true")
    expect(page.locator("#flash")).to_contain_text("is Uncle Jo now")
    expect(page.locator("#person-name")).to_have_text("Uncle Jo")  # after the reload
    expect(page.locator("#named")).to_contain_text("named by admin")

    # Grandma's 2021 face is someone else's: split it off.
    page.goto(f"/people/{placed.grandma}")
    split = page.locator("#split-submit")
    expect(split).to_be_disabled()
    page.locator(f'input.face-choice[value="{placed.faces["grandma:2021"]}"]').check()
    expect(page.locator("#split-chosen")).to_have_text("1 face chosen")
    split.click()
    expect(page.locator("#flash")).to_contain_text("1 face is person")
    expect(page).not_to_have_url(re.compile(f"/people/{placed.grandma}$"))
    expect(page.locator("#person-name")).to_contain_text("not named yet")
    expect(page.locator("section.person-day")).to_have_count(1)
    expect(page.locator("section.person-day")).to_have_attribute("data-date", re.compile("^2021-"))

    # ... and that new person is Uncle Jo: merged into him.
    page.locator("#merge-into").select_option(label="Uncle Jo (2 photos)")
    page.locator("#merge-submit").click()
    expect(page.locator("#flash")).to_contain_text("merged into Uncle Jo: 1 face moved")
    expect(page).to_have_url(re.compile(f"/people/{placed.unnamed}$"))
    expect(page.locator("#person-name")).to_have_text("Uncle Jo")
    expect(page.locator('#person [data-count="faces"]')).to_have_text("3 faces")

    page.goto("/people")
    expect(page.locator("li.person")).to_have_count(3)
    expect(
        page.locator(f'li.person[data-person-id="{placed.grandma}"] [data-count="photos"]')
    ).to_have_text("1 photo")


def test_on_this_day_says_who_is_in_each_years_photos(page: Page, placed: Placed) -> None:
    page.goto(DAY_URL)
    expect(page.locator("section.year[data-year='2024'] p.year-people")).to_have_text(
        "with Ana and Grandma"
    )
    expect(page.locator("section.year[data-year='2021'] p.year-people")).to_have_text(
        "with Grandma"
    )
    # The unnamed person names nobody; a year without named people has no line.
    expect(page.locator("section.year[data-year='2019'] p.year-people")).to_have_count(0)


def test_a_year_that_a_later_page_brings_says_who_is_in_it_too(page: Page, placed: Placed) -> None:
    """A page of one tile: 2021 comes with a later page, added by the page's script,
    which shows the same line as the server's page."""
    page.goto(f"{DAY_URL}&limit=1")
    expect(page.locator("section.year[data-year='2024'] p.year-people")).to_have_text(
        "with Ana and Grandma"
    )
    # Scrolled on to the end, as a reader would, until no page is left: the page's own
    # loader brings each page (a click on "Show more" would race it, and find the button
    # gone once the last page is in).
    page.wait_for_function(
        "() => { window.scrollTo(0, document.body.scrollHeight);"
        " return !document.getElementById('more'); }"
    )
    later = page.locator("section.year[data-year='2021']")
    expect(later.locator("p.year-people")).to_have_text("with Grandma")
