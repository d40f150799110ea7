"""Benchmark 4: scope contention, and the check that no config ever ran two items.

    .venv/bin/python bench/scope.py [--items 2000] [--configs 20] [--processes 2]
                                    [--concurrency 4] [--rounds 3]

Per round, on a database of its own: ``--items`` ``noop`` items spread round-robin
over ``--configs`` storage configs (``--order interleaved``, queued in that order; or
``grouped``: each config's items together, config after config), each sleeping 5-20 ms
(uniform, seeded), are
drained by ``--processes`` Worker processes (``safelight worker --concurrency N
--until-idle``). Throughput is items / (last finish - first start), beside the bound
the rule and the slots allow: max(total sleep / slots, the busiest config's sleep).

The rule is checked twice: by an audit trigger that draws a sequence number at every
claim and every end of a scoped item (a config's events must alternate claim, end,
claim, end: two claims in a row would be two running items; this does not depend on
any clock), and from ``work_attempts``: per config, ordered by claimed_at, no attempt
may be claimed before the previous one ended.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

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

from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.handlers import KIND_SPECS
from safelight.library.catalogue.configs import StorageConfigs
from safelight.settings import Settings
from safelight.work.store import WorkStore

# Benchmark-only instrumentation, as in tests/integration/test_store_stress.py.
AUDIT = """
CREATE SEQUENCE bench_audit_seq;
CREATE TABLE bench_audit (seq bigint, config uuid, item bigint, event text);
CREATE FUNCTION bench_audit_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'running' AND OLD.status <> 'running' THEN
        INSERT INTO bench_audit
        VALUES (nextval('bench_audit_seq'), NEW.storage_config_id, NEW.id, 'claim');
    ELSIF OLD.status = 'running' AND NEW.status <> 'running' THEN
        INSERT INTO bench_audit
        VALUES (nextval('bench_audit_seq'), NEW.storage_config_id, NEW.id, 'end');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER bench_audit_status AFTER UPDATE OF status ON work_items
    FOR EACH ROW WHEN (NEW.storage_config_id IS NOT NULL) EXECUTE FUNCTION bench_audit_status();
