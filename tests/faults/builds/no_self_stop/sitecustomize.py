"""The Worker with its self-stop disabled: an attempt never finds itself overdue, so
neither its timer, nor ``ensure_alive()``, nor its heartbeat stops it when it runs past
half a lease without one. Losing its item (the heartbeat's fenced answer) or a shutdown
still stops it, and every database write is still fenced."""

import sys
from pathlib import Path

# breaks and faultpoints sit beside the builds' folders (see their docstrings).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import breaks  # type: ignore[import-not-found]  # on the sys.path entry above
import faultpoints  # type: ignore[import-not-found]  # on the sys.path entry above

breaks.disable_self_stop()
faultpoints.install()
