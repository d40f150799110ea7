"""The fault-injection suite, long: real Workers, real work, a nemesis, then the checks.

The same scenario as the CI test (``tests/faults/test_faults.py``), for as long and with
whatever seed you like: three ``safelight worker`` processes on a PostgreSQL cluster of
the run's own (never the machine's), each behind a TCP proxy the nemesis can cut, a
stream of crawls, purges, burst detections, noop items and sweeps, changes to the
originals, and SIGKILL / SIGSTOP past a lease / network cuts / PostgreSQL restarts at
random moments. See ``tests/faults/scenario.py`` for what it does and
``tests/faults/checker.py`` for what it checks.

    .venv/bin/python bench/faults.py --duration 600 --seed 7

To see the run fail when the guarantee is broken, run it against a broken build:
``--build no_self_stop``, ``--build no_fence`` (tests/faults/builds: a
``sitecustomize`` first on the Workers' PYTHONPATH only) or ``--drop-running-index``.

Prints the counts (faults by kind, items, attempts, effects) and every violation, and
writes them to ``bench/results/faults-<seed>.json``. Exit 1 if a violation was found;
the run's folder (journals, Worker logs, the queue's history) is then kept for the
post-mortem, and its path printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from safelight.work.store import RUNNING_CONFIG_INDEX  # noqa: E402
from tests.faults.scenario import Report, Settings, run_scenario  # noqa: E402

BUILDS = REPO / "tests" / "faults" / "builds"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of faults")
    parser.add_argument("--seed", type=int, default=1, help="seed of the one RNG")
    parser.add_argument("--lease", type=float, default=2.0, help="lease seconds")
    parser.add_argument(
        "--keep", action="store_true", help="keep the run's folder even without a violation"
    )
    parser.add_argument("--verbose", action="store_true", help="log every fault as it lands")
    parser.add_argument(
        "--build",
        choices=sorted(p.name for p in BUILDS.iterdir() if (p / "sitecustomize.py").is_file()),
        help="run the Workers as a broken build of tests/faults/builds (to see the run fail)",
    )
    parser.add_argument(
        "--drop-running-index",
        action="store_true",
        help="drop the unique index of running items before the Workers start (the same)",
    )
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(message)s",
    )
    # The run's own pool sees every PostgreSQL restart: that is the point, not news.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    defaults = Settings()
    settings = replace(
        defaults,
        duration_seconds=args.duration,
        seed=args.seed,
        lease_seconds=args.lease,
        heartbeat_seconds=args.lease / 4,
        keep_workdir=args.keep,
        worker_pythonpath=str(BUILDS / args.build) if args.build else "",
        database_sabotage=f"DROP INDEX {RUNNING_CONFIG_INDEX}" if args.drop_running_index else "",
        drain_timeout_seconds=max(defaults.drain_timeout_seconds, 30 * args.lease),
    )
    started = datetime.now(UTC)
    began = time.monotonic()
    report = asyncio.run(run_scenario(settings))
    print(report.summary())
    if report.violations or args.keep:
        print(f"run folder: {report.workdir}")
    out = REPO / "bench" / "results" / f"faults-{args.seed}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document(report, started, time.monotonic() - began), indent=1))
    print(f"results: {out.relative_to(REPO)}")
    return 1 if report.violations else 0


def document(report: Report, started: datetime, seconds: float) -> dict[str, object]:
    settings = asdict(report.settings)
    return {
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join(["bench/faults.py", *sys.argv[1:]]),
        "seconds": round(seconds, 1),
        "settings": settings,
        "faults": dict(report.faults),
        "faults_on_a_busy_worker": dict(report.bites),
        "workload": dict(report.work),
        "items": dict(report.items),
        "attempts": dict(report.attempts),
        "effects": report.effects,
        "assets": dict(report.assets),
        "drained": report.drained,
        "phases": {k: round(v, 1) for k, v in report.seconds.items()},
        "violations": [str(v) for v in report.violations],
        "explained": [str(e) for e in report.explained],
        "notes": report.notes,
    }


if __name__ == "__main__":
    sys.exit(main())