"""

# claimed_at and ended_at are the database's clock, read inside each statement, the
# claim's after its row passed the running index (ADR 0015), so this finds nothing;
# until then they were the Workers' clocks read before each statement was sent, and a
# claim sent just before the previous item's end committed showed an "overlap" of up
# to one round trip. Counted and measured here beside the audit above.
OVERLAPS_BY_TIME = """
SELECT count(*), coalesce(max(extract(epoch FROM previous_end - claimed_at)) * 1000, 0)
FROM (
    SELECT claimed_at, lag(ended_at) OVER (PARTITION BY storage_config_id ORDER BY claimed_at)
        AS previous_end
    FROM work_attempts
) a
WHERE claimed_at < previous_end
"""


def audit_violations(conn: psycopg.Connection[Any]) -> int:
    """Events of one config that do not alternate claim, end, claim, end."""
    bad = 0
    last: dict[UUID, str] = {}
    for config, event in conn.execute("SELECT config, event FROM bench_audit ORDER BY seq"):
        expected = "end" if last.get(config) == "claim" else "claim"
        if event != expected:
            bad += 1
        last[config] = event
    return bad


async def enqueue(
    url: str, photos: Path, items: int, configs: int, seed: int, order: str
) -> tuple[float, float]:
    """Queue the items; return their total sleep in seconds."""
    rng = random.Random(seed)
    pool = await open_pool(url, min_size=1, max_size=2)
    try:
        clock = SystemClock()
        store = WorkStore(pool, clock, KIND_SPECS, max_stalls=Settings().max_stalls)
        registry = StorageConfigs(pool, clock)
        ids = []
        for n in range(configs):
            root = photos / f"config-{n}"
            root.mkdir(parents=True, exist_ok=True)
            ids.append((await registry.add("bench", root)).config.id)
        sleeps = [rng.uniform(0.005, 0.020) for _ in range(items)]
        per_config: dict[int, float] = {}
        if order == "grouped":
            # Each config's items together, config after config (as a crawl's follow-ups
            # arrive): the oldest-first claim then works through a few configs at a time.
            batches: dict[int, list[dict[str, Any]]] = {}
            for i, seconds in enumerate(sleeps):
                batches.setdefault(i % configs, []).append({"seconds": seconds})
            for n, payloads in batches.items():
                await store.enqueue_many("noop", payloads, config_id=ids[n])
        for i, seconds in enumerate(sleeps):
            per_config[i % configs] = per_config.get(i % configs, 0.0) + seconds
            if order == "interleaved":
                await store.enqueue(
                    "noop", config_id=ids[i % configs], payload={"seconds": seconds}
                )
        busiest = max(per_config.values())
        return sum(sleeps), busiest
    finally:
        await pool.close()


def one_round(args: argparse.Namespace, seed: int, home: Path, photos: Path) -> dict[str, Any]:
    with bench_database("scope") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(AUDIT.encode())
        total_sleep, busiest = asyncio.run(
            enqueue(url, photos, args.items, args.configs, seed, args.order)
        )
        with Processes() as procs:
            children = [
                procs.start(
                    worker_argv(args.concurrency, until_idle=True, name=f"w{n}"),
                    env=worker_env(url, home),
                )
                for n in range(args.processes)
            ]
            for child in children:
                child.wait(600)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT min(started_at), max(finished_at),"
                " count(*) FILTER (WHERE status = 'succeeded') FROM work_items"
                " WHERE kind = 'noop'"
            ).fetchone()
            assert row is not None
            first, last, done = row
            by_time = conn.execute(OVERLAPS_BY_TIME).fetchone()
            assert by_time is not None
            violations = audit_violations(conn)
            claims = conn.execute("SELECT count(*) FROM bench_audit WHERE event = 'claim'")
            claim_count = claims.fetchone()
    if done != args.items:
        raise SystemExit(f"{done} of {args.items} items succeeded")
    span = (last - first).total_seconds()
    slots = args.processes * args.concurrency
    bound = max(total_sleep / slots, busiest)
    return {
        "items_per_second": args.items / span,
        "span_seconds": span,
        "bound_seconds": bound,
        "efficiency": bound / span,
        "audit_violations": violations,
        "overlaps_by_time": int(by_time[0]),
        "max_overlap_by_time_ms": float(by_time[1]),
        "claims": int(claim_count[0]) if claim_count else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--configs", type=int, default=20)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--order",
        choices=("interleaved", "grouped"),
        default="interleaved",
        help="items queued round-robin over the configs, or each config's together",
    )
    args = parser.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory(prefix="safelight-bench-") as scratch:
        # The configs' folders beside the Workers' home: a config inside it is refused
        # (ADR 0034) and the Workers would exit at start.
        home = Path(scratch) / "home"
        home.mkdir()
        for r in range(args.rounds):
            started = time.monotonic()
            result = one_round(args, 337 + r, home, Path(scratch) / "photos")
            rounds.append(result)
            print(
                f"round {r + 1}: {result['items_per_second']:.0f} items/s, "
                f"{result['efficiency']:.0%} of the bound, "
                f"{result['audit_violations']} audit violations, "
                f"{result['overlaps_by_time']} overlaps by time "
                f"(at most {result['max_overlap_by_time_ms']:.1f} ms) "
                f"({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    out = {"versions": versions(), "settings": vars(args), "rounds": rounds}
    write_result("scope", out)
    print_table(
        (
            "items/s",
            "bound items/s",
            "of the bound",
            "audit violations",
            "overlaps by Worker timestamps (max ms)",
        ),
        [
            (
                spread([r["items_per_second"] for r in rounds]),
                f"{args.items / statistics.median(r['bound_seconds'] for r in rounds):.0f}",
                spread([r["efficiency"] for r in rounds]),
                sum(r["audit_violations"] for r in rounds),
                f"{sum(r['overlaps_by_time'] for r in rounds)} "
                f"({max(r['max_overlap_by_time_ms'] for r in rounds):.1f})",
            )
        ],
    )


if __name__ == "__main__":
    main()
