"""What a crawl records about a photo or video, read without decoding a single pixel.

Capture time: for photos, the first of EXIF, embedded XMP, IPTC and the maker's own
blocks that holds a date (``capturetime``, ADR 0026), else the less certain date of
the file's last write the file itself holds (EXIF's ModifyDate, a PNG's dates: ADR
0053); for videos, their own local-time tags (Apple's
``com.apple.quicktime.creationdate``, AVCHD's recording date, ``©day``), else the
container's ``creation_time`` (UTC by the QuickTime spec) (``capturetime``, ADR 0054).
With an offset the result is aware; without one it is **naive**: the camera's
wall-clock time, zone unknown (most cameras before ~2018 and many today), never to be
read as UTC. Only when no place holds a date,
the file's modification time (``"file"``, aware UTC): every asset has a capture time.

Opening images names the formats it may open as (``mediatypes.IMAGE_FORMATS``), imports
their Pillow plugins and no other, registers pillow-heif for HEIC/HEIF (and
pillow-jxl-plugin for JPEG XL, whose plugin decodes the pixels as it opens: its files
are read whole, and only in the decode processes, whose address-space limit bounds them)
and sets the decompression-bomb policy (``MAX_IMAGE_PIXELS``) for the whole process: all
are needed before any image is opened, and this module is the only place that opens them.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import pillow_heif
from PIL import (
    AvifImagePlugin,
    BmpImagePlugin,
    GifImagePlugin,
    Image,
    ImageFile,
    IptcImagePlugin,
    JpegImagePlugin,
    PngImagePlugin,
    TiffImagePlugin,
    UnidentifiedImageError,
    WebPImagePlugin,
)
from pillow_jxl import JpegXLImagePlugin  # registers JPEG XL with Pillow (ADR 0029)

from safelight.library.files.confinement import open_original
from safelight.library.files.errors import (
    CorruptMedia,
    DecompressionBomb,
    MediaError,
    UnsupportedMedia,
)
from safelight.library.files.limits import (
    DEFAULT_DECODE_MEMORY_MIB,
    MIB,
    ffprobe_timeout_seconds,
    tool_address_space_bytes,
    tool_preexec,
    tool_threads,
)
from safelight.library.files.mediatypes import IMAGE_FORMATS
from safelight.library.files.originals import OriginalRef, open_source
from safelight.library.media.capturetime import (
    CapturedAtSource,
    captured_at_from_exif,
    choose_capture_time,
    iptc_capture_time,
    parse_exif_datetime,
    png_text_time,
    video_capture_time,
)
from safelight.library.media.containers import (
    PngFacts,
    avchd_recording_date,
    container_transforms,
    jxl_orientation,
    png_facts,
)
from safelight.library.media.exif import ExifFields, read_exif, read_exif_from_tiff
from safelight.library.media.flir import flir_capture_time
from safelight.library.media.jpegblocks import read_maker_blocks
from safelight.library.media.location import Location, location_of, parse_iso6709
from safelight.library.media.sidecars import NO_FACTS, SidecarFacts
from safelight.library.media.toolfailures import pixel_cap_exceeded, tool_failure
from safelight.library.media.xmp import EMPTY, NS_TIFF, XmpProperties, parse_xmp

__all__ = ["CapturedAtSource", "captured_at_from_exif", "parse_exif_datetime"]

MAX_IMAGE_PIXELS = 250_000_000
"""Largest image (width x height) this layer opens. 200 MP phone sensors fit; beyond it
a full decode of a non-JPEG needs gigabytes, which a NAS worker must not attempt for one
file. Pillow raises ``DecompressionBombError`` above twice its limit and only *warns*
between once and twice; the filter below turns that warning into an error too, so the
policy is one number, enforced the same way in production and in tests."""

Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
warnings.filterwarnings("error", category=Image.DecompressionBombWarning)
pillow_heif.register_heif_opener()
# The plugins of IMAGE_FORMATS, imported by name: with each of them registered,
# Image.open never needs Image.init(), which imports every plugin Pillow has (EPS,
# which runs Ghostscript, among them). formats= is what keeps the others unreached.
_PLUGINS = (AvifImagePlugin, BmpImagePlugin, GifImagePlugin, JpegImagePlugin, PngImagePlugin,
            TiffImagePlugin, WebPImagePlugin, JpegXLImagePlugin)  # fmt: skip
# One photo per decode process, one process per core: libjxl's own threads would only
# contend with the other processes.
JpegXLImagePlugin.DECODE_THREADS = 0
# Truncated images must fail, never decode into grey: safelight would publish a broken
# proxy and never retry. Nothing in safelight may set this: the one exception, a JPEG
# missing only its last bytes, is decoded per file by ``images`` (ADR 0052), which hands
# libjpeg the end-of-image marker the file lacks and checks how much of it is there.
assert ImageFile.LOAD_TRUNCATED_IMAGES is False

_SWAPS_AXES = frozenset({5, 6, 7, 8})  # EXIF orientations that rotate by 90 degrees
_HDR_TRANSFERS = frozenset({"smpte2084", "arib-std-b67"})  # PQ (HDR10, Dolby Vision), HLG
_VIDEO_FORMATS = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mpegts,mpeg,mpegvideo"
"""Demuxers ffprobe/ffmpeg may use on originals. A file named .mp4 that really is an HLS
playlist or a concat list could make ffmpeg read other files on the NAS (or the network)
into a proxy; refusing every other demuxer and every protocol but ``file`` prevents it.
``mpegvideo`` is a raw MPEG-1/2 video elementary stream (``.m2v``), which names no other
file."""


@dataclass(frozen=True, slots=True)
class ImageMetadata:
    format: str
    """Pillow's format name: ``JPEG``, ``HEIF``, ``PNG``, ``TIFF``, ``WEBP``, ``AVIF``..."""
    width: int
    """As displayed, i.e. after the orientation is applied."""
    height: int
    orientation: int
    """The turn 1-8 (EXIF's numbering) from the stored pixels to the displayed picture:
    ``orientation_of`` (ADR 0029), the one the proxies apply. 1 when absent or invalid."""
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
    location: Location | None = None
    """Where it was taken: EXIF GPS, else XMP (``location``)."""
    misnamed: str | None = None
    """Its extension names another format than its content, which it was read as:
    "holds a JPEG, named .nef" (``sniffing.misnamed``, ADR 0052); None when it does not."""
    cut_short: str | None = None
    """It was cut short and decoded as far as it goes (``images``, ADR 0052): the note
    saying so; None for a whole file."""
    captured_is_instant: bool = False
    """``captured_at`` is a UTC instant without the wall clock where it was taken
    (``CaptureTime.is_instant``, or the file's time on disk): ADR 0065."""


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
    location: Location | None = None
    """QuickTime's ISO 6709 location (Apple's key, else ``©xyz``)."""
    container: str | None = None
    """ffprobe's format name (``mov,mp4,m4a,3gp,3g2,mj2`` for MP4 and QuickTime)."""
    audio_codec: str | None = None
    """The first audio stream's codec name, the one a web video keeps."""
    pixel_format: str | None = None
    frame_rate: float | None = None
    """The first video stream's average frames per second, when ffprobe knows it."""
    video_packets: int | None = None
    """Packets of the first video stream, as ffprobe counted them reading the whole file
    (``-count_packets``): what a decoder can make frames of, whatever the timestamps
    and the duration claim. None when not counted."""
    audio_packets: int | None = None
    """Packets of the first audio stream (the one a web video keeps), counted alike."""
    size_bytes: int | None = None
    """The file's size, as ffprobe read it."""
    captured_is_instant: bool = False
    """As ``ImageMetadata``'s."""


