"""Camera RAW files (DNG, CR2, CR3, NEF, ARW, RAF, ORF, RW2...): metadata and proxies
through LibRaw (``rawpy``), from one read of the open original (ADR 0027).

Proxies come from the largest preview the camera embedded (LibRaw's ``extract_thumb``:
the biggest of the JPEG or bitmap previews, the preview IFDs of a DNG or other TIFF-based
RAW included). Only when there is none, or it is smaller than both the preview width
and a half-size demosaic, is the sensor data demosaiced (``postprocess(half_size=True)``),
and then only if that fits the decode budget; otherwise the small preview serves.

Metadata, in order of trust:

- Orientation: LibRaw's ``flip`` (which it reads from each maker's own place), else the
  TIFF IFD0 Orientation. Embedded previews are stored as the sensor saw them, so the
  proxies are turned by it here, as ``images`` turns any photo by its EXIF orientation.
- Make, model, capture time: the EXIF of TIFF-based RAWs (IFD0 and the Exif IFD: DNG,
  CR2, NEF, ARW, ORF, RW2, PEF...), of CR3's ``CMT1`` box (make and model) and ``CMT2``
  box (the Exif IFD: dates with sub-seconds and offset), of CRW's CIFF heap, of MRW's
  ``TTW`` block (a TIFF), or of the embedded JPEG (RAF's carries the camera's full
  EXIF). The capture time falls back to LibRaw's timestamp (the EXIF date it parsed, as
  the camera's wall clock), then the file's time.

The file is read into memory once (LibRaw parses from a buffer), so a RAW larger than the
decode budget allows is refused before it is read, like any photo that would not fit.
"""

from __future__ import annotations

import io
import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import rawpy
from PIL import Image

from safelight.library.files import sniffing
from safelight.library.files.errors import (
    CorruptMedia,
    DecompressionBomb,
    TooLargeToDecode,
    UnsupportedMedia,
)
from safelight.library.files.limits import DECODE_BASELINE_BYTES, MIB
from safelight.library.files.originals import OriginalRef, open_source
from safelight.library.media.capturetime import CaptureTime
from safelight.library.media.exif import ExifDate, ExifFields, read_exif, read_exif_ifd_dates
from safelight.library.media.jpegblocks import read_ciff
from safelight.library.media.metadata import (
    MAX_IMAGE_PIXELS,
    ImageMetadata,
    captured_at_from_exif,
    file_time,
)
from safelight.library.media.sidecars import NO_FACTS, SidecarFacts
from safelight.library.render.images import (
    _TRANSPOSE,
    BROKEN_FILE_ERRORS,
    ImageProxies,
    ProxySpec,
    proxies_from_upright_image,
)

FORMAT = "RAW"
"""``ImageMetadata.format`` of every RAW (the family is in the file's extension)."""

_FLIP_TO_ORIENTATION = {0: 1, 1: 2, 3: 3, 2: 4, 4: 5, 6: 6, 7: 7, 5: 8}
"""LibRaw's ``flip`` (bits: 4 swap axes, 2 flip vertically, 1 flip horizontally, as
dcraw maps the TIFF tag) -> the EXIF orientation."""

_CANON_UUID = bytes.fromhex("85c0b687820f11e08111f4ce462b6a48")
_OUT_OF_MEMORY = (
    rawpy.LibRawUnsufficientMemoryError,
    rawpy.LibRawTooBigError,
    rawpy.LibRawMemPoolOverflowError,
)
_MAX_BOXES = 1000
_PREVIEW_FORMATS = ("JPEG",)
"""What an embedded preview LibRaw hands over as encoded bytes may be opened as; a
preview in any other format is none (the sensor data decodes instead)."""
_PREVIEW_ERRORS = (
    *BROKEN_FILE_ERRORS,
    Image.DecompressionBombError,
    # Pillow warns of some broken headers and goes on; ``metadata`` makes its bomb
    # warning an error, and where every warning is (the tests), any arrives here.
    UserWarning,
)

