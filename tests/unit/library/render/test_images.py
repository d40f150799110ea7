"""Image proxies: upright, right-sized, never upscaled, sRGB, valid JPEGs and BlurHash,
one decode; bombs, truncated and odd files give a MediaError."""

from __future__ import annotations

import dataclasses
import io
import struct
import zlib
from pathlib import Path

import blurhash
import numpy as np
import pytest
from PIL import Image, ImageFile, ImageOps
from PIL.JpegImagePlugin import JpegImageFile

from safelight.library.files.errors import (
    CorruptMedia,
    DecompressionBomb,
    MediaError,
    UnreadableFile,
    UnsupportedMedia,
)
from safelight.library.files.limits import MIN_DECODE_MEMORY_MIB
from safelight.library.media import metadata
from safelight.library.media.metadata import read_image_metadata
from safelight.library.render import images
from safelight.library.render.images import (
    ImageProxies,
    encode_blurhash,
    make_image_proxies,
)
from safelight.testing.samplegen import GREEN, P3_PATCH, RED, Manifest, generate_library
from safelight.testing.specs import DEFAULT_SPEC, proxy_spec


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return generate_library(tmp_path_factory.mktemp("library"), seed=5, ffmpeg=None)


def decode(data: bytes) -> Image.Image:
    """Decode a proxy, checking it is a complete baseline RGB JPEG without a profile."""
    with Image.open(io.BytesIO(data)) as probe:
        assert probe.format == "JPEG"
        probe.verify()
    image = Image.open(io.BytesIO(data))
    image.load()
    assert image.mode == "RGB"
    assert "icc_profile" not in image.info  # untagged = sRGB
    assert "exif" not in image.info  # no metadata (GPS) leaks into proxies
    return image


def pixel(image: Image.Image, fx: float, fy: float) -> tuple[int, int, int]:
    value = image.getpixel((int(image.width * fx), int(image.height * fy)))
    assert isinstance(value, tuple)
    return value[0], value[1], value[2]


def close_to(actual: tuple[int, ...], expected: tuple[int, ...], tolerance: int) -> bool:
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expected, strict=True))


def assert_upright(image: Image.Image) -> None:
    """The generated red block must be top-left and the green block top-right."""
    assert close_to(pixel(image, 0.08, 0.08), RED, 40), pixel(image, 0.08, 0.08)
    assert close_to(pixel(image, 0.92, 0.08), GREEN, 40), pixel(image, 0.92, 0.08)
    assert not close_to(pixel(image, 0.08, 0.92), RED, 60)


# --- orientation, size, format -----------------------------------------------------------


@pytest.mark.parametrize("orientation", range(1, 9))
def test_proxies_are_upright_for_every_orientation(library: Manifest, orientation: int) -> None:
    photo = library.photo(f"orientation/orientation_{orientation}.jpg")
    proxies = make_image_proxies(library.root / photo.path, DEFAULT_SPEC)
    assert (proxies.width, proxies.height) == (photo.width, photo.height)
    preview = decode(proxies.preview.data)
    thumbnail = decode(proxies.thumbnail.data)
    assert (
        preview.size
        == (proxies.preview.width, proxies.preview.height)
        == (photo.width, photo.height)
    )
    assert thumbnail.size == (proxies.thumbnail.width, proxies.thumbnail.height)
    assert thumbnail.width == 300
    assert_upright(preview)
    assert_upright(thumbnail)


@pytest.mark.parametrize("orientation", [2, 5, 6, 7])
def test_orientation_agrees_with_pillows_exif_transpose(
    library: Manifest, orientation: int
) -> None:
    """An independent oracle: Pillow's own transposition of the decoded original."""
    path = library.root / f"orientation/orientation_{orientation}.jpg"
    with Image.open(path) as original:
        expected = np.asarray(ImageOps.exif_transpose(original).convert("RGB"), dtype=np.int16)
    preview = np.asarray(
        decode(make_image_proxies(path, DEFAULT_SPEC).preview.data), dtype=np.int16
    )
    assert preview.shape == expected.shape
    assert np.abs(preview - expected).mean() < 3


def test_every_generated_photo_gets_upright_proxies(library: Manifest) -> None:
    for photo in library.photos:
        proxies = make_image_proxies(library.root / photo.path, DEFAULT_SPEC)
        preview, thumbnail = decode(proxies.preview.data), decode(proxies.thumbnail.data)
        assert preview.width <= 1920 and thumbnail.width <= 300, photo.path
        assert preview.width <= photo.width and thumbnail.width <= preview.width, photo.path
        assert abs(preview.width / preview.height - photo.width / photo.height) < 0.02, photo.path
        if photo.markers:
            assert_upright(preview)
            assert_upright(thumbnail)


