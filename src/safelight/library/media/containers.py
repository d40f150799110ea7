"""Orientation and EXIF that sit in a file's container rather than where Pillow looks
at open time: a PNG's ``eXIf`` after its pixels, or EXIF as hex in a text chunk (and,
in the same walk of its chunks, its ``tIME``, ``Creation Time`` and an XMP ``iTXt``
after the pixels: ADR 0053), the ``irot``/``imir`` transforms of a HEIF image, and the
orientation in a JPEG XL codestream's image header (ADR 0029); and an AVCHD clip's
recording date in the H.264 stream of its MPEG-TS (ADR 0054).

Read from the open original by position (``os.pread`` where there is a descriptor), so
the file position Pillow decodes from later is left as it was. Each reader is bounded
(chunks, boxes, bytes) and answers "nothing found" for a malformed container: the file's
pixels then fail or succeed in the decoder, with its own error.
"""

from __future__ import annotations

import io
import itertools
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAX_PNG_CHUNKS = 100_000
"""A 250 MP PNG in libpng's 8 KiB IDAT chunks has about 90 000."""
_MAX_EXIF_BYTES = 1 << 20
"""EXIF lives in one JPEG APP1 segment elsewhere (64 KiB); a megabyte is generous."""
_RAW_PROFILES = frozenset({b"Raw profile type exif", b"Raw profile type APP1"})
"""ImageMagick's (and ExifTool's) names for EXIF kept as hex text in a PNG."""
_TEXT_CHUNKS = frozenset({b"tEXt", b"zTXt", b"iTXt"})
_CREATION_TIME = b"Creation Time"
"""The PNG spec's predefined keyword for "time of original image creation"."""
_MAX_TIME_TEXT = 64
_XMP_KEYWORD = b"XML:com.adobe.xmp"

_MAX_BOXES = 1000
_MAX_META_BYTES = 16 << 20
"""A HEIF ``meta`` box holds item locations and properties, a few kilobytes; a
thumbnail-laden one from a camera some hundreds."""


def _read_at(fp: IO[bytes], offset: int, size: int) -> bytes:
    try:
        return os.pread(fp.fileno(), size, offset)
    except (AttributeError, io.UnsupportedOperation):
        position = fp.tell()
        try:
            fp.seek(offset)
            return fp.read(size)
        finally:
            fp.seek(position)


# --- PNG ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PngFacts:
    """What a PNG's chunks say beside its pixels, read in one walk over them."""

    exif: bytes | None = None
    """The EXIF block (TIFF structure, perhaps after ``Exif\\0\\0``): the ``eXIf``
    chunk wherever it is, else a ``Raw profile type exif``/``APP1`` text chunk."""
    created: str | None = None
    """The ``Creation Time`` text, as written (``capturetime.png_text_time`` reads it)."""
    modified: datetime | None = None
    """The ``tIME`` chunk: the image's last modification, in UTC by the PNG spec."""
    xmp: bytes | None = None
    """The XMP packet of an uncompressed ``iTXt`` (``XML:com.adobe.xmp``) wherever it
    is: Pillow sees only those before the pixels at open time."""


def png_exif(fp: IO[bytes]) -> bytes | None:
    """The EXIF block of a PNG (``PngFacts.exif``); ``None`` when there is none."""
    return png_facts(fp).exif


