"""Camera RAW files: media by name and content, proxies from the largest embedded preview
turned upright, a half-size demosaic only without a usable preview (within the decode
budget), make, model, capture time and orientation read from the RAW."""

from __future__ import annotations

import io
import struct
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from safelight.library.files.errors import MediaError, TooLargeToDecode, UnsupportedMedia
from safelight.library.files.mediatypes import is_raw, media_type
from safelight.library.media.exif import (
    TAG_DATE_DIGITIZED,
    TAG_DATE_ORIGINAL,
    TAG_OFFSET_ORIGINAL,
    TAG_SUBSEC_ORIGINAL,
    ExifDate,
    ExifFields,
    read_exif,
    read_exif_ifd_dates,
)
from safelight.library.render.decoding import ImageDecoder, decode_image
from safelight.library.render.raw import _child, _cr3_box, _fields, _mrw_block, decode_raw, sniff
from safelight.testing.dateplaces import ciff_app0
from safelight.testing.dng import dng_bytes
from safelight.testing.exif import exif_bytes
from safelight.testing.samplegen import GREEN, RED, marker_picture
from safelight.testing.samples import SAMPLES
from safelight.testing.specs import DEFAULT_SPEC, proxy_spec

TAKEN = datetime(2024, 5, 1, 10, 0, 7)
_STORE = {  # orientation -> how a camera stores an upright picture (the inverse turn)
    1: None,
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


def stored_preview(orientation: int, upright: tuple[int, int] = (48, 64)) -> Image.Image:
    picture = marker_picture(*upright, seed=3)
    method = _STORE[orientation]
    return picture if method is None else picture.transpose(method)


def write_dng(path: Path, **kwargs: object) -> Path:
    path.write_bytes(dng_bytes(captured_at=TAKEN, **kwargs))  # type: ignore[arg-type]
    return path


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG"
    image.load()
    return image.convert("RGB")


def near(image: Image.Image, fx: float, fy: float, colour: tuple[int, int, int]) -> bool:
    value = image.getpixel((int(image.width * fx), int(image.height * fy)))
    assert isinstance(value, tuple)
    return all(abs(a - b) <= 45 for a, b in zip(value[:3], colour, strict=True))


def assert_upright(image: Image.Image) -> None:
    assert near(image, 0.08, 0.06, RED), "red block not top-left"
    assert near(image, 0.92, 0.06, GREEN), "green block not top-right"
    assert not near(image, 0.08, 0.94, RED)


# --- which files ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".dng", ".CR2", ".cr3", ".NEF", ".arw", ".raf", ".ORF", ".rw2"])
def test_raw_files_are_images(suffix: str) -> None:
    assert media_type(f"DCIM/IMG_0001{suffix}") == "image"
    assert is_raw(f"DCIM/IMG_0001{suffix}")


def test_tiff_and_jpeg_are_not_raw() -> None:
    assert not is_raw("a.tif") and not is_raw("a.jpg") and not is_raw("dng")


def test_containers_are_told_by_their_first_bytes() -> None:
    assert sniff(b"II*\0\x08\0\0\0") == "tiff"
    assert sniff(b"MM\0*\0\0\0\x08") == "tiff"
    assert sniff(b"IIRO\x08\0\0\0") == "tiff"  # Olympus ORF
    assert sniff(b"IIU\0\x08\0\0\0") == "tiff"  # Panasonic RW2
    assert sniff(b"\0\0\0\x18ftypcrx \0\0\0\x01") == "cr3"
    assert sniff(b"II\x1a\0\0\0HEAPCCDR\x02\0") == "crw"
    assert sniff(b"II\x1a\0\0\0HEAPJPGM\x02\0") is None  # a JPEG's CIFF block, no RAW
    assert sniff(b"\0MRM\0\0\x0a\x0c\0PRD\0\0\0\x18") == "mrw"
    assert sniff(b"FOVb\x03\0\x02\x0001008382") == "x3f"
    assert sniff(b"FUJIFILMCCD-RAW 0201") == "raf"
    assert sniff(b"\xff\xd8\xff\xe0\0\x10JFIF\0") is None
    assert sniff(b"\0\0\0\x18ftypheic") is None


# --- proxies and metadata --------------------------------------------------------------


def test_a_dng_gets_upright_proxies_from_its_preview_and_its_camera_and_time(
    tmp_path: Path,
) -> None:
    path = write_dng(tmp_path / "IMG_0001.DNG", preview=stored_preview(6), orientation=6)

    meta, proxies = decode_raw(path, DEFAULT_SPEC)

    assert meta.make == "Canon" and meta.model == "Canon EOS 6D"
    assert meta.captured_at == TAKEN and meta.captured_at_source == "exif"
    assert meta.orientation == 6
    assert (meta.width, meta.height) == (48, 64)  # the 64 x 48 sensor, turned
    assert (proxies.width, proxies.height) == (48, 64)
    preview = decoded(proxies.preview.data)
    assert preview.size == (48, 64)  # the embedded preview, not a 24 x 32 demosaic
    assert_upright(preview)
    thumbnail = decoded(proxies.thumbnail.data)
    assert thumbnail.width <= DEFAULT_SPEC.thumbnail_width
    assert_upright(thumbnail)
    assert len(proxies.blurhash) > 6


@pytest.mark.parametrize("orientation", range(1, 9))
def test_every_orientation_of_a_dng_preview_comes_out_upright(
    tmp_path: Path, orientation: int
) -> None:
    # A landscape sensor: turned (5-8), it displays portrait, as the upright picture is.
    upright = (48, 64) if orientation >= 5 else (64, 48)
    path = write_dng(
        tmp_path / "x.dng", preview=stored_preview(orientation, upright), orientation=orientation
    )

    meta, proxies = decode_raw(path, DEFAULT_SPEC)

    assert meta.orientation == orientation
    assert (meta.width, meta.height) == upright
    assert_upright(decoded(proxies.preview.data))


def test_without_a_preview_the_sensor_data_is_demosaiced_at_half_size_and_turned(
    tmp_path: Path,
) -> None:
    path = write_dng(tmp_path / "bare.dng", orientation=6)

    meta, proxies = decode_raw(path, DEFAULT_SPEC)

    assert (meta.width, meta.height) == (48, 64)
    preview = np.asarray(decoded(proxies.preview.data)).astype(int)
    assert preview.shape == (32, 24, 3)  # half of the turned 48 x 64
    # The mosaic's red rises from left to right as stored; turned by orientation 6 (90
    # degrees clockwise), it rises from top to bottom.
    red = preview[..., 0]
    assert red[-4:].mean() > red[:4].mean() + 40
    assert abs(red[:, :4].mean() - red[:, -4:].mean()) < 25


def test_a_preview_smaller_than_a_half_size_demosaic_is_not_used(tmp_path: Path) -> None:
    path = write_dng(tmp_path / "tiny.dng", preview=stored_preview(1, (8, 6)))

    _, proxies = decode_raw(path, DEFAULT_SPEC)

    assert decoded(proxies.preview.data).size == (32, 24)


def test_a_broken_preview_is_passed_over_for_the_sensor_data(tmp_path: Path) -> None:
    jpeg = io.BytesIO()
    stored_preview(1, (320, 240)).save(jpeg, "JPEG")
    cut = jpeg.getvalue()[: len(jpeg.getvalue()) * 4 // 5]  # its header whole, its data not
    path = tmp_path / "cut.dng"
    path.write_bytes(dng_bytes(preview_jpeg=cut, captured_at=TAKEN))

    meta, proxies = decode_raw(path, DEFAULT_SPEC)

    assert meta.make == "Canon"
    assert decoded(proxies.preview.data).size == (32, 24)


def test_a_demosaic_beyond_the_budget_is_refused_and_a_small_preview_serves(
    tmp_path: Path,
) -> None:
    spec = proxy_spec(decode_memory_mib=128)  # 32 MiB beyond the baseline
    size = {"width": 3000, "height": 2000}  # a 12 MB file; its demosaic needs about 47 MiB
    bare = write_dng(tmp_path / "bare.dng", **size)
    with pytest.raises(TooLargeToDecode, match="no usable preview"):
        decode_raw(bare, spec)

    small = write_dng(tmp_path / "small.dng", preview=stored_preview(1, (160, 120)), **size)
    meta, proxies = decode_raw(small, spec)
    assert (meta.width, meta.height) == (3000, 2000)
    assert_upright(decoded(proxies.preview.data))
    assert decoded(proxies.preview.data).size == (160, 120)


def test_a_file_with_a_raw_name_but_other_content_is_refused(tmp_path: Path) -> None:
    jpeg = io.BytesIO()
    marker_picture(32, 24, seed=1).save(jpeg, "JPEG")
    path = tmp_path / "not.dng"
    path.write_bytes(jpeg.getvalue())
    with pytest.raises(UnsupportedMedia, match="not a RAW file"):
        decode_raw(path, DEFAULT_SPEC)


def test_a_broken_raw_is_a_media_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.nef"
    path.write_bytes(b"II*\0\x08\0\0\0" + b"\xff" * 200)
    with pytest.raises(MediaError):
        decode_raw(path, DEFAULT_SPEC)


def test_a_cr3_s_make_and_model_are_read_from_its_cmt1_box() -> None:
    def box(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", 8 + len(payload)) + kind + payload

    tiff = exif_bytes(make="Canon", model="Canon EOS R5", orientation=8)[6:]  # no "Exif\0\0"
    canon = bytes.fromhex("85c0b687820f11e08111f4ce462b6a48")
    data = (
        box(b"ftyp", b"crx \0\0\0\x01")
        + box(b"moov", box(b"uuid", canon + box(b"CCTP", b"\0" * 8) + box(b"CMT1", tiff)))
        + box(b"mdat", b"\0" * 16)
    )

    cmt1 = _cr3_box(data, b"CMT1")

    assert cmt1 == tiff
    fields = read_exif(cmt1)
    assert (fields.make, fields.model, fields.orientation) == ("Canon", "Canon EOS R5", 8)
    assert _cr3_box(data[:40], b"CMT1") is None  # cut short: nothing, no error


def box(kind: bytes, payload: bytes) -> bytes:
    """An ISO BMFF box (CR3 is one) with a 32-bit size."""
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def test_a_box_with_a_64_bit_size_is_found_past_its_16_byte_header() -> None:
    # Size 1 says the size is the 64-bit number after the type: its header is 16 bytes.
    payload = b"CMT1 payload"
    large = struct.pack(">I", 1) + b"CMT1" + struct.pack(">Q", 16 + len(payload)) + payload
    data = box(b"CCTP", b"\0" * 8) + large + box(b"CMT2", b"after")
    at = 16 + 16
    assert _child(data, 0, len(data), b"CMT1") == (at, at + len(payload))
    # Its size counts in stepping over it to the next box.
    assert _child(data, 0, len(data), b"CMT2") == (len(data) - 5, len(data))


def test_a_box_of_size_zero_runs_to_the_end_of_its_parent() -> None:
    data = box(b"CCTP", b"\0" * 8) + struct.pack(">I", 0) + b"CMT1" + b"to the end" + b"beyond"
    end = len(data) - len(b"beyond")  # the parent's end, before the file's
    assert _child(data, 0, end, b"CMT1") == (16 + 8, end)


def test_an_empty_box_at_the_very_end_of_its_parent_is_found() -> None:
    data = box(b"CCTP", b"\0" * 8) + box(b"CMT1", b"")
    assert _child(data, 0, len(data), b"CMT1") == (len(data), len(data))
    # Fewer than a header's eight bytes left: no box, no error.
    assert _child(data, 0, len(data) - 1, b"CMT1") is None


@pytest.mark.parametrize(
    "oversized",
    [
        struct.pack(">I", 8 + 13) + b"CMT1" + b"\0" * 12,
        # 2**56 + 20, a 64-bit size whose low seven bytes alone would fit.
        struct.pack(">I", 1) + b"CMT1" + struct.pack(">Q", (1 << 56) + 20) + b"\0" * 4,
    ],
    ids=["32-bit", "64-bit"],
)
def test_a_box_claiming_more_than_its_parent_holds_is_refused(oversized: bytes) -> None:
    parent = box(b"uuid", oversized)
    data = parent + b"\0" * 64  # the file goes on past the parent
    assert _child(data, 8, len(parent), b"CMT1") is None


def test_a_box_smaller_than_its_header_ends_the_search() -> None:
    # A size of 4 would step into the box's own type, which here reads as a box of its
    # own: a hostile file's boxes are not followed once one is malformed.
    data = struct.pack(">I", 4) + box(b"CMT1", b"\0" * 8)
    assert _child(data, 4, len(data), b"CMT1") == (12, len(data))
    assert _child(data, 0, len(data), b"CMT1") is None


@pytest.mark.parametrize("endian", ["<", ">"], ids=["II", "MM"])
def test_a_cr3_s_capture_time_is_read_from_its_cmt2_box_with_sub_seconds_and_offset(
    endian: str,
) -> None:
    def box(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", 8 + len(payload)) + kind + payload

    cmt1 = exif_bytes(make="Canon", model="Canon EOS R5")[6:]
    # CMT2 is a TIFF whose IFD0 holds the Exif IFD's own tags; Canon writes "II".
    exif_ifd = Image.Exif()
    exif_ifd.endian = endian
    exif_ifd[TAG_DATE_ORIGINAL] = "2024:05:06 07:08:09"
    exif_ifd[TAG_SUBSEC_ORIGINAL] = "25"
    exif_ifd[TAG_OFFSET_ORIGINAL] = "+02:00"
    exif_ifd[TAG_DATE_DIGITIZED] = "2024:05:06 07:08:10"
    cmt2 = exif_ifd.tobytes()[6:]
    assert cmt2[:2] == (b"II" if endian == "<" else b"MM")
    canon = bytes.fromhex("85c0b687820f11e08111f4ce462b6a48")
    data = box(b"ftyp", b"crx \0\0\0\x01") + box(
        b"moov", box(b"uuid", canon + box(b"CMT1", cmt1) + box(b"CMT2", cmt2))
    )

    fields = _fields("cr3", data, None)

    assert (fields.make, fields.model) == ("Canon", "Canon EOS R5")
    assert fields.dates == (
        ExifDate("2024:05:06 07:08:09", "25", "+02:00"),
        ExifDate("2024:05:06 07:08:10", None, None),
    )
    assert read_exif_ifd_dates(cmt2[:8]) == ()  # its IFD cut off: nothing, no error
    assert read_exif_ifd_dates(cmt2[:7]) == ()
    assert read_exif_ifd_dates(b"not a tiff") == ()
    assert read_exif_ifd_dates(b"ii" + cmt2[2:]) == ()  # no byte order a TIFF has
    assert read_exif_ifd_dates(b"XX" + cmt2[2:]) == ()
    assert read_exif_ifd_dates(b"II+\0\x08\0\0\0") == ()  # BigTIFF: no camera writes it
    # Without CMT2, the dates stay empty and the make and model still come from CMT1.
    only_cmt1 = box(b"moov", box(b"uuid", canon + box(b"CMT1", cmt1)))
    assert _fields("cr3", only_cmt1, None).dates == ()
    assert _fields("cr3", only_cmt1, None).model == "Canon EOS R5"


@pytest.mark.parametrize("with_preview", [True, False], ids=["preview", "demosaic"])
async def test_a_raw_decodes_in_the_decode_processes_as_in_this_one(
    tmp_path: Path, with_preview: bool
) -> None:
    preview = stored_preview(6) if with_preview else None
    path = write_dng(tmp_path / "IMG_0002.dng", preview=preview, orientation=6)
    decoder = ImageDecoder(1)
    try:
        in_process = await decoder.decode(path, DEFAULT_SPEC)
    finally:
        decoder.shutdown()
    assert in_process == decode_image(path, DEFAULT_SPEC) == decode_raw(path, DEFAULT_SPEC)


RAWS = (
    sorted(p for p in SAMPLES.rglob("*") if p.is_file() and is_raw(p.name))
    if SAMPLES is not None
    else []
)


@pytest.mark.samples
@pytest.mark.skipif(not RAWS, reason="no RAW file in the samples folder")
@pytest.mark.parametrize("path", RAWS, ids=[p.name for p in RAWS])
def test_sample_raw_files_get_proxies_and_a_camera(path: Path) -> None:
    meta, proxies = decode_raw(path, DEFAULT_SPEC)
    assert meta.make and meta.model, "no camera read"
    preview = decoded(proxies.preview.data)
    assert max(preview.size) <= DEFAULT_SPEC.preview_width * 4
    # Upright: the preview's shape follows the displayed (turned) size.
    assert (preview.width >= preview.height) == (meta.width >= meta.height)


def test_a_crw_s_make_model_and_time_are_read_from_its_ciff_heap() -> None:
    data = ciff_app0(
        "Canon", "Canon EOS DIGITAL REBEL", datetime(2003, 11, 10, 17, 39, 26), b"HEAPCCDR"
    )
    assert sniff(data[:16]) == "crw"
    fields = _fields("crw", data, None)
    assert (fields.make, fields.model) == ("Canon", "Canon EOS DIGITAL REBEL")
    assert fields.dates == (ExifDate("2003:11:10 17:39:26", None, None),)
    assert _fields("crw", data[:20], None) == ExifFields()  # cut short: nothing, no error


def test_an_mrw_s_make_model_and_time_are_read_from_its_ttw_block() -> None:
    def block(name: bytes, payload: bytes) -> bytes:
        return name + struct.pack(">I", len(payload)) + payload

    tiff = exif_bytes(
        make="Konica Minolta", model="DiMAGE A2", captured_at=datetime(2004, 11, 18, 23, 14, 58)
    )[6:]
    blocks = block(b"\0PRD", b"\0" * 24) + block(b"\0TTW", tiff) + block(b"\0WBG", b"\0" * 12)
    data = b"\0MRM" + struct.pack(">I", len(blocks)) + blocks + b"image data"

    fields = _fields("mrw", data, None)

    assert (fields.make, fields.model) == ("Konica Minolta", "DiMAGE A2")
    assert fields.dates[0].value == "2004:11:18 23:14:58"
    ttw = 8 + 8 + 24  # where the TTW block starts
    assert _mrw_block(data, b"\0TTW") == tiff
    assert _mrw_block(data, b"\0WBG") == b"\0" * 12  # the last block, ending at the header's end
    assert _mrw_block(data, b"\0RIF") is None
    # A block past the header's end, a length beyond the file: nothing, no error.
    assert _mrw_block(b"\0MRM" + struct.pack(">I", ttw - 8) + blocks, b"\0TTW") is None
    assert _mrw_block(b"\0MRM" + struct.pack(">I", ttw - 1) + blocks, b"\0TTW") is None
    short_by_one = b"\0MRM" + struct.pack(">I", len(blocks) - 1) + blocks
    assert _mrw_block(short_by_one, b"\0WBG") is None
    # A header length of 2**24 or more: all four bytes of it count.
    past = block(b"\0RIF", b"\1" * 4)
    long_header = b"\0MRM" + struct.pack(">I", (1 << 24) + len(blocks)) + blocks + past
    assert _mrw_block(long_header, b"\0RIF") == b"\1" * 4
    # A block of 2**24 bytes or more whose end is past the file's: all four bytes count.
    huge = b"\0TTW" + struct.pack(">I", (1 << 24) + 4) + b"abcd"
    assert _mrw_block(b"\0MRM" + struct.pack(">I", 1 << 30) + huge, b"\0TTW") is None
    assert _mrw_block(data[: ttw + 8 + len(tiff) - 1], b"\0TTW") is None
    assert _mrw_block(data[: ttw + 8 + len(tiff)], b"\0TTW") == tiff  # just fits
    assert _mrw_block(data[: ttw + 7], b"\0TTW") is None  # its header cut short
    assert _mrw_block(b"\0MRM\0\0\0", b"\0TTW") is None
    assert _mrw_block(b"\0MRM" + struct.pack(">I", 8) + b"\0TTW" + bytes(4), b"\0TTW") == b""
    assert _fields("mrw", data[:ttw], None) == ExifFields()
