"""The Worker with its self-stop disabled (as ``no_self_stop``) and the ``(id, attempt)``
fence removed from its handlers' writes: ``WorkStore.fenced`` locks the item row by its
id alone, so a transaction of an attempt that lost its item commits all the same.

The self-stop goes too because it alone keeps a stale attempt from reaching its fenced
transaction (``HandlerContext.fenced`` checks ``ensure_alive()`` first): with it on, the
missing fence is reached only in the residual window, too rarely for one short run."""

import sys
from pathlib import Path
from types import MappingProxyType

# faultpoints sits beside the builds' folders (see its docstring).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faultpoints  # type: ignore[import-not-found]  # on the sys.path entry above

from safelight.work import executor, store


def _never_overdue(self: object) -> bool:
    return False


def _no_self_stop(self: object) -> None:
    return None


executor._Attempt._overdue = _never_overdue  # type: ignore[method-assign]
executor._Attempt._self_stop_due = _no_self_stop  # type: ignore[method-assign]
# The store's module-level mapping, which its lookups read: they see the stand-in.
store.QUERIES = MappingProxyType(
    {
        **store.QUERIES,
        "attempt_lock": "SELECT 1 FROM work_items WHERE id = %(id)s FOR SHARE",
    }
)

faultpoints.install()