def png_facts(fp: IO[bytes]) -> PngFacts:
    """The EXIF block and the two dates of a PNG; nothing for any other file."""
    if _read_at(fp, 0, 8) != _PNG_SIGNATURE:
        return PngFacts()
    offset = 8
    exif: bytes | None = None
    from_text: bytes | None = None
    created: str | None = None
    modified: datetime | None = None
    xmp: bytes | None = None
    for _ in range(_MAX_PNG_CHUNKS):
        header = _read_at(fp, offset, 8)
        if len(header) < 8:
            break
        length, kind = struct.unpack(">I4s", header)
        if kind == b"eXIf" and exif is None:
            exif = _read_at(fp, offset + 8, min(length, _MAX_EXIF_BYTES))
        elif kind == b"tIME" and length == 7 and modified is None:
            modified = _png_time(_read_at(fp, offset + 8, 7))
        elif (
            kind in _TEXT_CHUNKS
            and length <= 4 * _MAX_EXIF_BYTES
            and (from_text is None or created is None or xmp is None)
        ):
            data = _read_at(fp, offset + 8, length)
            from_text = from_text if from_text is not None else _raw_profile(kind, data)
            created = created if created is not None else _png_creation_text(kind, data)
            xmp = xmp if xmp is not None else _png_xmp(kind, data)
        if kind == b"IEND":
            break
        offset += 12 + length
    return PngFacts(exif if exif is not None else from_text, created, modified, xmp)


def _png_time(data: bytes) -> datetime | None:
    """A ``tIME`` chunk (year, month, day, hour, minute, second), UTC by the spec; a
    second of 60 (a leap second, which the spec allows) is read as 59."""
    if len(data) != 7:
        return None
    year, month, day, hour, minute, second = struct.unpack(">H5B", data)
    try:
        return datetime(year, month, day, hour, minute, min(second, 59), tzinfo=UTC)
    except ValueError:
        return None


def _png_creation_text(kind: bytes, data: bytes) -> str | None:
    """The text of an uncompressed ``Creation Time`` chunk (``capturetime`` parses it);
    None for any other text."""
    keyword, _, rest = data.partition(b"\0")
    if keyword != _CREATION_TIME or kind == b"zTXt":
        return None  # a few bytes are never worth compressing; not seen written so
    if kind == b"iTXt":  # flag, method, language\0, translated keyword\0, text
        if len(rest) < 2 or rest[0] != 0:
            return None
        rest = rest[2:].split(b"\0", 2)[-1]
    return rest[:_MAX_TIME_TEXT].decode("latin-1").strip() or None


def _png_xmp(kind: bytes, data: bytes) -> bytes | None:
    """The packet of an uncompressed XMP ``iTXt`` chunk (as ExifTool and Adobe write
    it), or None for any other text."""
    keyword, _, rest = data.partition(b"\0")
    if kind != b"iTXt" or keyword != _XMP_KEYWORD or len(rest) < 2 or rest[0] != 0:
        return None
    return rest[2:].split(b"\0", 2)[-1] or None


def _raw_profile(kind: bytes, data: bytes) -> bytes | None:
    """The bytes of an ImageMagick raw profile text chunk (``"\\nexif\\n  1234\\n"`` and
    hex lines), or ``None`` for any other text."""
    keyword, _, rest = data.partition(b"\0")
    if keyword not in _RAW_PROFILES:
        return None
    compressed = kind == b"zTXt"
    if kind == b"iTXt":  # flag, method, language\0, translated keyword\0, text
        if len(rest) < 2:
            return None
        compressed = rest[0] == 1
        rest = rest[2:].split(b"\0", 2)[-1]
    elif compressed:
        rest = rest[1:]  # the compression method byte
    if compressed:
        inflater = zlib.decompressobj()
        try:
            rest = inflater.decompress(rest, 4 * _MAX_EXIF_BYTES)
        except zlib.error:
            return None
    lines = rest.decode("latin-1").split("\n")
    try:
        blob = bytes.fromhex("".join(lines[3:]))
    except ValueError:
        return None
    return blob or None


# --- HEIF ---------------------------------------------------------------------------------

# (quarter turns clockwise, mirrored left-right first) -> EXIF orientation
_EXIF_OF = {
    (0, False): 1,
    (0, True): 2,
    (2, False): 3,
    (2, True): 4,
    (3, True): 5,
    (1, False): 6,
    (1, True): 7,
    (3, False): 8,
}


