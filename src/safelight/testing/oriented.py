"""Photos stored turned or mirrored, in every format safelight reads that can say so, with
the orientation written where cameras, phones and editors write it (ADR 0029):

- JPEG: EXIF in APP1. WebP: the ``EXIF`` chunk. TIFF: tag 274 of IFD0.
- PNG: an ``eXIf`` chunk before the pixels (Pillow, ExifTool), one after them (older
  writers), or ImageMagick's ``Raw profile type exif`` hex text (``zTXt``).
- HEIF (pillow-heif/libheif) and AVIF (Pillow/libavif): the ``irot``/``imir`` container
  transforms, and EXIF's Orientation beside them as iPhones and Samsungs write it; or
  EXIF's Orientation alone (``container=False``), which the HEIF spec says to ignore.

The picture is a quadrant pattern: red top-left, green top-right, blue bottom-left,
white bottom-right, as displayed; any wrong turn or mirror moves red or green.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import Literal

from PIL import Image

from safelight.testing.exif import exif_bytes
from safelight.testing.samplegen import GREEN, INVERSE_TRANSPOSE, RED

BLUE = (30, 40, 220)
WHITE = (255, 255, 255)

OrientedFormat = Literal[
    "jpeg", "png", "png-late-exif", "png-raw-profile", "tiff", "tiff-deflate", "webp",
    "avif", "heif",
]  # fmt: skip
EXTENSIONS: dict[OrientedFormat, str] = {
    "jpeg": ".jpg",
    "png": ".png",
    "png-late-exif": ".png",
    "png-raw-profile": ".png",
    "tiff": ".tif",
    "tiff-deflate": ".tif",
    "webp": ".webp",
    "avif": ".avif",
    "heif": ".heic",
}

_PLACEHOLDER_TAG = 0x0113
"""Unassigned, right after Orientation (0x0112) in IFD0's sorted order: written in its
place where an encoder would turn EXIF's Orientation into container transforms, then
renamed in the file's bytes."""


def quadrants(width: int, height: int) -> Image.Image:
    """The upright picture: red, green / blue, white."""
    image = Image.new("RGB", (width, height), WHITE)
    half_w, half_h = width // 2, height // 2
    image.paste(RED, (0, 0, half_w, half_h))
    image.paste(GREEN, (half_w, 0, width, half_h))
    image.paste(BLUE, (0, half_h, half_w, height))
    return image


def oriented_photo(
    fmt: OrientedFormat,
    orientation: int,
    *,
    size: tuple[int, int] = (400, 240),
    container: bool = True,
    stored_for: int | None = None,
    exif_reset: bool = False,
) -> bytes:
    """The bytes of a photo that displays as ``quadrants(*size)`` once turned by
    ``orientation`` (1-8). For HEIF and AVIF with ``container=False`` the pixels are
    stored turned with the orientation in EXIF only, and no container transform.
    ``stored_for``: the orientation the pixels are stored for instead, while the file
    says ``orientation`` (a file an editor's sidecar corrects). ``exif_reset`` (HEIF
    with its container transforms): EXIF's Orientation says 1, as libheif's writers
    (heif-enc, and so ImageMagick, GIMP, darktable) leave it."""
    upright = quadrants(*size)
    turn = orientation if stored_for is None else stored_for
    stored = upright.transpose(INVERSE_TRANSPOSE[turn]) if turn > 1 else upright
    buffer = io.BytesIO()
    if fmt == "jpeg":
        stored.save(buffer, "JPEG", quality=92, exif=exif_bytes(orientation=orientation))
    elif fmt == "webp":
        stored.save(buffer, "WEBP", quality=92, exif=exif_bytes(orientation=orientation))
    elif fmt in ("tiff", "tiff-deflate"):
        compression = "tiff_adobe_deflate" if fmt == "tiff-deflate" else None
        stored.save(buffer, "TIFF", tiffinfo={274: orientation}, compression=compression)
    elif fmt == "png":
        stored.save(buffer, "PNG", exif=exif_bytes(orientation=orientation))
    elif fmt == "png-late-exif":
        stored.save(buffer, "PNG")
        return _png_before_iend(buffer.getvalue(), b"eXIf", exif_bytes(orientation=orientation))
    elif fmt == "png-raw-profile":
        stored.save(buffer, "PNG")
        blob = exif_bytes(orientation=orientation)
        hexed = "\n".join(blob.hex()[i : i + 72] for i in range(0, 2 * len(blob), 72))
        text = f"\nexif\n{len(blob):8d}\n{hexed}\n".encode("latin-1")
        body = b"Raw profile type exif\0\0" + zlib.compress(text)
        return _png_after_ihdr(buffer.getvalue(), b"zTXt", body)
    elif fmt in ("avif", "heif"):
        data = _iso_bmff_photo(fmt, stored, orientation, container)
        return _exif_orientation_reset(data, orientation) if exif_reset else data
    else:  # pragma: no cover - Literal exhausts
        raise ValueError(fmt)
    return buffer.getvalue()


