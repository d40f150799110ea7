"""Minimal DNG files for tests: a TIFF (little-endian) with the DNG tags, a small Bayer
(RGGB) mosaic that LibRaw decodes, and optionally an embedded JPEG preview in a SubIFD,
as cameras and Adobe's converter store it (unrotated: the orientation is a tag).

Hand-written rather than through Pillow: Pillow's TIFF writer neither writes SubIFDs
nor the CFA layout LibRaw needs. Every tag written is one of TIFF 6 / TIFF-EP / DNG 1.4.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from PIL import Image

from safelight.testing.samplegen import marker_picture

_SHORT, _LONG, _ASCII, _BYTE, _SRATIONAL, _RATIONAL = 3, 4, 2, 1, 10, 5
_FORMATS = {_BYTE: "B", _ASCII: "B", _SHORT: "H", _LONG: "I"}

NEW_SUBFILE_TYPE = 254
SUB_IFDS = 330
EXIF_IFD = 34665
DATE_ORIGINAL = 36867
DNG_VERSION = 50706


@dataclass(frozen=True, slots=True)
class _Entry:
    tag: int
    type: int
    values: tuple[int, ...] | bytes

    def payload(self) -> tuple[int, bytes]:
        if isinstance(self.values, bytes):
            return len(self.values), self.values
        if self.type in (_RATIONAL, _SRATIONAL):
            code = "i" if self.type == _SRATIONAL else "I"
            return len(self.values) // 2, struct.pack(f"<{len(self.values)}{code}", *self.values)
        code = _FORMATS[self.type]
        return len(self.values), struct.pack(f"<{len(self.values)}{code}", *self.values)


def _ascii(tag: int, text: str) -> _Entry:
    return _Entry(tag, _ASCII, text.encode("ascii") + b"\0")


class _Writer:
    """Appends blobs and IFDs; children are written before the IFDs that point at them."""

    def __init__(self) -> None:
        self.data = bytearray(b"II*\0\0\0\0\0")

    def blob(self, data: bytes) -> int:
        if len(self.data) % 2:
            self.data += b"\0"
        offset = len(self.data)
        self.data += data
        return offset

    def ifd(self, entries: list[_Entry]) -> int:
        entries = sorted(entries, key=lambda e: e.tag)
        out_of_line: dict[int, int] = {}
        for entry in entries:
            _, payload = entry.payload()
            if len(payload) > 4:
                out_of_line[entry.tag] = self.blob(payload)
        offset = self.blob(b"")
        table = bytearray(struct.pack("<H", len(entries)))
        for entry in entries:
            count, payload = entry.payload()
            field = (
                struct.pack("<I", out_of_line[entry.tag])
                if entry.tag in out_of_line
                else payload.ljust(4, b"\0")
            )
            table += struct.pack("<HHI", entry.tag, entry.type, count) + field
        table += struct.pack("<I", 0)
        self.data += table
        return offset


def _mosaic(width: int, height: int) -> bytes:
    """An RGGB mosaic whose red rises from left to right, green and blue flat (12-bit
    values in 16-bit samples): which way a demosaic was turned shows in its red."""
    red = np.broadcast_to(500 + np.arange(width) * 3000 // max(width - 1, 1), (height, width))
    mosaic = np.full((height, width), 1200, dtype="<u2")
    mosaic[0::2, 0::2] = red[0::2, 0::2]
    return mosaic.tobytes()


def dng_bytes(
    *,
    width: int = 64,
    height: int = 48,
    preview: Image.Image | None = None,
    preview_jpeg: bytes | None = None,
    orientation: int = 1,
    make: str = "Canon",
    model: str = "Canon EOS 6D",
    captured_at: datetime | None = None,
) -> bytes:
    """A DNG of a ``width`` x ``height`` (even) sensor; ``preview``, stored as is (turn
    it the inverse of ``orientation`` first, as a camera does), in a SubIFD as a
    baseline JPEG (or ``preview_jpeg``, already encoded); IFD0 Make, Model, Orientation
    and an Exif IFD DateTimeOriginal."""
    writer = _Writer()
    sub_ifds: list[int] = []
    if preview is not None:
        buffer = io.BytesIO()
        preview.convert("RGB").save(buffer, "JPEG", quality=90)
        preview_jpeg = buffer.getvalue()
    if preview_jpeg is not None:
        with Image.open(io.BytesIO(preview_jpeg), formats=("JPEG",)) as probe:
            preview_size = probe.size
        jpeg = writer.blob(preview_jpeg)
        sub_ifds.append(
            writer.ifd(
                [
                    _Entry(NEW_SUBFILE_TYPE, _LONG, (1,)),  # a reduced-resolution image
                    _Entry(256, _LONG, (preview_size[0],)),
                    _Entry(257, _LONG, (preview_size[1],)),
                    _Entry(258, _SHORT, (8, 8, 8)),
                    _Entry(259, _SHORT, (7,)),  # JPEG
                    _Entry(262, _SHORT, (6,)),  # YCbCr
                    _Entry(273, _LONG, (jpeg,)),
                    _Entry(277, _SHORT, (3,)),
                    _Entry(278, _LONG, (preview_size[1],)),
                    _Entry(279, _LONG, (len(preview_jpeg),)),
                    _Entry(284, _SHORT, (1,)),
                    _Entry(50971, _ASCII, b"2024-05-01T10:00:00\0"),  # PreviewDateTime
                ]
            )
        )
    exif: list[_Entry] = []
    if captured_at is not None:
        exif.append(_ascii(DATE_ORIGINAL, captured_at.strftime("%Y:%m:%d %H:%M:%S")))
        exif.append(_ascii(36868, captured_at.strftime("%Y:%m:%d %H:%M:%S")))
    exif_ifd = writer.ifd(exif) if exif else None
    pixels = writer.blob(_mosaic(width, height))
    entries = [
        _Entry(NEW_SUBFILE_TYPE, _LONG, (0,)),
        _Entry(256, _LONG, (width,)),
        _Entry(257, _LONG, (height,)),
        _Entry(258, _SHORT, (16,)),
        _Entry(259, _SHORT, (1,)),  # uncompressed
        _Entry(262, _SHORT, (32803,)),  # CFA
        _ascii(271, make),
        _ascii(272, model),
        _Entry(273, _LONG, (pixels,)),
        _Entry(274, _SHORT, (orientation,)),
        _Entry(277, _SHORT, (1,)),
        _Entry(278, _LONG, (height,)),
        _Entry(279, _LONG, (width * height * 2,)),
        _Entry(284, _SHORT, (1,)),
        _Entry(33421, _SHORT, (2, 2)),  # CFARepeatPatternDim
        _Entry(33422, _BYTE, bytes([0, 1, 1, 2])),  # CFAPattern: RGGB
        _Entry(DNG_VERSION, _BYTE, bytes([1, 4, 0, 0])),
        _Entry(50707, _BYTE, bytes([1, 1, 0, 0])),  # DNGBackwardVersion
        _ascii(50708, f"{make} {model}"),  # UniqueCameraModel
        _Entry(50714, _SHORT, (0,)),  # BlackLevel
        _Entry(50717, _SHORT, (4095,)),  # WhiteLevel
        # ColorMatrix1 (XYZ -> camera): identity, scaled by 10000; D65.
        _Entry(50721, _SRATIONAL, _identity_matrix()),
        _Entry(50778, _SHORT, (21,)),  # CalibrationIlluminant1: D65
        _Entry(50728, _RATIONAL, (1, 1, 1, 1, 1, 1)),  # AsShotNeutral
    ]
    if sub_ifds:
        entries.append(_Entry(SUB_IFDS, _LONG, tuple(sub_ifds)))
    if exif_ifd is not None:
        entries.append(_Entry(EXIF_IFD, _LONG, (exif_ifd,)))
    first = writer.ifd(entries)
    writer.data[4:8] = struct.pack("<I", first)
    return bytes(writer.data)


def _identity_matrix() -> tuple[int, ...]:
    values: list[int] = []
    for row in range(3):
        for column in range(3):
            values += [10000 if row == column else 0, 10000]
    return tuple(values)


def generate_dngs(
    root: Path, count: int, preview_megapixels: float, sensor_megapixels: float, *, seed: int = 0
) -> tuple[Path, ...]:
    """``count`` distinct DNGs for benchmarks: a ``sensor_megapixels`` mosaic and an
    embedded JPEG preview of about ``preview_megapixels`` (as a camera's full-size one),
    each file its own capture time; the previews are encoded once, four of them."""
    width = max(16, round((preview_megapixels * 1_000_000 * 4 / 3) ** 0.5))
    previews = []
    for index in range(4):
        buffer = io.BytesIO()
        marker_picture(width, max(12, round(width * 3 / 4)), seed=seed + index).save(
            buffer, "JPEG", quality=90
        )
        previews.append(buffer.getvalue())
    sensor_width = max(16, round((sensor_megapixels * 1_000_000 * 4 / 3) ** 0.5)) // 2 * 2
    sensor_height = max(12, round(sensor_width * 3 / 4)) // 2 * 2
    start = datetime(2016, 3, 1, 9, 0, 0) + timedelta(days=seed % 1000)
    paths = []
    for index in range(count):
        folder = root / f"{index // 1000:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"IMG_{index:06d}.dng"
        path.write_bytes(
            dng_bytes(
                width=sensor_width,
                height=sensor_height,
                preview_jpeg=previews[index % len(previews)],
                captured_at=start + timedelta(seconds=37 * index),
            )
        )
        paths.append(path)
    return tuple(paths)
