"""Benchmark: ``safelight serve`` on a library of 1M assets, "On this day".

    .venv/bin/python bench/web.py [--assets 1000000] [--day 06-15] [--requests 300]
                                  [--year 2026] [--rounds 3] [--page-loads 15] [--no-page]

The library is written straight into a scratch database (bench/sql/web_library.sql:
INSERT ... SELECT generate_series, in batches, then VACUUM ANALYZE): ``--assets`` assets
over four configs, captured evenly over 2005-2025 (so one month and day holds about
``assets / 366`` of them, ~2,700 at 1M), with a video and a Live Photo pair in every 33
assets and a 5-photo burst in every 100, each image with its thumbnail, full preview and
BlurHash rows. Only the measured day's thumbnails exist as files (one small JPEG each,
under a scratch proxy root), which is all the page asks for.

Then the real ``safelight serve`` runs against it (a process of its own, on a free port
of 127.0.0.1) and two things are timed:

- the API: ``GET /api/on-this-day?date=<year>-<day>`` on one kept-alive connection,
  ``--requests`` in a round, after 20 unmeasured ones; the median and p95 of each
  round, over ``--rounds`` rounds (the target: under 20 ms at the median);
- the page (``--no-page`` leaves it out): headless Chromium (the system's, through
  Playwright, as the browser tests drive it), a fresh browser context for each of
  ``--page-loads`` loads of ``/?date=...``: the time from navigation to the first
  thumbnail loaded (an ``<img>`` complete with ``naturalWidth > 0``), on the client's
  clock, and in the page's own (the thumbnail's resource timing ``responseEnd``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    BENCH,
    SAFELIGHT_CLI,
    Processes,
    bench_database,
    print_table,
    spread,
    summary,
    versions,
    worker_env,
    write_result,
)

from safelight.accounts.store import Accounts
from safelight.core.clock import SystemClock
from safelight.core.sql import parse_queries
from safelight.db.pool import open_pool
from safelight.testing.samplegen import marker_picture
from safelight.web import reads
from safelight.web.onthisday import PAGE_TILES, Cursor, span_of
from safelight.web.onthisday import on_this_day as day_document

QUERIES = parse_queries((BENCH / "sql" / "web_library.sql").read_text("utf-8"))
CONFIGS = 4
START = datetime(2005, 1, 1)
SPAN_SECONDS = (datetime(2026, 1, 1) - START).total_seconds()
BATCH = 200_000
# A valid BlurHash (the format's own example), the same for every generated image.
BLURHASH = "LEHV6nWB2yk8pyo0adR*.7kCMdnj"


@dataclass(frozen=True, slots=True)
class Library:
    url: str
    proxy_root: Path
    assets: int
    day_assets: int
    """Live assets of the measured month and day (every year)."""
    thumbnails: int
    """Thumbnail files written for that day."""
    seconds: float


def generate_library(url: str, proxy_root: Path, count: int, month: int, day: int) -> Library:
    """``count`` assets in the database at ``url``, and the thumbnails of (month, day)."""
    started = time.monotonic()
    now = datetime.now(UTC)
    with psycopg.connect(url, autocommit=True) as conn:
        configs = [
            row[0]
            for row in conn.execute(
                "INSERT INTO storage_configs (owner, root_path, created_at)"
                " SELECT 'user' || n, '/bench/library/' || n, %s"
                " FROM generate_series(1, %s) AS n RETURNING id",
                (now, CONFIGS),
            ).fetchall()
        ]
        params: dict[str, Any] = {
            "configs": configs,
            "config_count": len(configs),
            "count": count,
            "start": START,
            "span_seconds": SPAN_SECONDS,
            "blurhash": BLURHASH,
            "now": now,
        }
        # The rows are consistent by construction (every reference names a row of the
        # same load): the bulk load skips the foreign keys' per-row triggers.
        conn.execute("SET session_replication_role = replica")
        conn.execute(QUERIES["bench_bursts"], params)
        for first in range(1, count + 1, BATCH):
            batch = params | {"first": first, "last": min(first + BATCH - 1, count)}
            with conn.transaction():
                conn.execute(QUERIES["bench_assets"], batch)
                conn.execute(QUERIES["bench_proxies"], batch)
            print(f"  {batch['last']:,} of {count:,} assets", flush=True)
        conn.execute(QUERIES["bench_burst_primaries"])
        conn.execute(QUERIES["bench_sequences"], params)
        conn.execute("SET session_replication_role = DEFAULT")
        conn.execute("VACUUM ANALYZE")
        day_assets = conn.execute(
            "SELECT count(*) FROM assets WHERE captured_month = %s AND captured_day = %s"
            " AND NOT is_deleted",
            (month, day),
        ).fetchone()
        paths = conn.execute(
            "SELECT p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
            " WHERE a.captured_month = %s AND a.captured_day = %s AND NOT a.is_deleted"
            " AND p.proxy_type = 'thumbnail'",
            (month, day),
        ).fetchall()
    thumbnails = _write_thumbnails(proxy_root, [row[0] for row in paths])
    return Library(
        url=url,
        proxy_root=proxy_root,
        assets=count,
        day_assets=int(day_assets[0]) if day_assets else 0,
        thumbnails=thumbnails,
        seconds=time.monotonic() - started,
    )


def _write_thumbnails(proxy_root: Path, relatives: list[str]) -> int:
    """One small JPEG per thumbnail row (four pictures, taken in turn)."""
    pictures = []
    for seed in range(4):
        buffer = io.BytesIO()
        marker_picture(400, 300, seed=seed).save(buffer, "JPEG", quality=80)
        pictures.append(buffer.getvalue())
    for n, relative in enumerate(relatives):
        path = proxy_root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pictures[n % len(pictures)])
    return len(relatives)


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="safelight-bench-web-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def parse_day(text: str) -> tuple[int, int]:
    month, day = (int(part) for part in text.split("-"))
    date(2024, month, day)  # a leap year: 02-29 is a day too
    return month, day


# --- the server --------------------------------------------------------------------------


@contextlib.contextmanager
def served(library: Library, home: Path, processes: Processes) -> Iterator[str]:
    """``safelight serve`` on a free port of 127.0.0.1 (read-only: nothing here acts);
    its URL, from the first line it prints (the socket listens from then on)."""
    argv = [str(SAFELIGHT_CLI), "--log-level", "warning", "serve", "--port", "0", "--read-only"]
    env = worker_env(library.url, home, proxy_root=library.proxy_root)
    log = home.parent / "serve.log"
    home.mkdir(parents=True, exist_ok=True)
    with log.open("w") as errors:
        child = processes.start(argv, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
    assert child.stdout is not None
    first = child.stdout.readline()
    if not first.startswith("safelight serve: http://"):
        child.wait(30)
        raise RuntimeError(f"safelight serve did not start: {log.read_text()[-2000:]}")
    try:
        yield first.split()[2]
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(30)


def reader_headers(library: Library) -> dict[str, str]:
    """The dashboard needs a signed-in user: an admin of the bench's library and a
    personal token of theirs, as a script sends it (for the API, the page and its
    thumbnails alike)."""

    async def main() -> str:
        pool = await open_pool(library.url, min_size=1, max_size=1)
        try:
            accounts = Accounts(pool, SystemClock())
            await accounts.add("bench", password=None, admin=True)
            return await accounts.new_token("bench")
        finally:
            await pool.close()

    return {"Authorization": f"Bearer {asyncio.run(main())}"}


def time_api(
    url: str, path: str, requests: int, headers: dict[str, str]
) -> tuple[list[float], int, int]:
    """``requests`` GETs of ``path`` on one kept-alive connection after 20 unmeasured:
    each one's milliseconds, the tiles the document holds and its size in bytes."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    body = b""
    times = []
    try:
        for n in range(20 + requests):
            started = time.perf_counter()
            conn.request("GET", path, headers={"Accept": "application/json", **headers})
            response = conn.getresponse()
            body = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                raise RuntimeError(f"GET {path}: {response.status} {body[:200]!r}")
            if n >= 20:
                times.append(elapsed)
    finally:
        conn.close()
    document = json.loads(body)
    return times, int(document["count"]), len(body)