# --- images -------------------------------------------------------------------------------

NOT_AN_IMAGE = f"not an image safelight reads ({', '.join(IMAGE_FORMATS)})"
"""How a reason for a file that is no photo safelight reads begins."""
_NOT_READ = f"{NOT_AN_IMAGE}, or corrupt"


def open_image(fp: IO[bytes]) -> Image.Image:
    """Open (not decode) an image from an open original, as one of ``IMAGE_FORMATS`` only;
    every failure is a MediaError."""
    try:
        return Image.open(fp, formats=IMAGE_FORMATS)
    except Image.DecompressionBombError as error:
        raise DecompressionBomb(f"decompression bomb: {error}") from error
    except Image.DecompressionBombWarning as error:  # raised: see the filter above
        raise DecompressionBomb(f"decompression bomb: {error}") from error
    except UnidentifiedImageError as error:
        raise UnsupportedMedia(_NOT_READ) from error
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError) as error:
        raise CorruptMedia(f"corrupt image header: {error}") from error
    except UserWarning as error:
        # Pillow only warns about some broken headers (e.g. a TIFF cut short) and goes on;
        # where warnings are errors (the test suite) the warning arrives here instead.
        raise CorruptMedia(f"corrupt image header: {error}") from error


def read_image_metadata(
    path: Path | OriginalRef, sidecar: SidecarFacts = NO_FACTS
) -> ImageMetadata:
    """Metadata of the photo at ``path`` (a path from ``confinement.confined``, or the
    crawl's open original: ``originals.OriginalRef``).

    Only headers are read: nothing here decodes pixels (HEIF's container is read into
    memory by libheif, but not decoded). A malformed EXIF block loses only what it
    garbles. Raises ``MediaError`` for files that are not readable images.

    ``sidecar``: what the photo's XMP sidecar says (``sidecars``); its capture time and
    orientation win over the embedded ones (ADR 0026 decision 6).
    """
    with open_source(path) as original:
        mtime_ns = os.fstat(original.fileno()).st_mtime_ns
        with open_image(original) as image:
            png = png_facts(original) if image.format == "PNG" else None
            fields = _exif_fields(image, original, png)
            xmp = embedded_xmp(image)
            if not xmp and png is not None and png.xmp is not None:
                xmp = parse_xmp(png.xmp)  # an iTXt after the pixels
            applist = getattr(image, "applist", None) or ()
            blocks = read_maker_blocks(applist)
            found = sidecar.captured or choose_capture_time(
                fields,
                xmp,
                iptc=_iptc_time(image),
                maker=blocks.captured_at or flir_capture_time(applist),
                png_created=png_text_time(png.created) if png is not None else None,
                png_modified=png.modified if png is not None else None,
            )
            format_name = image.format or "unknown"
            turn = orientation_of(image, fields, original, sidecar.orientation)
            width, height = turn.displayed_size(image.size)
            orientation = turn.value
    if width <= 0 or height <= 0:
        raise CorruptMedia("image has no pixels")
    return ImageMetadata(
        format=format_name,
        width=width,
        height=height,
        orientation=orientation,
        captured_at=found.at if found is not None else file_time(mtime_ns),
        captured_at_source=found.source if found is not None else "file",
        captured_is_instant=found.is_instant if found is not None else True,
        # EXIF names the camera; else an editor's XMP copy of it, else the maker's block.
        make=fields.make or xmp.get(NS_TIFF, "Make") or blocks.make,
        model=fields.model or xmp.get(NS_TIFF, "Model") or blocks.model,
        burst_id=fields.burst_id,
        content_identifier=fields.content_identifier,
        sequence_number=fields.sequence_number,
        location=location_of(fields, xmp),
    )


