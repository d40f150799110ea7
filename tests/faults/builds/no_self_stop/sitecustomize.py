"""The Worker with its self-stop disabled: an attempt never finds itself overdue, so
neither its timer, nor ``ensure_alive()``, nor its heartbeat stops it when it runs past
half a lease without one. Losing its item (the heartbeat's fenced answer) or a shutdown
still stops it, and every database write is still fenced."""

import sys
from pathlib import Path

# faultpoints sits beside the builds' folders (see its docstring).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faultpoints  # type: ignore[import-not-found]  # on the sys.path entry above

from safelight.work import executor


def _never_overdue(self: object) -> bool:
    return False


def _no_self_stop(self: object) -> None:
    return None


executor._Attempt._overdue = _never_overdue  # type: ignore[method-assign]
executor._Attempt._self_stop_due = _no_self_stop  # type: ignore[method-assign]

faultpoints.install()
