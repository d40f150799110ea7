"""The Worker with its self-stop disabled (as ``no_self_stop``) and the ``(id, attempt)``
fence removed from its handlers' writes: ``WorkStore.fenced`` locks the item row by its
id alone, so a transaction of an attempt that lost its item commits all the same.

The self-stop goes too because it alone keeps a stale attempt from reaching its fenced
transaction (``HandlerContext.fenced`` checks ``ensure_alive()`` first): with it on, the
missing fence is reached only in the residual window, too rarely for one short run."""

import sys
from pathlib import Path

# breaks and faultpoints sit beside the builds' folders (see their docstrings).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import breaks  # type: ignore[import-not-found]  # on the sys.path entry above
import faultpoints  # type: ignore[import-not-found]  # on the sys.path entry above

breaks.disable_self_stop()
breaks.remove_fence()
faultpoints.install()
