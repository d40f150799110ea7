"""What a crawl records about a photo or video, read without decoding a single pixel.

Capture time, in order of trust:

1. ``"exif"``: DateTimeOriginal (else DateTimeDigitized) with SubsecTime* as the
   fraction and OffsetTime* as the zone. With an offset the result is timezone-aware;
   without one it is **naive**: the camera's wall-clock time, zone unknown (most cameras
   before ~2018 and many today). A naive time must not be read as UTC.
2. ``"video"``: Apple's ``com.apple.quicktime.creationdate`` (local time with offset),
   else the container's ``creation_time`` (UTC by the QuickTime spec): aware.
3. ``"file"``: the file's modification time, aware UTC. Always available, so every asset
   has a capture time.

Opening images registers pillow-heif for HEIC/HEIF and sets the decompression-bomb
policy (``MAX_IMAGE_PIXELS``) for the whole process: both are needed before any image is
opened, and this module is the only place that opens them.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any, Literal

import pillow_heif
from PIL import Image, ImageFile, UnidentifiedImageError

from safelight.library.errors import (
    CorruptMedia,
    DecompressionBomb,
    MediaError,
    UnsupportedMedia,
)
from safelight.library.exif import ExifDate, ExifFields, read_exif, read_exif_from_tiff
from safelight.library.limits import FFPROBE_TIMEOUT_SECONDS, lower_priority
from safelight.library.originals import OriginalRef, open_source
from safelight.library.paths import open_original

MAX_IMAGE_PIXELS = 250_000_000
"""Largest image (width x height) this layer opens. 200 MP phone sensors fit; beyond it
a full decode of a non-JPEG needs gigabytes, which a NAS worker must not attempt for one
file. Pillow raises ``DecompressionBombError`` above twice its limit and only *warns*
between once and twice; the filter below turns that warning into an error too, so the
policy is one number, enforced the same way in production and in tests."""

Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
warnings.filterwarnings("error", category=Image.DecompressionBombWarning)
pillow_heif.register_heif_opener()
# Truncated images must fail, never decode into grey: safelight would publish a broken
# proxy and never retry. Nothing in safelight may set this.
assert ImageFile.LOAD_TRUNCATED_IMAGES is False

CapturedAtSource = Literal["exif", "video", "file"]

_SWAPS_AXES = frozenset({5, 6, 7, 8})  # EXIF orientations that rotate by 90 degrees
_EXIF_DATE = re.compile(r"(\d{4})[:-](\d{2})[:-](\d{2})[ T](\d{2}):(\d{2}):(\d{2})")
_EXIF_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})")
_HDR_TRANSFERS = frozenset({"smpte2084", "arib-std-b67"})  # PQ (HDR10, Dolby Vision), HLG
_QUICKTIME_ZERO_YEARS = frozenset({1904, 1970})  # an unset creation time, not a date
_VIDEO_FORMATS = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mpegts,mpeg"
"""Demuxers ffprobe/ffmpeg may use on originals. A file named .mp4 that really is an HLS
playlist or a concat list could make ffmpeg read other files on the NAS (or the network)
into a proxy; refusing every other demuxer and every protocol but ``file`` prevents it."""


@dataclass(frozen=True, slots=True)
class ImageMetadata:
    format: str
    """Pillow's format name: ``JPEG``, ``HEIF``, ``PNG``, ``TIFF``, ``WEBP``, ``AVIF``..."""
    width: int
    """As displayed, i.e. after the orientation is applied."""
    height: int
    orientation: int
    """EXIF orientation 1-8 (1 when absent or invalid). For HEIF it is informational:
    libheif already applied the file's own rotation, and width/height reflect that."""
    captured_at: datetime
    """Aware when the zone is known, naive for EXIF without an offset (see module)."""
    captured_at_source: CapturedAtSource
    make: str | None
    model: str | None
    burst_id: str | None
    """Apple BurstUUID: equal on every frame of one iPhone burst."""
    content_identifier: str | None
    """Apple MediaGroupUUID: equal to the paired Live Photo video's content identifier."""
    sequence_number: int | None
    """Frame number within a continuous-drive sequence (Canon, Panasonic, Fujifilm),
    ``None`` for single shots and cameras that do not say."""


