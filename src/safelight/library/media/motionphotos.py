"""Android motion photos: a still (JPEG or HEIC) with a short MP4 inside the same file.

Where the video is, by what the file says of it, first that holds:

1. Google's XMP (``GCamera``/``Camera``, one namespace): ``MotionPhoto="1"`` with a
   ``Container:Directory`` whose item of ``Item:Semantic="MotionPhoto"`` has an
   ``Item:Length`` (the items after the primary are laid end to end at the end of the
   file, so the video starts that many bytes, and those of the items after it, before
   the end; ``Item:Padding`` is what follows it inside that length), or the older
   ``MicroVideo="1"`` with ``MicroVideoOffset``, the video's start counted from the end.
2. A top-level ``mpvd`` box of a HEIC (Samsung's and Google's HEIC motion photos): the
   box's payload is the video.
3. Samsung's trailer: the file ends in ``<length>SEFT`` after a ``SEFH`` directory
   whose entries point back at blocks; the block named ``MotionPhoto_Data`` holds the
   MP4 right after its name (in a HEIC that block only points at the ``mpvd`` box).

Each place is believed only if an ISO BMFF ``ftyp`` box starts where it points and the
video fits in the file. A file that claims a video none of them verifies is a still
with a reason (``MotionVideo.issue``), never a motion photo. Everything is read with
``pread`` from the crawl's open original, a few small reads (the head for XMP, the
last 8 bytes for the trailer, box headers): a plain JPEG costs two reads.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from safelight.library.media.xmp import (
    NS_GCAMERA,
    NS_GCONTAINER,
    NS_GCONTAINER_ITEM,
    XmpProperties,
    find_xmp_packet,
    parse_xmp,
)

HEAD_BYTES = 256 * 1024
"""Where a JPEG's XMP (APP1, right after the start) and a HEIC's boxes are looked for."""
_TAIL_BYTES = 64 * 1024
"""The SEF directory is this small (a few entries of 12 bytes)."""
_COPY_CHUNK = 1024 * 1024
MOTION_VIDEO_NAME = "motion.mp4"
"""The copy of the embedded video in the crawl's staging folder, that ffmpeg reads."""


@dataclass(frozen=True, slots=True)
class MotionVideo:
    """What a file holds of a motion video: a verified byte range, or a reason why not."""

    offset: int = 0
    length: int = 0
    source: str = ""
    """Which metadata found it: ``xmp``, ``mpvd`` or ``samsung``."""
    issue: str | None = None
    """Set when the file claims a video that is not there (then offset/length are 0)."""

    @property
    def found(self) -> bool:
        return self.issue is None and self.length > 0


# --- XMP (library/media/xmp.py reads it; here, what a motion photo needs of it) -----------


def _directory_items(props: XmpProperties) -> list[dict[str, str]]:
    """The ``Container:Directory`` items in order, each its ``Item:`` fields by name."""
    return [
        {
            name: value
            for (namespace, name), value in item.items()
            if namespace == NS_GCONTAINER_ITEM
        }
        for item in props.items(NS_GCONTAINER, "Directory")
    ]


# --- finding the video -------------------------------------------------------------------


def find_motion_video(fd: int, size: int) -> MotionVideo | None:
    """The motion video of the open file ``fd`` of ``size`` bytes; None for a plain still."""
    head = os.pread(fd, min(HEAD_BYTES, size), 0)
    claims: list[str] = []
    packet = find_xmp_packet(head)
    if packet is not None and (b"MotionPhoto" in packet or b"MicroVideo" in packet):
        found = _from_xmp(fd, size, packet)
        if found is not None:
            if found.found:
                return found
            claims.append(found.issue or "")
    if head[4:8] == b"ftyp":
        found = _from_mpvd_box(fd, size)
        if found is not None:
            if found.found:
                return found
            claims.append(found.issue or "")
    found = _from_samsung_trailer(fd, size, heif=head[4:8] == b"ftyp")
    if found is not None:
        if found.found:
            return found
        claims.append(found.issue or "")
    if claims:
        return MotionVideo(issue="; ".join(c for c in claims if c))
    return None


def _integer(value: str | None) -> int | None:
    if value is None or not re.fullmatch(r"\d{1,15}", value):
        return None
    return int(value)


