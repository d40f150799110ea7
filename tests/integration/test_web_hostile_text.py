"""Text the dashboard did not write (file names, roots, owners, errors, dedup keys) shown
with its bidi overrides and control characters as visible escapes, in the page text, in
``title`` and ``alt`` attributes and in the JSON the pages' scripts show (issue #27
item 7). U+202E turns ``IMG_1234<U+202E>gpj.exe`` into what reads as ``IMG_1234exe.jpg``."""

from __future__ import annotations

import html
import json
import re

import pytest

from safelight.handlers import CRAWL, NOOP
from safelight.testing.web import Web, library_of, store_of

pytestmark = pytest.mark.integration

RAW = ("\u202e", "\u2066", "\u2069", "\u202a", "\x1b", "\u200b", "\x85")
"""Characters that must never reach a page as themselves."""
SPOOF = "IMG_1234\u202egpj.exe"
SHOWN_SPOOF = "IMG_1234\\u202egpj.exe"
ISOLATE = "a\u2066b\u2069\x1b[31mc\u200b"
SHOWN_ISOLATE = "a\\u2066b\\u2069\\x1b[31mc\\u200b"


def assert_no_raw(text: str) -> None:
    assert [c for c in RAW if c in text] == []


async def test_a_spoofing_file_name_is_escaped_in_the_page_its_title_and_the_api(
    web: Web,
) -> None:
    library = await library_of(web)
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET file_name = %s WHERE id = %s", (SPOOF, library.ids["photo-1y"])
        )
        await conn.execute(
            "UPDATE assets SET file_name = %s WHERE id = %s", (ISOLATE, library.ids["bare-5y"])
        )

    page = (await web.client.get("/")).text
    document = (await web.client.get("/api/on-this-day")).json()

    assert_no_raw(page)
    tile = re.search(rf'<li [^>]*data-asset-id="{library.ids["photo-1y"]}".*?</li>', page, re.S)
    assert tile is not None
    assert f'title="{SHOWN_SPOOF}, ' in tile.group(0)
    assert f'alt="{SHOWN_SPOOF}"' in tile.group(0)
    other = re.search(rf'<li [^>]*data-asset-id="{library.ids["bare-5y"]}".*?</li>', page, re.S)
    assert other is not None and f'title="{SHOWN_ISOLATE}, ' in other.group(0)
    assert f'<span class="no-thumb">{SHOWN_ISOLATE}</span>' in other.group(0)
    # What the preview and "Show more" write into the page with their script.
    names = {a["file_name"] for y in document["years"] for a in y["assets"]}
    assert {SHOWN_SPOOF, SHOWN_ISOLATE} <= names
    embedded = re.search(
        r'<script type="application/json" id="on-this-day-data">(.*?)</script>', page, re.S
    )
    assert embedded is not None and json.loads(embedded.group(1)) == document


async def test_roots_owners_errors_and_dedup_keys_are_escaped_on_every_page(web: Web) -> None:
    library = await library_of(web)
    async with web.pool.connection() as conn:
        # As a config made before owner names were checked, or a root of any name.
        await conn.execute(
            "UPDATE storage_configs SET root_path = %s, owner = %s WHERE id = %s",
            (f"/photos/{SPOOF}", f"al{ISOLATE}", library.config_id),
        )
    store = store_of(web)
    running = await CRAWL.enqueue_for(store, library.config_id)
    assert (item := await store.claim("nas:1", [CRAWL.name], lease_seconds=60)) is not None
    assert item.id == running
    failed = await store.enqueue(NOOP.name, dedup_key=f"key{SPOOF}")
    assert (item := await store.claim("nas:2", [NOOP.name], lease_seconds=60)) is not None
    assert await store.fail(failed, 1, f"cannot read {SPOOF}\n{ISOLATE}")

    queue = (await web.client.get("/queue")).text
    configs = (await web.client.get("/configs")).text
    shown_item = (await web.client.get(f"/items/{failed}")).text
    status = (await web.client.get("/api/status")).json()
    listed = (await web.client.get("/api/configs")).json()

    for page in (queue, configs, shown_item):
        assert_no_raw(page)
    assert f"/photos/{SHOWN_SPOOF}" in queue and f"al{SHOWN_ISOLATE}" in queue
    assert f"cannot read {SHOWN_SPOOF}\\n{SHOWN_ISOLATE}" in queue
    assert f"/photos/{SHOWN_SPOOF}" in configs and f"al{SHOWN_ISOLATE}" in configs
    assert f"key{SHOWN_SPOOF}" in shown_item
    assert f"cannot read {SHOWN_SPOOF}\\n{SHOWN_ISOLATE}" in shown_item
    # The JSON the queue's script refreshes its rows from.
    assert status["running"][0]["root_path"] == f"/photos/{SHOWN_SPOOF}"
    assert status["running"][0]["owner"] == f"al{SHOWN_ISOLATE}"
    assert status["failures"][0]["error"] == f"cannot read {SHOWN_SPOOF}\\n{SHOWN_ISOLATE}"
    assert (listed[0]["root"], listed[0]["owner"]) == (
        f"/photos/{SHOWN_SPOOF}",
        f"al{SHOWN_ISOLATE}",
    )


async def test_a_payload_keeps_its_lines_and_escapes_what_is_in_them(web: Web) -> None:
    store = store_of(web)
    item_id = await store.enqueue(NOOP.name, payload={"result": {"name": SPOOF, "n": 1}})

    page = (await web.client.get(f"/items/{item_id}")).text

    assert_no_raw(page)
    payload = re.search(r'<pre id="item-payload">(.*?)</pre>', page, re.S)
    assert payload is not None
    text = html.unescape(payload.group(1))
    assert json.loads(text) == {"result": {"name": SPOOF, "n": 1}}  # "\u202e" in JSON
    assert text.count("\n") >= 4  # indented, one key a line