@dataclass(frozen=True, slots=True)
class VideoMetadata:
    width: int
    """As displayed, i.e. after the rotation is applied."""
    height: int
    rotation: int
    """Degrees clockwise (0, 90, 180, 270) a player turns the coded frames to display."""
    duration_seconds: float | None
    codec: str | None
    """ffprobe's codec name of the first video stream (``h264``, ``hevc``...)."""
    has_audio: bool
    captured_at: datetime
    captured_at_source: CapturedAtSource
    make: str | None
    model: str | None
    content_identifier: str | None
    """``com.apple.quicktime.content.identifier``: pairs a Live Photo video with its photo."""
    hdr: bool = False
    """PQ or HLG transfer (every iPhone video since the 12): proxies are tone-mapped."""
    container: str | None = None
    """ffprobe's format name (``mov,mp4,m4a,3gp,3g2,mj2`` for MP4 and QuickTime)."""
    audio_codec: str | None = None
    """The first audio stream's codec name, the one a web video keeps."""
    pixel_format: str | None = None
    frame_rate: float | None = None
    """The first video stream's average frames per second, when ffprobe knows it."""


# --- images -------------------------------------------------------------------------------


def open_image(fp: IO[bytes]) -> Image.Image:
    """Open (not decode) an image from an open original; every failure is a MediaError."""
    try:
        return Image.open(fp)
    except Image.DecompressionBombError as error:
        raise DecompressionBomb(f"decompression bomb: {error}") from error
    except Image.DecompressionBombWarning as error:  # raised: see the filter above
        raise DecompressionBomb(f"decompression bomb: {error}") from error
    except UnidentifiedImageError as error:
        raise UnsupportedMedia("not an image format safelight can read, or corrupt") from error
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError) as error:
        raise CorruptMedia(f"corrupt image header: {error}") from error
    except UserWarning as error:
        # Pillow only warns about some broken headers (e.g. a TIFF cut short) and goes on;
        # where warnings are errors (the test suite) the warning arrives here instead.
        raise CorruptMedia(f"corrupt image header: {error}") from error


def read_image_metadata(path: Path | OriginalRef) -> ImageMetadata:
    """Metadata of the photo at ``path`` (a path from ``paths.confined``, or the
    crawl's open original: ``originals.OriginalRef``).

    Only headers are read: nothing here decodes pixels (HEIF's container is read into
    memory by libheif, but not decoded). A malformed EXIF block loses only what it
    garbles. Raises ``MediaError`` for files that are not readable images.
    """
    with open_source(path) as original:
        mtime_ns = os.fstat(original.fileno()).st_mtime_ns
        with open_image(original) as image:
            fields = _exif_fields(image, original)
            width, height = image.size
            format_name = image.format or "unknown"
            if format_name == "HEIF":
                # pillow-heif applied the HEIF transforms and reset EXIF Orientation to 1,
                # keeping the original value here; the size is already as displayed.
                original_orientation = image.info.get("original_orientation")
                orientation = _valid_orientation(original_orientation) or 1
            else:
                orientation = fields.orientation or 1
                if orientation in _SWAPS_AXES:
                    width, height = height, width
    if width <= 0 or height <= 0:
        raise CorruptMedia("image has no pixels")
    captured_at = captured_at_from_exif(fields.dates)
    return ImageMetadata(
        format=format_name,
        width=width,
        height=height,
        orientation=orientation,
        captured_at=captured_at if captured_at is not None else file_time(mtime_ns),
        captured_at_source="exif" if captured_at is not None else "file",
        make=fields.make,
        model=fields.model,
        burst_id=fields.burst_id,
        content_identifier=fields.content_identifier,
        sequence_number=fields.sequence_number,
    )


def exif_fields_of(image: Image.Image, original: IO[bytes]) -> ExifFields:
    """The EXIF fields of an opened image (shared with ``images`` for orientation)."""
    return _exif_fields(image, original)


def _exif_fields(image: Image.Image, original: IO[bytes]) -> ExifFields:
    if image.format == "TIFF":
        position = original.tell()
        try:
            original.seek(0)
            return read_exif_from_tiff(original)
        finally:
            original.seek(position)
    # JPEG, MPO, WebP, PNG (eXIf before the pixels), HEIF and AVIF all expose the raw
    # block here at open time; asking Pillow's getexif() on a PNG would decode it.
    blob = image.info.get("exif")
    if isinstance(blob, bytes | bytearray):
        return read_exif(bytes(blob))
    return ExifFields()