def test_large_photo_is_scaled_down_with_a_dct_draft(
    library: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    drafts: list[tuple[int, int]] = []
    real_draft = JpegImageFile.draft

    def spy(self: JpegImageFile, mode: str | None, size: tuple[int, int] | None) -> object:
        result = real_draft(self, mode, size)
        drafts.append(self.size)
        return result

    monkeypatch.setattr(JpegImageFile, "draft", spy)
    proxies = make_image_proxies(library.root / "2021/large/PXL_0300.jpg", DEFAULT_SPEC)
    assert drafts == [(2000, 1500)]  # 4000x3000 decoded at 1/2: still >= 1920 wide
    assert (proxies.preview.width, proxies.preview.height) == (1920, 1440)
    assert (proxies.thumbnail.width, proxies.thumbnail.height) == (300, 225)
    assert (proxies.width, proxies.height) == (4000, 3000)
    assert_upright(decode(proxies.preview.data))


def test_small_photo_is_never_upscaled(tmp_path: Path) -> None:
    path = tmp_path / "tiny.jpg"
    Image.new("RGB", (120, 80), (10, 200, 30)).save(path, "JPEG")
    proxies = make_image_proxies(path, DEFAULT_SPEC)
    assert (proxies.preview.width, proxies.preview.height) == (120, 80)
    assert (proxies.thumbnail.width, proxies.thumbnail.height) == (120, 80)


def test_custom_spec_and_qualities(library: Manifest) -> None:
    path = library.root / "2021/large/PXL_0300.jpg"
    small = make_image_proxies(path, proxy_spec(thumbnail_width=128, preview_width=640))
    assert (small.thumbnail.width, small.preview.width) == (128, 640)
    low = make_image_proxies(path, proxy_spec(preview_quality=30))
    high = make_image_proxies(path, proxy_spec(preview_quality=95))
    assert len(low.preview.data) < len(high.preview.data)


@pytest.mark.parametrize(
    "kwargs",
    [{"thumbnail_width": 0}, {"thumbnail_width": 2000}, {"preview_quality": 100},
     {"thumbnail_quality": 0}, {"blurhash_x_components": 10}, {"blurhash_sample": 0}],
)  # fmt: skip
def test_proxy_spec_is_validated(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        proxy_spec(**kwargs)


def test_panorama_strip_is_bounded_in_height(tmp_path: Path) -> None:
    path = tmp_path / "strip.png"
    Image.new("RGB", (60, 20000), (0, 0, 200)).save(path, "PNG")
    proxies = make_image_proxies(path, DEFAULT_SPEC)
    assert proxies.thumbnail.height <= 300 * images.MAX_ASPECT
    assert proxies.preview.height <= 1920 * images.MAX_ASPECT
    assert proxies.preview.width >= 1


def test_the_original_is_decoded_once(library: Manifest, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[object] = []
    real_open = metadata.open_image  # what images imported

    def counting(fp: object) -> Image.Image:
        opened.append(fp)
        return real_open(fp)  # type: ignore[arg-type]

    monkeypatch.setattr(images, "open_image", counting)
    make_image_proxies(library.root / "2017/Summer/IMG_0001.JPG", DEFAULT_SPEC)
    assert len(opened) == 1


# --- colour --------------------------------------------------------------------------------


def p3_to_srgb(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """Independent oracle: Display P3 -> XYZ (D65) -> sRGB, both with the sRGB curve."""
    p3_to_xyz = np.array(
        [[0.48657, 0.26567, 0.19822], [0.22897, 0.69174, 0.07929], [0.00000, 0.04511, 1.04394]]
    )
    xyz_to_srgb = np.array(
        [[3.24097, -1.53738, -0.49861], [-0.96924, 1.87597, 0.04156], [0.05563, -0.20398, 1.05697]]
    )
    v = np.array(rgb) / 255
    linear = np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)
    out = np.clip(xyz_to_srgb @ (p3_to_xyz @ linear), 0, 1)
    encoded = np.where(out <= 0.0031308, out * 12.92, 1.055 * out ** (1 / 2.4) - 0.055)
    r, g, b = (round(float(c) * 255) for c in encoded)
    return r, g, b


def test_display_p3_is_converted_to_srgb(library: Manifest) -> None:
    photo = next(p for p in library.photos if p.display_p3)
    preview = decode(make_image_proxies(library.root / photo.path, DEFAULT_SPEC).preview.data)
    expected = p3_to_srgb(P3_PATCH)
    got = pixel(preview, 0.5, 0.5)
    assert close_to(got, expected, 3), (got, expected)
    assert not close_to(got, P3_PATCH, 6)  # the raw values would look dull


def test_a_broken_icc_profile_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "odd-profile.jpg"
    Image.new("RGB", (50, 40), (100, 150, 200)).save(path, "JPEG", icc_profile=b"not a profile")
    preview = decode(make_image_proxies(path, DEFAULT_SPEC).preview.data)
    assert close_to(pixel(preview, 0.5, 0.5), (100, 150, 200), 3)


def test_transparency_is_flattened_onto_white(tmp_path: Path) -> None:
    path = tmp_path / "logo.png"
    picture = Image.new("RGBA", (200, 100), (0, 0, 0, 0))
    picture.paste((0, 0, 255, 255), (0, 0, 100, 100))
    picture.save(path, "PNG")
    preview = decode(make_image_proxies(path, DEFAULT_SPEC).preview.data)
    assert close_to(pixel(preview, 0.75, 0.5), (255, 255, 255), 3)
    assert close_to(pixel(preview, 0.25, 0.5), (0, 0, 255), 6)


@pytest.mark.parametrize(
    ("mode", "fmt", "fill", "expected"),
    [
        ("CMYK", "JPEG", (0, 255, 255, 0), (255, 0, 0)),
        ("L", "JPEG", 128, (128, 128, 128)),
        ("P", "GIF", None, None),
        ("1", "PNG", 1, (255, 255, 255)),
        ("I;16", "PNG", 32768, (128, 128, 128)),
        ("LA", "PNG", (60, 255), (60, 60, 60)),
    ],
)
def test_pixel_modes_become_rgb(
    tmp_path: Path,
    mode: str,
    fmt: str,
    fill: float | tuple[float, ...] | None,
    expected: tuple[int, int, int] | None,
) -> None:
    path = tmp_path / f"picture.{fmt.lower()}"
    picture = Image.new(mode, (64, 48), fill) if fill is not None else Image.new("P", (64, 48), 3)
    picture.save(path, fmt)
    preview = decode(make_image_proxies(path, DEFAULT_SPEC).preview.data)
    if expected is not None:
        assert close_to(pixel(preview, 0.5, 0.5), expected, 8), pixel(preview, 0.5, 0.5)


# --- BlurHash ------------------------------------------------------------------------------


def test_blurhash_is_valid_and_looks_like_the_photo(library: Manifest) -> None:
    proxies = make_image_proxies(library.root / "2021/p3/IMG_0400.jpg", DEFAULT_SPEC)
    assert blurhash.is_valid_blurhash(proxies.blurhash)
    assert len(proxies.blurhash) == 4 + 2 * 4 * 3  # 4x3 components
    mean = np.asarray(blurhash.decode(proxies.blurhash, 32, 24)).reshape(-1, 3).mean(axis=0)
    assert close_to(tuple(int(c) for c in mean), p3_to_srgb(P3_PATCH), 12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # encode() uses Image.getdata
def test_blurhash_equals_the_library_encoder() -> None:
    sample = Image.fromarray(
        np.random.default_rng(3).integers(0, 256, size=(48, 64, 3), dtype=np.uint8), "RGB"
    )
    assert encode_blurhash(sample, 4, 3) == blurhash.encode(sample.copy(), 4, 3)
    assert encode_blurhash(sample, 9, 9) == blurhash.encode(sample.copy(), 9, 9)


def test_blurhash_components_are_configurable(library: Manifest) -> None:
    spec = proxy_spec(blurhash_x_components=5, blurhash_y_components=4)
    result = make_image_proxies(library.root / "orientation/orientation_1.jpg", spec)
    assert len(result.blurhash) == 4 + 2 * 5 * 4


# --- failures ------------------------------------------------------------------------------


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares a size and holds almost no data: a decompression bomb's header."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("side", [17_000, 40_000])  # 289 MP (Pillow warns), 1.6 GP (Pillow errs)
def test_decompression_bombs_are_refused(tmp_path: Path, side: int) -> None:
    path = tmp_path / "bomb.png"
    path.write_bytes(png_header_only(side, side))
    with pytest.raises(DecompressionBomb, match="decompression bomb"):
        make_image_proxies(path, DEFAULT_SPEC)


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_bomb_limit_holds_even_when_pillows_warning_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    path.write_bytes(png_header_only(17_000, 17_000))
    with pytest.raises(DecompressionBomb, match="more than"):
        make_image_proxies(path, DEFAULT_SPEC)


def test_truncated_jpeg_is_refused(library: Manifest) -> None:
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False
    with pytest.raises(CorruptMedia, match="truncated") as caught:
        make_image_proxies(library.root / "broken/truncated.jpg", DEFAULT_SPEC)
    assert isinstance(caught.value, MediaError)


@pytest.mark.parametrize("keep", [0.5, 0.99])
def test_truncated_heic_is_refused(library: Manifest, tmp_path: Path, keep: float) -> None:
    data = (library.root / "2020/live/IMG_0200.HEIC").read_bytes()
    path = tmp_path / "cut.heic"
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(MediaError) as caught:
        make_image_proxies(path, DEFAULT_SPEC)
    assert caught.value.reason


@pytest.mark.parametrize("tail", [struct.pack(">I4s", 4096, b"free") + bytes(100), b"\0\0\0\x04"])
def test_heic_whose_last_box_is_cut_is_refused(
    library: Manifest, tmp_path: Path, tail: bytes
) -> None:
    """libheif decodes a file cut inside its pixel data with the missing tiles painted
    green (seen on a real iPhone HEIC cut in half, see test_samples_folder): the box
    structure is what tells a cut file. Here the image is whole but a box is not."""
    path = tmp_path / "cut.heic"
    path.write_bytes((library.root / "2020/live/IMG_0200.HEIC").read_bytes() + tail)
    read_image_metadata(path)  # libheif itself is happy with it
    with pytest.raises(CorruptMedia, match=r"runs past the end|corrupt file"):
        make_image_proxies(path, DEFAULT_SPEC)


@pytest.mark.parametrize(
    ("content", "error"), [(b"", UnsupportedMedia), (b"GIF89a-nonsense", MediaError)]
)
def test_not_an_image(tmp_path: Path, content: bytes, error: type[MediaError]) -> None:
    path = tmp_path / "x.gif"
    path.write_bytes(content)
    with pytest.raises(error):
        make_image_proxies(path, DEFAULT_SPEC)


def test_missing_and_folder(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile):
        make_image_proxies(tmp_path / "gone.jpg", DEFAULT_SPEC)
    (tmp_path / "dir.jpg").mkdir()
    with pytest.raises(UnreadableFile):
        make_image_proxies(tmp_path / "dir.jpg", DEFAULT_SPEC)


def test_result_types(library: Manifest) -> None:
    proxies = make_image_proxies(library.root / "orientation/orientation_1.jpg", DEFAULT_SPEC)
    assert isinstance(proxies, ImageProxies)
    assert proxies.preview.data[:2] == proxies.thumbnail.data[:2] == b"\xff\xd8"


def test_threads_give_the_same_proxies(library: Manifest) -> None:
    """The crawl runs several files at once in threads: results must not mix."""
    from concurrent.futures import ThreadPoolExecutor

    paths = [library.root / p.path for p in library.photos if not p.path.startswith("2021/large")]
    sequential = [make_image_proxies(p, DEFAULT_SPEC) for p in paths]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(make_image_proxies, paths * 2, [DEFAULT_SPEC] * len(paths) * 2))
    assert concurrent == sequential * 2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"thumbnail_width": 0}, "thumbnail_width must be greater than 0, not 0"),
        ({"preview_width": -3}, "preview_width must be greater than 0, not -3"),
        (
            {"thumbnail_width": 400, "preview_width": 300},
            "thumbnail_width must not be larger than preview_width",
        ),
        ({"thumbnail_quality": 96}, "thumbnail_quality must be between 1 and 95, not 96"),
        ({"preview_quality": 0}, "preview_quality must be between 1 and 95, not 0"),
        ({"blurhash_x_components": 0}, "BlurHash components must be within 1..9"),
        ({"blurhash_x_components": 10}, "BlurHash components must be within 1..9"),
        ({"blurhash_y_components": 0}, "BlurHash components must be within 1..9"),
        ({"blurhash_y_components": 10}, "BlurHash components must be within 1..9"),
        ({"blurhash_sample": 0}, "blurhash_sample must be positive"),
        (
            {"decode_memory_mib": MIN_DECODE_MEMORY_MIB - 1},
            f"decode_memory_mib must be at least {MIN_DECODE_MEMORY_MIB}, "
            f"not {MIN_DECODE_MEMORY_MIB - 1}",
        ),
    ],
)
def test_a_proxy_spec_past_an_edge_names_the_field(changes: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        dataclasses.replace(DEFAULT_SPEC, **changes)
    assert str(raised.value) == message


def test_a_proxy_spec_at_its_edges_is_accepted() -> None:
    low = dataclasses.replace(
        DEFAULT_SPEC,
        thumbnail_width=1,
        preview_width=1,
        thumbnail_quality=1,
        preview_quality=1,
        blurhash_x_components=1,
        blurhash_y_components=1,
        blurhash_sample=1,
        decode_memory_mib=MIN_DECODE_MEMORY_MIB,
    )
    high = dataclasses.replace(
        DEFAULT_SPEC,
        thumbnail_quality=95,
        preview_quality=95,
        blurhash_x_components=9,
        blurhash_y_components=9,
    )
    assert (low.thumbnail_width, low.preview_quality, low.blurhash_sample) == (1, 1, 1)
    assert (high.thumbnail_quality, high.blurhash_y_components) == (95, 9)
