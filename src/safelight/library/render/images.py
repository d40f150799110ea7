"""Proxies of a photo: a preview (<= 1920 px wide), a thumbnail (<= 300 px wide) and a
BlurHash, all from a single decode of the original.

Pipeline, and why each step is where it is:

1. Open (header only) and refuse anything above ``metadata.MAX_IMAGE_PIXELS``.
2. JPEG: ``draft`` asks libjpeg for a DCT-scaled decode (1/2, 1/4, 1/8) that is still at
   least the preview size, so a 48 MP photo decodes as ~3 MP: the largest saving here.
   HEIF: libheif decodes at full size (it has no scaled decode), already rotated. So do
   PNG, TIFF (which Pillow also rotates as it loads), WebP and GIF: a decode that would
   not fit the decode budget is refused first (``limits.check_decode_fits``), from the
   size and mode in the header.
3. Decode once. Truncated or corrupt data raises (``LOAD_TRUNCATED_IMAGES`` stays False;
   HEIF/AVIF, which libheif would decode with missing tiles painted green, are checked
   for completeness first). One exception, ADR 0052: a JPEG cut short is decoded again
   with the end-of-image marker it lacks, as browsers show it, when at most
   ``MAX_CUT_SHORT_SHARE`` of its rows are lost (``_decode_cut_short``).
4. Turn upright by ``metadata.orientation_of`` (the one rule of ADR 0029, the same value
   ``metadata`` reports, so sizes and pixels always agree; what HEIF's and TIFF's
   decoders have turned already is not turned again), convert to 8 bits and
   reduce by an integer factor (box averages) to about three times the preview, strip
   by strip (``_shrink``): no full-size copy of any mode.
5. Resize to the preview size (Lanczos; never upscale), flatten transparency onto white,
   then convert to sRGB through the embedded ICC profile (phones shoot Display P3;
   ignoring it makes colours dull). Converting after resizing costs a fraction.
   The reduction of 4 and this resize together are what Pillow's
   ``resize(reducing_gap=3.0)`` of the whole upright image does.
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
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import blurhash
from PIL import Image, ImageCms

from safelight.library.files.errors import CorruptMedia, DecompressionBomb, UnsupportedMedia
from safelight.library.files.limits import (
    DEFAULT_DECODE_MEMORY_MIB,
    MIB,
    MIN_DECODE_MEMORY_MIB,
    check_decode_fits,
)
from safelight.library.files.originals import OriginalRef, open_source
from safelight.library.media.metadata import (
    MAX_IMAGE_PIXELS,
    exif_fields_of,
    open_image,
    orientation_of,
)
from safelight.library.render.jpegscans import final_scans_begun

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

_Box = tuple[float, float, float, float]
_SWAPS = frozenset(
    {
        Image.Transpose.TRANSPOSE,
        Image.Transpose.ROTATE_270,
        Image.Transpose.TRANSVERSE,
        Image.Transpose.ROTATE_90,
    }
)
_REDUCING_GAP = 3.0
_STRIP_PIXELS = 1 << 20
"""Pixels per strip when an image is converted or reduced piecewise (a few MB)."""

_MAX_TOP_LEVEL_BOXES = 1000  # real HEIF/AVIF files have about five
BROKEN_FILE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError)
"""What Pillow raises reading a broken or hostile file (the RAW previews' reader too)."""
_DECODE_ERRORS = (*BROKEN_FILE_ERRORS, RuntimeError)
_JPEG_FORMATS = ("JPEG", "MPO")
_JPEG_END = b"\xff\xd9"
"""The end-of-image marker. Given it where the data stops, libjpeg ends the scan there
and fills what is missing with flat grey blocks (zero coefficients), as browsers do."""
MAX_CUT_SHORT_SHARE = 0.05
"""The largest share of a cut-short JPEG's rows that may be lost (the flat rows its
decode ends with) for it to be a photo with a note; beyond it, it is corrupt."""
_TRUNCATED = "image file is truncated"
"""How Pillow's ``load`` says a file's data ended before its image did."""


@dataclass(frozen=True, slots=True)
class ProxySpec:
    """Sizes (max width, px) and JPEG qualities of image proxies (``Settings.proxy_spec()``
    has the defaults)."""

    thumbnail_width: int
    thumbnail_quality: int
    preview_width: int
    preview_quality: int
    blurhash_sample: int = 64
    blurhash_x_components: int = 4
    blurhash_y_components: int = 3
    decode_memory_mib: int = DEFAULT_DECODE_MEMORY_MIB
    """A decode's memory budget: larger photos fail (``limits.check_decode_fits``)."""

    def __post_init__(self) -> None:
        # The messages name the fields as the settings do: Settings checks its values by
        # making its ProxySpec, so each rule lives here once.
        for name in ("thumbnail_width", "preview_width"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be greater than 0, not {getattr(self, name)}")
        if self.thumbnail_width > self.preview_width:
            raise ValueError("thumbnail_width must not be larger than preview_width")
        for name in ("thumbnail_quality", "preview_quality"):
            value = getattr(self, name)
            if not 1 <= value <= 95:
                raise ValueError(f"{name} must be between 1 and 95, not {value}")
        if not 1 <= self.blurhash_x_components <= 9 or not 1 <= self.blurhash_y_components <= 9:
            raise ValueError("BlurHash components must be within 1..9")
        if self.blurhash_sample < 1:
            raise ValueError("blurhash_sample must be positive")
        if self.decode_memory_mib < MIN_DECODE_MEMORY_MIB:
            raise ValueError(
                f"decode_memory_mib must be at least {MIN_DECODE_MEMORY_MIB}, "
                f"not {self.decode_memory_mib}"
            )


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
    cut_short: str | None = None
    """The note of a JPEG cut short and decoded as far as it goes (ADR 0052); None for a
    whole file."""


def make_image_proxies(
    src: Path | OriginalRef, spec: ProxySpec, sidecar_orientation: int | None = None
) -> ImageProxies:
    """Thumbnail, preview and BlurHash of the photo at ``src`` (a path, or the crawl's
    open original), decoding it once; ``sidecar_orientation`` is its XMP sidecar's
    ``tiff:Orientation``, if any, applied as ``metadata.orientation_of`` says.

    Raises ``MediaError``: ``DecompressionBomb`` (also ``TooLargeToDecode``: it would
    not fit the decode budget), ``CorruptMedia`` (truncated, corrupt),
    ``UnsupportedMedia`` (unknown format or pixel mode), ``UnreadableFile``.
    """
    upright, box, icc_profile, display, cut_short = _decode_reduced(src, spec, sidecar_orientation)
    proxies = _proxies(upright, icc_profile, display, spec, box)
    return proxies if cut_short is None else replace(proxies, cut_short=cut_short)


def _decode_reduced(
    src: Path | OriginalRef, spec: ProxySpec, sidecar_orientation: int | None
) -> tuple[Image.Image, _Box | None, bytes | None, tuple[int, int], str | None]:
    """The photo decoded, upright, and reduced to at most about three times the
    preview, in a mode ``_resize`` takes; with the box of it that is the photo (see
    ``_shrink``), its ICC profile, displayed size, and the note of a JPEG cut short.

    A function of its own so that the full-size decode is freed when it returns: only
    the reduced image lives on through the resizing and encoding."""
    with ExitStack() as stack:
        original = stack.enter_context(open_source(src))
        image = stack.enter_context(open_image(original))
        stored_width, stored_height = image.size
        if stored_width * stored_height > MAX_IMAGE_PIXELS:
            raise DecompressionBomb(
                f"decompression bomb: {stored_width}x{stored_height} is more than "
                f"{MAX_IMAGE_PIXELS} pixels"
            )
        fields = exif_fields_of(image, original)
        turn = orientation_of(image, fields, original, sidecar_orientation)
        display = turn.displayed_size(image.size)
        # Only what the decoder leaves undone is ours to turn (HEIF and TIFF decoders
        # turn the pixels themselves, and open with the size they turn them to).
        method = _TRANSPOSE.get(turn.remaining)
        swaps = method in _SWAPS
        icc_profile = image.info.get("icc_profile")
        if image.format in ("HEIF", "AVIF"):
            _check_boxes_complete(original)
        target = _fit(display, spec.preview_width)
        draft = (target[1], target[0]) if swaps else target
        if image.format in _JPEG_FORMATS:
            image.draft("RGB", draft)
        # The size and mode the decode will have (after a JPEG's draft): what it costs.
        upright = (image.height, image.width) if swaps else image.size
        factors = _reduce_factors(upright, target)
        working = _reduced_size(upright, factors)
        copies = factors != (1, 1) or _working_mode(image.mode) != image.mode
        check_decode_fits(
            image.format,
            image.mode,
            image.size,
            _working_mode(image.mode),
            working,
            # Pillow's TIFF decoder turns the image in a full-size copy of its own.
            copies or method is not None or turn.applied != 1,
            # The resize's first pass: the preview's width, the working image's height.
            target[0] * working[1],
            spec.decode_memory_mib * MIB,
        )
        cut_short = None
        try:
            image.load()
        except (*_DECODE_ERRORS, UserWarning) as error:  # UserWarning: see open_image
            if image.format not in _JPEG_FORMATS or not str(error).startswith(_TRUNCATED):
                raise CorruptMedia(f"cannot decode image: {error}") from error
            image = stack.enter_context(_decode_cut_short(original, draft, error))
            cut_short = _cut_short_note(image)
        reduced, box = _shrink(image, factors, method)
    profile = icc_profile if isinstance(icc_profile, bytes) else None
    return reduced, box, profile, display, cut_short


def _decode_cut_short(
    original: io.BufferedReader, draft: tuple[int, int], error: Exception
) -> Image.Image:
    """A JPEG whose data ends before its image does, decoded again with the end-of-image
    marker it lacks: libjpeg decodes what there is and leaves the rest flat grey, as a
    browser shows it. Per file: ``LOAD_TRUNCATED_IMAGES`` stays False for every other
    decode (and every other format). The file is read whole for it (a JPEG is a small
    part of what its decode costs).

    A file cut before each of its components has begun its full-precision scans (a
    progressive JPEG cut in an early scan: every row there, all of them blurred) is
    corrupt, whatever its rows show (``jpegscans``)."""
    original.seek(0)
    data = original.read()
    if not final_scans_begun(data):
        raise CorruptMedia(
            "cannot decode image: truncated (the file ends before its last scans begin)"
        ) from error
    image = open_image(io.BytesIO(data + _JPEG_END))
    try:
        if image.format in _JPEG_FORMATS:
            image.draft("RGB", draft)
        image.load()
    except (*_DECODE_ERRORS, UserWarning) as again:
        image.close()
        raise CorruptMedia(f"cannot decode image: {error}") from again
    return image


def _cut_short_note(image: Image.Image) -> str:
    """The note of a cut-short JPEG decoded as far as it goes, or ``CorruptMedia`` when
    more than ``MAX_CUT_SHORT_SHARE`` of its rows were lost.

    The rows lost are the flat rows the decode ends with, all of the colour of its last
    pixel (the grey libjpeg fills in). A photo that truly ends in a flat band counts it
    as lost too: the rule errs towards calling a file corrupt, never towards a proxy
    with a grey half."""
    width, height = image.size
    bands = len(image.getbands())
    last = image.getpixel((width - 1, height - 1))
    flat = [(value, value) for value in (last if isinstance(last, tuple) else (last,))]
    most = int(height * MAX_CUT_SHORT_SHARE)
    lost = 0
    while lost < height:
        row = image.crop((0, height - lost - 1, width, height - lost)).getextrema()
        if list(row if bands > 1 else (row,)) != flat:
            break
        lost += 1
        if lost > most:
            raise CorruptMedia(
                "cannot decode image: truncated (the file ends before its image does, "
                f"more than {MAX_CUT_SHORT_SHARE:.0%} of its rows missing)"
            )
    share = lost / height
    missing = f", about {share:.0%} of its rows missing" if share >= 0.01 else ""
    return f"cut short: its last bytes are missing, decoded as far as it goes{missing}"


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


def proxies_from_upright_image(image: Image.Image, spec: ProxySpec) -> ImageProxies:
    """Proxies of an already decoded, upright sRGB image (a video's poster frame)."""
    return _proxies(_to_resizable(image), None, image.size, spec, None)


def _proxies(
    upright: Image.Image,
    icc_profile: bytes | None,
    display: tuple[int, int],
    spec: ProxySpec,
    box: _Box | None,
) -> ImageProxies:
    # The draft may leave the image a little larger than the preview; the display size
    # (not the decoded one) decides, so a small original is never upscaled.
    preview_size = _fit(display, spec.preview_width)
    preview = _resize(upright, preview_size, box)
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


def _resize(image: Image.Image, size: tuple[int, int], box: _Box | None = None) -> Image.Image:
    """``image`` (or its ``box``) resized to ``size``. A premultiplied image (from
    ``_shrink``) comes back with straight alpha, as Pillow's own resize of RGBA does."""
    if box in (None, (0, 0, *size)) and image.size == size:
        resized = image
    else:
        resized = image.resize(size, Image.Resampling.LANCZOS, box=box, reducing_gap=3.0)
    return resized.convert(resized.mode.upper()) if resized.mode in ("RGBa", "La") else resized


_INVERSE = {
    Image.Transpose.ROTATE_90: Image.Transpose.ROTATE_270,
    Image.Transpose.ROTATE_270: Image.Transpose.ROTATE_90,
}
"""Of the transpositions in ``_TRANSPOSE``; the others are their own inverse."""


def _stored_box(
    box: tuple[int, int, int, int], upright: tuple[int, int], method: Image.Transpose
) -> tuple[int, int, int, int]:
    """The box of the stored image that ``method`` turns into ``box`` of the upright
    image of size ``upright``."""
    left, top, right, bottom = box
    width, height = upright
    inverse = _INVERSE.get(method, method)
    T = Image.Transpose
    if inverse == T.FLIP_LEFT_RIGHT:
        return (width - right, top, width - left, bottom)
    if inverse == T.FLIP_TOP_BOTTOM:
        return (left, height - bottom, right, height - top)
    if inverse == T.ROTATE_180:
        return (width - right, height - bottom, width - left, height - top)
    if inverse == T.ROTATE_90:  # counter-clockwise: (x, y) -> (y, width - x)
        return (top, width - right, bottom, width - left)
    if inverse == T.ROTATE_270:  # clockwise: (x, y) -> (height - y, x)
        return (height - bottom, left, height - top, right)
    if inverse == T.TRANSPOSE:  # (x, y) -> (y, x)
        return (top, left, bottom, right)
    # TRANSVERSE: (x, y) -> (height - y, width - x)
    return (height - bottom, width - right, height - top, width - left)


def _reduce_factors(upright: tuple[int, int], target: tuple[int, int]) -> tuple[int, int]:
    """The integer reduction that Pillow's ``resize`` with ``reducing_gap=3.0`` applies
    to the upright image on its way to ``target``."""
    across = int(upright[0] / target[0] / _REDUCING_GAP) or 1
    down = int(upright[1] / target[1] / _REDUCING_GAP) or 1
    return across, down


def _reduced_size(size: tuple[int, int], factors: tuple[int, int]) -> tuple[int, int]:
    return -(-size[0] // factors[0]), -(-size[1] // factors[1])


def _shrink(
    image: Image.Image, factors: tuple[int, int], method: Image.Transpose | None
) -> tuple[Image.Image, _Box | None]:
    """``image`` turned upright by ``method``, in a mode ``_resize`` takes, reduced by
    ``factors`` (box averages); with the box of the result that the image covers (its
    last row and column of blocks may be partial: Pillow's reduce averages what there
    is).

    Done in strips of the upright image of about ``_STRIP_PIXELS``: each is cropped
    from the stored image, turned, converted to 8 bits and reduced alone, so beside the
    decoded image only a strip and the result exist, never a converted or turned
    full-size copy (a 100 MP 16-bit PNG once took 2.5 GB here through a float64 copy).
    Strips start on multiples of the factor, so the result is the same as turning,
    converting and reducing the whole image: what the pipeline did before. Images with
    alpha come out premultiplied (RGBa, La), which is how Pillow resizes them.
    """
    working = _working_mode(image.mode)
    if factors == (1, 1) and working == image.mode:
        # Nothing to convert or reduce: turned whole, as small as this image gets.
        return (image if method is None else image.transpose(method)), None
    top = _high_depth_top(image) if _is_high_depth(image.mode) else None
    across, down = factors
    width, height = (image.height, image.width) if method in _SWAPS else image.size
    rows = max(1, _STRIP_PIXELS // max(1, width) // down) * down
    out = Image.new(working, _reduced_size((width, height), factors))
    for first in range(0, height, rows):
        box = (0, first, width, min(height, first + rows))
        if method is None:
            strip = image.crop(box)
        else:
            strip = image.crop(_stored_box(box, (width, height), method)).transpose(method)
        converted = _to_resizable(strip, top)
        if converted.mode != working:
            converted = converted.convert(working)
        if factors != (1, 1):
            converted = converted.reduce(factors)
        out.paste(converted, (0, first // down))
    return out, (0.0, 0.0, width / across, height / down)


def _working_mode(mode: str) -> str:
    """The mode ``_shrink`` makes of ``mode``: resizable, alpha premultiplied."""
    resizable = _resizable_mode(mode)
    return {"RGBA": "RGBa", "LA": "La"}.get(resizable, resizable)


def _is_high_depth(mode: str) -> bool:
    return mode.startswith("I") or mode == "F"


def _high_depth_top(image: Image.Image) -> float:
    """The top of the range a 16-bit, 32-bit or float greyscale image is scaled from:
    65535 if any pixel is above 255, else 255 (an 8-bit image stored wide). Read strip
    by strip (``getextrema`` does not take every 16-bit mode)."""
    width, height = image.size
    rows = max(1, _STRIP_PIXELS // max(1, width))
    highest: float = 0
    for top in range(0, height, rows):
        strip = image.crop((0, top, width, min(height, top + rows)))
        wide = strip if strip.mode in ("I", "F") else strip.convert("I")
        extrema = wide.getextrema()
        high = extrema[1]
        if isinstance(high, int | float) and high > highest:
            highest = high
    return 65535.0 if highest > 255 else 255.0


def _resizable_mode(mode: str) -> str:
    if mode in ("RGB", "RGBA", "L", "LA", "CMYK"):
        return mode
    if mode in ("P", "PA"):
        return "RGBA"
    if mode == "1" or _is_high_depth(mode):
        return "L"
    if mode in ("RGBa", "La"):
        return mode.upper()
    if mode in ("YCbCr", "LAB", "HSV"):
        return "RGB"
    raise UnsupportedMedia(f"unsupported pixel mode {mode}")


def _to_resizable(image: Image.Image, top: float | None = None) -> Image.Image:
    """A mode Pillow can resample and colour-convert: RGB(A), L(A) or CMYK.

    High-depth greyscale (16-bit, 32-bit, float) is scaled from ``top`` (see
    ``_high_depth_top``; computed here if not given) to 8 bits, truncating, values
    outside clipped. Call it on strips of a large image: the conversion goes through a
    4-byte copy of what it is given."""
    mode = image.mode
    target = _resizable_mode(mode)
    if target == mode:
        return image
    if not _is_high_depth(mode):
        return image.convert(target)
    scale = 255.0 / (_high_depth_top(image) if top is None else top)
    wide = image if mode in ("I", "F") else image.convert("I")
    # point() on I and F multiplies in double precision, then I and F convert to L
    # by clipping to 0..255.
    return wide.point(lambda value: value * scale).convert("L")


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


PROXY_FORMAT = "JPEG"
"""Pillow's name of the format of every image proxy (and of a video's poster): the one
format a proxy is opened as (``bursts.sharpness``)."""


def _encode(image: Image.Image, quality: int) -> EncodedImage:
    buffer = io.BytesIO()
    image.save(buffer, PROXY_FORMAT, quality=quality)
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
