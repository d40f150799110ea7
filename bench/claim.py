"""Benchmark 1: the time of one claim under a backlog, beside PgQueuer's.

    .venv/bin/python bench/claim.py [--configs 1,20,1000] [--max-items 1000000]
                                    [--rounds 5] [--samples 200] [--no-peer]

For each number of busy configs K, in a database of its own (bulk-loaded with
INSERT ... SELECT generate_series, then VACUUM ANALYZE), states are built one on top of
the other and a claim is timed in each:

- ``empty``: nothing queued (the claim finds nothing);
- ``one``: one eligible item (of a free config), nothing else: the baseline;
- ``blocked 100k`` / ``blocked 1M``: each of the K busy configs has a running item and
  together they hold 100k (1M) queued items, all requested before the one eligible item
  of the free config (the known trap: a NOT EXISTS claim walks all of them);
- ``backlog 100k`` / ``backlog 1M``: the same items with the K configs free, so the
  claim takes the oldest of them;
- ``waiting 1k`` (between ``one`` and ``blocked``, then removed): ``--waiting`` items
  waiting for a retry (not before tomorrow), requested before the one eligible item and
  spread over every config, the free one included: the claim passes them over.

A sample is the claim statement of src/safelight/work/queries.sql (the one the Worker
runs, on a psycopg connection, prepared after 5 uses as the Worker's are) in a
transaction that rolls back, timed on the client: one round trip. Each state is timed
on a connection of its own (a Worker connected in that state), and again on one that
went through every earlier state ("carried over", with the custom plans PostgreSQL
made for it there: see ``measure``), and the claim as it was before migration 0004
(``--no-before`` leaves it out) and before migration 0008 (its not-before filter) in the
same rounds (not in ``waiting``, where they would take a waiting item). Each state is
measured in ``--rounds`` rounds of ``--samples`` claims; a round's median is one
figure, and the table gives the median of the rounds with their min..max. In the
blocked 100k state of K=1 the same claim is also timed with real commits (claim, then
complete, through WorkStore), and the naive NOT EXISTS claim is timed for reference.

PgQueuer's claim in the same case (one saturated concurrency-limit-1 entrypoint with
100k jobs ahead of a job of a free one) runs in bench/.venv-peers, in turns with
safelight's rounds (bench/peer_claim_pgqueuer.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    PEERS_VENV,
    bench_database,
    create_database,
    drop_database,
    peers_python,
    print_table,
    spread,
    summary,
    versions,
    write_result,
)

from safelight.core.clock import SystemClock
from safelight.core.sql import parse_queries
from safelight.db.pool import open_pool
from safelight.settings import Settings
from safelight.work.kinds import KindSpec, Scope
from safelight.work.store import WorkStore, claim_query

KINDS = ["crawl", "burst_detection", "purge", "proxy_deletion", "noop"]
LEASE_SECONDS = 60.0
BLOCKED_STEPS = (100_000, 1_000_000)
CARRIED = "safelight, carried"
# The claim as it was before migration 0004 (only the LATERAL over configs), timed
# beside the current one in the same rounds.
BEFORE = (Path(__file__).resolve().parent / "sql" / "claim_lateral_v1.sql").read_text()
BEFORE_LABEL = "before (LATERAL only)"
# The claim before migration 0008 (no not-before filter), loaded as the store loads its
# own (notes dropped) and written for one Worker, as claim_query(1) is.
BEFORE_0008 = parse_queries(
    (Path(__file__).resolve().parent / "sql" / "claim_v2_before_0008.sql").read_text()
)["items_claim"].replace("%(limit)s", "1")
BEFORE_0008_LABEL = "before 0008"

# The trap, for reference: the oldest queued item whose config has no running item,
# found by walking the queue in order and checking each item's config.
NAIVE_CLAIM = """
SELECT w.id FROM work_items w
WHERE w.status = 'queued' AND w.kind = ANY(%(kinds)s)
  AND (w.storage_config_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM work_items r
        WHERE r.storage_config_id = w.storage_config_id AND r.status = 'running'))