def _iso_bmff_photo(
    fmt: Literal["avif", "heif"], stored: Image.Image, orientation: int, container: bool
) -> bytes:
    """Both encoders turn EXIF's Orientation into ``irot``/``imir``; Pillow's AVIF
    encoder then drops it from the EXIF, pillow-heif keeps it. To store it in EXIF
    where the encoder would not, a placeholder tag is written and renamed after."""
    exif = Image.Exif()
    keep_in_exif = not container or fmt == "avif"
    if container:
        exif[0x0112] = orientation
    if keep_in_exif:
        exif[_PLACEHOLDER_TAG] = orientation
    buffer = io.BytesIO()
    stored.save(buffer, "AVIF" if fmt == "avif" else "HEIF", quality=90, exif=exif.tobytes())
    data = buffer.getvalue()
    if keep_in_exif:
        endian = ">" if b"Exif\0\0MM" in data else "<"
        entry = struct.pack(endian + "HHI", _PLACEHOLDER_TAG, 3, 1)
        if data.count(entry) != 1:
            raise AssertionError("the EXIF placeholder is not in the file exactly once")
        data = data.replace(entry, struct.pack(endian + "HHI", 0x0112, 3, 1))
    return data


def _exif_orientation_reset(data: bytes, orientation: int) -> bytes:
    """``data`` with its EXIF Orientation entry's value ``orientation`` made 1."""
    endian = ">" if b"Exif\0\0MM" in data else "<"
    entry = struct.pack(endian + "HHIH", 0x0112, 3, 1, orientation)
    if data.count(entry) != 1:
        raise AssertionError("the EXIF Orientation is not in the file exactly once")
    return data.replace(entry, struct.pack(endian + "HHIH", 0x0112, 3, 1, 1))


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png_before_iend(png: bytes, kind: bytes, body: bytes) -> bytes:
    end = png.rindex(b"IEND") - 4
    return png[:end] + _png_chunk(kind, body) + png[end:]


def _png_after_ihdr(png: bytes, kind: bytes, body: bytes) -> bytes:
    after = 8 + 8 + struct.unpack(">I", png[8:12])[0] + 4
    return png[:after] + _png_chunk(kind, body) + png[after:]


# --- what a test sees in a picture of the pattern ---------------------------------


def near(actual: tuple[int, ...], expected: tuple[int, ...]) -> bool:
    return all(abs(a - e) <= 40 for a, e in zip(actual, expected, strict=True))


def quadrant_colours(image: Image.Image) -> list[tuple[int, ...]]:
    """The colours at the middle of the four quadrants: TL, TR, BL, BR."""
    width, height = image.size
    points = [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)]
    return [tuple(image.getpixel((int(width * x), int(height * y)))) for x, y in points]  # type: ignore[arg-type]


def assert_shows(image: Image.Image, expected: list[tuple[int, int, int]]) -> None:
    colours = quadrant_colours(image)
    assert all(near(c, e) for c, e in zip(colours, expected, strict=True)), colours


def turned(image: Image.Image, orientation: int) -> Image.Image:
    """``image`` turned as EXIF's ``orientation`` turns stored pixels upright."""
    upright = {
        2: Image.Transpose.FLIP_LEFT_RIGHT,
        3: Image.Transpose.ROTATE_180,
        4: Image.Transpose.FLIP_TOP_BOTTOM,
        5: Image.Transpose.TRANSPOSE,
        6: Image.Transpose.ROTATE_270,
        7: Image.Transpose.TRANSVERSE,
        8: Image.Transpose.ROTATE_90,
    }
    return image.transpose(upright[orientation]) if orientation > 1 else image.copy()
