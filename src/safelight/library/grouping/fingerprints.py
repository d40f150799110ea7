"""What a photo shows, as 64 bits: a difference hash of its thumbnail (ADR 0056).

Two files of one capture (a JPEG and its WebP export, a copy saved again) have thumbnails
whose hashes differ in a few bits at most: each bit says whether one cell of a 9x8 grey
grid is brighter than its right neighbour, which a re-encode, a resize or a change of
brightness leaves as it was. Two frames of a burst differ where the subject moved. The
hash is only asked where names or times already say "maybe the same capture", so a
library's thumbnails are not all read at each run.
"""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image

from safelight.library.render.images import PROXY_FORMAT

GRID = (9, 8)
"""Nine columns, so each of eight rows gives eight comparisons: 64 bits."""

SAME_CONTENT_MAX_BITS = 6
"""At most this many of the 64 bits differ between two pictures of the same content.
Measured on thumbnails made by the crawl (tests/unit/library/grouping/test_copies.py):
one picture as JPEG, WebP and HEIC, re-saved at another quality, or made brighter,
0 bits apart; frames whose subject moved, 11 and more."""

FINGERPRINT_MAX_PIXELS = 4_000_000
"""A thumbnail is a few hundred pixels wide; anything far larger is not one of ours."""


def fingerprint_of(image: Image.Image) -> int:
    """The 64-bit difference hash of ``image``."""
    grey = image.convert("L").resize(GRID, Image.Resampling.BOX)
    pixels = grey.tobytes()
    width, height = GRID
    bits = 0
    for y in range(height):
        row = pixels[y * width : (y + 1) * width]
        for x in range(width - 1):
            bits = (bits << 1) | (row[x] > row[x + 1])
    return bits


def fingerprint(thumbnail: Path) -> int | None:
    """The fingerprint of a thumbnail; None if it cannot be read.

    Blocking (file read and decode): run it in a thread.
    """
    try:
        with Image.open(os.fspath(thumbnail), formats=(PROXY_FORMAT,)) as image:
            if image.width * image.height > FINGERPRINT_MAX_PIXELS:
                return None
            return fingerprint_of(image)
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def same_content(first: int | None, second: int | None) -> bool | None:
    """Whether two fingerprints show the same picture; None when either is unknown."""
    if first is None or second is None:
        return None
    return (first ^ second).bit_count() <= SAME_CONTENT_MAX_BITS
