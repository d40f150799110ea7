"""What a file holds, told by its first bytes (``sniffing``, ADR 0052): every format
safelight reads, each built here by the tool that writes it, the RAW containers and video
containers by their signatures, a TIFF-based RAW told from a plain TIFF by its IFDs, and
the note of a name that lies."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from safelight.library.files import sniffing
from safelight.library.files.mediatypes import extension_of
from safelight.library.media import metadata  # noqa: F401  (registers the HEIF opener)
from safelight.testing.dng import dng_bytes


def saved(format_name: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buffer, format_name, **options)
    return buffer.getvalue()


def sniffed(tmp_path: Path, data: bytes) -> sniffing.Content | None:
    path = tmp_path / "file"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return sniffing.sniff_file(fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("format_name", "expected"),
    [
        ("JPEG", sniffing.JPEG),
        ("PNG", sniffing.PNG),
        ("GIF", sniffing.GIF),
        ("BMP", sniffing.BMP),
        ("TIFF", sniffing.TIFF),
        ("WEBP", sniffing.WEBP),
        ("HEIF", sniffing.HEIF),
        ("AVIF", sniffing.AVIF),
    ],
)
def test_each_image_format_is_told_by_its_content(
    tmp_path: Path, format_name: str, expected: sniffing.Content
) -> None:
    content = sniffed(tmp_path, saved(format_name))

    assert content == expected
    assert content.kind == "image" and content.pillow_format == format_name


def test_signatures_pillow_cannot_write_here() -> None:
    assert sniffing.sniff(b"\xff\x0a\xfa\x7f") == sniffing.JXL  # a JPEG XL codestream
    assert sniffing.sniff(b"\0\0\0\x0cJXL \r\n\x87\n\0\0") == sniffing.JXL  # its container
    assert sniffing.sniff(b"BM" + b"\0" * 12 + b"\x28\0\0\0") == sniffing.BMP
    assert sniffing.sniff(b"BMP is only two letters of a text file") is None
    # A HEIC whose major brand is the generic mif1: its compatible brands decide.
    assert sniffing.sniff(b"\0\0\0\x18ftypmif1\0\0\0\0mif1heic") == sniffing.HEIF
    assert sniffing.sniff(b"\0\0\0\x18ftypmif1\0\0\0\0mif1avif") == sniffing.HEIF
    assert sniffing.sniff(b"\0\0\0\x18ftypmsf1\0\0\0\0isomavif") == sniffing.HEIF


@pytest.mark.parametrize(
    ("head", "container"),
    [
        (b"IIRO\x08\0\0\0", "tiff"),  # Olympus ORF
        (b"IIU\0\x08\0\0\0", "tiff"),  # Panasonic RW2
        (b"\0\0\0\x18ftypcrx \0\0\0\x01crx isom", "cr3"),
        (b"FUJIFILMCCD-RAW 0201FF383501", "raf"),
        (b"II\x1a\0\0\0HEAPCCDR\x02\0", "crw"),
        (b"\0MRM\0\0\x0a\x0c\0PRD\0\0\0\x18", "mrw"),
        (b"FOVb\x03\0\x02\x0001008382", "x3f"),
    ],
)
def test_raw_containers_are_told_by_their_signatures(head: bytes, container: str) -> None:
    content = sniffing.sniff(head)

    assert content is not None and content.kind == "raw" and content.container == container


@pytest.mark.parametrize(
    ("head", "label"),
    [
        (b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41", "MP4 video"),
        (b"\0\0\0\x14ftypqt  \0\0\0\0qt  ", "QuickTime movie"),
        (b"\0\0\0\x14ftyp3gp4\0\0\0\0isom", "3GPP video"),
        (b"\0\0\0\x08wide\0\0\0\0mdat", "QuickTime movie"),  # no ftyp (older cameras)
        (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81", "Matroska video"),
        (b"RIFF\0\0\0\0AVI LIST", "AVI video"),
        (b"\0\0\1\xba\x44\0\4\0", "MPEG video"),
        (b"\x47" + b"\0" * 187 + b"\x47" + b"\0" * 200, "MPEG transport stream"),
        (b"\0\0\0\0\x47" + b"\0" * 191 + b"\x47" + b"\0" * 200, "MPEG transport stream (M2TS)"),
    ],
)
def test_video_containers_are_videos(head: bytes, label: str) -> None:
    content = sniffing.sniff(head)

    assert content is not None and content.kind == "video" and content.label == label


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")
@pytest.mark.parametrize("suffix", [".mp4", ".mov", ".mkv", ".avi", ".ts", ".3gp"])
def test_a_video_made_by_ffmpeg_is_a_video(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"clip{suffix}"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=red:s=128x96:d=0.2",
         "-pix_fmt", "yuv420p", str(path)],
        check=True,
    )  # fmt: skip

    content = sniffed(tmp_path, path.read_bytes())

    assert content is not None and content.kind == "video", content


def test_unknown_content_is_none() -> None:
    assert sniffing.sniff(b"") is None
    assert sniffing.sniff(b"\0" * 512) is None
    assert sniffing.sniff(b"%!PS-Adobe-3.0 EPSF-3.0\n") is None
    assert sniffing.sniff(b"<?xml version='1.0'?><svg/>") is None


# --- TIFF: a plain image or a camera RAW -------------------------------------------------


def _tiff(ifds: list[list[tuple[int, int, int]]], sub_of_first: bool) -> bytes:
    """A little-endian TIFF of IFDs of (tag, type, value) entries of one value each; with
    ``sub_of_first``, the second IFD is a SubIFD of the first (as a NEF keeps its sensor
    data), else the next IFD in the chain."""
    data = bytearray(b"II*\0\x08\0\0\0")
    offsets = [8]
    for entries in ifds[:-1]:
        offsets.append(offsets[-1] + 2 + 12 * (len(entries) + int(sub_of_first)) + 4)
    for index, entries in enumerate(ifds):
        rows = list(entries)
        if sub_of_first and index == 0 and len(ifds) > 1:
            rows.append((330, 4, offsets[1]))  # SubIFDs
        rows.sort()
        data += struct.pack("<H", len(rows))
        for tag, kind, value in rows:
            data += struct.pack("<HHII", tag, kind, 1, value)
        follows = not sub_of_first and index + 1 < len(ifds)
        data += struct.pack("<I", offsets[index + 1] if follows else 0)
    return bytes(data) + b"\0" * 64


RGB, CFA, LINEAR_RAW = 2, 32803, 34892


@pytest.mark.parametrize("sub_of_first", [True, False], ids=["subifd", "next-ifd"])
@pytest.mark.parametrize("photometric", [CFA, LINEAR_RAW])
def test_a_tiff_with_sensor_data_in_any_ifd_is_a_raw(
    tmp_path: Path, sub_of_first: bool, photometric: int
) -> None:
    preview = [(256, 4, 160), (257, 4, 120), (262, 3, RGB)]  # as a NEF's IFD0 thumbnail
    sensor = [(256, 4, 4000), (257, 4, 3000), (262, 3, photometric)]
    data = _tiff([preview, sensor], sub_of_first)

    assert sniffed(tmp_path, data) == sniffing.RAW_TIFF
    assert sniffing.sniff(data) == sniffing.TIFF  # the first bytes alone cannot tell


def test_a_dng_and_a_cr2_are_raws_and_a_plain_tiff_is_not(tmp_path: Path) -> None:
    assert sniffed(tmp_path, dng_bytes()) == sniffing.RAW_TIFF  # DNGVersion
    cr2 = b"II*\0\x10\0\0\0CR\x02\0\0\0\0\0" + b"\0" * 64
    assert sniffed(tmp_path, cr2) == sniffing.RAW_TIFF
    assert sniffed(tmp_path, saved("TIFF")) == sniffing.TIFF
    rgb_only = _tiff([[(256, 4, 64), (257, 4, 48), (262, 3, RGB)]], False)
    assert sniffed(tmp_path, rgb_only) == sniffing.TIFF


def test_a_tiff_whose_ifds_loop_or_run_off_the_end_is_read_without_end(tmp_path: Path) -> None:
    looping = b"II*\0\x08\0\0\0" + struct.pack("<H", 0) + struct.pack("<I", 8)
    assert sniffed(tmp_path, looping) == sniffing.TIFF
    beyond = b"II*\0\xff\xff\xff\x7f"
    assert sniffed(tmp_path, beyond) == sniffing.TIFF
    many = b"II*\0\x08\0\0\0" + struct.pack("<H", 0xFFFF) + b"\xff" * 300
    assert sniffed(tmp_path, many) == sniffing.TIFF


def test_raw_by_name_sends_a_plain_tiff_with_a_raw_name_to_libraw_first() -> None:
    assert sniffing.raw_by_name(sniffing.TIFF, "DSC_0001.NEF")
    assert not sniffing.raw_by_name(sniffing.TIFF, "scan.tif")
    assert sniffing.raw_by_name(sniffing.RAW_TIFF, "IMG_0001.tif")
    assert not sniffing.raw_by_name(sniffing.JPEG, "DSC_0001.nef")


# --- names that lie ------------------------------------------------------------------------


def test_a_name_that_lies_is_noted_and_one_that_does_not_is_not() -> None:
    assert sniffing.misnamed(sniffing.JPEG, "DSC_0001.NEF") == "holds a JPEG, named .nef"
    assert sniffing.misnamed(sniffing.HEIF, "IMG_0001.jpg") == "holds a HEIF, named .jpg"
    assert sniffing.misnamed(sniffing.PNG, "shot.JPEG") == "holds a PNG, named .jpeg"
    assert sniffing.misnamed(sniffing.AVIF, "x.jpg") == "holds an AVIF, named .jpg"
    assert (
        sniffing.misnamed(sniffing.RAW_TIFF, "IMG_0001.tif")
        == "holds a camera RAW (TIFF-based), named .tif"
    )
    assert sniffing.misnamed(sniffing.JPEG, "README") == "holds a JPEG, named without an extension"
    for content, name in [
        (sniffing.JPEG, "a.JPG"),
        (sniffing.JPEG, "a.jpe"),
        (sniffing.HEIF, "a.HIF"),
        (sniffing.AVIF, "a.heif"),
        (sniffing.TIFF, "a.tiff"),
        (sniffing.RAW_TIFF, "a.NEF"),
        (sniffing.RAW_CONTAINERS["cr3"], "a.CR3"),
    ]:
        assert sniffing.misnamed(content, name) is None, (content, name)


def test_extension_of_is_the_one_the_walk_lists_by() -> None:
    assert extension_of("IMG_0001.JPG") == ".jpg"
    assert extension_of("archive.tar.NEF") == ".nef"
    assert extension_of(".hidden") == ""
    assert extension_of("README") == ""
