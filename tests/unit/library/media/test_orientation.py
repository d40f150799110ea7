"""Orientation in every format that carries it (ADR 0029): every orientation 1-8, written
as cameras and phones write it, gives upright proxies (mirrored back where it mirrors),
the displayed size, and the orientation the asset stores; one rule for HEIF and AVIF:
the container's transforms, never EXIF's Orientation too; a HEIF without any is turned
by EXIF's (ADR 0055).
"""

from __future__ import annotations

import io
import struct
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image

from safelight.library.files.mediatypes import media_type
from safelight.library.media.containers import (
    container_orientation,
    container_transforms,
    jxl_orientation,
    png_exif,
)
from safelight.library.media.exif import read_exif
from safelight.library.media.metadata import Orientation, read_image_metadata, turn_after_undoing
from safelight.library.media.sidecars import SidecarFacts
from safelight.library.render.decoding import decode_image
from safelight.library.render.images import ImageProxies, make_image_proxies
from safelight.testing.decoders import running_decoder
from safelight.testing.exif import exif_bytes
from safelight.testing.oriented import (
    BLUE,
    EXTENSIONS,
    WHITE,
    OrientedFormat,
    assert_shows,
    oriented_photo,
    quadrant_colours,
    quadrants,
    turned,
)
from safelight.testing.samplegen import GREEN, INVERSE_TRANSPOSE, RED
from safelight.testing.specs import DEFAULT_SPEC

FORMATS: tuple[OrientedFormat, ...] = tuple(EXTENSIONS)
SIZE = (400, 240)
"""As displayed: landscape, so a turn that is not applied shows in the size too."""


def write(tmp_path: Path, fmt: OrientedFormat, orientation: int, **options: bool) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"photo_{orientation}{EXTENSIONS[fmt]}"
    path.write_bytes(oriented_photo(fmt, orientation, size=SIZE, **options))
    return path


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image.convert("RGB")


UPRIGHT = [RED, GREEN, BLUE, WHITE]


def assert_upright_proxies(proxies: ImageProxies) -> None:
    preview, thumbnail = decoded(proxies.preview.data), decoded(proxies.thumbnail.data)
    assert preview.size == SIZE
    assert thumbnail.size == (300, 180)
    assert_shows(preview, UPRIGHT)
    assert_shows(thumbnail, UPRIGHT)


@pytest.mark.parametrize("orientation", range(1, 9))
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_orientation_in_every_format_comes_out_upright(
    tmp_path: Path, fmt: OrientedFormat, orientation: int
) -> None:
    path = write(tmp_path, fmt, orientation)
    meta = read_image_metadata(path)
    assert (meta.width, meta.height) == SIZE
    assert meta.orientation == orientation
    proxies = make_image_proxies(path, DEFAULT_SPEC)
    assert (proxies.width, proxies.height) == SIZE
    assert_upright_proxies(proxies)


def test_the_check_sees_a_mirror_and_a_turn() -> None:
    """The colour check can fail: a mirrored or a turned picture does not pass it."""
    upright = quadrants(*SIZE)
    assert_shows(upright, UPRIGHT)
    for method in (Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.FLIP_TOP_BOTTOM):
        with pytest.raises(AssertionError):
            assert_shows(upright.transpose(method), UPRIGHT)
    with pytest.raises(AssertionError):
        assert_shows(upright.transpose(Image.Transpose.ROTATE_90).resize(SIZE), UPRIGHT)


@pytest.mark.parametrize("fmt", ["avif", "heif"])
@pytest.mark.parametrize("orientation", [3, 6, 7])
def test_heif_and_avif_write_the_orientation_twice_as_phones_do(
    tmp_path: Path, fmt: OrientedFormat, orientation: int
) -> None:
    """The generated file itself: container transforms and EXIF's Orientation agree,
    and the pixels are stored turned (libheif/libavif turn them back)."""
    path = write(tmp_path, fmt, orientation)
    with path.open("rb") as original:
        assert container_orientation(original) == orientation
    exif = read_exif(_exif_item(path.read_bytes()))
    assert exif.orientation == orientation