@dataclass(frozen=True, slots=True)
class Orientation:
    """How a photo's stored pixels turn into the displayed picture."""

    value: int
    """The whole turn from the stored pixels to the displayed picture, in EXIF's
    numbering 1-8 (6 is "turn 90 degrees clockwise", 2 "mirror left-right"): what the
    asset stores."""
    applied: int = 1
    """The turn the decoder applies itself as it decodes (HEIF: libheif, the container's
    transforms; TIFF: Pillow's ``load``, tag 274), after which ``Image.size`` already is;
    1: none. What is left to do is ``remaining``."""

    @property
    def remaining(self) -> int:
        """The turn left to apply to the decoded pixels: ``value`` after undoing
        ``applied`` (``value`` itself where the decoder turns nothing; 1 where it turns
        the pixels as ``value`` says; else a sidecar's word over the decoder's)."""
        return turn_after_undoing(self.value, self.applied)

    def displayed_size(self, opened: tuple[int, int]) -> tuple[int, int]:
        """The displayed size of an image that Pillow opened with size ``opened``."""
        if self.remaining in _SWAPS_AXES:
            return opened[1], opened[0]
        return opened


_MATRICES: dict[int, tuple[int, int, int, int]] = {
    1: (1, 0, 0, 1),
    2: (-1, 0, 0, 1),
    3: (-1, 0, 0, -1),
    4: (1, 0, 0, -1),
    5: (0, 1, 1, 0),
    6: (0, -1, 1, 0),
    7: (0, -1, -1, 0),
    8: (0, 1, -1, 0),
}
"""Each EXIF orientation as the matrix ``(a, b, c, d)`` that takes a stored pixel's
offset from the centre, ``(x, y)`` with y downwards, to its displayed one,
``(a x + b y, c x + d y)``: 6 takes the top edge to the right one."""
_ORIENTATION_OF = {matrix: value for value, matrix in _MATRICES.items()}


