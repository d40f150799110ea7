"""A stand-in for a test session that is killed midway (``test_nothing_left_behind``):
it starts what the suites start, through the very helpers they use (the embedded test
server of ``tests/dbserver.py``, a Worker of ``tests/faults/processes.py`` on it, a
folder of ``tests/reaper.py``), says what it started as one JSON line, and waits to be
killed.

    python -m tests.acceptance.abandoned_session
"""

from __future__ import annotations

import json
import sys

from tests.dbserver import start_test_server
from tests.faults.processes import start_worker
from tests.reaper import reaper, temporary_folder


def main() -> None:
    server = start_test_server()
    assert server.home is not None, "run without a test database URL: the embedded server"
    _, url = server.new_database()
    folder = temporary_folder("safelight-abandoned-")
    worker = start_worker(
        "abandoned",
        folder / "workers",
        {
            "SAFELIGHT_DATABASE_URL": url,
            "SAFELIGHT_HOME": str(folder / "home"),
            "SAFELIGHT_PROXY_ROOT": str(folder / "proxies"),
        },
    )
    started = {
        "home": str(server.home),
        "pgdata": str(server.home / "pgdata"),
        "folder": str(folder),
        "worker": worker.pid,
        "worker_log": str(worker.log),
        "reaper": reaper().process.pid,
    }
    print(json.dumps(started), flush=True)
    sys.stdin.read()  # until killed (or stdin closed)


if __name__ == "__main__":
    main()