@pytest.mark.parametrize("orientation", [2, 6, 8])
def test_a_heif_without_container_transforms_turns_by_its_exif_orientation(
    tmp_path: Path, orientation: int
) -> None:
    """ADR 0055: a HEIF whose primary image has no ``irot``/``imir`` at all (Samsung's
    phones write these) is turned by EXIF's Orientation, as the phone meant it and its
    gallery and ExifTool show it; libheif turned nothing, so safelight turns it once."""
    path = write(tmp_path, "heif", orientation, container=False)
    assert read_exif(_exif_item(path.read_bytes())).orientation == orientation
    with path.open("rb") as original:
        assert container_transforms(original) is None
    meta = read_image_metadata(path)
    assert meta.orientation == orientation
    assert (meta.width, meta.height) == SIZE
    proxies = make_image_proxies(path, DEFAULT_SPEC)
    assert (proxies.width, proxies.height) == SIZE
    assert_upright_proxies(proxies)


def test_a_samsung_like_portrait_heic_is_stored_and_shown_portrait(tmp_path: Path) -> None:
    """The reported file: a sensor-shaped landscape frame, EXIF 6, no ``irot``. The
    asset is portrait, and so is its thumbnail, with the top-left corner's marker (red)
    where the photographer saw it."""
    upright = (240, 400)
    path = tmp_path / "20260704_101500.heic"
    path.write_bytes(oriented_photo("heif", 6, size=upright, container=False))
    with Image.open(path) as stored:
        assert stored.size == (400, 240)  # as stored: landscape
    meta = read_image_metadata(path)
    assert (meta.width, meta.height, meta.orientation) == (*upright, 6)
    thumbnail = decoded(make_image_proxies(path, DEFAULT_SPEC).thumbnail.data)
    assert thumbnail.width < thumbnail.height
    assert_shows(thumbnail, UPRIGHT)


@pytest.mark.parametrize("exif_reset", [False, True])
@pytest.mark.parametrize("orientation", [3, 6, 7])
def test_a_heif_with_container_transforms_is_never_turned_by_exif_too(
    tmp_path: Path, orientation: int, exif_reset: bool
) -> None:
    """Apple's kind (transforms and EXIF agree) and libheif writers' kind (transforms,
    EXIF reset to 1) both come out turned once, by the container."""
    data = oriented_photo("heif", orientation, size=SIZE, exif_reset=exif_reset)
    path = tmp_path / f"photo_{orientation}.heic"
    path.write_bytes(data)
    assert read_exif(_exif_item(data)).orientation == (1 if exif_reset else orientation)
    with path.open("rb") as original:
        assert container_transforms(original) == orientation
    meta = read_image_metadata(path)
    assert (meta.width, meta.height, meta.orientation) == (*SIZE, orientation)
    assert_upright_proxies(make_image_proxies(path, DEFAULT_SPEC))


@pytest.mark.parametrize("orientation", [2, 6, 8])
def test_an_avif_ignores_an_exif_orientation_without_container_transforms(
    tmp_path: Path, orientation: int
) -> None:
    """AVIF keeps the HEIF/MIAF rule as browsers apply it (Chrome, Firefox and Safari
    through libavif/their own readers): the container decides, so pixels stored turned
    with only EXIF's word for it are shown as stored. Pillow's AVIF plugin writes the
    container's turn over EXIF's before safelight sees it (ADR 0055)."""
    path = write(tmp_path, "avif", orientation, container=False)
    assert read_exif(_exif_item(path.read_bytes())).orientation == orientation
    meta = read_image_metadata(path)
    assert meta.orientation == 1
    stored = quadrants(*SIZE).transpose(_INVERSE[orientation])
    assert (meta.width, meta.height) == stored.size
    preview = decoded(make_image_proxies(path, DEFAULT_SPEC).preview.data)
    assert preview.size == stored.size
    assert_shows(preview, quadrant_colours(stored))  # type: ignore[arg-type]


_INVERSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    6: Image.Transpose.ROTATE_90,
    8: Image.Transpose.ROTATE_270,
}


def _exif_item(data: bytes) -> bytes:
    """The EXIF block inside a HEIF/AVIF file (found by its TIFF header)."""
    starts = [data.find(b"Exif\0\0" + order) for order in (b"MM", b"II")]
    return data[max(starts) :]


# --- the container readers ------------------------------------------------------------------


def test_png_exif_is_found_after_the_pixels_and_in_raw_profile_text() -> None:
    for fmt in ("png", "png-late-exif", "png-raw-profile"):
        data = oriented_photo(fmt, 5, size=(8, 6))
        blob = png_exif(io.BytesIO(data))
        assert blob is not None, fmt
        assert read_exif(blob).orientation == 5, fmt
    plain = io.BytesIO()
    Image.new("RGB", (4, 4)).save(plain, "PNG")
    assert png_exif(io.BytesIO(plain.getvalue())) is None
    assert png_exif(io.BytesIO(b"not a png at all")) is None


def test_broken_raw_profile_text_is_no_exif() -> None:
    plain = io.BytesIO()
    Image.new("RGB", (4, 4)).save(plain, "PNG")
    png = plain.getvalue()
    body = b"Raw profile type exif\0\nexif\n  4\nzzzz\n"
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + b"\0\0\0\0"
    broken = png[:33] + chunk + png[33:]
    assert png_exif(io.BytesIO(broken)) is None


def test_container_orientation_of_broken_or_plain_files_is_1(tmp_path: Path) -> None:
    heif = oriented_photo("heif", 6, size=(64, 32))
    assert container_orientation(io.BytesIO(heif)) == 6
    meta_at = heif.index(b"meta") - 4
    assert container_orientation(io.BytesIO(heif[: meta_at + 40])) == 1  # cut in its meta
    assert container_orientation(io.BytesIO(b"\0\0\0\x08free")) == 1
    assert container_orientation(io.BytesIO(oriented_photo("heif", 1, size=(64, 32)))) == 1
    # Without a transform property the container says nothing; an irot of 0 says "as stored".
    assert container_transforms(io.BytesIO(heif[: meta_at + 40])) is None
    plain = oriented_photo("heif", 6, size=(64, 32), container=False)
    assert container_transforms(io.BytesIO(plain)) is None
    assert container_orientation(io.BytesIO(plain)) == 1


def test_tiff_is_turned_once_although_pillow_turns_it_as_it_loads(tmp_path: Path) -> None:
    """Pillow's TIFF decoder applies tag 274 itself and opens with the displayed size;
    turning again (what happened before) made an orientation-6 TIFF come out sideways."""
    path = write(tmp_path, "tiff", 6)
    with Image.open(path) as image:
        assert image.size == SIZE  # Pillow's own doing, which this test depends on
    assert_upright_proxies(make_image_proxies(path, DEFAULT_SPEC))


# --- JPEG XL (pillow-jxl-plugin) ------------------------------------------------------------


def test_jpeg_xl_is_a_photo_with_its_exif_read_and_its_exif_orientation_not_applied(
    tmp_path: Path,
) -> None:
    """JPEG XL's orientation is its codestream's, which libjxl applies; an EXIF
    Orientation beside it is informational (ADR 0029), so these pixels, stored turned
    with only EXIF's word for it, are shown as stored, while the rest of EXIF is read."""
    assert media_type("holiday.JXL") == "image"
    stored = quadrants(*SIZE).transpose(Image.Transpose.ROTATE_90)
    path = tmp_path / "photo.jxl"
    exif = exif_bytes(
        make="Canon", model="EOS R5", orientation=6, captured_at=datetime(2025, 7, 1, 9, 30, 5)
    )
    stored.save(path, "JXL", exif=exif)
    meta = read_image_metadata(path)
    assert meta.format == "JXL"
    assert (meta.make, meta.model) == ("Canon", "EOS R5")
    assert meta.captured_at == datetime(2025, 7, 1, 9, 30, 5)
    assert meta.orientation == 1
    assert (meta.width, meta.height) == stored.size
    preview = decoded(make_image_proxies(path, DEFAULT_SPEC).preview.data)
    assert preview.size == stored.size
    assert_shows(preview, quadrant_colours(stored))  # type: ignore[arg-type]


