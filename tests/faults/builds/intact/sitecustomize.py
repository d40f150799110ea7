"""The Worker as it is, with only the fault points of ``faultpoints``: the control
beside each broken build (the same fault must then find nothing)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faultpoints  # type: ignore[import-not-found]  # on the sys.path entry above

faultpoints.install()