def turn_after_undoing(wanted: int, applied: int) -> int:
    """The orientation that turns pixels already turned by ``applied`` into the picture
    ``wanted`` makes of the stored ones: ``wanted`` after the inverse of ``applied``.
    The eight orientations are a group (the square's symmetries), so this is one."""
    a, b, c, d = _MATRICES[wanted]
    # The matrices are orthogonal: the inverse of ``applied``, (e f / g h), is its
    # transpose (e g / f h); this is ``wanted`` times that.
    e, f, g, h = _MATRICES[applied]
    return _ORIENTATION_OF[(a * e + b * f, a * g + b * h, c * e + d * f, c * g + d * h)]


_TURNED_BY_DECODER = frozenset({"TIFF"})
"""Formats whose decoder applies EXIF's orientation itself (HEIF's applies its
container's, see ``orientation_of``)."""


def orientation_of(
    image: Image.Image, fields: ExifFields, original: IO[bytes], sidecar: int | None = None
) -> Orientation:
    """The one rule (ADR 0029) for how an opened photo turns upright; both its metadata
    (size, ``orientation``) and its proxies come from it.

    - JPEG, PNG, WebP, TIFF (and any format without a transform of its own): the EXIF
      orientation, as ``exif_fields_of`` reads it (PNG: ``eXIf`` or ImageMagick's
      ``Raw profile type exif`` text; TIFF: tag 274 of IFD0, which Pillow's decoder
      applies itself).
    - HEIF and AVIF: the container's transforms (``irot``, ``imir``), never EXIF's
      Orientation, as the HEIF/MIAF specs say and libheif, libvips, Apple and the
      browsers do. libheif applies them when it decodes (the value comes from
      ``containers.container_transforms``); for AVIF Pillow hands them over as the EXIF
      Orientation it reports and applies nothing.
    - A HEIF whose primary image has no ``irot`` or ``imir`` at all (Samsung phones
      write such files): EXIF's Orientation, as the writing phone meant it and its
      gallery, ExifTool and Immich show it (ADR 0055). libheif turns nothing then, and
      pillow-heif keeps EXIF's value as ``original_orientation`` after resetting it to
      1 in ``info``; safelight turns the pixels. A file with transforms is never turned
      by EXIF too.
    - JPEG XL: the codestream's own orientation (``containers.jxl_orientation``), which
      libjxl applies as it decodes; EXIF's Orientation is not applied (as libjxl's djxl
      and the browsers). A losslessly recompressed JPEG decodes back to that JPEG, whose
      EXIF then applies as a JPEG's.
    - A sidecar's ``tiff:Orientation`` (``sidecar``), the turn of the stored pixels as
      an editor set it, replaces the embedded orientation in every format. Where the
      decoder has turned the pixels already, what is left to do is the sidecar's turn
      after undoing the decoder's (``Orientation.remaining``).

    A RAW decoder (or any other) supplies ``fields`` from its own metadata and adds its
    format to ``_TURNED_BY_DECODER`` if it turns the pixels itself by EXIF's orientation.
    """
    format_name = image.format or ""
    if format_name == "HEIF":
        transforms = container_transforms(original)
        if transforms is None:
            # No transform in the container: the phone's turn is in EXIF alone.
            own = _heif_exif_orientation(image, fields)
            return Orientation(sidecar if sidecar is not None else own)
        applied = transforms
    elif format_name == "JXL" and not getattr(image, "jpeg", False):
        # libjxl applied the codestream's orientation. A JPEG XL that keeps a JPEG for
        # reconstruction hands back that JPEG (``jpeg``), turned by its own EXIF below.
        applied = jxl_orientation(original)
    elif format_name in _TURNED_BY_DECODER:
        applied = fields.orientation or 1
    else:
        return Orientation(sidecar if sidecar is not None else fields.orientation or 1)
    return Orientation(sidecar if sidecar is not None else applied, applied)


def _heif_exif_orientation(image: Image.Image, fields: ExifFields) -> int:
    """EXIF's Orientation of a HEIF as its file holds it: pillow-heif resets the value
    in ``info["exif"]`` to 1 when it opens the file and keeps the file's own (EXIF's, or
    lacking one its XMP ``tiff:Orientation``) as ``original_orientation``."""
    original = image.info.get("original_orientation")
    if isinstance(original, int) and 1 <= original <= 8:
        return original
    return fields.orientation or 1


def exif_fields_of(image: Image.Image, original: IO[bytes]) -> ExifFields:
    """The EXIF fields of an opened image (shared with ``images`` for orientation)."""
    return _exif_fields(image, original)