def walk_pages(url: str, path: str, headers: dict[str, str]) -> list[str | None]:
    """Every page of the day, following ``next``: each page's ``after`` (None for the
    first), and a check that the pages hold each tile once."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    afters: list[str | None] = [None]
    seen: set[int] = set()
    try:
        while True:
            after = afters[-1]
            conn.request(
                "GET", path + ("" if after is None else f"&after={after}"), headers=headers
            )
            response = conn.getresponse()
            document = json.loads(response.read())
            ids = [a["id"] for y in document["years"] for a in y["assets"]]
            if seen & set(ids):
                raise RuntimeError(f"a tile in two pages (after {after})")
            seen |= set(ids)
            if document["next"] is None:
                return afters
            afters.append(document["next"])
    finally:
        conn.close()


def time_document(library: Library, day: date, calls: int) -> tuple[list[float], list[float]]:
    """In-process, on a pool (no HTTP, no JSON): the day's query alone
    (``reads.assets_on_day``) and the whole document (``onthisday.on_this_day``: that
    query, its bursts' members, the tiles), each call's milliseconds: of the first page."""
    span = span_of(day)
    start = Cursor.start(span)

    async def main() -> tuple[list[float], list[float]]:
        pool = await open_pool(library.url, min_size=1, max_size=1)
        try:
            query, document = [], []
            for n in range(5 + calls):
                started = time.perf_counter()
                await reads.assets_on_day(
                    pool,
                    month=span.month,
                    days=sorted({span.first_day, span.last_day}),
                    before_year=span.before_year,
                    after=(start.year, start.local, start.id),
                    limit=PAGE_TILES + 1,
                    owner=None,
                )
                middle = time.perf_counter()
                await day_document(pool, day, owner=None)
                ended = time.perf_counter()
                if n >= 5:
                    query.append((middle - started) * 1000)
                    document.append((ended - middle) * 1000)
            return query, document
        finally:
            await pool.close()

    return asyncio.run(main())


FIRST_THUMBNAIL = """() => [...document.querySelectorAll("img.thumb")]
    .some((i) => i.complete && i.naturalWidth > 0)"""
# The page's own clock: from navigation start to the end of the first thumbnail's bytes,
# and to DOMContentLoaded.
PAGE_TIMES = """() => {
    const shots = performance.getEntriesByType("resource")
        .filter((e) => e.name.includes("/thumbnail/")).map((e) => e.responseEnd);
    const nav = performance.getEntriesByType("navigation")[0];
    return {
        thumbnail: shots.length ? Math.min(...shots) : null,
        dom: nav.domContentLoadedEventEnd,
        html: nav.transferSize || nav.encodedBodySize,
    };
}"""


def time_page(url: str, loads: int, headers: dict[str, str]) -> dict[str, list[float]]:
    """``loads`` loads of the page, each in a fresh browser context (nothing cached):
    navigation to the first thumbnail loaded, on the client's clock and the page's."""
    from playwright.sync_api import sync_playwright

    found: dict[str, list[float]] = {"client": [], "page": [], "dom": [], "html": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_executable())
        try:
            for n in range(loads + 1):
                context = browser.new_context(
                    viewport={"width": 1280, "height": 900}, extra_http_headers=headers
                )
                page = context.new_page()
                started = time.perf_counter()
                page.goto(url, wait_until="commit")
                page.wait_for_function(FIRST_THUMBNAIL, polling="raf", timeout=120_000)
                elapsed = (time.perf_counter() - started) * 1000
                page.wait_for_load_state("domcontentloaded")
                times = page.evaluate(PAGE_TIMES)
                context.close()
                if n == 0:
                    continue  # the first load starts the browser's own caches of fonts
                found["client"].append(elapsed)
                found["page"].append(float(times["thumbnail"]))
                found["dom"].append(float(times["dom"]))
                found["html"].append(float(times["html"]))
        finally:
            browser.close()
    return found


def chromium_executable() -> str:
    for command in ("chromium", "chromium-browser"):
        found = shutil.which(command)
        if found:
            return found
    raise SystemExit("no Chromium on PATH: scripts/setup --dev installs Debian's chromium")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def ms(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--assets", type=int, default=1_000_000)
    parser.add_argument("--day", default="06-15", help="MM-DD of the measured day")
    parser.add_argument("--year", type=int, default=2026, help="the year the page is asked for")
    parser.add_argument("--requests", type=int, default=300, help="API requests per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--page-loads", type=int, default=15)
    parser.add_argument("--no-page", action="store_true", help="leave out the page's timing")
    args = parser.parse_args()
    month, day_of_month = parse_day(args.day)
    day = date(args.year, month, day_of_month)
    result: dict[str, Any] = {"versions": versions(), "settings": vars(args)}
    result["load_before"] = load_average()
    print(f"load average before: {result['load_before']}", flush=True)

    with Processes() as processes, scratch_folder() as scratch, bench_database("web") as url:
        print(f"generating {args.assets:,} assets ...", flush=True)
        library = generate_library(url, scratch / "proxies", args.assets, month, day_of_month)
        result["library"] = {
            "assets": library.assets,
            "day_assets": library.day_assets,
            "thumbnail_files": library.thumbnails,
            "seconds": round(library.seconds, 1),
        }
        print(f"  {library}", flush=True)
        path = f"/api/on-this-day?date={day.isoformat()}"
        rounds: list[dict[str, Any]] = []
        headers = reader_headers(library)
        with served(library, scratch / "home", processes) as base:
            afters = walk_pages(base, path, headers)
            # A page from the middle of the day, as a reader far down the grid asks it.
            halfway = afters[len(afters) // 2]
            middle = path if halfway is None else f"{path}&after={halfway}"
            result["pages"] = len(afters)
            print(f"  {len(afters)} pages of {PAGE_TILES} tiles", flush=True)
            for number in range(args.rounds):
                api, tiles, size = time_api(base, path, args.requests, headers)
                later, _, _ = time_api(base, middle, args.requests, headers)
                query, document = time_document(library, day, max(10, args.requests // 5))
                rounds.append(
                    {
                        "api": summary(api),
                        "api_middle_page": summary(later),
                        "query": summary(query),
                        "document": summary(document),
                        "tiles": tiles,
                        "bytes": size,
                        "load": load_average(),
                    }
                )
                print(
                    f"  round {number + 1}: API median {ms(api)} ms, p95"
                    f" {summary(api)['p95']:.1f} ms (a middle page: {ms(later)} ms);"
                    f" query {ms(query)} ms, document {ms(document)} ms;"
                    f" {tiles} tiles, {size:,} bytes; load {load_average()}",
                    flush=True,
                )
            page: dict[str, list[float]] | None = None
            if not args.no_page:
                page = time_page(base + f"?date={day.isoformat()}", args.page_loads, headers)
                result["page"] = {name: summary(values) for name, values in page.items()}
        result["rounds"] = rounds
        result["load_after"] = load_average()

    rows: list[list[object]] = [
        [
            "API: GET " + path.split("?")[0] + " (its first page)",
            spread([r["api"]["median"] for r in rounds]),
            spread([r["api"]["p95"] for r in rounds]),
        ],
        [
            "API: the same, a page from the middle of the day (after=)",
            spread([r["api_middle_page"]["median"] for r in rounds]),
            spread([r["api_middle_page"]["p95"] for r in rounds]),
        ],
        [
            "its query alone, in-process (reads.assets_on_day)",
            spread([r["query"]["median"] for r in rounds]),
            spread([r["query"]["p95"] for r in rounds]),
        ],
        [
            "its document, in-process (onthisday.on_this_day)",
            spread([r["document"]["median"] for r in rounds]),
            spread([r["document"]["p95"] for r in rounds]),
        ],
    ]
    if page is not None:
        rows += [
            [
                "page: navigation to first thumbnail loaded (client)",
                ms(page["client"]),
                f"{summary(page['client'])['p95']:.1f}",
            ],
            [
                "page: first thumbnail's responseEnd (page clock)",
                ms(page["page"]),
                f"{summary(page['page'])['p95']:.1f}",
            ],
            [
                f"page: DOMContentLoaded (page clock; {statistics.median(page['html']):,.0f}"
                " bytes of HTML)",
                ms(page["dom"]),
                f"{summary(page['dom'])['p95']:.1f}",
            ],
        ]
    print(
        f"\n{library.assets:,} assets; {day.isoformat()}: {library.day_assets:,} assets of that"
        f" day in {result['pages']} pages; the first {rounds[-1]['tiles']:,} tiles,"
        f" {rounds[-1]['bytes']:,} bytes of JSON;"
        f" load {result['load_before']} before, {result['load_after']} after\n"
    )
    print_table(["ms", "median", "p95"], rows)
    write_result("web", result)


if __name__ == "__main__":
    main()
