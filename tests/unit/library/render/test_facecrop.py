"""A face's picture (``library.render.facecrop``): the square around a face's box with
its margin, kept inside the picture, and cut from a preview's JPEG at the crop's size;
anything that is not a preview's JPEG refused."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from safelight.library.render.facecrop import (
    CROP_PIXELS,
    NotAPreview,
    crop_rectangle,
    cut_face,
)


@pytest.mark.parametrize(
    ("box", "size", "expected"),
    [
        # A 100 x 100 face in the middle of 1000 x 800: 180 px with its margin.
        ((0.45, 0.4375, 0.55, 0.5625), (1000, 800), (410, 310, 590, 490)),
        # A tall box: its height decides the side.
        ((0.45, 0.25, 0.55, 0.75), (1000, 800), (140, 40, 860, 760)),
        # At the top left corner: moved inside, the same size.
        ((0.0, 0.0, 0.1, 0.125), (1000, 800), (0, 0, 180, 180)),
        # At the bottom right corner.
        ((0.9, 0.875, 1.0, 1.0), (1000, 800), (820, 620, 1000, 800)),
        # A face larger than the picture's height allows: shrunk to it.
        ((0.2, 0.0, 0.8, 1.0), (1000, 800), (100, 0, 900, 800)),
        # A box too small to be a pixel: one pixel.
        ((0.5, 0.5, 0.5001, 0.5001), (10, 10), (5, 5, 6, 6)),
    ],
    ids=["middle", "tall", "top-left", "bottom-right", "larger-than-picture", "tiny"],
)
def test_the_crop_is_a_square_around_the_face_inside_the_picture(
    box: tuple[float, float, float, float],
    size: tuple[int, int],
    expected: tuple[int, int, int, int],
) -> None:
    left, top, right, bottom = crop_rectangle(box, *size)
    assert (left, top, right, bottom) == expected
    assert right - left == bottom - top
    assert 0 <= left < right <= size[0] and 0 <= top < bottom <= size[1]


def _jpeg(size: tuple[int, int]) -> io.BytesIO:
    """A picture whose left half is red and right half blue."""
    image = Image.new("RGB", size, (200, 0, 0))
    image.paste((0, 0, 200), (size[0] // 2, 0, size[0], size[1]))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=95)
    out.seek(0)
    return out


def test_a_face_is_cut_where_its_box_is_at_the_crops_size() -> None:
    right_half = cut_face(_jpeg((1600, 1200)), (0.6, 0.3, 0.9, 0.7))
    with Image.open(io.BytesIO(right_half)) as image:
        assert image.size == (CROP_PIXELS, CROP_PIXELS)
        pixel = image.convert("RGB").getpixel((CROP_PIXELS // 2, CROP_PIXELS // 2))
    assert isinstance(pixel, tuple)
    red, _, blue = pixel
    assert blue > 150 and red < 50


def test_a_small_face_is_never_scaled_up() -> None:
    with Image.open(io.BytesIO(cut_face(_jpeg((200, 100)), (0.1, 0.1, 0.2, 0.3)))) as image:
        assert image.size == (36, 36)


@pytest.mark.parametrize(
    "body",
    [b"", b"\xff\xd8\xff not a JPEG"],
    ids=["empty", "cut"],
)
def test_what_is_not_a_previews_jpeg_is_refused(body: bytes) -> None:
    with pytest.raises(NotAPreview):
        cut_face(io.BytesIO(body), (0.1, 0.1, 0.5, 0.5))


def test_a_png_is_refused_though_pillow_reads_it() -> None:
    out = io.BytesIO()
    Image.new("RGB", (10, 10)).save(out, "PNG")
    out.seek(0)
    with pytest.raises(NotAPreview):
        cut_face(out, (0.1, 0.1, 0.5, 0.5))
