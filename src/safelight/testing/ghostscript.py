"""A PostScript file and a fake Ghostscript that tells whether anything ran it: the
tests of "Pillow opens only the formats safelight reads" (issue #27, item 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import EpsImagePlugin

POSTSCRIPT = (
    b"%!PS-Adobe-3.0 EPSF-3.0\n"
    b"%%BoundingBox: 0 0 10 10\n"
    b"newpath 0 0 moveto 10 10 lineto stroke\n"
    b"showpage\n"
    b"%%EOF\n"
)
"""An EPS file: Pillow's EPS plugin would accept it, and run ``gs`` to load it."""


class FakeGhostscript:
    """A ``gs`` first on PATH that leaves ``marker`` behind if anything runs it.

    Processes started after it (decode processes, ``subprocess``) inherit the PATH."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.marker = folder / "gs-ran"
        bin_dir = folder / "fake-bin"
        bin_dir.mkdir()
        gs = bin_dir / "gs"
        gs.write_text(f'#!/bin/sh\necho "$@" >> "{self.marker}"\nexit 0\n')
        gs.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        # Pillow remembers whether it found gs; forget it, so this process would look again.
        monkeypatch.setattr(EpsImagePlugin, "gs_binary", None)

    def ran(self) -> bool:
        return self.marker.exists()