def container_orientation(fp: IO[bytes]) -> int:
    """The turn (EXIF's numbering, 1-8) that the ``irot`` and ``imir`` properties of a
    HEIF file's primary image make, in the order its ``ipma`` lists them: what libheif
    applies when it decodes. 1 when there are none, or the boxes cannot be read."""
    transforms = container_transforms(fp)
    return 1 if transforms is None else transforms


def container_transforms(fp: IO[bytes]) -> int | None:
    """As ``container_orientation``, but None when the primary image has no ``irot`` or
    ``imir`` property at all (or the boxes cannot be read): the container says nothing
    of its turn, which is not the same as an ``irot`` of 0 (ADR 0055)."""
    meta = _top_level_box(fp, b"meta")
    if meta is None or len(meta) < 4:
        return None
    try:
        return _orientation_in_meta(meta[4:])  # after the full box's version and flags
    except (struct.error, IndexError, ValueError):
        return None


def _top_level_box(fp: IO[bytes], wanted: bytes) -> bytes | None:
    for kind, start, size in _top_level_boxes(fp):
        if kind == wanted:
            return _read_at(fp, start, size) if size <= _MAX_META_BYTES else None
    return None


def _top_level_boxes(fp: IO[bytes]) -> Iterator[tuple[bytes, int, int]]:
    """(type, payload offset, payload size) of a file's top-level ISO BMFF boxes, until
    one that cannot be read."""
    offset = 0
    for _ in range(_MAX_BOXES):
        header = _read_at(fp, offset, 16)
        if len(header) < 8:
            return
        size, kind = struct.unpack(">I4s", header[:8])
        start = 8
        if size == 1 and len(header) == 16:
            size, start = struct.unpack(">Q", header[8:16])[0], 16
        elif size == 0:
            size = _size_to_end(fp, offset)
        if size < start:
            return
        yield kind, offset + start, size - start
        offset += size


def _size_to_end(fp: IO[bytes], offset: int) -> int:
    try:
        return os.fstat(fp.fileno()).st_size - offset
    except (AttributeError, io.UnsupportedOperation):
        return fp.seek(0, io.SEEK_END) - offset