def _exif_fields(
    image: Image.Image, original: IO[bytes], png: PngFacts | None = None
) -> ExifFields:
    if image.format == "TIFF":
        position = original.tell()
        try:
            original.seek(0)
            return read_exif_from_tiff(original)
        finally:
            original.seek(position)
    if image.format == "PNG":
        # eXIf may follow the pixels, where Pillow sees it only after decoding them, and
        # ImageMagick and ExifTool write EXIF as hex in a "Raw profile" text chunk.
        blob = (png or png_facts(original)).exif
        return read_exif(blob) if blob is not None else ExifFields()
    # JPEG, MPO, WebP, HEIF and AVIF all expose the raw block here at open time.
    blob = image.info.get("exif")
    if isinstance(blob, bytes | bytearray):
        return read_exif(bytes(blob))
    return ExifFields()


def embedded_xmp(image: Image.Image) -> XmpProperties:
    """The XMP packet an opened image carries, parsed. Pillow (and pillow-heif) keep
    it in ``info["xmp"]`` at open time for JPEG (APP1), PNG (iTXt), TIFF (tag 700),
    WebP, HEIF and AVIF, so the file is not read again."""
    packet = image.info.get("xmp")
    if isinstance(packet, str):
        packet = packet.encode("utf-8")
    if not isinstance(packet, bytes | bytearray) or not packet:
        return EMPTY
    return parse_xmp(bytes(packet))


def _iptc_time(image: Image.Image) -> datetime | None:
    """IPTC DateCreated + TimeCreated, from the Photoshop block a JPEG holds in memory
    (other formats: none; Pillow would read a TIFF's tag, not the file, either way)."""
    if not isinstance(image, ImageFile.ImageFile) or "photoshop" not in image.info:
        return None
    if image.format != "JPEG":
        return None
    try:
        info = IptcImagePlugin.getiptcinfo(image)
    except (SyntaxError, ValueError, IndexError, struct.error, OSError):
        return None
    if not info:
        return None
    date, time = info.get((2, 55)), info.get((2, 60))
    return iptc_capture_time(
        date if isinstance(date, bytes) else None, time if isinstance(time, bytes) else None
    )


def file_time(mtime_ns: int) -> datetime:
    """A file's modification time as an aware UTC datetime."""
    return datetime.fromtimestamp(mtime_ns // 1_000_000_000, tz=UTC) + timedelta(
        microseconds=(mtime_ns % 1_000_000_000) // 1000
    )


# --- videos -------------------------------------------------------------------------------


def ffprobe_command(path: Path | str, ffprobe: str = "ffprobe") -> list[str]:
    """The ffprobe invocation for one original (shared with the async probe in ``video``);
    ``path`` may be ``/dev/fd/<n>`` of a descriptor passed to ffprobe. It counts every
    stream's packets (reading the file once, demuxing only): the tools' time limits and
    the web video's size limit follow that count, not the duration a header claims."""
    return [
        ffprobe,
        "-v", "error",
        *ffmpeg_input_options(),
        "-count_packets",
        "-print_format", "json",
        "-show_format",
        "-show_streams",
        f"file:{path}",
    ]  # fmt: skip


def ffmpeg_input_options() -> list[str]:
    """Options to put before ``-i`` whenever ffmpeg reads an original (see above), and
    ffprobe's: no decoder makes a frame beyond the image pixel cap (ffprobe decodes a
    frame or two to learn a stream's format)."""
    return [
        "-protocol_whitelist", "file",
        "-format_whitelist", _VIDEO_FORMATS,
        "-max_pixels", str(MAX_IMAGE_PIXELS),
    ]  # fmt: skip


def read_video_metadata(
    path: Path,
    *,
    ffprobe: str = "ffprobe",
    timeout_seconds: float | None = None,
    decode_memory_mib: int = DEFAULT_DECODE_MEMORY_MIB,
) -> VideoMetadata:
    """Metadata of the video at ``path`` via ffprobe (sync: run it in a thread), within
    the tools' limits (``limits``): by default a time limit from the file's size.

    ``video.probe_video`` is the cancellable async twin used by ``make_video_proxies``.
    Raises ``UnsupportedMedia`` when ffprobe is missing, ``CorruptMedia`` when it cannot
    read the file.
    """
    with open_original(path) as original:  # same read-only, no-symlink, no-FIFO checks
        st = os.fstat(original.fileno())
        recorded = avchd_recording_date(original)
    timeout = ffprobe_timeout_seconds(st.st_size) if timeout_seconds is None else timeout_seconds
    address_space = tool_address_space_bytes(decode_memory_mib * MIB, tool_threads())
    try:
        completed = subprocess.run(
            ffprobe_command(path, ffprobe),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
            # Nice 10, best-effort I/O 7, the address-space limit: system calls only.
            preexec_fn=tool_preexec(address_space),
        )
    except FileNotFoundError as error:
        raise UnsupportedMedia(f"{ffprobe} is not installed") from error
    except subprocess.TimeoutExpired as error:
        raise MediaError(f"ffprobe took longer than {timeout:g} s") from error
    return parse_ffprobe_output(
        completed.returncode,
        completed.stdout,
        completed.stderr,
        st.st_mtime_ns,
        address_space,
        recorded=recorded,
    )


