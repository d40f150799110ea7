"""Proxies of a photo: a preview (<= 1920 px wide), a thumbnail (<= 300 px wide) and a
BlurHash, all from a single decode of the original.

Pipeline, and why each step is where it is:

1. Open (header only) and refuse anything above ``metadata.MAX_IMAGE_PIXELS``.
2. JPEG: ``draft`` asks libjpeg for a DCT-scaled decode (1/2, 1/4, 1/8) that is still at
   least the preview size, so a 48 MP photo decodes as ~3 MP: the largest saving here.
   HEIF: libheif decodes at full size (it has no scaled decode), already rotated.
3. Decode once. Truncated or corrupt data raises (``LOAD_TRUNCATED_IMAGES`` stays False;
   HEIF/AVIF, which libheif would decode with missing tiles painted green, are checked
   for completeness first).
4. Turn upright with the EXIF orientation read by ``exif`` (the same value
   ``metadata`` reports, so sizes and pixels always agree).
5. Resize to the preview size (Lanczos; never upscale), flatten transparency onto white,
   then convert to sRGB through the embedded ICC profile (phones shoot Display P3;
   ignoring it makes colours dull). Converting after resizing costs a fraction.
6. The thumbnail is resized from the preview image, and the BlurHash is computed from a
   64 px sample of the thumbnail: nothing is decoded twice.

Outputs are baseline JPEGs without metadata (no GPS leaks into proxies) and without an
ICC profile (untagged means sRGB on the web). Everything is synchronous and CPU-bound:
run it in a worker thread.
"""

from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blurhash
import numpy as np
from PIL import Image, ImageCms

from safelight.library.errors import CorruptMedia, DecompressionBomb, UnsupportedMedia
from safelight.library.metadata import MAX_IMAGE_PIXELS, exif_fields_of, open_image
from safelight.library.originals import OriginalRef, open_source

MAX_ASPECT = 4
"""A proxy is at most this many times as tall as its width limit, so a 100 x 60000 scan
strip cannot make a multi-megapixel 'thumbnail'."""

_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
"""EXIF orientation -> the operation that turns stored pixels upright (as
``ImageOps.exif_transpose``, which is not used because it re-parses EXIF with warnings)."""

_MAX_TOP_LEVEL_BOXES = 1000  # real HEIF/AVIF files have about five
_DECODE_ERRORS = (
    OSError,
    SyntaxError,
    ValueError,
    EOFError,
    struct.error,
    IndexError,
    RuntimeError,
)


@dataclass(frozen=True, slots=True)
class ProxySpec:
    """Sizes (max width, px) and JPEG qualities of image proxies."""

    thumbnail_width: int = 300
    thumbnail_quality: int = 75
    preview_width: int = 1920
    preview_quality: int = 85
    blurhash_sample: int = 64
    blurhash_x_components: int = 4
    blurhash_y_components: int = 3

    def __post_init__(self) -> None:
        if not 1 <= self.thumbnail_width <= self.preview_width:
            raise ValueError("need 1 <= thumbnail_width <= preview_width")
        for quality in (self.thumbnail_quality, self.preview_quality):
            if not 1 <= quality <= 95:
                raise ValueError("JPEG quality must be within 1..95")
        if not 1 <= self.blurhash_x_components <= 9 or not 1 <= self.blurhash_y_components <= 9:
            raise ValueError("BlurHash components must be within 1..9")
        if self.blurhash_sample < 1:
            raise ValueError("blurhash_sample must be positive")


@dataclass(frozen=True, slots=True)
class EncodedImage:
    data: bytes
    """A baseline sRGB JPEG."""
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class ImageProxies:
    thumbnail: EncodedImage
    preview: EncodedImage
    blurhash: str
    width: int
    """Of the original, as displayed."""
    height: int