def test_an_upright_jpeg_xl_gets_upright_proxies(tmp_path: Path) -> None:
    path = tmp_path / "photo.jxl"
    quadrants(*SIZE).save(path, "JXL", lossless=True)
    proxies = make_image_proxies(path, DEFAULT_SPEC)
    assert (proxies.width, proxies.height) == SIZE
    assert_upright_proxies(proxies)


async def test_the_decode_processes_turn_every_format_as_a_thread_does(tmp_path: Path) -> None:
    """The crawl decodes in spawned processes (ADR 0010): they register the same
    plugins and apply the same rule."""
    paths = [write(tmp_path / fmt, fmt, 6) for fmt in ("png-raw-profile", "tiff", "heif")]
    paths.append(tmp_path / "photo.jxl")
    quadrants(*SIZE).save(paths[-1], "JXL")
    async with running_decoder(1) as decoder:
        results = [await decoder.decode(path, DEFAULT_SPEC) for path in paths]
    for path, (meta, proxies) in zip(paths, results, strict=True):
        assert (meta.width, meta.height) == SIZE, path
        assert_upright_proxies(proxies)
    assert results == [decode_image(path, DEFAULT_SPEC) for path in paths]


# --- a sidecar's orientation over every format (ADR 0026 decision 6, ADR 0029) --------------


def _other(orientation: int) -> int:
    """An embedded orientation that is not the sidecar's: every value 1-8 is met."""
    return orientation % 8 + 1


@pytest.mark.parametrize("sidecar", range(1, 9))
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_sidecar_orientation_wins_in_every_format_whoever_turns_the_pixels(
    tmp_path: Path, fmt: OrientedFormat, sidecar: int
) -> None:
    """The file says one orientation (EXIF, tag 274, or a HEIF's container transforms,
    which libheif and Pillow's TIFF decoder apply themselves) while its pixels are stored
    for the sidecar's: the sidecar's word wins, whatever the decoder turned already."""
    embedded = _other(sidecar)
    path = tmp_path / f"photo{EXTENSIONS[fmt]}"
    path.write_bytes(oriented_photo(fmt, embedded, size=SIZE, stored_for=sidecar))
    assert read_image_metadata(path).orientation == embedded  # the file's own word
    meta = read_image_metadata(path, SidecarFacts(orientation=sidecar))
    assert (meta.width, meta.height) == SIZE
    assert meta.orientation == sidecar
    proxies = make_image_proxies(path, DEFAULT_SPEC, sidecar)
    assert (proxies.width, proxies.height) == SIZE
    assert_upright_proxies(proxies)


@pytest.mark.parametrize("sidecar", range(1, 9))
def test_a_sidecar_orientation_turns_a_jpeg_xl(tmp_path: Path, sidecar: int) -> None:
    """libjxl applies the codestream's orientation (1 here: the plugin writes none) and
    never EXIF's; the sidecar's turn is applied to what it decodes."""
    stored = quadrants(*SIZE)
    if sidecar > 1:
        stored = stored.transpose(INVERSE_TRANSPOSE[sidecar])
    path = tmp_path / "photo.jxl"
    stored.save(path, "JXL", lossless=True, exif=exif_bytes(orientation=_other(sidecar)))
    meta = read_image_metadata(path, SidecarFacts(orientation=sidecar))
    assert (meta.width, meta.height, meta.orientation) == (*SIZE, sidecar)
    proxies = make_image_proxies(path, DEFAULT_SPEC, sidecar)
    assert (proxies.width, proxies.height) == SIZE
    assert_upright_proxies(proxies)