def _valid_orientation(value: object) -> int | None:
    return value if isinstance(value, int) and 1 <= value <= 8 else None


def captured_at_from_exif(dates: tuple[ExifDate, ...]) -> datetime | None:
    """The first EXIF date that parses; aware if it carries an offset, naive otherwise."""
    for date in dates:
        parsed = parse_exif_datetime(date.value, date.subsec, date.offset)
        if parsed is not None:
            return parsed
    return None


def parse_exif_datetime(value: str, subsec: str | None, offset: str | None) -> datetime | None:
    """``"2021:04:11 15:47:53"`` + ``"054"`` + ``"-05:00"`` -> 15:47:53.054-05:00.

    Blank or zero dates (``"0000:00:00 00:00:00"``), impossible dates and malformed
    offsets yield ``None`` / no zone rather than an error: EXIF is written by firmware.
    Subseconds are the decimal digits after the point (``"5"`` is 0.5 s).
    """
    match = _EXIF_DATE.match(value.strip())
    if match is None:
        return None
    try:
        year, month, day, hour, minute, second = (int(part) for part in match.groups())
        stamp = datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None
    if subsec is not None:
        digits = subsec.strip()
        if digits.isdigit():
            stamp = stamp.replace(microsecond=int(digits[:6].ljust(6, "0")))
    zone = _parse_offset(offset) if offset is not None else None
    return stamp.replace(tzinfo=zone) if zone is not None else stamp


def _parse_offset(text: str) -> timezone | None:
    match = _EXIF_OFFSET.fullmatch(text.strip())
    if match is None:
        return None
    sign, hours, minutes = match.groups()
    delta = timedelta(hours=int(hours), minutes=int(minutes))
    if delta > timedelta(hours=14) or int(minutes) >= 60:
        return None
    return timezone(-delta if sign == "-" else delta)


def file_time(mtime_ns: int) -> datetime:
    """A file's modification time as an aware UTC datetime."""
    return datetime.fromtimestamp(mtime_ns // 1_000_000_000, tz=UTC) + timedelta(
        microseconds=(mtime_ns % 1_000_000_000) // 1000
    )


# --- videos -------------------------------------------------------------------------------


def ffprobe_command(path: Path | str, ffprobe: str = "ffprobe") -> list[str]:
    """The ffprobe invocation for one original (shared with the async probe in ``video``);
    ``path`` may be ``/dev/fd/<n>`` of a descriptor passed to ffprobe."""
    return [
        ffprobe,
        "-v", "error",
        "-protocol_whitelist", "file",
        "-format_whitelist", _VIDEO_FORMATS,
        "-print_format", "json",
        "-show_format",
        "-show_streams",
        f"file:{path}",
    ]  # fmt: skip


def ffmpeg_input_options() -> list[str]:
    """Options to put before ``-i`` whenever ffmpeg reads an original (see above)."""
    return ["-protocol_whitelist", "file", "-format_whitelist", _VIDEO_FORMATS]


def read_video_metadata(
    path: Path, *, ffprobe: str = "ffprobe", timeout_seconds: float = FFPROBE_TIMEOUT_SECONDS
) -> VideoMetadata:
    """Metadata of the video at ``path`` via ffprobe (sync: run it in a thread).

    ``video.probe_video`` is the cancellable async twin used by ``make_video_proxies``.
    Raises ``UnsupportedMedia`` when ffprobe is missing, ``CorruptMedia`` when it cannot
    read the file.
    """
    with open_original(path) as original:  # same read-only, no-symlink, no-FIFO checks
        mtime_ns = os.fstat(original.fileno()).st_mtime_ns
    try:
        completed = subprocess.run(
            ffprobe_command(path, ffprobe),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_seconds,
            check=False,
            preexec_fn=lower_priority,  # nice 10, best-effort I/O 7: system calls only
        )
    except FileNotFoundError as error:
        raise UnsupportedMedia(f"{ffprobe} is not installed") from error
    except subprocess.TimeoutExpired as error:
        raise MediaError(f"ffprobe took longer than {timeout_seconds:g} s") from error
    return parse_ffprobe_output(completed.returncode, completed.stdout, completed.stderr, mtime_ns)