def make_image_proxies(src: Path | OriginalRef, spec: ProxySpec | None = None) -> ImageProxies:
    """Thumbnail, preview and BlurHash of the photo at ``src`` (a path, or the crawl's
    open original), decoding it once.

    Raises ``MediaError``: ``DecompressionBomb``, ``CorruptMedia`` (truncated, corrupt),
    ``UnsupportedMedia`` (unknown format or pixel mode), ``UnreadableFile``.
    """
    spec = spec or ProxySpec()
    with open_source(src) as original, open_image(original) as image:
        stored_width, stored_height = image.size
        if stored_width * stored_height > MAX_IMAGE_PIXELS:
            raise DecompressionBomb(
                f"decompression bomb: {stored_width}x{stored_height} is more than "
                f"{MAX_IMAGE_PIXELS} pixels"
            )
        orientation = 1 if image.format == "HEIF" else exif_fields_of(image, original).orientation
        swaps = (orientation or 1) in (5, 6, 7, 8)
        display = (stored_height, stored_width) if swaps else (stored_width, stored_height)
        icc_profile = image.info.get("icc_profile")
        if image.format in ("HEIF", "AVIF"):
            _check_boxes_complete(original)
        if image.format in ("JPEG", "MPO"):
            target = _fit(display, spec.preview_width)
            image.draft("RGB", (target[1], target[0]) if swaps else target)
        try:
            image.load()
        except (*_DECODE_ERRORS, UserWarning) as error:  # UserWarning: see open_image
            raise CorruptMedia(f"cannot decode image: {error}") from error
        decoded = _to_resizable(image)
    upright = decoded.transpose(_TRANSPOSE[orientation]) if orientation in _TRANSPOSE else decoded
    return _proxies(upright, icc_profile if isinstance(icc_profile, bytes) else None, display, spec)


def _check_boxes_complete(original: io.BufferedReader) -> None:
    """Refuse a HEIF/AVIF file cut short. libheif decodes one with the missing tiles
    painted in (flat green), which would become a broken proxy that is never retried.
    Every top-level ISO BMFF box must end within the file; a copy still in progress or
    cut by a full disk fails this, as its last box (``mdat``) declares its whole size."""
    fd = original.fileno()
    size = os.fstat(fd).st_size
    position = 0
    for _ in range(_MAX_TOP_LEVEL_BOXES):
        if position == size:
            return
        header = os.pread(fd, 16, position)
        box_size = int.from_bytes(header[:4], "big") if len(header) >= 8 else -1
        if box_size == 1:
            box_size = int.from_bytes(header[8:16], "big") if len(header) == 16 else -1
        elif box_size == 0:
            return  # the last box, running to the end of the file by definition
        if box_size < 8 or position + box_size > size:
            raise CorruptMedia("truncated or corrupt file: a box runs past the end of the file")
        position += box_size
    raise CorruptMedia("corrupt file: too many top-level boxes")


def proxies_from_upright_image(image: Image.Image, spec: ProxySpec | None = None) -> ImageProxies:
    """Proxies of an already decoded, upright sRGB image (a video's poster frame)."""
    return _proxies(_to_resizable(image), None, image.size, spec or ProxySpec())


def _proxies(
    upright: Image.Image, icc_profile: bytes | None, display: tuple[int, int], spec: ProxySpec
) -> ImageProxies:
    # The draft may leave the image a little larger than the preview; the display size
    # (not the decoded one) decides, so a small original is never upscaled.
    preview_size = _fit(display, spec.preview_width)
    preview = _resize(upright, preview_size)
    preview = _to_srgb(_flatten(preview), icc_profile)
    thumbnail = _resize(preview, _fit(preview.size, spec.thumbnail_width))
    sample = _resize(
        thumbnail, _fit(thumbnail.size, spec.blurhash_sample, max_height=spec.blurhash_sample)
    )
    return ImageProxies(
        thumbnail=_encode(thumbnail, spec.thumbnail_quality),
        preview=_encode(preview, spec.preview_quality),
        blurhash=encode_blurhash(sample, spec.blurhash_x_components, spec.blurhash_y_components),
        width=display[0],
        height=display[1],
    )


