"""Which files are photos or videos, and which names a crawl never looks at.

The decision is by extension (case-insensitive) because a crawl lists many thousands of
files and must not open each one to sniff it. What a listed file is decoded as is its
content's decision (``sniffing``, ADR 0052): a JPEG named ``.nef`` is read as the JPEG it
is, and a file whose content is no photo fails with a ``MediaError`` of its own.
"""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import Literal

MediaType = Literal["image", "video"]

IMAGE_EXTENSIONS = frozenset(
    {".jpg", ".jpeg", ".jpe", ".png", ".heic", ".heif", ".hif", ".tif", ".tiff", ".webp",
     ".gif", ".avif", ".bmp", ".jxl"}
)  # fmt: skip
IMAGE_FORMATS = ("JPEG", "HEIF", "PNG", "TIFF", "WEBP", "AVIF", "JXL", "GIF", "BMP")
"""Pillow's names of the formats of ``IMAGE_EXTENSIONS``, the only ones an original is
opened as (``Image.open(..., formats=IMAGE_FORMATS)``), most common first. Whatever a
file holds, no other Pillow plugin is reached: EPS, for one, runs Ghostscript on what it
opens. A JPEG with an MPO index (many cameras' JPEGs) opens through ``JPEG``."""
RAW_EXTENSIONS = frozenset(
    {".dng", ".cr2", ".cr3", ".crw", ".nef", ".nrw", ".arw", ".srf", ".sr2", ".raf", ".orf",
     ".rw2", ".pef", ".srw", ".x3f", ".3fr", ".iiq", ".erf", ".mrw", ".kdc", ".dcr", ".mos"}
)  # fmt: skip
"""Camera RAW files' names: images, listed as such. Decoded through LibRaw (``raw``) when
their content is a RAW (a TIFF-based, CR3, RAF, CRW, MRW or X3F container,
``sniffing``), as what it is otherwise."""
VIDEO_EXTENSIONS = frozenset(
    {".mov", ".mp4", ".m4v", ".3gp", ".mkv", ".webm", ".avi", ".mts", ".3g2", ".m2ts", ".m2v"}
)
"""Videos, read through ffmpeg's demuxers (``metadata.ffmpeg_input_options``): QuickTime and
MP4 with their phone brands (3GPP ``.3gp``, 3GPP2 ``.3g2``), Matroska/WebM, AVI, MPEG-TS
(AVCHD's ``.mts`` and ``.m2ts``, 192-byte packets) and a raw MPEG-2 video stream
(``.m2v``, as some camcorders and DVD tools leave it)."""

IGNORED_FOLDER_NAMES = frozenset(
    {"@eaDir", "#recycle", "#snapshot", "$RECYCLE.BIN", "System Volume Information",
     "lost+found"}
)  # fmt: skip
"""NAS and OS housekeeping folders (Synology thumbnails and recycle bins, Windows,
ext4): they hold copies or junk, never a family's originals."""


def is_ignored_name(name: str) -> bool:
    """True for a file or folder name a crawl must skip, with everything below it.

    Hidden names (leading dot) cover ``.thumbnails``, ``.DS_Store``, macOS AppleDouble
    files (``._IMG_0001.JPG``, which carry a photo extension but no photo) and our own
    temporary files (``.<name>.<random>.tmp``).
    """
    return name.startswith(".") or name in IGNORED_FOLDER_NAMES


def media_type(path: str | os.PathLike[str]) -> MediaType | None:
    """``"image"``, ``"video"`` or ``None`` (not media, or an ignored name)."""
    return media_type_of_name(PurePath(path).name)


def media_type_of_name(name: str) -> MediaType | None:
    """``media_type`` of a bare file name, without building a path: the walk asks it of
    every name it lists."""
    if is_ignored_name(name):
        return None
    return media_type_by_extension(name)


_MEDIA_TYPE_BY_SUFFIX: dict[str, MediaType] = {
    suffix: "video" if suffix in VIDEO_EXTENSIONS else "image"
    for suffix in IMAGE_EXTENSIONS | RAW_EXTENSIONS | VIDEO_EXTENSIONS
}
"""The sets above as one lookup: the walk asks it of every file it lists."""


def media_type_by_extension(name: str) -> MediaType | None:
    """By the extension of ``name`` alone, for a name known not to be ignored."""
    return _MEDIA_TYPE_BY_SUFFIX.get(extension_of(name))


def is_raw(path: str | os.PathLike[str]) -> bool:
    """True for a camera RAW file's name (what it is decoded as is its content's decision:
    ``sniffing``)."""
    return PurePath(path).suffix.lower() in RAW_EXTENSIONS


def extension_of(name: str) -> str:
    """The extension of a file name, lower case with its dot (``".nef"``), as
    ``media_type_by_extension`` reads it; ``""`` when it has none."""
    dot = name.rfind(".")
    # As PurePath.suffix: from the last dot, none for a leading dot (an ignored name).
    return name[dot:].lower() if dot > 0 else ""
