"""The faces in one preview: where they are, upright, and what each looks like.

Blocking and CPU-bound: the Worker runs :func:`find_faces` in one of its decode
processes (``render.decoding.ImageDecoder.run``: an address-space limit, killed with its
Worker, a crash there failing only this preview), else in a thread. It is handed the
preview's bytes, read by the Worker from the proxy root (never the original): the
preview is safelight's own JPEG, already turned upright, so a box is a box of the
picture as it is shown. A preview that does not decode, or is larger than a preview can
be (a file put there by someone else), is a :class:`UnreadablePreview`.

Two steps, timed apart by ``bench/faces.py``: :func:`detect` (the HOG detector over the
picture, upsampled once so that faces down to about 40 pixels are found) and
:func:`describe` (the 5 landmarks, then the 128-D descriptor of the aligned face).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image, UnidentifiedImageError

from safelight.library.faces.descriptors import pack
from safelight.library.faces.models import Models, models
from safelight.library.files.errors import MediaError

UPSAMPLE = 1
"""Times the detector doubles the picture first: its window is 80x80 pixels, so once
finds faces down to about 40 pixels (about 2% of a 1920-pixel preview's width), at
about four times the cost of none (docs/benchmarks.md, "Faces")."""
MAX_SIDE = 8192
"""The longest side a preview may have (the largest preview width is far below)."""
MAX_BYTES = 64 << 20
"""The most a preview file may hold to be read (the Worker reads it whole)."""

Pixels = npt.NDArray[np.uint8]


class UnreadablePreview(MediaError):
    """The preview cannot be decoded, or is not what safelight makes."""


@dataclass(frozen=True, slots=True)
class Box:
    """A face's box in the upright picture, as fractions of its width and height."""

    left: float
    top: float
    right: float
    bottom: float


@dataclass(frozen=True, slots=True)
class FoundFace:
    box: Box
    descriptor: bytes
    """128 little-endian float32 (``descriptors.pack``)."""


def find_faces(data: bytes) -> tuple[FoundFace, ...]:
    """The faces of the preview ``data``, top to bottom, left to right."""
    pixels = decode(data)
    loaded = models()
    found = [
        FoundFace(box_of(rect, pixels.shape[1], pixels.shape[0]), describe(loaded, pixels, rect))
        for rect in detect(loaded, pixels)
    ]
    return tuple(sorted(found, key=lambda f: (f.box.top, f.box.left)))


def decode(data: bytes) -> Pixels:
    """The preview as RGB pixels (height, width, 3)."""
    try:
        # A preview is safelight's own JPEG (render.images.PROXY_FORMAT): nothing else is read.
        with Image.open(io.BytesIO(data), formats=("JPEG",)) as image:
            width, height = image.size
            if max(width, height) > MAX_SIDE:
                raise UnreadablePreview(
                    f"a preview of {width}x{height} is larger than a preview can be "
                    f"({MAX_SIDE} pixels a side)"
                )
            return np.asarray(image.convert("RGB"))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as error:
        raise UnreadablePreview(f"the preview cannot be decoded: {error}") from None


def detect(loaded: Models, pixels: Pixels) -> list[Any]:
    """The detector's rectangles (``dlib.rectangle``), each clipped to the picture."""
    height, width = pixels.shape[:2]
    rects = loaded.detector(pixels, UPSAMPLE)
    clipped = []
    for rect in rects:
        left, top = max(0, rect.left()), max(0, rect.top())
        right, bottom = min(width, rect.right()), min(height, rect.bottom())
        if right > left and bottom > top:
            clipped.append(type(rect)(left, top, right, bottom))
    return clipped


def describe(loaded: Models, pixels: Pixels, rect: Any) -> bytes:
    """The stored descriptor of the face in ``rect``."""
    shape = loaded.landmarks(pixels, rect)
    return pack(np.asarray(loaded.descriptor.compute_face_descriptor(pixels, shape)))


def box_of(rect: Any, width: int, height: int) -> Box:
    return Box(
        rect.left() / width, rect.top() / height, rect.right() / width, rect.bottom() / height
    )