def parse_ffprobe_output(
    returncode: int,
    stdout: bytes,
    stderr: bytes,
    mtime_ns: int,
    address_space_bytes: int | None = None,
    *,
    recorded: bytes | None = None,
) -> VideoMetadata:
    """``VideoMetadata`` from ffprobe's run; ``recorded``: the file's AVCHD recording date
    (``containers.avchd_recording_date``), which ffprobe does not show."""
    # A frame over the pixel cap: ffprobe says so and still exits 0, its size unknown.
    bomb = pixel_cap_exceeded(stderr)
    if bomb is not None:
        raise bomb
    if returncode != 0:
        raise tool_failure(
            "ffprobe", "could not read the video", returncode, stderr, address_space_bytes
        )
    try:
        probe = json.loads(stdout)
    except ValueError as error:
        raise CorruptMedia("ffprobe printed no JSON") from error
    if not isinstance(probe, dict):
        raise CorruptMedia("ffprobe printed no JSON object")
    return video_metadata_from_probe(probe, mtime_ns, recorded=recorded)


def video_metadata_from_probe(
    probe: Mapping[str, Any], mtime_ns: int, *, recorded: bytes | None = None
) -> VideoMetadata:
    """``VideoMetadata`` from ffprobe's ``-show_format -show_streams`` JSON (and the
    AVCHD recording date, ``recorded``, read beside it)."""
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
    if width * height > MAX_IMAGE_PIXELS:
        raise DecompressionBomb(
            f"a frame of {width}x{height} ({width * height / 1e6:.1f} MP) is larger than "
            f"the pixel cap of {MAX_IMAGE_PIXELS / 1e6:g} MP"
        )
    rotation = _rotation(video)
    if rotation in (90, 270):
        width, height = height, width
    fmt = probe.get("format") or {}
    tags = {**_lower_keys(video.get("tags")), **_lower_keys(fmt.get("tags"))}
    captured = video_capture_time(
        creationdate=tags.get("com.apple.quicktime.creationdate"),
        recorded=recorded,
        content_date=tags.get("date"),
        creation_time=tags.get("creation_time"),
    )
    return VideoMetadata(
        width=width,
        height=height,
        rotation=rotation,
        duration_seconds=_float(fmt.get("duration")) or _float(video.get("duration")),
        codec=video.get("codec_name") if isinstance(video.get("codec_name"), str) else None,
        has_audio=any(s.get("codec_type") == "audio" for s in streams),
        captured_at=captured.at if captured is not None else file_time(mtime_ns),
        captured_at_source=captured.source if captured is not None else "file",
        captured_is_instant=captured.is_instant if captured is not None else True,
        make=_str(tags.get("com.apple.quicktime.make") or tags.get("make")),
        model=_str(tags.get("com.apple.quicktime.model") or tags.get("model")),
        content_identifier=_str(tags.get("com.apple.quicktime.content.identifier")),
        hdr=video.get("color_transfer") in _HDR_TRANSFERS,
        location=parse_iso6709(tags.get("com.apple.quicktime.location.iso6709"))
        or parse_iso6709(tags.get("location")),
        container=_str(fmt.get("format_name")),
        audio_codec=next(
            (_str(s.get("codec_name")) for s in streams if s.get("codec_type") == "audio"), None
        ),
        pixel_format=_str(video.get("pix_fmt")),
        frame_rate=_frame_rate(video.get("avg_frame_rate")),
        video_packets=_count(video.get("nb_read_packets")),
        audio_packets=next(
            (_count(s.get("nb_read_packets")) for s in streams if s.get("codec_type") == "audio"),
            None,
        ),
        size_bytes=_count(fmt.get("size")),
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


def _count(value: object) -> int | None:
    """A count ffprobe printed (as a string of digits); None for ``N/A`` or anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


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