ORDER BY w.requested_at, w.id
LIMIT 1
FOR UPDATE SKIP LOCKED
"""


def claim_params(worker: str = "bench") -> dict[str, Any]:
    return {
        "worker_id": worker,  # the claim before 0004 (bench/sql)
        "worker_ids": [worker],
        "kinds": KINDS,
        "owner": None,
        "lease_seconds": LEASE_SECONDS,
        "now": SystemClock().now(),
    }


def time_claims(
    conn: psycopg.Connection[Any], samples: int, expect: int | None, sql: str | None = None
) -> list[float]:
    """``samples`` claims, each rolled back; milliseconds each. ``expect``: the item id
    every claim must return (None: none)."""
    query = sql or claim_query(1)
    times = []
    for _ in range(samples):
        params = claim_params()
        conn.execute("BEGIN")
        cur = conn.cursor()
        start = time.perf_counter()
        cur.execute(query, params)
        row = cur.fetchone()
        elapsed = time.perf_counter() - start
        conn.execute("ROLLBACK")
        got = None if row is None else row[0]
        if got != expect:
            raise SystemExit(f"the claim returned {got}, expected {expect}")
        times.append(elapsed * 1000)
    return times


class Peer:
    """PgQueuer's side, in the benchmark venv, driven line by line."""

    def __init__(self, url: str) -> None:
        script = Path(__file__).resolve().parent / "peer_claim_pgqueuer.py"
        self.proc = subprocess.Popen(
            [peers_python(), str(script), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the PgQueuer helper exited")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def load_configs(conn: psycopg.Connection[Any], busy: int) -> tuple[list[str], str]:
    rows = conn.execute(
        "INSERT INTO storage_configs (owner, root_path, created_at)"
        " SELECT 'bench', '/bench/' || g, now() FROM generate_series(0, %s) g RETURNING id",
        (busy,),
    ).fetchall()
    ids = [str(r[0]) for r in rows]
    return ids[:busy], ids[busy]


def add_queued(conn: psycopg.Connection[Any], configs: list[str], start: int, count: int) -> None:
    """``count`` queued noop items spread round-robin over ``configs``, requested one
    microsecond apart from 2020 on (so before anything enqueued now)."""
    conn.execute(
        "INSERT INTO work_items (kind, storage_config_id, requested_at)"
        " SELECT 'noop', (%(configs)s::uuid[])[1 + g %% %(k)s],"
        "        timestamptz '2020-01-01' + g * interval '1 microsecond'"
        " FROM generate_series(%(start)s, %(end)s) g",
        {"configs": configs, "k": len(configs), "start": start, "end": start + count - 1},
    )


def add_waiting(conn: psycopg.Connection[Any], configs: list[str], count: int) -> None:
    """``count`` queued noop items waiting for a retry until tomorrow, spread over
    ``configs``, requested in 2019 (before everything else)."""
    conn.execute(
        "INSERT INTO work_items (kind, storage_config_id, requested_at, retries, not_before)"
        " SELECT 'noop', (%(configs)s::uuid[])[1 + g %% %(k)s],"
        "        timestamptz '2019-06-01' + g * interval '1 microsecond', 1,"
        "        now() + interval '1 day'"
        " FROM generate_series(1, %(count)s) g",
        {"configs": configs, "k": len(configs), "count": count},
    )


def set_busy(conn: psycopg.Connection[Any], configs: list[str], busy: bool) -> None:
    """Give each config a running item (an extra one, requested long ago), or end it."""
    if busy:
        conn.execute(
            "INSERT INTO work_items (kind, storage_config_id, status, requested_at, attempt,"
            " worker_id, started_at, heartbeat_at, lease_expires_at)"
            " SELECT 'noop', c, 'running', timestamptz '2019-01-01', 1, 'elsewhere', now(),"
            "        now(), now() + interval '1 day' FROM unnest(%s::uuid[]) c",
            (configs,),
        )
    else:
        conn.execute(
            "UPDATE work_items SET status = 'succeeded', finished_at = now(),"
            " lease_expires_at = NULL WHERE status = 'running'"
        )
        conn.execute("DELETE FROM work_items WHERE status = 'succeeded'")


def vacuum(conn: psycopg.Connection[Any]) -> None:
    conn.execute("VACUUM ANALYZE work_items")
    conn.execute("VACUUM ANALYZE storage_configs")


def explain(conn: psycopg.Connection[Any]) -> str:
    conn.execute("BEGIN")
    rows = conn.execute(
        "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) " + claim_query(1), claim_params()
    ).fetchall()
    conn.execute("ROLLBACK")
    return "\n".join(r[0] for r in rows)


async def claim_and_complete(url: str, free: str, samples: int) -> list[float]:
    """Real claims through WorkStore (committed), each followed by its completion."""
    pool = await open_pool(url, min_size=1, max_size=2)
    store = WorkStore(
        pool, SystemClock(), [KindSpec("noop", Scope.OPTIONAL)], max_stalls=Settings().max_stalls
    )
    try:
        from uuid import UUID

        await store.enqueue_many("noop", [{} for _ in range(samples)], config_id=UUID(free))
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            item = await store.claim("bench", ["noop"], lease_seconds=LEASE_SECONDS)
            times.append((time.perf_counter() - start) * 1000)
            assert item is not None and str(item.storage_config_id) == free
            assert await store.complete(item.id, item.attempt)
        return times
    finally:
        await pool.close()


def custom_plans(conn: psycopg.Connection[Any], sql: str) -> int:
    """How many custom plans the server made for ``sql`` prepared on ``conn``."""
    row = conn.execute(
        "SELECT coalesce(sum(custom_plans), 0) FROM pg_prepared_statements WHERE statement LIKE %s",
        (sql.strip()[:60].replace("%", "%%") + "%",),
    ).fetchone()
    return int(row[0]) if row else 0


def measure(
    conn: psycopg.Connection[Any],
    url: str,
    args: argparse.Namespace,
    expect: int | None,
    peer: Peer | None = None,
    *,
    current_only: bool = False,
) -> dict[str, Any]:
    """Round medians (ms) of each claim variant (and of the peer), in turns.

    Each state is timed on a connection of its own, as a Worker that connected in that
    state: PostgreSQL picks a prepared statement's generic plan once it costs less than
    the average of the custom plans made so far, every one of them since the statement
    was prepared. A statement prepared while the queue was empty, then used behind a
    backlog over 1,000 configs, is planned anew on each call until enough costly custom
    plans have raised that average (about a thousand). ``safelight, carried`` times the
    same claim on ``conn``, which has gone through every earlier state, to show it.
    """
    variants = {"safelight": claim_query(1)}
    if not current_only:
        variants[BEFORE_0008_LABEL] = BEFORE_0008
    if not args.no_before and not current_only:
        variants[BEFORE_LABEL] = BEFORE
    per_round: dict[str, list[float]] = {name: [] for name in [*variants, CARRIED]}
    every: dict[str, list[float]] = {name: [] for name in per_round}
    custom_before = custom_plans(conn, claim_query(1))
    with psycopg.connect(url, autocommit=True) as fresh:
        for sql in variants.values():  # warm up; also past psycopg's prepare threshold
            time_claims(fresh, 10, expect, sql)
        if peer is not None:
            per_round["pgqueuer"], every["pgqueuer"] = [], []
            peer.ask(cmd="measure", samples=10)
        for _ in range(args.rounds):
            for name, sql in variants.items():
                t = time_claims(fresh, args.samples, expect, sql)
                per_round[name].append(statistics.median(t))
                every[name] += t
            t = time_claims(conn, args.samples, expect)
            per_round[CARRIED].append(statistics.median(t))
            every[CARRIED] += t
            if peer is not None:
                p = peer.ask(cmd="measure", samples=args.samples)["ms"]
                per_round["pgqueuer"].append(statistics.median(p))
                every["pgqueuer"] += p
    out: dict[str, Any] = {
        name: {"rounds": per_round[name], "all": summary(every[name])} for name in per_round
    }
    out[CARRIED]["custom plans"] = custom_plans(conn, claim_query(1)) - custom_before
    return out


def run_configs(busy_count: int, args: argparse.Namespace, peer: Peer | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with (
        bench_database(f"claim_k{busy_count}") as url,
        psycopg.connect(url, autocommit=True) as conn,
    ):
        busy, free = load_configs(conn, busy_count)
        vacuum(conn)
        print(f"K={busy_count}: empty", flush=True)
        out["empty"] = measure(conn, url, args, None)
        row = conn.execute(
            "INSERT INTO work_items (kind, storage_config_id, requested_at)"
            " VALUES ('noop', %s, now()) RETURNING id",
            (free,),
        ).fetchone()
        assert row is not None
        eligible = int(row[0])
        vacuum(conn)
        print(f"K={busy_count}: one", flush=True)
        if peer is not None:
            peer.ask(cmd="state", state="one")
        out["one"] = measure(conn, url, args, eligible, peer)
        if args.waiting:
            add_waiting(conn, [*busy, free], args.waiting)
            vacuum(conn)
            label = f"waiting {args.waiting // 1000}k" if args.waiting >= 1000 else "waiting"
            print(f"K={busy_count}: {label}", flush=True)
            out[label] = measure(conn, url, args, eligible, current_only=True)
            out[f"plan {label}"] = explain(conn)
            conn.execute("DELETE FROM work_items WHERE not_before IS NOT NULL")
            vacuum(conn)
        loaded = 0
        for step in BLOCKED_STEPS:
            if step > args.max_items:
                break
            started = time.perf_counter()
            add_queued(conn, busy, loaded, step - loaded)
            loaded = step
            set_busy(conn, busy, True)
            vacuum(conn)
            label = f"{step // 1000}k" if step < 1_000_000 else f"{step // 1_000_000}M"
            print(
                f"K={busy_count}: blocked {label} (loaded in {time.perf_counter() - started:.0f} s)"
            )
            with_peer = peer if step == 100_000 else None
            if with_peer is not None:
                with_peer.ask(cmd="state", state="blocked", backlog=step)
            out[f"blocked {label}"] = measure(conn, url, args, eligible, with_peer)
            if busy_count == 1 and step == 100_000:
                naive = time_claims(conn, 10, eligible, NAIVE_CLAIM)
                out["naive NOT EXISTS, blocked 100k"] = summary(naive)
                out["claim+complete, blocked 100k"] = summary(
                    asyncio.run(claim_and_complete(url, free, args.samples))
                )
                # The first of those claims took the eligible item: put it back.
                conn.execute(
                    "UPDATE work_items SET status = 'queued', finished_at = NULL, result = NULL,"
                    " worker_id = NULL, started_at = NULL, heartbeat_at = NULL WHERE id = %s",
                    (eligible,),
                )
            out[f"plan blocked {label}"] = explain(conn)
            set_busy(conn, busy, False)
            vacuum(conn)
            oldest = conn.execute(
                "SELECT id FROM work_items WHERE status = 'queued'"
                " ORDER BY requested_at, id LIMIT 1"
            ).fetchone()
            assert oldest is not None
            print(f"K={busy_count}: backlog {label}", flush=True)
            out[f"backlog {label}"] = measure(conn, url, args, int(oldest[0]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default="1,20,1000", help="numbers of busy configs")
    parser.add_argument("--max-items", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument(
        "--waiting", type=int, default=1000, help="items waiting for a retry (0: no such state)"
    )
    parser.add_argument("--no-peer", action="store_true", help="skip PgQueuer")
    parser.add_argument(
        "--no-before", action="store_true", help="skip the claim before migration 0004"
    )
    args = parser.parse_args()

    peer_db = "bench_claim_pgqueuer"
    peer: Peer | None = None
    results: dict[str, Any] = {"versions": versions(), "settings": vars(args), "by_configs": {}}
    try:
        if not args.no_peer:
            peer = Peer(create_database(peer_db, migrated=False))
            results["versions"]["pgqueuer"] = "1.6.0 (" + str(PEERS_VENV.name) + ")"
        for k in [int(x) for x in args.configs.split(",")]:
            results["by_configs"][k] = run_configs(k, args, peer)
    finally:
        if peer is not None:
            peer.close()
            drop_database(peer_db)
    write_result("claim", results)
    report(results)


def report(results: dict[str, Any]) -> None:
    rows = []
    notes = []
    for k, states in results["by_configs"].items():
        base = statistics.median(states["one"]["safelight"]["rounds"])
        for state, data in states.items():
            if state.startswith("plan"):
                continue
            if "safelight" not in data:
                notes.append((k, state, f"{data['median']:.3g}", f"{data['p95']:.3g}"))
                continue
            ours = statistics.median(data["safelight"]["rounds"])
            before = data.get(BEFORE_LABEL)
            before_0008 = data.get(BEFORE_0008_LABEL)
            peer = data.get("pgqueuer")
            carried = data[CARRIED]
            rows.append(
                (
                    k,
                    state,
                    spread(data["safelight"]["rounds"]),
                    f"{data['safelight']['all']['p95']:.3g}",
                    f"{ours / base:.2f}x",
                    f"{spread(carried['rounds'])} ({carried['custom plans']})",
                    spread(before_0008["rounds"]) if before_0008 else "",
                    spread(before["rounds"]) if before else "",
                    spread(peer["rounds"]) if peer else "",
                    f"{ours / statistics.median(peer['rounds']):.2f}" if peer else "",
                )
            )
    print_table(
        (
            "busy configs",
            "state",
            "claim ms, median [min..max] of round medians",
            "p95 ms",
            "vs one",
            "carried over ms (custom plans)",
            "before 0008 ms",
            "before 0004 ms",
            "PgQueuer ms",
            "safelight / PgQueuer",
        ),
        rows,
    )
    print()
    print_table(("busy configs", "reference", "median ms", "p95 ms"), notes)


if __name__ == "__main__":
    main()