def _from_xmp(fd: int, size: int, packet: bytes) -> MotionVideo | None:
    props = parse_xmp(packet)
    if not props:
        return MotionVideo(issue="motion photo XMP that cannot be parsed")
    motion = props.get(NS_GCAMERA, "MotionPhoto")
    micro = props.get(NS_GCAMERA, "MicroVideo")
    if motion != "1" and micro != "1":
        return None  # "0": the camera says there is no video (the user turned it off)
    if motion == "1":
        items = _directory_items(props)
        for index, item in enumerate(items):
            if item.get("Semantic") != "MotionPhoto":
                continue
            lengths = [_integer(i.get("Length")) for i in items[index:]]
            if any(n is None for n in lengths):
                return MotionVideo(issue="motion photo XMP without a valid Item:Length")
            from_end = sum(n for n in lengths if n is not None)
            length = from_end - (_integer(item.get("Padding")) or 0)
            return _verified(fd, size, size - from_end, length, "xmp")
    if micro == "1":
        offset = _integer(props.get(NS_GCAMERA, "MicroVideoOffset"))
        if offset is None:
            return MotionVideo(issue="MicroVideo XMP without a valid MicroVideoOffset")
        return _verified(fd, size, size - offset, offset, "xmp")
    # No directory item: a HEIC's mpvd box may still hold the video (checked next).
    return MotionVideo(issue="motion photo XMP without a MotionPhoto item")


def _from_mpvd_box(fd: int, size: int) -> MotionVideo | None:
    """The payload of a top-level ``mpvd`` box, walking the box headers only."""
    at = 0
    while at + 8 <= size:
        header = os.pread(fd, 16, at)
        if len(header) < 8:
            return None
        box_size, box_type = struct.unpack(">I4s", header[:8])
        header_size = 8
        if box_size == 1:
            if len(header) < 16:
                return None
            box_size = struct.unpack(">Q", header[8:16])[0]
            header_size = 16
        elif box_size == 0:
            box_size = size - at
        if box_size < header_size or at + box_size > size:
            return None  # not boxes all the way: nothing to say
        if box_type == b"mpvd":
            return _verified(fd, size, at + header_size, box_size - header_size, "mpvd")
        at += box_size
    return None


def _from_samsung_trailer(fd: int, size: int, *, heif: bool) -> MotionVideo | None:
    if size < 8:
        return None
    tail = os.pread(fd, 8, size - 8)
    if tail[4:] != b"SEFT":
        return None
    (sef_length,) = struct.unpack("<I", tail[:4])
    sefh = size - 8 - sef_length
    if sefh < 0 or sef_length < 12 or sef_length > _TAIL_BYTES:
        return None
    directory = os.pread(fd, sef_length, sefh)
    if directory[:4] != b"SEFH":
        return None
    (count,) = struct.unpack("<I", directory[8:12])
    for n in range(min(count, (len(directory) - 12) // 12)):
        entry = directory[12 + 12 * n : 24 + 12 * n]
        back, length = struct.unpack("<II", entry[4:12])
        block = sefh - back
        if block < 0 or length < 8 or block + length > sefh:
            continue
        name_header = os.pread(fd, 8, block)
        (name_length,) = struct.unpack("<I", name_header[4:8])
        if name_length > 64 or 8 + name_length > length:
            continue
        if os.pread(fd, name_length, block + 8) != b"MotionPhoto_Data":
            continue
        start = block + 8 + name_length
        found = _verified(fd, size, start, length - 8 - name_length, "samsung")
        if heif and not found.found:
            return None  # a HEIC's block points at its mpvd box, checked before
        return found
    return None


def _verified(fd: int, size: int, offset: int, length: int, source: str) -> MotionVideo:
    """The range, if an MP4 (an ``ftyp`` box) starts there and it lies within the file."""
    if offset <= 0 or length < 16 or offset + length > size:
        return MotionVideo(
            issue=f"the motion video the {_NAMES[source]} names lies outside the file"
        )
    box = os.pread(fd, 8, offset)
    if box[4:8] != b"ftyp":
        return MotionVideo(issue=f"no MP4 where the {_NAMES[source]} puts the motion video")
    return MotionVideo(offset=offset, length=length, source=source)


_NAMES = {"xmp": "XMP", "mpvd": "mpvd box", "samsung": "Samsung trailer"}


def copy_range(fd: int, found: MotionVideo, target: Path, ensure_alive: Callable[[], None]) -> None:
    """Copy the video's bytes into ``target`` (a new file in the proxy root's staging
    area, never beside the original), for ffmpeg to read as any video."""
    with open(target, "xb") as out:
        at, end = found.offset, found.offset + found.length
        while at < end:
            ensure_alive()
            chunk = os.pread(fd, min(_COPY_CHUNK, end - at), at)
            if not chunk:
                raise OSError("the original ended before its motion video did")
            out.write(chunk)
            at += len(chunk)
