"""The home page in Chromium: the day's photos of earlier years, every thumbnail loaded
over its BlurHash, bursts stacked, the preview with the arrow keys and Esc, a Live
Photo's video playing on hover, and the day's next pages loaded as it scrolls to its end
(or on "Show more", or from the preview at the last tile)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import pytest
from playwright.sync_api import Locator, Page, expect

from safelight.testing.browsersite import ASKED_DAY, Site
from safelight.testing.samplegen import Manifest

pytestmark = pytest.mark.browser

DAY_URL = f"/?date={ASKED_DAY.isoformat()}"


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def expected_tiles(manifest: Manifest) -> dict[int, list[set[str]]]:
    """Per year, newest first: each tile's possible file names, newest first. A burst is
    one tile that any of its photos may front; a Live Photo's video has no tile."""
    burst_of = {path: burst.paths for burst in manifest.bursts for path in burst.paths}
    live_videos = {pair.video for pair in manifest.live_pairs if pair.video is not None}
    shown: list[tuple[datetime, set[str]]] = []
    seen_bursts: set[tuple[str, ...]] = set()
    files = [(p.path, p.captured_at) for p in manifest.photos]
    files += [(v.path, v.captured_at) for v in manifest.videos if v.path not in live_videos]
    for path, captured in files:
        if (captured.month, captured.day) != (ASKED_DAY.month, ASKED_DAY.day):
            continue
        if captured.year >= ASKED_DAY.year:
            continue
        members = burst_of.get(path)
        if members is not None:
            if members in seen_bursts:
                continue
            seen_bursts.add(members)
        names = {_name(m) for m in members} if members else {_name(path)}
        shown.append((captured.replace(tzinfo=None), names))
    by_year: dict[int, list[set[str]]] = {}
    for captured, names in sorted(shown, key=lambda entry: entry[0], reverse=True):
        by_year.setdefault(captured.year, []).append(names)
    return by_year


def tile_names(tiles: Locator) -> list[str]:
    """Each tile's file name, as its button's title starts (``name, time``)."""
    titles = tiles.locator("button.open").evaluate_all("(bs) => bs.map((b) => b.title)")
    return [str(title).rsplit(", ", 1)[0] for title in titles]


def all_loaded(page: Page, selector: str) -> bool:
    return bool(
        page.evaluate(
            "(sel) => [...document.querySelectorAll(sel)]"
            ".every((i) => i.complete && i.naturalWidth > 0)",
            selector,
        )
    )


def assert_in_order(names: list[str], expected: Iterable[set[str]]) -> None:
    expected = list(expected)
    assert len(names) == len(expected), (names, expected)
    for name, allowed in zip(names, expected, strict=True):
        assert name in allowed, (names, expected)


def test_the_day_shows_its_photos_of_earlier_years_newest_first_all_loaded(
    page: Page, site: Site
) -> None:
    expected = expected_tiles(site.manifest)
    assert list(expected) == [2024, 2021, 2019, 2016]

    page.goto(DAY_URL)

    years = page.locator("section.year")
    expect(years).to_have_count(len(expected))
    assert [int(y) for y in years.evaluate_all("(s) => s.map((e) => e.dataset.year)")] == list(
        expected
    )
    for year, tiles in expected.items():
        section = page.locator(f"section.year[data-year='{year}']")
        ago = ASKED_DAY.year - year
        expect(section.locator("h2")).to_contain_text(f"{ago} year{'s' if ago > 1 else ''} ago")
        assert_in_order(tile_names(section.locator("li.tile")), tiles)
    # Nothing of the asked year itself, nor of the days around it.
    shown = set(tile_names(page.locator("li.tile")))
    assert not {n for n in shown if "2025" in n or n.startswith("IMG_2016061")}

    # Every thumbnail is a real picture that has loaded (lazy images once scrolled to).
    thumbs = page.locator("li.tile img.thumb")
    expect(thumbs).to_have_count(sum(len(t) for t in expected.values()))
    for thumb in thumbs.all():
        thumb.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => [...document.querySelectorAll('li.tile img.thumb')]"
        ".every((i) => i.complete && i.naturalWidth > 0)"
    )
    assert all_loaded(page, "li.tile img.thumb")
    expect(page.locator("li.tile:not(.loaded)")).to_have_count(0)
    # The BlurHash placeholders were painted (a pixel with colour in each canvas).
    painted = page.locator("li.tile[data-blurhash] canvas.placeholder").evaluate_all(
        "(cs) => cs.map((c) => c.getContext('2d').getImageData(16, 16, 1, 1).data[3])"
    )
    assert painted and all(alpha > 0 for alpha in painted), painted


def test_a_burst_is_one_tile_that_counts_its_photos(page: Page, site: Site) -> None:
    [burst] = site.manifest.bursts
    page.goto(DAY_URL)

    stacked = page.locator("li.tile.burst")
    expect(stacked).to_have_count(1)
    expect(stacked).to_have_attribute("data-burst-count", str(len(burst.paths)))
    expect(stacked.locator(".badge.burst-count")).to_have_text(str(len(burst.paths)))
    assert set(tile_names(page.locator("li.tile"))) & {_name(p) for p in burst.paths} == {
        tile_names(stacked)[0]
    }


