"""What a file holds, by its first bytes: the format its content is, whatever its name.

The walk lists files by extension (``mediatypes``: it must not open every file), but a
name can lie: transfer tools save JPEGs as ``.nef``, phones share HEICs as ``.jpg``, a
PNG is renamed ``.jpg`` by hand. The decoder and the metadata readers follow the content
(ADR 0052): ``sniff_file`` tells which format a file is, and ``misnamed`` says when its
extension names another.

A TIFF is a plain image or a camera RAW built on TIFF (DNG, CR2, NEF, ARW, PEF...). The
content decides when it can: a ``DNGVersion`` tag, Canon's ``CR`` marker, or an IFD whose
pixels are sensor data (photometric CFA or LinearRaw, in IFD0, the IFDs after it or
their SubIFDs) make it a RAW; none of them leaves it a ``TIFF``, which a RAW extension
still sends to LibRaw first (``raw_by_name``) and Pillow when LibRaw refuses it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from safelight.library.files.mediatypes import (
    IMAGE_FORMATS,
    RAW_EXTENSIONS,
    VIDEO_EXTENSIONS,
    extension_of,
)

Kind = Literal["image", "raw", "video"]

HEAD_BYTES = 512
"""What is read to sniff a file: every signature below lies within it (an MPEG
transport stream's second sync byte is at 188, an M2TS one's at 196)."""


@dataclass(frozen=True, slots=True)
class Content:
    """A format a file's content is."""

    kind: Kind
    """``image`` (Pillow decodes it), ``raw`` (LibRaw does) or ``video`` (ffmpeg)."""
    label: str
    """Its name in a note or a reason: "JPEG", "HEIF", "camera RAW (CR3)", "MP4 video"."""
    pillow_format: str | None = None
    """Pillow's name of an image's format, one of ``IMAGE_FORMATS``."""
    extensions: frozenset[str] = frozenset()
    """The extensions whose name says this content; any other is a name that lies."""
    container: str | None = None
    """A RAW's container, where ``raw`` finds its metadata: ``tiff``, ``cr3``, ``raf``,
    ``crw``, ``mrw`` or ``x3f``."""

    @property
    def a(self) -> str:
        """Its label with its article, as a note says it: "a JPEG", "an MP4 video"."""
        spoken_vowel = self.label[0] in "AEIOU" or self.label.startswith("MP")
        return f"{'an' if spoken_vowel else 'a'} {self.label}"


def _image(pillow_format: str, label: str, *extensions: str) -> Content:
    assert pillow_format in IMAGE_FORMATS
    return Content("image", label, pillow_format, frozenset(extensions))


def _raw(container: str, label: str) -> Content:
    return Content("raw", f"camera RAW ({label})", None, RAW_EXTENSIONS, container)


def _video(label: str) -> Content:
    return Content("video", label, None, VIDEO_EXTENSIONS)


JPEG = _image("JPEG", "JPEG", ".jpg", ".jpeg", ".jpe")
PNG = _image("PNG", "PNG", ".png")
GIF = _image("GIF", "GIF", ".gif")
BMP = _image("BMP", "BMP", ".bmp")
TIFF = _image("TIFF", "TIFF", ".tif", ".tiff")
WEBP = _image("WEBP", "WebP", ".webp")
HEIF = _image("HEIF", "HEIF", ".heic", ".heif", ".hif")
AVIF = _image("AVIF", "AVIF", ".avif", ".heif")
JXL = _image("JXL", "JPEG XL", ".jxl")
RAW_TIFF = _raw("tiff", "TIFF-based")
RAW_CONTAINERS = {name: _raw(name, name.upper()) for name in ("cr3", "raf", "crw", "mrw", "x3f")}

