"""Faces drawn for the tests: flat shapes (hair, skin, ears, brows, eyes with whites and
irises, a nose, a mouth) that dlib's HOG detector finds as a frontal face, so the tests
of finding faces always run, with or without the shared samples.

The descriptor model sees every drawing as one face (two drawings of other colours and
proportions are about 0.2 apart, far under the 0.6 threshold): a drawn face is one
"person" wherever it is drawn, at whatever size. Tests of people told apart use
descriptors of their own (``library.faces.grouping``) or the samples' real portrait.
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFilter

FACE_SIDE = 400
"""The side of the square a face is drawn in, before ``scale``."""


def drawn_face(
    size: tuple[int, int] = (640, 480),
    *,
    at: tuple[int, int] = (320, 240),
    scale: float = 0.75,
    background: tuple[int, int, int] = (90, 110, 140),
) -> Image.Image:
    """A picture of ``size`` with a face centred at ``at``, about ``300 * scale`` pixels
    wide by ``440 * scale`` tall (hair to chin)."""
    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)
    cx, cy = at

    def ellipse(x: float, y: float, rx: float, ry: float, fill: tuple[int, int, int]) -> None:
        draw.ellipse(
            [
                cx + (x - rx) * scale,
                cy + (y - ry) * scale,
                cx + (x + rx) * scale,
                cy + (y + ry) * scale,
            ],
            fill=fill,
        )

    def point(x: float, y: float) -> tuple[float, float]:
        return cx + x * scale, cy + y * scale

    skin = (225, 180, 150)
    ellipse(0, -45, 95, 95, (60, 40, 30))  # hair
    ellipse(0, 0, 80, 110, skin)
    ellipse(-85, 0, 14, 30, (215, 170, 140))
    ellipse(85, 0, 14, 30, (215, 170, 140))
    for side in (-1, 1):
        draw.line(
            [point(side * 12, -40), point(side * 50, -46)],
            fill=(70, 50, 40),
            width=max(1, round(8 * scale)),
        )
        ellipse(side * 32, -17, 20, 11, (245, 245, 245))
        ellipse(side * 32, -17, 9, 9, (60, 40, 30))
        ellipse(side * 32, -17, 4, 4, (10, 10, 10))
    draw.polygon([point(0, -10), point(-12, 40), point(12, 40)], fill=(200, 150, 120))
    ellipse(0, 72, 30, 10, (170, 80, 80))
    return image.filter(ImageFilter.GaussianBlur(2 * scale))


def face_box(
    at: tuple[int, int] = (320, 240), scale: float = 0.75
) -> tuple[float, float, float, float]:
    """Where the drawn face's skin is, in pixels (left, top, right, bottom): a found box
    should lie around it."""
    cx, cy = at
    return (cx - 80 * scale, cy - 110 * scale, cx + 80 * scale, cy + 110 * scale)


def jpeg_of(image: Image.Image, *, orientation: int | None = None, quality: int = 90) -> bytes:
    """``image`` as a JPEG, with an EXIF orientation if given (the pixels as they are:
    a viewer turns them by the tag)."""
    out = io.BytesIO()
    exif = Image.Exif()
    if orientation is not None:
        exif[0x0112] = orientation
    image.save(out, "JPEG", quality=quality, exif=exif.tobytes())
    return out.getvalue()
