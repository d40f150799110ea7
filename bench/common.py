"""What every benchmark shares: a throw-away database, statistics, versions, results.

Each benchmark makes its own database (``bench_<name>_<pid>`` on the server of
``BENCH_DATABASE_URL``, default ``postgresql://postgres@127.0.0.1:5432/postgres``),
migrates it with ``safelight.db.migrate`` and drops it when it ends, even on failure.
Results go to ``bench/results/<name>.json`` and are printed as a table.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from safelight.db.migrate import migrate
from safelight.db.pool import connect, with_database

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
PEERS_VENV = BENCH / ".venv-peers"
PEERS_PYTHON = PEERS_VENV / "bin" / "python"
ADMIN_URL = os.environ.get("BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # A benchmark stopped by SIGTERM still runs its clean-up (processes, databases).
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, _exit_on_sigterm)


# --- databases -------------------------------------------------------------------------


def create_database(name: str, *, migrated: bool = True) -> str:
    """Create database ``name`` (dropping a leftover of that name) and return its URL."""
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = database_url(name)
    if migrated:

        async def _migrate() -> None:
            conn = await connect(url, "bench-migrate")
            try:
                await migrate(conn)
            finally:
                await conn.close()

        # In a thread of its own, so that async benchmarks can call this too.
        with concurrent.futures.ThreadPoolExecutor(1) as thread:
            thread.submit(asyncio.run, _migrate()).result()
    return url


def database_url(name: str) -> str:
    """A URL (not a keyword string: asyncpg takes only URLs) of database ``name``."""
    if "://" not in ADMIN_URL:
        return with_database(ADMIN_URL, name)
    return urlunsplit(urlsplit(ADMIN_URL)._replace(path="/" + name))


def drop_database(name: str) -> None:
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def bench_database(label: str, *, migrated: bool = True) -> Iterator[str]:
    """A fresh database of this run's own, dropped afterwards."""
    name = f"bench_{label}_{os.getpid()}"
    url = create_database(name, migrated=migrated)
    try:
        yield url
    finally:
        drop_database(name)


class ServerCpu:
    """CPU seconds the server's backends spent on one database while this is open.

    A thread samples ``pg_stat_activity`` for the backends connected to ``dbname`` and
    reads each one's user + system time from ``/proc`` every ``interval`` seconds, so
    only a server on this machine can be measured (``seconds`` is None otherwise). A
    backend's time since its last sample before it exits is missed: at most
    ``interval`` per connection, small beside a drain of several seconds. The server's
    own processes (WAL writer, checkpointer) and other databases' backends are not
    counted.
    """

    def __init__(self, dbname: str, interval: float = 0.05) -> None:
        self._dbname = dbname
        self._interval = interval
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._local = True
        self.seconds: float | None = None

    def __enter__(self) -> ServerCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.seconds = sum(self._seen.values()) if self._local else None

    def _sample(self) -> None:
        ticks = os.sysconf("SC_CLK_TCK")
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            while True:
                rows = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self._dbname,)
                ).fetchall()
                for (pid,) in rows:
                    try:
                        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    except OSError:
                        self._local = self._local and pid in self._seen
                        continue
                    self._seen[pid] = (int(fields[11]) + int(fields[12])) / ticks
                if self._stop.wait(self._interval):
                    return


# --- processes -------------------------------------------------------------------------


class Processes:
    """Child processes this benchmark started; all stopped (by their pid) on exit."""

    def __init__(self) -> None:
        self._children: list[subprocess.Popen[Any]] = []

    def start(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        child = subprocess.Popen(list(argv), start_new_session=True, **kwargs)
        self._children.append(child)
        return child

    def stop_all(self, grace_seconds: float = 10.0) -> None:
        for child in self._children:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        for child in self._children:
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
                child.wait()

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop_all()


def peers_python() -> str:
    """The benchmark venv's Python (procrastinate, PgQueuer, py-spy); made if missing."""
    if not PEERS_PYTHON.exists():
        print(f"creating {PEERS_VENV.relative_to(ROOT)} (bench/requirements.txt) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        subprocess.run(
            [
                str(PEERS_PYTHON),
                "-m",
                "pip",
                "install",
                "-q",
                "-r",
                str(BENCH / "requirements.txt"),
            ],
            check=True,
        )
    return str(PEERS_PYTHON)


# --- statistics ------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100), linear between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def summary(values: Sequence[float]) -> dict[str, float]:
    """n, median, p5/p95/p99, min, max of ``values``."""
    return {
        "n": len(values),
        "median": statistics.median(values) if values else float("nan"),
        "p5": percentile(values, 5),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "min": min(values) if values else float("nan"),
        "max": max(values) if values else float("nan"),
    }


def spread(values: Sequence[float]) -> str:
    """``median [min..max]`` of a few runs, for tables."""
    if not values:
        return "-"
    return f"{statistics.median(values):.3g} [{min(values):.3g}..{max(values):.3g}]"


# --- provenance and results -------------------------------------------------------------


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return out.stdout.strip()


def versions(extra: dict[str, str] | None = None) -> dict[str, str]:
    with psycopg.connect(ADMIN_URL) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    dirty = _git("status", "--porcelain", "--", "src")
    found = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "safelight": _git("rev-parse", "--short", "HEAD") + (" (src modified)" if dirty else ""),
        "python": platform.python_version(),
        "postgresql": str(row[0]) if row else "?",
        "psycopg": psycopg.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
    }
    found.update(extra or {})
    return found