def parse_ffprobe_output(
    returncode: int, stdout: bytes, stderr: bytes, mtime_ns: int
) -> VideoMetadata:
    if returncode != 0:
        raise CorruptMedia(f"ffprobe could not read the video: {last_lines(stderr)}")
    try:
        probe = json.loads(stdout)
    except ValueError as error:
        raise CorruptMedia("ffprobe printed no JSON") from error
    if not isinstance(probe, dict):
        raise CorruptMedia("ffprobe printed no JSON object")
    return video_metadata_from_probe(probe, mtime_ns)


def last_lines(stderr: bytes, count: int = 3) -> str:
    """The last lines of a tool's stderr, for a reason that says what went wrong."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    tail = [line for line in lines if line][-count:]
    return " | ".join(tail) if tail else "no error output"


def video_metadata_from_probe(probe: Mapping[str, Any], mtime_ns: int) -> VideoMetadata:
    """``VideoMetadata`` from ffprobe's ``-show_format -show_streams`` JSON."""
    streams = [s for s in probe.get("streams") or [] if isinstance(s, dict)]
    video = next(
        (
            s
            for s in streams
            if s.get("codec_type") == "video"
            and not (s.get("disposition") or {}).get("attached_pic")
        ),
        None,
    )
    if video is None:
        raise UnsupportedMedia("no video stream")
    try:
        width, height = int(video["width"]), int(video["height"])
    except (KeyError, TypeError, ValueError) as error:
        raise CorruptMedia("video stream has no frame size") from error
    if width <= 0 or height <= 0:
        raise CorruptMedia("video stream has no frame size")
    rotation = _rotation(video)
    if rotation in (90, 270):
        width, height = height, width
    fmt = probe.get("format") or {}
    tags = {**_lower_keys(video.get("tags")), **_lower_keys(fmt.get("tags"))}
    captured_at = _video_time(tags.get("com.apple.quicktime.creationdate")) or _video_time(
        tags.get("creation_time")
    )
    return VideoMetadata(
        width=width,
        height=height,
        rotation=rotation,
        duration_seconds=_float(fmt.get("duration")) or _float(video.get("duration")),
        codec=video.get("codec_name") if isinstance(video.get("codec_name"), str) else None,
        has_audio=any(s.get("codec_type") == "audio" for s in streams),
        captured_at=captured_at if captured_at is not None else file_time(mtime_ns),
        captured_at_source="video" if captured_at is not None else "file",
        make=_str(tags.get("com.apple.quicktime.make") or tags.get("make")),
        model=_str(tags.get("com.apple.quicktime.model") or tags.get("model")),
        content_identifier=_str(tags.get("com.apple.quicktime.content.identifier")),
        hdr=video.get("color_transfer") in _HDR_TRANSFERS,
        container=_str(fmt.get("format_name")),
        audio_codec=next(
            (_str(s.get("codec_name")) for s in streams if s.get("codec_type") == "audio"), None
        ),
        pixel_format=_str(video.get("pix_fmt")),
        frame_rate=_frame_rate(video.get("avg_frame_rate")),
    )


def _frame_rate(value: Any) -> float | None:
    """``30000/1001`` as a number; None for ``0/0`` or anything else."""
    if not isinstance(value, str) or "/" not in value:
        return None
    numerator, _, denominator = value.partition("/")
    top, bottom = _float(numerator), _float(denominator)
    if top is None or not bottom:
        return None
    return top / bottom


def _rotation(stream: Mapping[str, Any]) -> int:
    """Clockwise display rotation. ffprobe's display-matrix ``rotation`` is
    counter-clockwise (-90 for a portrait iPhone video); the old ``rotate`` tag is
    clockwise."""
    for side_data in stream.get("side_data_list") or []:
        if isinstance(side_data, dict) and "rotation" in side_data:
            value = _float(side_data["rotation"])
            if value is not None:
                return round(-value / 90.0) * 90 % 360
    value = _float(_lower_keys(stream.get("tags")).get("rotate"))
    return round(value / 90.0) * 90 % 360 if value is not None else 0


def _video_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        stamp = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if stamp.year in _QUICKTIME_ZERO_YEARS:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _lower_keys(tags: object) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in tags.items()} if isinstance(tags, dict) else {}


def _float(value: object) -> float | None:
    try:
        result = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return result if result == result and abs(result) != float("inf") else None


def _str(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None