@pytest.mark.parametrize("applied", range(1, 9))
@pytest.mark.parametrize("wanted", range(1, 9))
def test_the_turn_left_after_a_decoder_undoes_what_it_applied(wanted: int, applied: int) -> None:
    """``turn_after_undoing`` against Pillow's own transpositions, on a picture with no
    symmetry: turning what a decoder turned by ``applied`` by the result gives the
    picture ``wanted`` makes of the stored pixels."""
    stored = quadrants(6, 4)
    decoded = turned(stored, applied)
    assert turned(decoded, turn_after_undoing(wanted, applied)).tobytes() == (
        turned(stored, wanted).tobytes()
    )
    assert Orientation(wanted, applied).remaining == turn_after_undoing(wanted, applied)
    assert Orientation(wanted, applied).displayed_size(decoded.size) == turned(stored, wanted).size


def _jxl_header(orientation: int | None, *, small: bool) -> bytes:
    """A JPEG XL codestream's first bytes, written bit by bit as ISO/IEC 18181-1 lays
    them out (each byte from its least significant bit): a 64 x 48 size header, then an
    image header with its orientation (``None``: all default), then padding."""
    fields: list[tuple[int, int]] = [(1 if small else 0, 1)]
    if small:
        fields += [(48 // 8 - 1, 5), (0, 3), (64 // 8 - 1, 5)]  # height, no ratio, width
    else:
        fields += [(1, 2), (48 - 1, 13), (0, 3), (0, 2), (64 - 1, 9)]  # U32 sizes
    if orientation is None:
        fields.append((1, 1))  # all_default
    else:
        fields += [(0, 1), (1, 1), (orientation - 1, 3), (0, 3)]  # + no size, preview, anim
    bits = "".join(format(value, f"0{count}b")[::-1] for value, count in fields)
    bits += "0" * (-len(bits) % 8) + "0" * 64
    body = bytes(int(bits[i : i + 8][::-1], 2) for i in range(0, len(bits), 8))
    return b"\xff\x0a" + body


def _box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


@pytest.mark.parametrize("orientation", range(1, 9))
def test_a_jpeg_xl_codestream_says_its_orientation_bare_or_in_its_container(
    orientation: int,
) -> None:
    signature = b"\0\0\0\x0cJXL \r\n\x87\n" + _box(b"ftyp", b"jxl \0\0\0\0jxl ")
    for small in (True, False):
        codestream = _jxl_header(orientation, small=small)
        assert jxl_orientation(io.BytesIO(codestream)) == orientation
        boxed = signature + _box(b"Exif", b"\0" * 40) + _box(b"jxlc", codestream)
        assert jxl_orientation(io.BytesIO(boxed)) == orientation
        parts = signature + _box(b"jxlp", b"\0\0\0\0" + codestream[:20])
        assert jxl_orientation(io.BytesIO(parts + _box(b"jxlp", codestream[20:]))) == orientation


def test_a_jpeg_xl_without_an_orientation_or_unreadable_says_1(tmp_path: Path) -> None:
    assert jxl_orientation(io.BytesIO(_jxl_header(None, small=True))) == 1
    assert jxl_orientation(io.BytesIO(_jxl_header(6, small=False)[:3])) == 1  # cut short
    assert jxl_orientation(io.BytesIO(b"\0\0\0\x0cJXL \r\n\x87\n")) == 1  # no codestream
    assert jxl_orientation(io.BytesIO(b"not a jpeg xl at all")) == 1
    for container in (False, True):
        path = tmp_path / f"photo_{container}.jxl"
        quadrants(*SIZE).save(path, "JXL", use_container=container)
        with path.open("rb") as original:
            assert original.read(2) == (b"\0\0" if container else b"\xff\x0a")
            assert jxl_orientation(original) == 1  # the plugin writes none