def write_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"results: {path.relative_to(ROOT)}")
    return path


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A Markdown table on stdout (pasteable into docs/benchmarks.md)."""
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


# --- safelight Worker processes ------------------------------------------------------

SAFELIGHT_CLI = ROOT / ".venv" / "bin" / "safelight"
# Used when the CLI is not installed: the same assembly the CLI's ``worker`` runs.
_RUN_WORKERS = """
import asyncio, sys
from safelight.app import WorkerOptions, run_workers
from safelight.appdb import open_app_database
from safelight.settings import Settings

async def main():
    settings = Settings.load()
    options = WorkerOptions(
        concurrency=int(sys.argv[1]), until_idle=sys.argv[2] == "1", name=sys.argv[3]
    )
    database = await open_app_database(settings, concurrency=options.concurrency)
    try:
        await run_workers(settings, options, database=database)
    finally:
        await database.close()

asyncio.run(main())
"""


def worker_argv(concurrency: int, *, until_idle: bool, name: str) -> list[str]:
    """``safelight worker`` (or its equivalent through safelight.app.run_workers)."""
    if SAFELIGHT_CLI.exists():
        argv = [str(SAFELIGHT_CLI), "--log-level", "warning", "worker"]
        argv += ["--concurrency", str(concurrency), "--name", name]
        return argv + (["--until-idle"] if until_idle else [])
    return [sys.executable, "-c", _RUN_WORKERS, str(concurrency), "1" if until_idle else "0", name]


def other_src(path: str | Path) -> Path:
    """The ``src`` folder of another safelight tree (``--before``), checked.

    Takes the folder that holds the ``safelight`` package, or the checkout around it.
    A path without the package would be passed over silently by Python, and the Workers
    would run this tree's code under the other's name: refused instead.
    """
    path = Path(path).resolve()
    for candidate in (path, path / "src"):
        if (candidate / "safelight" / "__init__.py").is_file():
            return candidate
    raise SystemExit(f"--before {path}: no safelight package there, nor in its src/")


def before_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--before SRC``: another tree's code for the Workers that ``what`` names."""
    parser.add_argument(
        "--before",
        type=other_src,
        metavar="SRC",
        help="the src/ folder (or the checkout) of another safelight, for example a "
        f"`git worktree add --detach` of an older commit: {what} run their Workers from it",
    )


def worker_source(env: dict[str, str]) -> str:
    """The folder of the ``safelight`` package a Worker started with ``env`` imports (what
    a result names as the code that ran), read by this interpreter, the CLI's own."""
    out = subprocess.run(
        [sys.executable, "-c", "import safelight; print(safelight.__path__[0])"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def worker_env(
    url: str, home: Path, *, src: Path | None = None, **settings: object
) -> dict[str, str]:
    """The environment of a Worker process: its database, its home, any SAFELIGHT_*.

    ``src`` (from ``other_src``): the Worker runs another tree's code. PYTHONPATH comes
    before the venv's site-packages, so its ``safelight`` shadows this tree's editable
    install; the venv's dependencies stay this tree's, and the database (its schema,
    the items) is whatever the benchmark made with this tree's code.
    """
    env = dict(os.environ)
    env["SAFELIGHT_DATABASE_URL"] = url
    env["SAFELIGHT_HOME"] = str(home)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    env.setdefault("SAFELIGHT_LOG_LEVEL", "warning")
    for name, value in settings.items():
        env["SAFELIGHT_" + name.upper()] = str(value)
    return env
