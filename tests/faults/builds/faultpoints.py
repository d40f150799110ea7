"""A fault placed at one exact point of a Worker's work, from outside src/.

With ``FAULTS_STOP_AFTER=<action>:<proxy type>`` in its environment (e.g.
``write:thumbnail``), a Worker stops itself with SIGSTOP, the whole process, right
after its journal's "after" line of the first such effect that succeeded, and only that
once. The test sees the stop (``/proc/<pid>/stat`` says ``T``) and thaws it with SIGCONT
when it has done what it wants done meanwhile. A random freeze lands wherever it lands;
this one lands where only one layer of the guarantee stands between a stale attempt
and the next write (tests/faults/test_broken_builds.py).

Every build's ``sitecustomize`` calls :func:`install`; without the variable it does
nothing."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

STOP_AFTER = "FAULTS_STOP_AFTER"


def install() -> None:
    spec = os.environ.get(STOP_AFTER, "")
    if not spec:
        return
    action, _, proxy_type = spec.partition(":")
    from safelight.core import journal

    original = journal.Journal.write
    stopped = False

    def write(self: journal.Journal, entry: dict[str, Any]) -> None:
        nonlocal stopped
        original(self, entry)
        if stopped or entry.get("phase") != "after" or entry.get("ok") is not True:
            return
        if entry.get("action") == action and Path(str(entry.get("target"))).name.startswith(
            proxy_type + "."
        ):
            stopped = True
            os.kill(os.getpid(), signal.SIGSTOP)

    journal.Journal.write = write  # type: ignore[method-assign]
