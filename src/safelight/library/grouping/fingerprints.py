"""What a photo shows, as 64 bits: a DCT hash (pHash) of its thumbnail, the one picture
hash of the code base (ADR 0056 for copies and bursts, ADR 0066 for similar shots).

Each bit says whether one of the 8x8 lowest frequencies of the thumbnail's 32x32 grey
image is above their median: the picture's broad shapes, which a re-encode, a resize, a
filter or a change of brightness leave as they were; frames whose subject moved differ
in many. Half the bits are set in every hash (the median splits them), so two hashes
always differ in an even number of bits.

The crawl stores the hash of each thumbnail it makes (``assets.picture_hash``); grouping
reads the stored hash, and a thumbnail only where none is stored yet.

Chosen over the difference hash of ADR 0056 by ``bench/similar.py`` (docs/benchmarks.md,
"Similar shots"): on 95 distinct sample photos and 14 variants of each, the nearest two
distinct photos are 14 bits apart under this hash and 6 under the difference hash, and
frames of the test burst 20 bits apart (11 under the difference hash).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image

from safelight.library.render.images import PROXY_FORMAT

SIDE = 32
"""The grey image the frequencies are taken from, SIDE x SIDE pixels."""

LOW = 8
"""The LOW x LOW lowest frequencies give the 64 bits."""

SAME_CONTENT_MAX_BITS = 6
"""At most this many of the 64 bits differ between two pictures of the same content.
Measured on thumbnails made by the crawl (tests/unit/library/grouping/test_copies.py):
one picture as JPEG, WebP and HEIC, re-saved at another quality, or made brighter,
0-2 bits apart; frames whose subject moved, 20 and more. On the shared samples
(bench/similar.py), re-encodes and brightness edits 0-2 bits apart at the median, 2-4
for nine in ten."""

FINGERPRINT_MAX_PIXELS = 4_000_000
"""A thumbnail is a few hundred pixels wide; anything far larger is not one of ours."""


def _dct_basis(n: int) -> np.ndarray:
    """The DCT-II basis, row k the frequency k at n points, scaled as imagehash's (one
    factor for every coefficient, which no comparison with their median can see)."""
    k = np.arange(n)[:, np.newaxis]
    x = np.arange(n)[np.newaxis, :]
    return np.cos(np.pi * (2 * x + 1) * k / (2 * n))


_BASIS = _dct_basis(SIDE)[:LOW]


def fingerprint_of(image: Image.Image) -> int:
    """The 64-bit DCT hash of ``image`` (bit 63 is the lowest frequency)."""
    grey = image.convert("L").resize((SIDE, SIDE), Image.Resampling.LANCZOS)
    low = _BASIS @ np.asarray(grey, dtype=np.float64) @ _BASIS.T
    bits = 0
    for above in (low > np.median(low)).flatten():
        bits = (bits << 1) | int(above)
    return bits


def fingerprint(thumbnail: Path | bytes) -> int | None:
    """The fingerprint of a thumbnail (a file of the proxy root, or its bytes); None if
    it cannot be read.

    Blocking (file read and decode): run it in a thread.
    """
    source = io.BytesIO(thumbnail) if isinstance(thumbnail, bytes) else os.fspath(thumbnail)
    try:
        with Image.open(source, formats=(PROXY_FORMAT,)) as image:
            if image.width * image.height > FINGERPRINT_MAX_PIXELS:
                return None
            return fingerprint_of(image)
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def distance(first: int, second: int) -> int:
    """How many of the 64 bits differ."""
    return (first ^ second).bit_count()


def same_content(first: int | None, second: int | None) -> bool | None:
    """Whether two fingerprints show the same picture; None when either is unknown."""
    if first is None or second is None:
        return None
    return distance(first, second) <= SAME_CONTENT_MAX_BITS