_TIFF_MAGIC = (b"II*\0", b"MM\0*", b"II+\0", b"MM\0+")  # classic and BigTIFF
_RAW_TIFF_MAGIC = (b"IIRO", b"IIRS", b"MMOR", b"IIU\0")
"""TIFF under magic numbers of its own: Olympus ORF, Panasonic RW2 (always RAWs)."""
_RAF_MAGIC = b"FUJIFILMCCD-RAW"
_CRW_HEAP = b"HEAPCCDR"
"""Canon's CRW: a CIFF heap (``II``, header length, this type) holding the whole file."""
_MRW_MAGIC = b"\0MRM"
_X3F_MAGIC = b"FOVb"
_JXL_CONTAINER = b"\0\0\0\x0cJXL \r\n\x87\n"
_BMP_HEADER_SIZES = frozenset({12, 16, 40, 52, 56, 64, 108, 124})
"""The DIB header sizes a BMP's file header is followed by: "BM" alone is too weak."""
_HEIF_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1",
                          b"msf1", b"mif2"})  # fmt: skip
_AVIF_BRANDS = frozenset({b"avif", b"avis"})
_QUICKTIME_ATOMS = frozenset({b"moov", b"mdat", b"wide", b"free", b"skip", b"pnot"})
"""First atoms of a QuickTime movie written without an ``ftyp`` (older cameras)."""
_TS_PACKET = 188

_PHOTOMETRIC = 262
_SUBIFDS = 330
_DNG_VERSION = 50706
_SENSOR_PHOTOMETRICS = frozenset({32803, 34892})  # CFA, LinearRaw
_MAX_IFDS = 16
_MAX_ENTRIES = 512


def sniff(head: bytes) -> Content | None:
    """The format of a file's first ``HEAD_BYTES``, or None when it is none safelight
    knows. A TIFF is ``TIFF`` here: ``sniff_file`` tells a TIFF-based RAW from it."""
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return GIF
    if head[:4] in _TIFF_MAGIC:
        return TIFF
    if head[:4] in _RAW_TIFF_MAGIC:
        return RAW_TIFF
    if head[:4] == b"RIFF":
        return (
            WEBP if head[8:12] == b"WEBP" else _video("AVI video") if head[8:11] == b"AVI" else None
        )
    if head.startswith(b"\xff\x0a") or head.startswith(_JXL_CONTAINER):
        return JXL
    if head[4:8] == b"ftyp":
        return _iso_media(head)
    if head.startswith(_RAF_MAGIC):
        return RAW_CONTAINERS["raf"]
    if head[:2] == b"II" and head[6:14] == _CRW_HEAP:
        return RAW_CONTAINERS["crw"]
    if head.startswith(_MRW_MAGIC):
        return RAW_CONTAINERS["mrw"]
    if head.startswith(_X3F_MAGIC):
        return RAW_CONTAINERS["x3f"]
    if head[:2] == b"BM" and int.from_bytes(head[14:18], "little") in _BMP_HEADER_SIZES:
        return BMP
    return _other_video(head)


def _iso_media(head: bytes) -> Content:
    """An ISO base media file (``ftyp``): a HEIF or AVIF image, a CR3, or a video."""
    size = int.from_bytes(head[:4], "big")
    major = head[8:12]
    compatible = {head[i : i + 4] for i in range(16, min(size, len(head)) - 3, 4)}
    if major == b"crx ":
        return RAW_CONTAINERS["cr3"]
    if major in _AVIF_BRANDS:
        return AVIF
    if major in _HEIF_BRANDS:
        return HEIF
    if not compatible & {b"isom", b"mp41", b"mp42", b"qt  "}:
        if compatible & _AVIF_BRANDS:
            return AVIF
        if compatible & _HEIF_BRANDS:
            return HEIF
    if major == b"qt  ":
        return _video("QuickTime movie")
    if major.startswith(b"3g"):
        return _video("3GPP video")
    return _video("MP4 video")


