"""Where, offline, in Chromium (issue #32, item 1; ADR 0065): On this day names a year's
places under its heading, most photographed first ("8 years ago · Lisbon, Portugal ·
Porto, Portugal"); the preview's caption names a photo's place; a photo without GPS
takes none; the footer credits GeoNames."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Page, expect

from safelight.testing.browsersite import ASKED_DAY, Site
from safelight.testing.dateplaces import exif_with_gps
from safelight.testing.exif import exif_bytes
from safelight.testing.handlers import write
from tests.acceptance.harness import safelight_process

pytestmark = pytest.mark.browser

# A third owner's library of its own, in a year no other library of the site has.
OWNER = "places-owner"
YEAR = 2017
SHOT = datetime(YEAR, ASKED_DAY.month, ASKED_DAY.day, 12, 0)  # a wall clock, no offset
LISBON = (38.72, -9.14)
PORTO = (41.15, -8.61)
# A real guard for a crawl that would otherwise hang a broken test; no tested deadline.
GUARD_SECONDS = 300


@pytest.fixture
def places_owner(site: Site) -> Iterator[None]:
    """The third owner's config taken out of the shared site after the test: the admin
    sees every owner's photos, and other tests count the asked day's years."""
    yield
    with site.connect() as conn:
        conn.execute("DELETE FROM storage_configs WHERE owner = %s", (OWNER,))


def _jpeg(exif: bytes, colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(out, format="JPEG", exif=exif)
    return out.getvalue()


def crawl(site: Site, root: Path) -> None:
    """``safelight run ROOT --user OWNER``, as a process, into the site's database."""
    env = {
        "SAFELIGHT_DATABASE_URL": site.database_url,
        "SAFELIGHT_HOME": str(site.settings.home),
        "SAFELIGHT_DECODE_PROCESSES": "0",
    }
    done = safelight_process("run", str(root), "--user", OWNER, env=env, timeout=GUARD_SECONDS)
    assert done.returncode == 0, done.stderr


@pytest.mark.usefixtures("places_owner")
def test_a_years_places_and_a_photos_place_are_shown(
    page: Page, site: Site, tmp_path: Path
) -> None:
    root = tmp_path / "trip"
    for n, minute in enumerate((0, 10)):
        at = SHOT.replace(minute=minute)
        write(root, f"lisbon-{n}.jpg", _jpeg(exif_with_gps(*LISBON, captured_at=at), (200, 40, 40)))
    porto = exif_with_gps(*PORTO, captured_at=SHOT.replace(hour=18))
    write(root, "porto.jpg", _jpeg(porto, (40, 200, 40)))
    write(root, "no-gps.jpg", _jpeg(exif_bytes(captured_at=SHOT.replace(hour=9)), (40, 40, 200)))
    crawl(site, root)

    page.goto(f"/?date={ASKED_DAY.isoformat()}")

    year = page.locator(f"section.year[data-year='{YEAR}']")
    heading = year.locator("h2")
    expect(heading).to_contain_text(f"{ASKED_DAY.year - YEAR} years ago")
    # Lisbon's two photos before Porto's one; the photo without GPS names no place.
    expect(heading.locator(".places")).to_have_text("· Lisbon, Portugal · Porto, Portugal")
    expect(year.locator("li.tile")).to_have_count(4)

    # Newest first: Porto (18:00), Lisbon's (12:10, 12:00), the one without GPS (09:00).
    year.locator("li.tile button.open").first.click()
    caption = page.locator("#preview-caption")
    expect(caption).to_contain_text("porto.jpg")
    expect(caption).to_contain_text("Porto, Portugal")
    page.keyboard.press("ArrowRight")
    expect(caption).to_contain_text("lisbon-1.jpg")
    expect(caption).to_contain_text("Lisbon, Portugal")
    for _ in range(2):
        page.keyboard.press("ArrowRight")
    expect(caption).to_contain_text("no-gps.jpg")
    expect(caption).not_to_contain_text("Portugal")
    page.keyboard.press("Escape")

    # Other years' headings name no place: the site's libraries have no GPS.
    other = page.locator("section.year[data-year='2024'] h2")
    expect(other).to_be_visible()
    expect(other.locator(".places")).to_have_count(0)
    # GeoNames' data is credited on every page (CC BY 4.0).
    credit = page.locator("#footer #attribution")
    expect(credit).to_contain_text("GeoNames")
    expect(credit).to_contain_text("CC BY 4.0")