def test_the_preview_opens_the_arrow_keys_move_and_esc_closes(page: Page, site: Site) -> None:
    page.goto(DAY_URL)
    tiles = page.locator("li.tile")
    ids = [str(i) for i in tiles.evaluate_all("(ts) => ts.map((t) => t.dataset.assetId)")]
    preview = page.locator("#preview")
    expect(preview).to_be_hidden()

    tiles.nth(0).locator("button.open").click()

    expect(preview).to_be_visible()
    expect(preview).to_have_attribute("data-asset-id", ids[0])
    expect(page.locator("#preview-caption")).to_contain_text(tile_names(tiles)[0])
    page.wait_for_function(
        "() => { const i = document.getElementById('preview-image');"
        " return !i.hidden && i.complete && i.naturalWidth > 0; }"
    )

    page.keyboard.press("ArrowRight")
    expect(preview).to_have_attribute("data-asset-id", ids[1])
    page.keyboard.press("ArrowLeft")
    expect(preview).to_have_attribute("data-asset-id", ids[0])
    page.keyboard.press("ArrowLeft")  # from the first, round to the last
    expect(preview).to_have_attribute("data-asset-id", ids[-1])

    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()
    expect(preview).not_to_have_attribute("data-asset-id", ids[-1])

    # A burst opens on its first photo; the arrow key goes on to its next one.
    burst_tile = page.locator("li.tile.burst")
    burst_tile.locator("button.open").click()
    count = burst_tile.get_attribute("data-burst-count")
    expect(page.locator("#preview-position")).to_contain_text(f"burst 1 of {count}")
    first_member = preview.get_attribute("data-asset-id")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#preview-position")).to_contain_text(f"burst 2 of {count}")
    assert preview.get_attribute("data-asset-id") not in (first_member, *ids)
    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()


def test_a_live_photo_plays_its_video_on_hover(page: Page, site: Site) -> None:
    [pair] = site.manifest.live_pairs
    if pair.video is None:
        pytest.skip(f"no Live Photo video: {site.manifest.video_skipped_reason}")
    page.goto(DAY_URL)
    live = page.locator("li.tile.kind-live_photo")
    expect(live).to_have_count(1)
    expect(live.locator(".badge.live")).to_have_text("LIVE")

    live.hover()

    clip = live.locator("video.hover")
    expect(clip).to_have_count(1)
    page.wait_for_function(
        "() => { const v = document.querySelector('li.tile.kind-live_photo video.hover');"
        " return v && v.readyState >= 2 && v.currentTime > 0 && v.videoWidth > 0; }"
    )
    page.mouse.move(0, 0)
    expect(clip).to_have_count(0)


def test_scrolling_to_the_end_loads_the_next_pages_in_the_days_order(
    page: Page, site: Site
) -> None:
    expected = expected_tiles(site.manifest)
    every = [names for tiles in expected.values() for names in tiles]
    assert len(every) > 4  # more than two pages of two
    page.set_viewport_size({"width": 700, "height": 300})

    page.goto(DAY_URL + "&limit=2")
    expect(page.locator("li.tile")).not_to_have_count(0)
    # Scrolled on to the end until no page is left: every tile once, in order, under its
    # year's heading (a year a page goes on with has one section), each one set up.
    more = page.locator("#more")
    page.wait_for_function(  # each poll scrolls to the end, as a reader would
        "() => { window.scrollTo(0, document.body.scrollHeight);"
        " return !document.getElementById('more'); }"
    )
    expect(more).to_have_count(0)
    assert_in_order(tile_names(page.locator("li.tile")), every)
    years = page.locator("section.year")
    expect(years).to_have_count(len(expected))
    for year, tiles in expected.items():
        section = page.locator(f"section.year[data-year='{year}']")
        assert_in_order(tile_names(section.locator("li.tile")), tiles)
        expect(section.locator("h2 .count")).to_have_text(
            f"{len(tiles)} item{'s' if len(tiles) > 1 else ''}"
        )
    for thumb in page.locator("li.tile img.thumb").all():
        thumb.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => [...document.querySelectorAll('li.tile img.thumb')]"
        ".every((i) => i.complete && i.naturalWidth > 0)"
    )
    expect(page.locator("li.tile:not(.loaded)")).to_have_count(0)


def test_show_more_and_the_preview_at_the_end_load_the_next_page(page: Page, site: Site) -> None:
    # Without IntersectionObserver the button is the only way on (and the preview's).
    page.add_init_script("delete window.IntersectionObserver;")
    every = [names for tiles in expected_tiles(site.manifest).values() for names in tiles]
    page.goto(DAY_URL + "&limit=2")
    tiles = page.locator("li.tile")
    expect(tiles).to_have_count(2)
    expect(page.locator("#show-more")).to_be_visible()

    tiles.nth(1).locator("button.open").click()
    preview = page.locator("#preview")
    expect(preview).to_be_visible()
    for _ in range(10):  # through a burst's members, if the second tile is one
        page.keyboard.press("ArrowRight")
        # A press at the last tile starts loading the next page: wait for it to end
        # before pressing again, or that press would move past the page's first tile.
        expect(page.locator("#more.loading")).to_have_count(0)
        if tiles.count() > 2:
            break
    expect(tiles).to_have_count(4)
    third = tiles.nth(2).get_attribute("data-asset-id")
    expect(preview).to_have_attribute("data-asset-id", str(third))
    page.keyboard.press("Escape")

    while page.locator("#more").count() > 0:
        count = tiles.count()
        page.locator("#show-more").click()
        expect(tiles).not_to_have_count(count)
    assert_in_order(tile_names(tiles), every)