def _other_video(head: bytes) -> Content | None:
    if head[4:8] in _QUICKTIME_ATOMS:
        return _video("QuickTime movie")
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return _video("Matroska video")
    if head[:1] == b"\x47" and head[_TS_PACKET : _TS_PACKET + 1] == b"\x47":
        return _video("MPEG transport stream")
    if head[4:5] == b"\x47" and head[4 + _TS_PACKET + 4 : 4 + _TS_PACKET + 5] == b"\x47":
        return _video("MPEG transport stream (M2TS)")
    if head[:4] in (b"\0\0\1\xba", b"\0\0\1\xb3"):
        return _video("MPEG video")
    if head.startswith(b"\x30\x26\xb2\x75\x8e\x66\xcf\x11"):
        return _video("ASF video")
    return None


def sniff_file(fd: int) -> Content | None:
    """``sniff`` of the open file ``fd`` (read with ``pread``: its offset is left alone),
    a TIFF that holds sensor data told as the RAW it is."""
    content = sniff(os.pread(fd, HEAD_BYTES, 0))
    if content is TIFF and _tiff_holds_raw(fd):
        return RAW_TIFF
    return content


def raw_by_name(content: Content, name: str) -> bool:
    """Whether LibRaw reads this file first: a RAW by content, or a TIFF with no sign
    of sensor data but a RAW's name (an older maker's layout; LibRaw refusing it, it is
    a TIFF after all)."""
    return content.kind == "raw" or (content is TIFF and extension_of(name) in RAW_EXTENSIONS)


def misnamed(content: Content, name: str) -> str | None:
    """The note for a file whose extension names another format than its content
    ("holds a JPEG, named .nef"), or None when its name says what it holds."""
    extension = extension_of(name)
    if extension in content.extensions:
        return None
    return f"holds {content.a}, named {extension or 'without an extension'}"


def _tiff_holds_raw(fd: int) -> bool:
    """Whether a TIFF is a camera RAW: a DNG (``DNGVersion``), a CR2 (``CR`` after
    the header) or an IFD of sensor data, among the IFD chain and its SubIFDs."""
    header = os.pread(fd, 16, 0)
    if len(header) < 8 or header[2:4] not in (b"*\0", b"\0*"):
        return False  # BigTIFF: no camera writes its RAWs in it
    if header[8:10] == b"CR":
        return True
    order: Literal["little", "big"] = "little" if header[:2] == b"II" else "big"
    pending = [int.from_bytes(header[4:8], order)]
    seen: set[int] = set()
    while pending and len(seen) < _MAX_IFDS:
        offset = pending.pop()
        if offset < 8 or offset in seen:
            continue
        seen.add(offset)
        count_bytes = os.pread(fd, 2, offset)
        if len(count_bytes) < 2:
            continue
        count = min(int.from_bytes(count_bytes, order), _MAX_ENTRIES)
        table = os.pread(fd, count * 12 + 4, offset + 2)
        for at in range(0, min(count * 12, len(table) - 11), 12):
            tag = int.from_bytes(table[at : at + 2], order)
            kind = int.from_bytes(table[at + 2 : at + 4], order)
            values = int.from_bytes(table[at + 4 : at + 8], order)
            field = table[at + 8 : at + 12]
            if tag == _DNG_VERSION:
                return True
            if tag == _PHOTOMETRIC:
                value = int.from_bytes(field[:2] if kind == 3 else field, order)
                if value in _SENSOR_PHOTOMETRICS:
                    return True
            if tag == _SUBIFDS and kind in (4, 13):
                pending.extend(_offsets(fd, field, values, order))
        if len(table) == count * 12 + 4:
            pending.append(int.from_bytes(table[count * 12 :], order))  # the next IFD
    return False


def _offsets(fd: int, field: bytes, values: int, order: Literal["little", "big"]) -> list[int]:
    """The SubIFDs' offsets: in the entry itself for one, else at the offset it holds."""
    values = min(values, _MAX_IFDS)
    if values <= 1:
        return [int.from_bytes(field, order)]
    data = os.pread(fd, values * 4, int.from_bytes(field, order))
    return [int.from_bytes(data[i : i + 4], order) for i in range(0, len(data) - 3, 4)]
