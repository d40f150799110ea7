"""The shared folder of real camera and phone files (``../shared/samples`` beside the
checkout, or ``$SAFELIGHT_SAMPLES_DIR``): where it is, its images, and the mark that skips
a test when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from safelight.library.files.mediatypes import is_raw, media_type


def samples_dir() -> Path | None:
    configured = os.environ.get("SAFELIGHT_SAMPLES_DIR")
    folder = (
        Path(configured) if configured else Path(__file__).parents[3].parent / "shared" / "samples"
    )
    return folder if folder.is_dir() else None


SAMPLES = samples_dir()
IMAGES = (
    # RAW files decode through LibRaw, not Pillow: tests/unit/library/render/test_raw.py
    # checks them.
    sorted(
        p for p in SAMPLES.rglob("*") if p.is_file() and media_type(p) == "image" and not is_raw(p)
    )
    if SAMPLES is not None
    else []
)
needs_samples = pytest.mark.skipif(SAMPLES is None, reason="no samples folder (../shared/samples)")