def _boxes(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(type, payload) of the boxes laid end to end in ``data``."""
    offset = 0
    for _ in range(_MAX_BOXES):
        if offset + 8 > len(data):
            return
        size, kind = struct.unpack_from(">I4s", data, offset)
        start = 8
        if size == 1:
            (size,) = struct.unpack_from(">Q", data, offset + 8)
            start = 16
        elif size == 0:
            size = len(data) - offset
        if size < start or offset + size > len(data):
            return
        yield kind, data[offset + start : offset + size]
        offset += size


def _orientation_in_meta(meta: bytes) -> int | None:
    children = dict(_boxes(meta))
    pitm, iprp = children.get(b"pitm"), children.get(b"iprp")
    if pitm is None or iprp is None:
        return None
    primary = struct.unpack_from(">H" if pitm[0] == 0 else ">I", pitm, 4)[0]
    properties: list[tuple[bytes, bytes]] = []
    indices: list[int] = []
    for kind, payload in _boxes(iprp):
        if kind == b"ipco":
            properties = list(_boxes(payload))
        elif kind == b"ipma":
            indices += _associations(payload, primary)
    turns, mirrored, transformed = 0, False, False
    for index in indices:
        if not 1 <= index <= len(properties):
            continue
        kind, payload = properties[index - 1]
        transformed = transformed or (kind in (b"irot", b"imir") and bool(payload))
        if kind == b"irot" and payload:
            # Anti-clockwise quarter turns, applied after what came before.
            turns = (turns + 4 - (payload[0] & 3)) % 4
        elif kind == b"imir" and payload:
            # Axis 0 flips top to bottom, 1 left to right: as libheif, which decodes
            # the pixels, and Apple read it (the first edition's wording of "axis" was
            # read both ways). A mirror after the rotation so far reverses it.
            turns, mirrored = ((0 if payload[0] & 1 else 2) - turns) % 4, not mirrored
    return _EXIF_OF[(turns, mirrored)] if transformed else None


def _associations(ipma: bytes, item: int) -> list[int]:
    """The property indices (1-based into ``ipco``) ``ipma`` associates with ``item``."""
    version, flags = ipma[0], int.from_bytes(ipma[1:4], "big")
    (count,) = struct.unpack_from(">I", ipma, 4)
    offset = 8
    for _ in range(min(count, 1 << 16)):
        if version < 1:
            (item_id,) = struct.unpack_from(">H", ipma, offset)
            offset += 2
        else:
            (item_id,) = struct.unpack_from(">I", ipma, offset)
            offset += 4
        associations = ipma[offset]
        offset += 1
        wide = flags & 1
        found: list[int] = []
        for _ in range(associations):
            if wide:
                (value,) = struct.unpack_from(">H", ipma, offset)
                found.append(value & 0x7FFF)
                offset += 2
            else:
                found.append(ipma[offset] & 0x7F)
                offset += 1
        if item_id == item:
            return found
    return []


# --- JPEG XL ------------------------------------------------------------------------------

_JXL_CODESTREAM = b"\xff\x0a"
_JXL_CONTAINER = b"\x00\x00\x00\x0cJXL \r\n\x87\n"
_JXL_HEADER_BYTES = 32
"""The codestream's signature, size header and image header up to its orientation take
at most 2 + 9 + 1 bytes (two 32-bit sizes and their selectors, then 5 bits)."""
_JXL_SIZE_BITS = (9, 13, 18, 30)
"""A size header's U32 distributions: the selector's 2 bits choose how many bits follow."""


def jxl_orientation(fp: IO[bytes]) -> int:
    """The orientation (EXIF's numbering, 1-8) in a JPEG XL codestream's image header,
    bare or in the container's ``jxlc`` box or first ``jxlp`` part: what libjxl applies
    when it decodes (ISO/IEC 18181-1: ``SizeHeader``, then ``ImageMetadata``'s
    ``all_default``, ``extra_fields`` and ``orientation`` minus one in 3 bits). 1 when
    it says none, or cannot be read."""
    head = _read_at(fp, 0, len(_JXL_CONTAINER))
    if head.startswith(_JXL_CODESTREAM):
        codestream = _read_at(fp, 0, _JXL_HEADER_BYTES)
    elif head == _JXL_CONTAINER:
        codestream = _jxl_codestream_start(fp)
    else:
        return 1
    if not codestream.startswith(_JXL_CODESTREAM):
        return 1
    try:
        return _orientation_in_jxl_header(_Bits(codestream[len(_JXL_CODESTREAM) :]))
    except IndexError:  # cut short
        return 1


def _jxl_codestream_start(fp: IO[bytes]) -> bytes:
    for kind, start, size in _top_level_boxes(fp):
        if kind == b"jxlc":
            return _read_at(fp, start, min(size, _JXL_HEADER_BYTES))
        if kind == b"jxlp":  # a part: its index (4 bytes), then the codestream's bytes
            return _read_at(fp, start + 4, min(size - 4, _JXL_HEADER_BYTES))
    return b""


def _orientation_in_jxl_header(bits: _Bits) -> int:
    small = bits.read(1)
    _jxl_size(bits, small)  # the height
    if bits.read(3) == 0:  # no aspect ratio: the width is given
        _jxl_size(bits, small)
    all_default, extra_fields = bits.read(1), 0
    if not all_default:
        extra_fields = bits.read(1)
    return bits.read(3) + 1 if extra_fields else 1


def _jxl_size(bits: _Bits, small: int) -> None:
    bits.read(5 if small else _JXL_SIZE_BITS[bits.read(2)])


class _Bits:
    """A JPEG XL bit reader: each byte's bits from the least significant up."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    def read(self, count: int) -> int:
        value = 0
        for shift in range(count):
            byte = self._data[self._position >> 3]
            value |= ((byte >> (self._position & 7)) & 1) << shift
            self._position += 1
        return value


# --- MPEG-TS (AVCHD) ----------------------------------------------------------------------

_TS_PACKET = 188
_TS_SYNC = 0x47
_TS_SCAN_BYTES = 1 << 20
"""Camcorders write the MDPM in the SEI of every key frame, the first one in the first
access unit: within the first tens of kilobytes of a clip. A megabyte bounds the look."""
_AVCHD_MDPM = bytes.fromhex("17ee8c60f84d11d98cd60800200c9a66") + b"MDPM"
"""The UUID of the unregistered user data (H.264 SEI) that holds AVCHD's Modified DV
Pack Metadata, and its name: what ExifTool's H264 module looks for."""
_MDPM_DATE, _MDPM_TIME = 0x18, 0x19


def avchd_recording_date(fp: IO[bytes]) -> bytes | None:
    """The 8 bytes of an AVCHD clip's recording date: MDPM tag 0x18 (zone byte, then
    year's two BCD bytes and the month) and tag 0x19 (day, hour, minute, second), from
    the first MDPM in the H.264 stream of an MPEG-TS, bare (188-byte packets) or as
    AVCHD's ``.mts``/``.m2ts`` write it (192: a 4-byte time stamp before each packet).
    ``None`` for any other file, or when no MDPM holds both tags."""
    size = _ts_packet_size(_read_at(fp, 0, 3 * 192))
    if size is None:
        return None
    data = _read_at(fp, 0, _TS_SCAN_BYTES)
    payloads: dict[int, bytearray] = {}
    lead = size - _TS_PACKET
    for offset in range(0, len(data) - size + 1, size):
        packet = data[offset + lead : offset + size]
        if packet[0] != _TS_SYNC:
            break
        control = (packet[3] >> 4) & 3
        start = 5 + packet[4] if control & 2 else 4  # after the adaptation field
        if control & 1 and start < _TS_PACKET:
            pid = (packet[1] & 0x1F) << 8 | packet[2]
            payloads.setdefault(pid, bytearray()).extend(packet[start:])
    for stream in payloads.values():
        found = stream.find(_AVCHD_MDPM)
        if found >= 0:
            return _mdpm_date(_unescaped(stream[found + len(_AVCHD_MDPM) :]))
    return None


def _ts_packet_size(head: bytes) -> int | None:
    """188 or 192 when the first three packets start with the sync byte where each
    layout puts it."""
    for size, lead in ((_TS_PACKET, 0), (192, 4)):
        if len(head) > lead + 2 * size and all(head[lead + i * size] == _TS_SYNC for i in range(3)):
            return size
    return None


def _unescaped(nal: bytes | bytearray) -> bytes:
    """An H.264 NAL unit's payload without its emulation prevention bytes (the 3 of
    every ``00 00 03``); only as much as an MDPM can take (a count and 255 entries)."""
    out = bytearray()
    zeros = 0
    for byte in nal[: 2 * (1 + 5 * 255)]:
        if zeros >= 2 and byte == 3:
            zeros = 0
            continue
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out[: 1 + 5 * 255])


def _mdpm_date(mdpm: bytes) -> bytes | None:
    """Tags 0x18 and 0x19's values from an MDPM: a count, then entries of a tag byte
    and four value bytes, in increasing tag order; 0x19 must follow 0x18 at once."""
    if not mdpm:
        return None
    entries = [mdpm[1 + 5 * i : 6 + 5 * i] for i in range(mdpm[0])]
    for first, second in itertools.pairwise(entries):
        if len(second) == 5 and first[0] == _MDPM_DATE and second[0] == _MDPM_TIME:
            return first[1:] + second[1:]
    return None
