"""A photo is decoded as what its content is, whatever its name (ADR 0052): a JPEG named
.nef through Pillow, a PNG or a HEIC named .jpg, a DNG named .tif through LibRaw, a plain
TIFF named .nef through Pillow once LibRaw refuses it; each with the note of its name.
A video or unknown content under a photo's name is refused with a reason that says so.
And a JPEG cut short is a photo with a note when at most a few of its rows are lost, an
error when more are; a PNG cut short stays an error."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile

from safelight.library.files.errors import CorruptMedia, UnsupportedMedia
from safelight.library.media.metadata import read_image_metadata
from safelight.library.render.decoding import ImageDecoder, decode_image
from safelight.library.render.images import MAX_CUT_SHORT_SHARE
from safelight.library.render.jpegscans import final_scans_begun
from safelight.library.render.raw import FORMAT as RAW_FORMAT
from safelight.testing.dng import dng_bytes
from safelight.testing.samplegen import GREEN, RED, marker_picture
from safelight.testing.samples import SAMPLES, needs_samples
from safelight.testing.specs import DEFAULT_SPEC as SPEC


def encoded(image: Image.Image, format_name: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format_name, **options)
    return buffer.getvalue()


def written(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def picture(width: int = 96, height: int = 64) -> Image.Image:
    return marker_picture(width, height, seed=5)


def preview_of(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image.convert("RGB")


def near(image: Image.Image, fx: float, fy: float, colour: tuple[int, int, int]) -> bool:
    value = image.getpixel((int(image.width * fx), int(image.height * fy)))
    assert isinstance(value, tuple)
    return all(abs(a - b) <= 45 for a, b in zip(value, colour, strict=True))


def assert_upright(image: Image.Image) -> None:
    assert near(image, 0.08, 0.06, RED) and near(image, 0.92, 0.06, GREEN)


# --- content decides -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "format_name", "note"),
    [
        ("DSC_0001.NEF", "JPEG", "holds a JPEG, named .nef"),
        ("IMG_0002.jpg", "PNG", "holds a PNG, named .jpg"),
        ("IMG_0003.JPG", "HEIF", "holds a HEIF, named .jpg"),
        ("IMG_0004.jpeg", "WEBP", "holds a WebP, named .jpeg"),
        ("IMG_0005.jpg", "JPEG", None),
    ],
)
def test_a_photo_is_decoded_as_what_it_holds_with_the_note_of_its_name(
    tmp_path: Path, name: str, format_name: str, note: str | None
) -> None:
    path = written(tmp_path, name, encoded(picture(), format_name))

    meta, proxies = decode_image(path, SPEC)

    assert meta.format == format_name
    assert meta.misnamed == note and meta.cut_short is None
    assert (meta.width, meta.height) == (96, 64) == (proxies.width, proxies.height)
    assert_upright(preview_of(proxies.preview.data))


def test_a_dng_named_tif_is_read_by_libraw_and_a_tiff_named_nef_by_pillow(
    tmp_path: Path,
) -> None:
    dng = written(tmp_path, "IMG_0001.tif", dng_bytes())
    tiff = written(tmp_path, "DSC_0001.nef", encoded(picture(), "TIFF"))

    raw_meta, _ = decode_image(dng, SPEC)
    tiff_meta, tiff_proxies = decode_image(tiff, SPEC)

    assert raw_meta.format == RAW_FORMAT and raw_meta.make == "Canon"
    assert raw_meta.misnamed == "holds a camera RAW (TIFF-based), named .tif"
    assert tiff_meta.format == "TIFF" and tiff_meta.misnamed == "holds a TIFF, named .nef"
    assert_upright(preview_of(tiff_proxies.preview.data))
    # Named as what they are, neither has anything to say.
    assert decode_image(written(tmp_path, "IMG_0001.dng", dng_bytes()), SPEC)[0].misnamed is None
    assert (
        decode_image(written(tmp_path, "a.tif", encoded(picture(), "TIFF")), SPEC)[0].misnamed
        is None
    )


def test_a_video_or_unknown_content_under_a_photo_name_is_refused_with_why(
    tmp_path: Path,
) -> None:
    mp4 = written(
        tmp_path, "IMG_0001.jpg", b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41" + b"\0" * 64
    )
    zeros = written(tmp_path, "IMG_0002.jpg", b"\0" * 4096)
    text = written(tmp_path, "IMG_0003.nef", b"not a photo at all, just some words\n" * 20)

    with pytest.raises(UnsupportedMedia) as video:
        decode_image(mp4, SPEC)
    assert video.value.reason == "holds an MP4 video, named .jpg: not read as a photo"
    for path in (zeros, text):
        with pytest.raises(UnsupportedMedia) as unknown:
            decode_image(path, SPEC)
        assert unknown.value.reason.startswith("not an image safelight reads (JPEG, HEIF, PNG")
        assert "its content is no format safelight knows" in unknown.value.reason


async def test_in_a_decode_process_the_name_given_is_the_one_noted(tmp_path: Path) -> None:
    # The crawl hands the decode process an open file and the file's name.
    path = written(tmp_path, "held.bin", encoded(picture(), "JPEG"))
    decoder = ImageDecoder(1)
    try:
        meta, _ = await decoder.decode(path, SPEC, "DSC_0001.NEF")
    finally:
        decoder.shutdown()
    assert meta.format == "JPEG" and meta.misnamed == "holds a JPEG, named .nef"


# --- cut short -----------------------------------------------------------------------------


def noisy_jpeg(**options: object) -> bytes:
    """A 640 x 480 JPEG whose rows all differ (no flat band of its own)."""
    rng = np.random.default_rng(7)
    base = np.asarray(picture(640, 480), dtype=np.int16)
    noise = rng.integers(-20, 20, size=base.shape, dtype=np.int16)
    image = Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8), "RGB")
    return encoded(image, "JPEG", quality=92, **options)


@pytest.mark.parametrize("missing", [2, 40, 600])
def test_a_jpeg_missing_its_last_bytes_is_a_photo_with_a_note(tmp_path: Path, missing: int) -> None:
    whole = noisy_jpeg()
    path = written(tmp_path, "IMG_0001.jpg", whole[:-missing])

    meta, proxies = decode_image(path, SPEC)

    assert meta.cut_short is not None
    assert meta.cut_short.startswith(
        "cut short: its last bytes are missing, decoded as far as it goes"
    )
    assert meta.misnamed is None and (meta.width, meta.height) == (640, 480)
    preview = preview_of(proxies.preview.data)
    assert preview.size == (640, 480)
    assert_upright(preview)
    # What there is, is the photo: its top three quarters as the whole file decodes them.
    full = preview_of(decode_image(written(tmp_path, "whole.jpg", whole), SPEC)[1].preview.data)
    top = (0, 0, 640, 360)
    difference = np.abs(
        np.asarray(preview.crop(top), dtype=np.int16) - np.asarray(full.crop(top), dtype=np.int16)
    )
    assert difference.mean() < 2
    # Per file: Pillow's global switch is never turned on.
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False


def test_a_jpeg_that_lost_a_lot_reports_how_much_in_its_note(tmp_path: Path) -> None:
    whole = noisy_jpeg()
    # About 4% of the rows: within MAX_CUT_SHORT_SHARE, and enough to be counted.
    path = written(tmp_path, "IMG_0001.jpg", whole[: int(len(whole) * 0.96)])

    meta, _ = decode_image(path, SPEC)

    assert meta.cut_short is not None and "of its rows missing" in meta.cut_short


@pytest.mark.parametrize("kept", [0.5, 0.8, 0.05])
def test_a_jpeg_cut_further_stays_an_error(tmp_path: Path, kept: float) -> None:
    whole = noisy_jpeg()
    assert 1 - kept > MAX_CUT_SHORT_SHARE
    path = written(tmp_path, "IMG_0001.jpg", whole[: int(len(whole) * kept)])

    with pytest.raises(CorruptMedia, match="truncated"):
        decode_image(path, SPEC)


def test_a_progressive_jpeg_missing_its_last_bytes_is_a_photo_with_a_note(tmp_path: Path) -> None:
    path = written(tmp_path, "IMG_0001.jpg", noisy_jpeg(progressive=True)[:-200])

    meta, proxies = decode_image(path, SPEC)

    assert meta.cut_short is not None
    assert_upright(preview_of(proxies.preview.data))


@pytest.mark.parametrize("kept", [0.2, 0.5])
def test_a_progressive_jpeg_cut_in_an_early_scan_stays_an_error(
    tmp_path: Path, kept: float
) -> None:
    """Every row is there, blurred: no row count sees it, its scans do."""
    whole = noisy_jpeg(progressive=True)
    path = written(tmp_path, "IMG_0001.jpg", whole[: int(len(whole) * kept)])

    with pytest.raises(CorruptMedia, match="ends before its last scans begin"):
        decode_image(path, SPEC)


def test_the_scans_a_jpeg_begins_are_read_from_its_markers() -> None:
    progressive = noisy_jpeg(progressive=True)
    baseline = noisy_jpeg()
    assert final_scans_begun(progressive) and final_scans_begun(progressive[:-200])
    assert not final_scans_begun(progressive[: len(progressive) // 2])
    assert final_scans_begun(baseline) and final_scans_begun(baseline[: len(baseline) // 2])
    assert not final_scans_begun(baseline[:200])  # no scan yet
    assert not final_scans_begun(b"\xff\xd8" + bytes(range(256)))


def test_a_jpeg_cut_in_its_header_or_made_of_garbage_stays_an_error(tmp_path: Path) -> None:
    whole = noisy_jpeg()
    header = written(tmp_path, "a.jpg", whole[:300])
    garbage = written(tmp_path, "b.jpg", whole[:2000] + bytes(range(256)) * 40)

    for path in (header, garbage):
        with pytest.raises((CorruptMedia, UnsupportedMedia)):
            decode_image(path, SPEC)


def test_a_png_cut_within_its_pixels_stays_an_error(tmp_path: Path) -> None:
    """Pillow's PNG decoder has no way to be handed an end as libjpeg has: only
    ``LOAD_TRUNCATED_IMAGES``, the global switch safelight never turns on."""
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 255, size=(120, 160, 3), dtype=np.uint8)
    whole = encoded(Image.fromarray(pixels, "RGB"), "PNG")
    path = written(tmp_path, "IMG_0001.png", whole[: len(whole) // 2])

    assert read_image_metadata(path).format == "PNG"  # its header is whole
    with pytest.raises(CorruptMedia):
        decode_image(path, SPEC)


def broken_samples() -> list[Path]:
    if SAMPLES is None:
        return []
    jpg = SAMPLES / "exif-samples" / "jpg"
    return [*sorted(jpg.glob("invalid/*.jpg")), jpg / "corrupted.jpg"]


@needs_samples
@pytest.mark.parametrize("path", broken_samples(), ids=lambda p: p.name)
def test_the_samples_broken_files_decode_as_before_and_none_is_cut_short(path: Path) -> None:
    # Whole files (each ends with its end-of-image marker) with bad data inside, which
    # Pillow reads: the rule of files cut short leaves them as they were.
    assert path.read_bytes().endswith(b"\xff\xd9")

    meta, proxies = decode_image(path, SPEC)

    assert meta.format == "JPEG" and meta.cut_short is None and meta.misnamed is None
    assert proxies.width == meta.width and len(proxies.blurhash) > 6
