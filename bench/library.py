"""Benchmark 7: a library of a million files: the walk and the index, not the decoder.

    .venv/bin/python bench/library.py [--sizes 100000,1000000] [--rounds 2]
                                      [--first-count 5000] [--per-folder 500]
                                      [--changed-percent 1]

For each size N in ``--sizes``, a tree of N distinct tiny JPEGs (an 8x8 picture whose
COM segment carries the file's number: about 400 bytes each, ``--per-folder`` to a
folder, folders two levels deep), and a config whose live assets are exactly those
files, written straight into ``assets`` with COPY (their real content hash, size and
mtime: what a crawl of the tree would have recorded, without decoding a million
pictures). Then, in each round, in turns:

- walk: a bare ``os.scandir`` + ``stat`` of every file of the tree in this process
  (recursive, no link followed): the floor of any crawl;
- crawl: one ``crawl`` item drained by one Worker process (``safelight worker
  --until-idle``, default settings) with nothing changed: files/s = N / (the item's
  finished_at - started_at); the Worker's peak RSS (VmHWM, sampled every 0.2 s).

Then ``--changed-percent`` of the files (a third each) get new content, are moved to
another folder, or are deleted, and one more crawl must report exactly those: ingested
= changed, moved = moved, deleted = deleted + changed (a path with new content
soft-deletes its old asset), unchanged = the rest, no error.

First crawl: ``--first-count`` of those tiny JPEGs crawled into an empty config (every
one decoded, two proxies written, the asset inserted): the rate of inserting assets,
not of the decoder (see bench/crawl.py for that).

Disk: about 4.5 KB per file (inode and block): 4.5 GB at a million, removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    Processes,
    bench_database,
    print_table,
    spread,
    versions,
    worker_argv,
    worker_env,
    write_result,
)
from crawl import Sampler, add_crawl

from safelight.testing.tinylibrary import (
    ASSET_COLUMNS,
    asset_rows,
    generate_tree,
    relative_path,
    write_photo,
)


def seed_assets(url: str, root: Path, count: int, per_folder: int) -> None:
    """The config's live assets: one per file, as a crawl would have recorded them."""
    with psycopg.connect(url) as conn:
        (config,) = conn.execute("SELECT id FROM storage_configs").fetchone()  # type: ignore[misc]
        photos = ((relative_path(n, per_folder), n) for n in range(count))
        with conn.cursor().copy(f"COPY assets ({ASSET_COLUMNS}) FROM STDIN") as copy:
            for row in asset_rows(config, root, photos):
                copy.write_row(row)
        conn.execute("ANALYZE assets")


def bare_walk(root: Path) -> int:
    """Every regular file under ``root``, listed and stat'ed, no link followed."""
    found = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    entry.stat(follow_symlinks=False)
                    found += 1
    return found


def crawl(url: str, home: Path, root: Path) -> dict[str, Any]:
    """One crawl item of the config on ``root``, drained by one Worker process."""
    with psycopg.connect(url) as conn:
        # What an earlier crawl queued (burst detection over the whole library) would
        # run first: not the crawl, nor its memory.
        conn.execute("DELETE FROM work_items WHERE kind <> 'crawl' AND finished_at IS NULL")
    item = asyncio.run(add_crawl(url, root)) if not _has_config(url) else _enqueue(url)
    with Processes() as procs:
        child = procs.start(
            worker_argv(1, until_idle=True, name="crawler"), env=worker_env(url, home)
        )
        sampler = Sampler(child.pid)
        # Stopped once the crawl item ends: what it queues (burst detection over the
        # whole library) is not the crawl, and its memory not the crawl's.
        with psycopg.connect(url, autocommit=True) as conn:
            while child.poll() is None:
                sampler.sample()
                row = conn.execute(
                    "SELECT status::text, started_at, finished_at, result FROM work_items"
                    " WHERE id = %s AND finished_at IS NOT NULL",
                    (item,),
                ).fetchone()
                if row is not None:
                    break
                time.sleep(0.2)
            else:
                row = conn.execute(
                    "SELECT status::text, started_at, finished_at, result FROM work_items"
                    " WHERE id = %s",
                    (item,),
                ).fetchone()
    assert row is not None
    status, started, finished, result = row
    if status != "succeeded":
        raise SystemExit(f"the crawl ended {status}: {result}")
    return {
        "seconds": (finished - started).total_seconds(),
        "peak_rss_mib": sampler.peak_rss_kib / 1024,
        "result": {k: v for k, v in result.items() if not isinstance(v, list)}
        | {"errors": len(result["errors"])},
    }


def _has_config(url: str) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM storage_configs").fetchone() != (0,)


def _enqueue(url: str) -> int:
    with psycopg.connect(url) as conn:
        (config,) = conn.execute("SELECT id FROM storage_configs").fetchone()  # type: ignore[misc]
    pool_item = asyncio.run(_enqueue_crawl(url, config))
    return pool_item


async def _enqueue_crawl(url: str, config: Any) -> int:
    from safelight.core.clock import SystemClock
    from safelight.db.pool import open_pool
    from safelight.handlers import KIND_SPECS
    from safelight.settings import Settings
    from safelight.work.store import WorkStore

    pool = await open_pool(url, min_size=1, max_size=2)
    try:
        store = WorkStore(pool, SystemClock(), KIND_SPECS, max_stalls=Settings().max_stalls)
        return await store.enqueue("crawl", config_id=config)
    finally:
        await pool.close()


