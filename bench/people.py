"""Benchmark: the People reads and a face's picture (ADR 0068), on a generated library.

    .venv/bin/python bench/people.py [--assets 200000] [--people 200] [--calls 30]

The library is bench/web.py's (``generate_library``: ``--assets`` assets over four
configs, 2005-2025), then, written straight into the tables, ``--people`` people per
config (every other one named) and a face in every fourth image, two in every eighth
(a 512-byte descriptor of zeros: nothing reads it here), each placed with one of its
config's people. Timed in-process on a pool (no HTTP), the median and
p95 of ``--calls`` calls after 3 unmeasured ones:

- the People page's read (``list_people``) of an admin (every config's people) and of
  one owner;
- a person's page: the person and their photos (``get_person``, ``person_photos``), of
  the person in most photos;
- "On this day"'s names of a day's years (``named_people_on_days``, 15 June of 21
  years) and the whole day's document with them (``on_this_day``);
- a face's picture cut from a preview of 1920 x 1440 (``cut_face``), a small face (5%
  of the width) and a large one (40%): CPU on this machine, no database.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import psycopg
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_database, print_table, summary, versions, write_result
from web import generate_library, scratch_folder

from safelight.db.pool import open_pool
from safelight.library.catalogue import people
from safelight.library.render.facecrop import cut_face
from safelight.web.onthisday import on_this_day

DAY = date(2026, 6, 15)


def add_people(url: str, per_config: int) -> dict[str, int]:
    """``per_config`` people in each config and the faces; the counts written."""
    now = datetime.now(UTC)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TEMP TABLE cfg AS SELECT (row_number() OVER (ORDER BY id))::int - 1 AS idx,"
            " id FROM storage_configs"
        )
        conn.execute(
            "INSERT INTO people (id, storage_config_id, name, named_by, named_at, created_at)"
            " OVERRIDING SYSTEM VALUE"
            " SELECT cfg.idx * %(p)s + n, cfg.id,"
            " CASE WHEN n %% 2 = 0 THEN 'Person ' || n END,"
            " CASE WHEN n %% 2 = 0 THEN 'bench' END, CASE WHEN n %% 2 = 0 THEN %(now)s END,"
            " %(now)s FROM cfg CROSS JOIN generate_series(1, %(p)s) AS n",
            {"p": per_config, "now": now},
        )
        conn.execute("SELECT setval(pg_get_serial_sequence('people', 'id'), max(id)) FROM people")
        for copy in (0, 1):
            conn.execute(
                "INSERT INTO faces (asset_id, storage_config_id, box_left, box_top, box_right,"
                " box_bottom, descriptor, person_id, placed_by, created_at)"
                " SELECT a.id, a.storage_config_id, 0.3 + %(copy)s * 0.3, 0.3, 0.5 + %(copy)s"
                " * 0.3, 0.6, decode(repeat('00', 512), 'hex'),"
                " cfg.idx * %(p)s + ((a.id * 7919 + %(copy)s * 104729) %% %(p)s) + 1,"
                " 'cluster', %(now)s"
                " FROM assets a JOIN cfg ON cfg.id = a.storage_config_id"
                " WHERE a.media_type = 'image' AND a.id %% (4 * (1 + %(copy)s)) = 0",
                {"p": per_config, "now": now, "copy": copy},
            )
        # Every table settled (hint bits, the visibility map, statistics) before timing:
        # else the first reads pay for the load, and autovacuum runs beside them.
        conn.execute("VACUUM ANALYZE")
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM people), (SELECT count(*) FROM faces),"
            " (SELECT person_id FROM faces GROUP BY person_id ORDER BY count(*) DESC LIMIT 1)"
        ).fetchone()
    assert counts is not None
    return {"people": int(counts[0]), "faces": int(counts[1]), "busiest": int(counts[2])}


async def timed(make: Callable[[], Awaitable[Any]], calls: int) -> list[float]:
    times = []
    for n in range(3 + calls):
        started = time.perf_counter()
        await make()
        if n >= 3:
            times.append((time.perf_counter() - started) * 1000)
    return times


async def time_reads(url: str, busiest: int, calls: int) -> dict[str, list[float]]:
    pool = await open_pool(url, min_size=1, max_size=2)
    try:
        async with pool.connection() as conn:

            async def person_page() -> None:
                await people.get_person(conn, busiest, owner=None)
                await people.person_photos(conn, busiest, owner=None)

            return {
                "People page, admin (every config)": await timed(
                    lambda: people.list_people(conn, owner=None), calls
                ),
                "People page, one owner": await timed(
                    lambda: people.list_people(conn, owner="user1"), calls
                ),
                "a person's page (most photos)": await timed(person_page, calls),
                "On this day's names (21 years)": await timed(
                    lambda: people.named_people_on_days(
                        conn, month=6, days=[15], years=list(range(2005, 2026)), owner=None
                    ),
                    calls,
                ),
                "On this day's document, with names": await timed(
                    lambda: on_this_day(pool, DAY, owner=None), calls
                ),
            }
    finally:
        await pool.close()


def time_crops(calls: int) -> dict[str, list[float]]:
    picture = Image.effect_noise((1920, 1440), 64).convert("RGB")
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=85)
    preview = out.getvalue()
    results = {}
    for label, box in (
        ("a face's picture, small face (5% wide)", (0.45, 0.4, 0.5, 0.47)),
        ("a face's picture, large face (40% wide)", (0.3, 0.2, 0.7, 0.75)),
    ):
        times = []
        for n in range(3 + calls):
            started = time.process_time()
            cut_face(io.BytesIO(preview), box)
            if n >= 3:
                times.append((time.process_time() - started) * 1000)
        results[label] = times
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=int, default=200_000)
    parser.add_argument("--people", type=int, default=200, help="people per config")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    with bench_database("people") as url, scratch_folder() as scratch:
        print(f"generating {args.assets:,} assets ...", flush=True)
        library = generate_library(url, scratch / "proxies", args.assets, 6, 15)
        made = add_people(url, args.people)
        print(f"  {made['people']:,} people, {made['faces']:,} faces", flush=True)
        times = asyncio.run(time_reads(url, made["busiest"], args.calls))
    times |= time_crops(args.calls)
    rows = []
    for label, values in times.items():
        s = summary(values)
        rows.append((label, f"{s['median']:.1f}", f"{s['p95']:.1f}"))
    print_table(["what", "median ms", "p95 ms"], rows)
    write_result(
        "people",
        {
            "versions": versions(),
            "assets": args.assets,
            "day_assets": library.day_assets,
            **made,
            "times_ms": {label: summary(values) for label, values in times.items()},
        },
    )


if __name__ == "__main__":
    main()
