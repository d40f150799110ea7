"""Files of captures as a family's disk holds them, for the tests of bursts and copies
(ADR 0056): frames of a burst that differ where the subject moved, and one capture
saved again as another format, an edited copy, a copy with other bytes elsewhere.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pillow_heif
from PIL import Image, ImageEnhance

from safelight.testing.exif import exif_bytes

CAMERA = ("Canon", "Canon EOS 90D")
SIZE = (480, 320)


_BALL = ((1, 2), (4, 2), (7, 2), (2, 1), (6, 3), (2, 3), (6, 1))
"""Where the ball is in each frame, in eighths of the width and quarters of the height."""


def scene(frame: int, size: tuple[int, int] = SIZE) -> Image.Image:
    """A picture of a dark ball on a textured ground, the ball somewhere else in each
    ``frame`` (0-6): frames differ as a moving subject makes them."""
    width, height = size
    x = np.arange(width)[np.newaxis, :]
    y = np.arange(height)[:, np.newaxis]
    ground = 128 + 60 * np.sin(x / 23.0) * np.cos(y / 17.0)
    pixels = np.repeat(ground[..., np.newaxis], 3, axis=2)
    pixels[..., 2] = 200 - y * 80 // height
    column, row = _BALL[frame % len(_BALL)]
    cx, cy, r = column * width // 8, row * height // 4, height // 3
    pixels[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = (20, 20, 30)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def encoded(picture: Image.Image, fmt: str, at: datetime, *, quality: int = 90) -> bytes:
    """``picture`` saved as ``fmt`` (JPEG, WEBP, HEIF) with the camera's EXIF at ``at``."""
    pillow_heif.register_heif_opener()
    buffer = io.BytesIO()
    exif = exif_bytes(make=CAMERA[0], model=CAMERA[1], captured_at=at)
    picture.save(buffer, fmt, quality=quality, exif=exif)
    return buffer.getvalue()


def edited(picture: Image.Image) -> Image.Image:
    """What a phone's editor makes of it: brighter, the picture itself unchanged."""
    return ImageEnhance.Brightness(picture).enhance(1.25)


@dataclass(frozen=True)
class CaptureLibrary:
    root: Path
    burst: tuple[str, ...]
    """Three frames of one camera in one second (no sub-seconds): one burst."""
    stacks: dict[str, tuple[str, str]]
    """Each other file of a capture: (its primary's path, its stack kind)."""


def capture_library(root: Path, start: datetime) -> CaptureLibrary:
    """A folder of a burst of distinct frames, a JPEG with its WebP and HEIC exports, an
    edited copy and a browser's duplicate beside their originals, and a copy with other
    bytes in another folder. Each capture a minute after the last, so none is a burst
    with another."""
    at = [start + timedelta(minutes=i) for i in range(5)]
    files: dict[str, bytes] = {}
    burst = tuple(f"burst/IMG_{101 + i:04d}.JPG" for i in range(3))
    for i, frame in enumerate(burst):
        files[frame] = encoded(scene(i), "JPEG", at[0])
    export = scene(3)
    files["export/IMG_0200.JPG"] = encoded(export, "JPEG", at[1])
    files["export/IMG_0200.webp"] = encoded(export, "WEBP", at[1], quality=80)
    files["export/IMG_0200.HEIC"] = encoded(export, "HEIF", at[1], quality=70)
    files["edits/IMG_0300.JPG"] = encoded(scene(4), "JPEG", at[2])
    files["edits/IMG_0300-edited.jpg"] = encoded(edited(scene(4)), "JPEG", at[2])
    files["edits/IMG_0301.JPG"] = encoded(scene(5), "JPEG", at[3])
    files["edits/IMG_0301 (1).jpg"] = encoded(scene(5), "JPEG", at[3], quality=75)
    files["phone/IMG_0400.JPG"] = encoded(scene(6), "JPEG", at[4])
    files["backup/2024/IMG_0400.JPG"] = encoded(scene(6), "JPEG", at[4], quality=80)
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return CaptureLibrary(
        root=root,
        burst=burst,
        stacks={
            "export/IMG_0200.webp": ("export/IMG_0200.JPG", "format"),
            "export/IMG_0200.HEIC": ("export/IMG_0200.JPG", "format"),
            "edits/IMG_0300-edited.jpg": ("edits/IMG_0300.JPG", "copy"),
            "edits/IMG_0301 (1).jpg": ("edits/IMG_0301.JPG", "copy"),
            "phone/IMG_0400.JPG": ("backup/2024/IMG_0400.JPG", "copy"),
        },
    )