_RAW_COPIES = 2
"""Bytes per sensor sample LibRaw holds while demosaicing beside the file's buffer: the
16-bit raw image, then its half-size image of four 16-bit channels (the same bytes)."""
_DEMOSAIC_OUTPUT_BYTES = 3 + 4
"""Per output pixel: the 8-bit RGB array and the Pillow image made of it."""


def sniff(head: bytes) -> str | None:
    """The container LibRaw would read a file's first bytes as (``"tiff"``, ``"cr3"``,
    ``"raf"``, ``"crw"``, ``"mrw"``, ``"x3f"``; any TIFF is tried), or None when its
    content is no RAW (``sniffing``: JPEG, HEIF, a video...)."""
    content = sniffing.sniff(head)
    if content is None:
        return None
    return "tiff" if content is sniffing.TIFF else content.container


def decode_raw(
    src: Path | OriginalRef, spec: ProxySpec, sidecar: SidecarFacts = NO_FACTS
) -> tuple[ImageMetadata, ImageProxies]:
    """A RAW's metadata and proxies (blocking; runs in a decode process). Its XMP
    sidecar's capture time and orientation (``sidecar``) win over the file's."""
    budget = spec.decode_memory_mib * MIB - DECODE_BASELINE_BYTES
    with open_source(src) as original:
        st = os.fstat(original.fileno())
        head = os.pread(original.fileno(), sniffing.HEAD_BYTES, 0)
        container = sniff(head)
        if container is None:
            raise UnsupportedMedia("not a RAW file: its content is no RAW format safelight reads")
        if st.st_size > budget // 2:
            raise TooLargeToDecode(
                f"too large to decode safely: a {st.st_size // MIB} MiB RAW file in a decode "
                f"budget of {spec.decode_memory_mib} MiB (SAFELIGHT_DECODE_MEMORY_MIB)"
            )
        data = original.read()
    with _open_raw(data) as raw:
        sizes = raw.sizes
        if sizes.raw_width * sizes.raw_height > MAX_IMAGE_PIXELS:
            raise DecompressionBomb(
                f"decompression bomb: {sizes.raw_width}x{sizes.raw_height} is more than "
                f"{MAX_IMAGE_PIXELS} pixels"
            )
        thumb = _embedded_preview(raw)
        fields = _fields(container, data, thumb)
        orientation = _FLIP_TO_ORIENTATION.get(sizes.flip, 1)
        if orientation == 1 and fields.orientation:
            orientation = fields.orientation
        if sidecar.orientation is not None:
            orientation = sidecar.orientation
        stored = (sizes.width, sizes.height)
        if stored[0] <= 0 or stored[1] <= 0:
            raise CorruptMedia("RAW image has no pixels")
        swaps = orientation in (5, 6, 7, 8)
        display = (stored[1], stored[0]) if swaps else stored
        half = (max(1, stored[0] // 2), max(1, stored[1] // 2))
        image = _preview_image(thumb, spec.preview_width, swaps)
        if image is None or max(image.size) < min(spec.preview_width, max(half)):
            demosaiced = _demosaic(raw, data, budget, fallback=image is not None)
            image = demosaiced if demosaiced is not None else image
        if image is None:
            raise UnsupportedMedia("RAW file with no preview and no sensor data LibRaw can read")
        found = captured_at_from_exif(fields.dates) or _libraw_time(raw)
        captured = sidecar.captured or (CaptureTime(found, "exif") if found else None)
    method = _TRANSPOSE.get(orientation)
    upright = image.transpose(method) if method is not None else image
    proxies = proxies_from_upright_image(upright.convert("RGB"), spec)
    meta = ImageMetadata(
        format=FORMAT,
        width=display[0],
        height=display[1],
        orientation=orientation,
        captured_at=captured.at if captured is not None else file_time(st.st_mtime_ns),
        captured_at_source=captured.source if captured is not None else "file",
        captured_is_instant=captured is None,  # the file's time on disk is an instant
        make=fields.make,
        model=fields.model,
        burst_id=None,
        content_identifier=None,
        sequence_number=fields.sequence_number,
    )
    return meta, replace(proxies, width=display[0], height=display[1])


def _open_raw(data: bytes) -> Any:
    # A BytesIO of a bytes object read whole shares it: LibRaw parses this very buffer.
    try:
        return rawpy.imread(io.BytesIO(data))
    except _OUT_OF_MEMORY as error:
        raise TooLargeToDecode(f"too large to decode safely: LibRaw: {error}") from error
    except rawpy.LibRawFileUnsupportedError as error:
        raise UnsupportedMedia("a RAW format or camera LibRaw does not read") from error
    except (rawpy.LibRawError, ValueError) as error:
        raise CorruptMedia(f"corrupt RAW file: {error}") from error


def _embedded_preview(raw: Any) -> Any:
    try:
        return raw.extract_thumb()
    except (rawpy.LibRawNoThumbnailError, rawpy.LibRawUnsupportedThumbnailError):
        return None
    except rawpy.LibRawError:
        return None  # a broken preview: the sensor data may still decode


def _preview_image(thumb: Any, preview_width: int, swaps: bool) -> Image.Image | None:
    """The embedded preview decoded (a JPEG at the smallest DCT scale still at least the
    preview size), or None if there is none or it does not decode."""
    if thumb is None:
        return None
    if thumb.format == rawpy.ThumbFormat.BITMAP:
        pixels = np.asarray(thumb.data)
        if pixels.ndim != 3 or pixels.shape[2] not in (1, 3):
            return None
        return Image.fromarray(pixels[..., 0] if pixels.shape[2] == 1 else pixels)
    try:
        image = Image.open(io.BytesIO(thumb.data), formats=_PREVIEW_FORMATS)
        if image.format != "JPEG" or image.width * image.height > MAX_IMAGE_PIXELS:
            return None
        width, height = image.size
        scale = min(1.0, preview_width / (height if swaps else width))
        image.draft("RGB", (max(1, round(width * scale)), max(1, round(height * scale))))
        image.load()
    except _PREVIEW_ERRORS:
        return None  # a broken preview: the sensor data may still decode
    return image


def _demosaic(raw: Any, data: bytes, budget: int, *, fallback: bool) -> Image.Image | None:
    """A half-size demosaic of the sensor data, unturned; None if it would not fit the
    budget or fails while a smaller preview can serve (``fallback``)."""
    sizes = raw.sizes
    needed = (
        len(data)
        + sizes.raw_width * sizes.raw_height * 2 * _RAW_COPIES
        + (sizes.width // 2) * (sizes.height // 2) * _DEMOSAIC_OUTPUT_BYTES
    )
    if needed > budget:
        if fallback:
            return None
        raise TooLargeToDecode(
            f"too large to decode safely: the RAW has no usable preview and demosaicing "
            f"its {sizes.raw_width * sizes.raw_height / 1e6:.1f} MP needs about "
            f"{needed // MIB} MiB beyond the decode process's own "
            f"(SAFELIGHT_DECODE_MEMORY_MIB)"
        )
    try:
        rgb = raw.postprocess(half_size=True, output_bps=8, user_flip=0, use_camera_wb=True)
    except _OUT_OF_MEMORY as error:
        if fallback:
            return None
        raise TooLargeToDecode(f"too large to decode safely: LibRaw: {error}") from error
    except rawpy.LibRawError as error:
        if fallback:
            return None
        raise CorruptMedia(f"cannot decode the RAW's sensor data: {error}") from error
    return Image.fromarray(np.ascontiguousarray(rgb), "RGB")


def _fields(container: str, data: bytes, thumb: Any) -> ExifFields:
    """Make, model, dates (and orientation) from where this container keeps its EXIF."""
    if container == "tiff":
        # ORF and RW2 are TIFF under another magic number: read as TIFF.
        return read_exif(data if data[2:4] in (b"*\0", b"\0*") else data[:2] + b"*\0" + data[4:])
    if container == "cr3":
        # CMT1 is IFD0 (make, model, orientation); CMT2 holds the Exif IFD's tags: the
        # capture dates with their sub-seconds and offset, which LibRaw's time drops.
        cmt1 = _cr3_box(data, b"CMT1")
        fields = read_exif(cmt1) if cmt1 is not None else ExifFields()
        cmt2 = _cr3_box(data, b"CMT2")
        if cmt2 is not None and (dates := read_exif_ifd_dates(cmt2)):
            fields = replace(fields, dates=dates)
        return fields
    if container == "crw":
        block = read_ciff(data)
        stamp = block.captured_at
        dates = (ExifDate(stamp.strftime("%Y:%m:%d %H:%M:%S"), None, None),) if stamp else ()
        return ExifFields(make=block.make, model=block.model, dates=dates)
    if container == "mrw":
        tiff = _mrw_block(data, b"\0TTW")
        return read_exif(tiff) if tiff is not None else ExifFields()
    if thumb is not None and thumb.format == rawpy.ThumbFormat.JPEG:
        try:
            with Image.open(io.BytesIO(thumb.data), formats=_PREVIEW_FORMATS) as jpeg:
                blob = jpeg.info.get("exif")
        except _PREVIEW_ERRORS:
            blob = None
        if isinstance(blob, bytes):
            return read_exif(blob)
    return ExifFields()


def _mrw_block(data: bytes, name: bytes) -> bytes | None:
    """The payload of an MRW's block ``name``, among those before its image data."""
    end = min(len(data), 8 + int.from_bytes(data[4:8], "big"))
    position = 8
    for _ in range(_MAX_BOXES):
        if position + 8 > end:
            return None
        size = int.from_bytes(data[position + 4 : position + 8], "big")
        if position + 8 + size > end:
            return None
        if data[position : position + 4] == name:
            return data[position + 8 : position + 8 + size]
        position += 8 + size
    return None


def _cr3_box(data: bytes, name: bytes) -> bytes | None:
    """A box of Canon's ``uuid`` box in a CR3's ``moov`` (``CMT1``: a TIFF of IFD0)."""
    moov = _child(data, 0, len(data), b"moov")
    if moov is None:
        return None
    canon = _child(data, moov[0], moov[1], b"uuid", _CANON_UUID)
    if canon is None:
        return None
    found = _child(data, canon[0], canon[1], name)
    return data[found[0] : found[1]] if found is not None else None


def _child(
    data: bytes, start: int, end: int, kind: bytes, usertype: bytes | None = None
) -> tuple[int, int] | None:
    """``(payload start, end)`` of the first box of ``kind`` between ``start`` and ``end``."""
    position = start
    for _ in range(_MAX_BOXES):
        if position + 8 > end:
            return None
        size = int.from_bytes(data[position : position + 4], "big")
        header = 8
        if size == 1:
            size = int.from_bytes(data[position + 8 : position + 16], "big")
            header = 16
        elif size == 0:
            size = end - position
        if size < header or position + size > end:
            return None
        payload = position + header
        if data[position + 4 : position + 8] == kind:
            if usertype is None:
                return payload, position + size
            if data[payload : payload + 16] == usertype:
                return payload + 16, position + size
        position += size
    return None


def _libraw_time(raw: Any) -> datetime | None:
    """LibRaw's capture time: the EXIF date it parsed, turned to a time_t and back in
    this process's zone, so the camera's wall clock again (naive); None if unset."""
    try:
        stamp = raw.other.timestamp
    except (AttributeError, ValueError, OverflowError, OSError):
        return None
    if not isinstance(stamp, datetime) or stamp.year <= 1970:
        return None
    return stamp.replace(tzinfo=None)
