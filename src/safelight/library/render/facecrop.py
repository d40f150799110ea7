"""A face's picture for the People pages: a square crop around the face's box, cut
from its photo's preview proxy (safelight's own upright JPEG, <= 1920 px wide), never
from the original.

The box is kept in fractions of the upright picture (migration 0023), so one box fits
the preview at whatever size it was made. The crop takes a margin around the face (a
face alone, cut at the chin and the brow, is hard to recognise), is made square around
its centre, clamped inside the picture, and scaled to ``CROP_PIXELS`` (never up).
Synchronous and CPU-bound: run it in a worker thread.
"""

from __future__ import annotations

import io
from typing import IO

from PIL import Image

CROP_PIXELS = 160
"""The side of a face's picture: twice the largest tile it is shown in, for sharp
screens."""
MARGIN = 0.4
"""Added around the face on each side, as a share of the box's larger side."""
MAX_PREVIEW_PIXELS = 40_000_000
"""Far beyond any preview safelight writes (1920 px wide); a larger file under the
proxy root is not one of them, and is not decoded."""
QUALITY = 85

Box = tuple[float, float, float, float]
"""left, top, right, bottom, as fractions of the picture's width and height."""


class NotAPreview(ValueError):
    """The file is not a picture a preview proxy could be."""


def crop_rectangle(box: Box, width: int, height: int) -> tuple[int, int, int, int]:
    """The pixels of a ``width`` x ``height`` picture to cut for the face in ``box``: a
    square of the box's larger side and the margin, centred on the box, moved (and at
    most shrunk) to lie inside the picture; ``(left, top, right, bottom)``, never empty."""
    left, top, right, bottom = box
    centre_x = (left + right) / 2 * width
    centre_y = (top + bottom) / 2 * height
    side = max((right - left) * width, (bottom - top) * height) * (1 + 2 * MARGIN)
    side = max(1, min(round(side), width, height))
    x = min(max(round(centre_x - side / 2), 0), width - side)
    y = min(max(round(centre_y - side / 2), 0), height - side)
    return x, y, x + side, y + side


def cut_face(preview: IO[bytes], box: Box) -> bytes:
    """The JPEG of the face in ``box`` of the ``preview`` (an open file of it);
    :class:`NotAPreview` for a file that is not a JPEG of a preview's size."""
    try:
        with Image.open(preview, formats=["JPEG"]) as image:
            width, height = image.size
            if width * height > MAX_PREVIEW_PIXELS:
                raise NotAPreview(f"{width} x {height} is larger than any preview")
            # A large face needs no full decode: libjpeg's scaled decode (1/2 to 1/8)
            # that still leaves the crop at least CROP_PIXELS wide.
            x, _, right, _ = crop_rectangle(box, width, height)
            side = right - x
            reduce = max(1, side // CROP_PIXELS)
            if reduce > 1:
                image.draft("RGB", (width // reduce, height // reduce))
            rectangle = crop_rectangle(box, *image.size)
            face = image.convert("RGB").crop(rectangle)
    except (OSError, Image.DecompressionBombError, SyntaxError) as error:
        raise NotAPreview(f"not a readable JPEG: {error}") from None
    if face.width > CROP_PIXELS:
        face = face.resize((CROP_PIXELS, CROP_PIXELS), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    face.save(out, "JPEG", quality=QUALITY)
    return out.getvalue()
