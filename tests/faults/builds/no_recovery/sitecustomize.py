"""The Worker with its lease recovery disabled: it runs its loop and writes its
presence as ever, but takes back no item whose lease expired, so an item whose Worker
died stays running (check 2, ``checker.check_liveness``, must report it)."""

import sys
from pathlib import Path

# breaks sits beside the builds' folders (see its docstring).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import breaks  # type: ignore[import-not-found]  # on the sys.path entry above

breaks.disable_lease_recovery()