def change_some(root: Path, count: int, per_folder: int, percent: float) -> dict[str, int]:
    """Of every (100 / percent) files, one gets new content, one moves, one goes."""
    step = max(3, round(300 / percent))
    changed = moved = deleted = 0
    for base in range(0, count - 2, step):
        path = root / relative_path(base, per_folder)
        write_photo(path, base, generation=1)
        changed += 1
        source = root / relative_path(base + 1, per_folder)
        target = root / "moved" / relative_path(base + 1, per_folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
        moved += 1
        (root / relative_path(base + 2, per_folder)).unlink()
        deleted += 1
    return {"changed": changed, "moved": moved, "deleted": deleted}


def check_found(result: dict[str, Any], count: int, made: dict[str, int]) -> None:
    expected = {
        "ingested": made["changed"],
        "moved": made["moved"],
        "deleted": made["deleted"] + made["changed"],
        "unchanged": count - made["changed"] - made["moved"] - made["deleted"],
        "errors": 0,
        "total": count - made["deleted"],
    }
    found = {k: result[k] for k in expected}
    if found != expected:
        raise SystemExit(f"the crawl after the changes found {found}, expected {expected}")


def run_size(
    count: int, per_folder: int, rounds: int, percent: float, scratch: Path
) -> dict[str, Any]:
    root = scratch / f"library-{count}"
    started = time.monotonic()
    generate_tree(root, count, per_folder)
    generated = time.monotonic() - started
    print(f"{count} files generated in {generated:.0f} s", flush=True)
    out: dict[str, Any] = {"count": count, "generate_seconds": generated}
    with (
        bench_database(f"library_{count}") as url,
        tempfile.TemporaryDirectory(prefix="safelight-bench-home-") as home,
    ):
        asyncio.run(add_crawl(url, root))  # the config (and a first item, drained below)
        with psycopg.connect(url) as conn:
            conn.execute("DELETE FROM work_items")
        started = time.monotonic()
        seed_assets(url, root, count, per_folder)
        out["seed_seconds"] = time.monotonic() - started
        walks: list[float] = []
        crawls: list[dict[str, Any]] = []
        for r in range(rounds):
            started = time.perf_counter()
            walked = bare_walk(root)
            walks.append(walked / (time.perf_counter() - started))
            crawled = crawl(url, Path(home), root)
            if crawled["result"]["unchanged"] != count:
                raise SystemExit(f"an unchanged crawl found {crawled['result']}")
            crawled["files_per_second"] = count / crawled["seconds"]
            crawls.append(crawled)
            print(
                f"{count}: round {r + 1}: walk {walks[-1]:,.0f} files/s, crawl "
                f"{crawled['files_per_second']:,.0f} files/s "
                f"({crawled['files_per_second'] / walks[-1]:.2f}x), Worker peak RSS "
                f"{crawled['peak_rss_mib']:.0f} MiB",
                flush=True,
            )
        made = change_some(root, count, per_folder, percent)
        after = crawl(url, Path(home), root)
        check_found(after["result"], count, made)
        print(f"{count}: after {made}: {after['result']} in {after['seconds']:.1f} s", flush=True)
    shutil.rmtree(root, ignore_errors=True)
    return out | {"walk": walks, "crawl": crawls, "made": made, "after_changes": after}


def first_crawl(count: int, per_folder: int, scratch: Path) -> dict[str, Any]:
    root = scratch / f"first-{count}"
    generate_tree(root, count, per_folder)
    with (
        bench_database("library_first") as url,
        tempfile.TemporaryDirectory(prefix="safelight-bench-home-") as home,
    ):
        crawled = crawl(url, Path(home), root)
    shutil.rmtree(root, ignore_errors=True)
    if crawled["result"]["ingested"] != count:
        raise SystemExit(f"the first crawl found {crawled['result']}")
    crawled["files_per_second"] = count / crawled["seconds"]
    print(f"first crawl of {count}: {crawled['files_per_second']:.0f} files/s", flush=True)
    return crawled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--first-count", type=int, default=5000)
    parser.add_argument("--per-folder", type=int, default=500)
    parser.add_argument("--changed-percent", type=float, default=1.0)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="safelight-bench-library-", dir="/var/tmp"))
    sizes: list[dict[str, Any]] = []
    try:
        first = None
        if args.first_count:
            first = first_crawl(args.first_count, args.per_folder, scratch)
        for count in (int(s) for s in args.sizes.split(",")):
            sizes.append(
                run_size(count, args.per_folder, args.rounds, args.changed_percent, scratch)
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_result("library", {"versions": versions(), "settings": vars(args), "first": first,
                             "sizes": sizes})  # fmt: skip
    rows = []
    if first is not None:
        rows.append(
            (f"first crawl, {args.first_count:,} tiny JPEGs", f"{first['files_per_second']:.0f}",
             "-", f"{first['peak_rss_mib']:.0f} MiB", "-")
        )  # fmt: skip
    for size in sizes:
        rates = [c["files_per_second"] for c in size["crawl"]]
        ratio = statistics.median(c / w for c, w in zip(rates, size["walk"], strict=True))
        after = size["after_changes"]
        rows.append(
            (
                f"unchanged crawl, {size['count']:,} files",
                spread(rates),
                spread(size["walk"]),
                spread([c["peak_rss_mib"] for c in size["crawl"]]) + " MiB",
                f"{ratio:.2f}x walk",
            )
        )
        rows.append(
            (
                f"after {args.changed_percent:g}% changed/moved/deleted ({size['made']})",
                f"{size['count'] / after['seconds']:,.0f}",
                "-",
                f"{after['peak_rss_mib']:.0f} MiB",
                "exactly those found",
            )
        )
    print_table(("crawl", "files/s", "bare walk files/s", "Worker peak RSS", "ratio"), rows)


if __name__ == "__main__":
    main()