def _fit(size: tuple[int, int], max_width: int, max_height: int | None = None) -> tuple[int, int]:
    """The largest size within the limits with the same aspect; never larger than ``size``."""
    width, height = size
    limit_height = max_height if max_height is not None else max_width * MAX_ASPECT
    scale = min(1.0, max_width / width, limit_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _resize(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    if image.size == size:
        return image
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def _to_resizable(image: Image.Image) -> Image.Image:
    """A mode Pillow can resample and colour-convert: RGB(A), L(A) or CMYK."""
    mode = image.mode
    if mode in ("RGB", "RGBA", "L", "LA", "CMYK"):
        return image
    if mode in ("P", "PA"):
        return image.convert("RGBA")
    if mode == "1":
        return image.convert("L")
    if mode in ("RGBa", "La"):
        return image.convert(mode.upper())
    if mode.startswith("I") or mode == "F":
        # 16-bit (or float) greyscale: scale the used range down to 8 bits.
        pixels = np.asarray(image, dtype=np.float64)
        top = 65535.0 if pixels.max(initial=0) > 255 else 255.0
        scaled = np.clip(pixels * (255.0 / top), 0, 255).astype(np.uint8)
        return Image.fromarray(scaled, "L")
    if mode in ("YCbCr", "LAB", "HSV"):
        return image.convert("RGB")
    raise UnsupportedMedia(f"unsupported pixel mode {mode}")


def _flatten(image: Image.Image) -> Image.Image:
    """Transparent areas onto white (JPEG has no alpha; black would hide dark content)."""
    if image.mode not in ("RGBA", "LA"):
        return image
    base = Image.new(image.mode[:-1], image.size, "white")
    base.paste(image, mask=image.getchannel("A"))
    return base


def _to_srgb(image: Image.Image, icc_profile: bytes | None) -> Image.Image:
    """RGB in sRGB. A profile lcms cannot use is ignored (the pixels are shown as sRGB):
    a broken profile must not cost the family their photo."""
    if icc_profile:
        try:
            source = ImageCms.ImageCmsProfile(io.BytesIO(icc_profile))
            if "srgb" not in ImageCms.getProfileDescription(source).lower():
                converted = ImageCms.profileToProfile(
                    image,
                    source,
                    ImageCms.createProfile("sRGB"),  # per call: lcms handles are not shared
                    renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC,
                    outputMode="RGB",
                    flags=ImageCms.Flags.BLACKPOINTCOMPENSATION,
                )
                if converted is not None:
                    return converted
        except (ImageCms.PyCMSError, OSError, ValueError, TypeError):
            pass
    return image if image.mode == "RGB" else image.convert("RGB")


def _encode(image: Image.Image, quality: int) -> EncodedImage:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return EncodedImage(data=buffer.getvalue(), width=image.width, height=image.height)


def encode_blurhash(image: Image.Image, x_components: int, y_components: int) -> str:
    """The BlurHash of ``image`` (use a small sample: cost is pixels x components).

    Calls blurhash-python's C encoder directly: its ``encode()`` wrapper uses
    ``Image.getdata``, deprecated in Pillow 12 and removed in 14, and closes the image
    it is given. Same C function, same result (a test checks it against ``encode``).
    """
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    ffi: Any = blurhash._ffi
    lib: Any = blurhash._lib
    pixels = ffi.new("uint8_t[]", rgb.tobytes())
    destination = ffi.new("char[]", 2 + 4 + (9 * 9 - 1) * 2 + 1)
    result = lib.create_hash_from_pixels(
        x_components, y_components, rgb.width, rgb.height, pixels, rgb.width * 3, destination
    )
    if result == ffi.NULL:
        raise ValueError("invalid BlurHash components")
    text: str = ffi.string(result).decode()
    return text
