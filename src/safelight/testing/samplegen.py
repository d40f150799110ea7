"""Generated photo libraries for tests, benchmarks and ``safelight demo``.

``generate_library`` writes a small library that exercises what a crawl must handle:
several cameras and time zones, all eight EXIF orientations, an iPhone burst with an
Apple BurstUUID, a burst recognisable only by time, a Live Photo pair (HEIC with an Apple
MediaGroupUUID + MOV with the same ``com.apple.quicktime.content.identifier``), videos (one
rotated like a portrait phone video), a 12 MP photo, a Display P3 photo, a PNG without
EXIF, a deep folder with spaces, a truncated JPEG, an empty file, and names a crawl must
ignore (hidden folder, AppleDouble file, Synology ``@eaDir``, a text file, a sidecar).
The returned ``Manifest`` says what a correct crawl finds.

Pictures and video frames carry a red block top-left and a green block top-right *as
displayed*, so a test can tell an upright proxy from any of the seven wrong ones. Videos
need ffmpeg; without it they are skipped and the manifest says why. Output is
deterministic for a given seed (and library versions).
"""

from __future__ import annotations

import io
import os
import random
import shutil
import struct
import subprocess
import tempfile
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image

from safelight.library.media.metadata import file_time  # also registers HEIF
from safelight.library.media.toolfailures import last_lines
from safelight.testing.exif import apple_maker_note, exif_bytes

RED = (230, 20, 20)
GREEN = (20, 200, 40)
P3_PATCH = (200, 80, 40)
"""The Display P3 photo is filled with this colour, in Display P3 values."""

INVERSE_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}
"""Upright picture -> the stored pixels a viewer turns upright with EXIF orientation n."""

_FILE_TIME = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
"""Modification time of the first generated file; each next file is one second later."""


@dataclass(frozen=True, slots=True)
class SamplePhoto:
    path: str
    """Relative to the library root, with ``/``."""
    make: str | None
    model: str | None
    captured_at: datetime
    """What metadata must read: naive without an EXIF offset, aware with one, the file's
    modification time (aware UTC) without an EXIF date."""
    captured_at_source: Literal["exif", "file"]
    orientation: int
    width: int
    """As displayed."""
    height: int
    burst_id: str | None = None
    content_identifier: str | None = None
    markers: bool = True
    """Red block top-left, green block top-right when upright."""
    display_p3: bool = False


@dataclass(frozen=True, slots=True)
class SampleVideo:
    path: str
    captured_at: datetime
    width: int
    """As displayed (after rotation)."""
    height: int
    rotation: int
    duration_seconds: float
    has_audio: bool
    content_identifier: str | None = None


@dataclass(frozen=True, slots=True)
class ExpectedError:
    path: str
    stage: Literal["hash", "metadata", "proxies"]
    """The first step that fails."""
    error: str
    """The ``MediaError`` subclass raised there."""


@dataclass(frozen=True, slots=True)
class SampleBurst:
    paths: tuple[str, ...]
    burst_id: str | None
    """Apple BurstUUID, or None for a burst recognisable only by camera and time."""


@dataclass(frozen=True, slots=True)
class LivePair:
    photo: str
    video: str | None
    """None when no video could be written (no ffmpeg)."""
    content_identifier: str


@dataclass(frozen=True, slots=True)
class Manifest:
    root: Path
    photos: tuple[SamplePhoto, ...]
    """Every photo a crawl must index with proxies."""
    videos: tuple[SampleVideo, ...]
    errors: tuple[ExpectedError, ...]
    """Files with a media extension that must fail, and how."""
    ignored: tuple[str, ...]
    """Files a crawl must not index at all (hidden, housekeeping, not media)."""
    bursts: tuple[SampleBurst, ...]
    live_pairs: tuple[LivePair, ...]
    video_skipped_reason: str | None
    """Why videos are missing (ffmpeg absent or failing), else None."""

    @property
    def expected_image_count(self) -> int:
        return len(self.photos)

    @property
    def expected_video_count(self) -> int:
        return len(self.videos)

    @property
    def expected_error_count(self) -> int:
        return len(self.errors)

    def photo(self, path: str) -> SamplePhoto:
        return next(p for p in self.photos if p.path == path)


@dataclass
class _Library:
    root: Path
    rng: random.Random
    ffmpeg: str | None
    files: int = 0
    photos: list[SamplePhoto] = field(default_factory=list)
    videos: list[SampleVideo] = field(default_factory=list)
    video_skipped_reason: str | None = None

    def write(self, relative: str, data: bytes) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.stamp(path)

    def stamp(self, path: Path) -> Path:
        """Each file gets its own known modification time (the "file" capture time)."""
        seconds = int((_FILE_TIME + timedelta(seconds=self.files)).timestamp())
        self.files += 1
        os.utime(path, ns=(seconds * 1_000_000_000, seconds * 1_000_000_000))
        return path

    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).upper()

    def photo(
        self,
        relative: str,
        make: str | None,
        model: str | None,
        captured_at: datetime | None,
        *,
        orientation: int = 1,
        size: tuple[int, int] = (480, 320),
        burst_id: str | None = None,
        content_identifier: str | None = None,
        heif: bool = False,
    ) -> str:
        """Write a marker photo stored so that ``orientation`` turns it upright."""
        upright = marker_picture(*size, seed=zlib.crc32(relative.encode()))
        stored = upright.transpose(INVERSE_TRANSPOSE[orientation]) if orientation > 1 else upright
        note = None
        if burst_id or content_identifier:
            note = apple_maker_note(burst_id=burst_id, content_identifier=content_identifier)
        exif = exif_bytes(
            make=make,
            model=model,
            orientation=orientation,
            captured_at=captured_at,
            maker_note=note,
        )
        buffer = io.BytesIO()
        if heif:
            stored.save(buffer, format="HEIF", quality=70, exif=exif)
        elif relative.lower().endswith(".png"):
            stored.save(buffer, "PNG")
        else:
            stored.save(buffer, "JPEG", quality=90, exif=exif)
        path = self.write(relative, buffer.getvalue())
        self.photos.append(
            SamplePhoto(
                path=relative,
                make=make,
                model=model,
                captured_at=captured_at or file_time(path.stat().st_mtime_ns),
                captured_at_source="exif" if captured_at else "file",
                orientation=orientation,
                width=size[0],
                height=size[1],
                burst_id=burst_id,
                content_identifier=content_identifier,
            )
        )
        return relative

    def burst(
        self,
        paths: Sequence[str],
        camera: tuple[str, str],
        start: datetime,
        gap: timedelta,
        *,
        burst_id: str | None = None,
    ) -> tuple[str, ...]:
        """Photos of one camera (make, model) taken ``gap`` apart from ``start``, in the
        order of ``paths``; with ``burst_id``, the maker's burst id (Apple's BurstUUID)."""
        return tuple(
            self.photo(path, *camera, start + gap * i, burst_id=burst_id)
            for i, path in enumerate(paths)
        )

    def live_pair(self, stem: str, photo_at: datetime, video_at: datetime) -> LivePair:
        """An iPhone Live Photo: ``stem``.HEIC and ``stem``.MOV of one content identifier."""
        content_id = self.new_uuid()
        photo = self.photo(
            f"{stem}.HEIC",
            "Apple",
            "iPhone 13",
            photo_at,
            size=(480, 360),
            content_identifier=content_id,
            heif=True,
        )
        video = self.video(f"{stem}.MOV", video_at, size=(240, 180), content_identifier=content_id)
        return LivePair(photo, video, content_id)

    def video(
        self,
        relative: str,
        captured_at: datetime,
        *,
        seconds: int = 1,
        size: tuple[int, int] = (320, 240),
        rotation: Literal[0, 90] = 0,
        audio: bool = False,
        content_identifier: str | None = None,
    ) -> str | None:
        """Encode a marker video (``size`` as displayed); None if ffmpeg is absent or fails."""
        if self.ffmpeg is None:
            return None
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        upright = marker_picture(*size, seed=zlib.crc32(relative.encode()))
        stored = upright.transpose(Image.Transpose.ROTATE_90) if rotation == 90 else upright
        tags = ["-metadata", f"creation_time={captured_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"]
        local = f"{captured_at:%Y-%m-%dT%H:%M:%S%z}"
        if content_identifier is not None:
            tags = [
                "-movflags",
                "use_metadata_tags",
                "-metadata",
                f"com.apple.quicktime.content.identifier={content_identifier}",
                "-metadata",
                f"com.apple.quicktime.creationdate={local}",
                "-metadata",
                "com.apple.quicktime.make=Apple",
                "-metadata",
                "com.apple.quicktime.model=iPhone 13",
            ]
        with tempfile.TemporaryDirectory() as scratch:
            frame = Path(scratch) / "frame.png"
            stored.save(frame, "PNG")
            command = [
                self.ffmpeg,
                "-nostdin",
                "-v",
                "error",
                "-y",
                "-loop",
                "1",
                "-framerate",
                "15",
                "-i",
                str(frame),
            ]
            if audio:
                command += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}"]
                command += ["-c:a", "aac"]
            command += [
                "-t",
                str(seconds),
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "-pix_fmt",
                "yuv420p",
                *tags,
                str(path),
            ]
            result = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            self.video_skipped_reason = f"ffmpeg failed: {last_lines(result.stderr)}"
            path.unlink(missing_ok=True)
            return None
        if rotation:
            set_mp4_rotation(path, rotation)  # ffmpeg 5 cannot write one; phones do
        self.stamp(path)
        self.videos.append(
            SampleVideo(
                path=relative,
                captured_at=captured_at.replace(microsecond=0),
                width=size[0],
                height=size[1],
                rotation=rotation,
                duration_seconds=float(seconds),
                has_audio=audio,
                content_identifier=content_identifier,
            )
        )
        return relative


def generate_library(root: Path, *, seed: int = 0, ffmpeg: str | None = "ffmpeg") -> Manifest:
    """Write a sample library under ``root`` (created if needed; should be empty).

    ``ffmpeg=None``, or an ffmpeg that is not installed, skips the videos.
    """
    root.mkdir(parents=True, exist_ok=True)
    found = shutil.which(ffmpeg) if ffmpeg else None
    lib = _Library(root=root, rng=random.Random(seed), ffmpeg=found)
    if found is None:
        lib.video_skipped_reason = "ffmpeg not found" if ffmpeg else "videos disabled"
    day = datetime(2016, 3, 1, 9, 0, 0) + timedelta(days=lib.rng.randrange(365))
    paris, new_york = timezone(timedelta(hours=2)), timezone(timedelta(hours=-4))

    for n in range(1, 9):
        lib.photo(
            f"orientation/orientation_{n}.jpg",
            "Canon",
            "Canon EOS R5",
            day + timedelta(days=n, hours=n),
            orientation=n,
            size=(480, 320) if n % 2 else (320, 480),
        )
    lib.photo(
        "2017/Summer/IMG_0001.JPG",
        "Apple",
        "iPhone 7",
        (day + timedelta(days=100, microseconds=123000)).replace(tzinfo=paris),
        orientation=6,
        size=(360, 480),
    )
    lib.photo(
        "2017/Summer/DSC_0002.jpg",
        "NIKON CORPORATION",
        "NIKON D750",
        day + timedelta(days=101, microseconds=880000),
    )
    lib.photo(
        "2017/Autumn/DSCF0003.jpg",
        "FUJIFILM",
        "X-T4",
        (day + timedelta(days=180)).replace(tzinfo=new_york),
    )
    lib.photo(
        "2017/Autumn/DSC00004.JPG",
        "SONY",
        "ILCE-7M3",
        day + timedelta(days=181),
        orientation=8,
        size=(320, 480),
    )
    lib.photo(
        "2018/Trips/Norway/Day 1/P1000005.JPG", "Panasonic", "DC-GH5", day + timedelta(days=250)
    )

    burst_id, start = lib.new_uuid(), (day + timedelta(days=400)).replace(tzinfo=paris)
    apple_burst = lib.burst(
        [f"2019/burst/IMG_{101 + i:04d}.JPG" for i in range(5)],
        ("Apple", "iPhone 12"),
        start,
        timedelta(milliseconds=150),
        burst_id=burst_id,
    )
    start = day + timedelta(days=420)
    time_burst = lib.burst(
        [f"2019/sports/IMG_{2001 + i:04d}.JPG" for i in range(4)],
        ("Canon", "Canon EOS 90D"),
        start,
        timedelta(milliseconds=250),
    )

    live_at = (day + timedelta(days=500)).replace(microsecond=250000, tzinfo=paris)
    live_pair = lib.live_pair("2020/live/IMG_0200", live_at, live_at)

    # 12 MP: exercises DCT-scaled decoding and real downscaling.
    lib.photo(
        "2021/large/PXL_0300.jpg", "Google", "Pixel 7", day + timedelta(days=600), size=(4000, 3000)
    )
    _display_p3_photo(lib, "2021/p3/IMG_0400.jpg", day + timedelta(days=601))
    lib.photo(
        "screenshots/Screenshot 2024-01-01 at 10.00.00.png", None, None, None, size=(320, 200)
    )

    clip_at = (day + timedelta(days=700)).replace(tzinfo=UTC)
    lib.video("2022/videos/clip.mp4", clip_at, seconds=2, audio=True)
    lib.video(
        "2022/videos/portrait.mp4", clip_at + timedelta(hours=1), size=(240, 320), rotation=90
    )

    good = (root / apple_burst[0]).read_bytes()
    lib.write("broken/truncated.jpg", good[: len(good) * 6 // 10])
    lib.write("broken/empty.jpg", b"")
    ignored = {
        ".thumbnails/hidden.jpg": good,
        "2017/Summer/._IMG_0001.JPG": b"\0\x05\x16\x07\0\x02\0\0Mac OS X        ",
        "@eaDir/IMG_0001.JPG/SYNOPHOTO_THUMB_M.jpg": good,
        "notes.txt": b"Summer 2017: Norway trip.\n",
        "2017/Summer/IMG_0001.xmp": b"<x:xmpmeta xmlns:x='adobe:ns:meta/'/>\n",
    }
    for relative, data in ignored.items():
        lib.write(relative, data)
    return Manifest(
        root=root,
        photos=tuple(lib.photos),
        videos=tuple(lib.videos),
        errors=(
            ExpectedError("broken/truncated.jpg", "proxies", "CorruptMedia"),
            ExpectedError("broken/empty.jpg", "hash", "EmptyFile"),
        ),
        ignored=tuple(ignored),
        bursts=(SampleBurst(apple_burst, burst_id), SampleBurst(time_burst, None)),
        live_pairs=(live_pair,),
        video_skipped_reason=lib.video_skipped_reason,
    )


def _display_p3_photo(lib: _Library, relative: str, captured_at: datetime) -> None:
    """A flat Display P3 patch, whose sRGB value a test can compute independently."""
    buffer = io.BytesIO()
    Image.new("RGB", (400, 300), P3_PATCH).save(
        buffer,
        "JPEG",
        quality=95,
        icc_profile=display_p3_profile(),
        exif=exif_bytes(make="Apple", model="iPhone 14", orientation=1, captured_at=captured_at),
    )
    lib.write(relative, buffer.getvalue())
    lib.photos.append(
        SamplePhoto(
            relative,
            "Apple",
            "iPhone 14",
            captured_at,
            "exif",
            1,
            400,
            300,
            markers=False,
            display_p3=True,
        )
    )


# --- building blocks ----------------------------------------------------------------------


def marker_picture(width: int, height: int, seed: int) -> Image.Image:
    """An upright test picture: soft gradient, red block top-left, green block top-right."""
    pixels = np.empty((height, width, 3), dtype=np.uint8)
    pixels[..., 0] = (60 + np.arange(width) * 120 // max(width - 1, 1))[np.newaxis, :]
    pixels[..., 1] = (90 + np.arange(height) * 100 // max(height - 1, 1))[:, np.newaxis]
    pixels[..., 2] = 120 + seed % 97
    block_width, block_height = max(width // 4, 1), max(height // 4, 1)
    pixels[:block_height, :block_width] = RED
    pixels[:block_height, width - block_width :] = GREEN
    return Image.fromarray(pixels, "RGB")


def display_p3_profile() -> bytes:
    """An ICC v2 display profile for Display P3 (P3 primaries, D65 white, sRGB curve),
    computed from the published primaries; colorants Bradford-adapted to the D50 PCS."""

    def xy(x: float, y: float) -> np.ndarray:
        return np.array([x / y, 1.0, (1 - x - y) / y])

    white_d65, white_d50 = xy(0.3127, 0.3290), np.array([0.9642, 1.0, 0.8249])
    columns = np.stack([xy(0.680, 0.320), xy(0.265, 0.690), xy(0.150, 0.060)], axis=1)
    rgb_to_xyz = columns * np.linalg.solve(columns, white_d65)
    bradford = np.array(
        [[0.8951, 0.2664, -0.1614], [-0.7502, 1.7135, 0.0367], [0.0389, -0.0685, 1.0296]]
    )
    adapt = np.linalg.inv(bradford) @ np.diag(bradford @ white_d50 / (bradford @ white_d65))
    rgb_to_xyz_d50 = adapt @ bradford @ rgb_to_xyz

    def s15(values: np.ndarray) -> bytes:
        return b"".join(struct.pack(">i", round(float(v) * 65536)) for v in values)

    description = b"Display P3 (safelight samples)\0"
    curve = [
        round(65535 * (v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4))
        for v in (i / 1023 for i in range(1024))
    ]
    trc = b"curv\0\0\0\0" + struct.pack(">I1024H", 1024, *curve)
    tags = [
        (b"desc", b"desc\0\0\0\0" + struct.pack(">I", len(description)) + description + bytes(78)),
        (b"cprt", b"text\0\0\0\0No copyright, use freely\0"),
        (b"wtpt", b"XYZ \0\0\0\0" + s15(white_d50)),
        *(
            (name, b"XYZ \0\0\0\0" + s15(rgb_to_xyz_d50[:, i]))
            for i, name in enumerate((b"rXYZ", b"gXYZ", b"bXYZ"))
        ),
        (b"rTRC", trc),
    ]
    offset = 128 + 4 + 12 * (len(tags) + 2)
    table, body = b"", b""
    for signature, payload in tags:
        table += struct.pack(">4sII", signature, offset + len(body), len(payload))
        body += payload + bytes(-len(payload) % 4)
    trc_offset = offset + len(body) - len(trc) - (-len(trc) % 4)
    for signature in (b"gTRC", b"bTRC"):  # the three channels share one curve
        table += struct.pack(">4sII", signature, trc_offset, len(trc))
    header = (
        struct.pack(">I", offset + len(body))
        + bytes(4)
        + bytes([2, 0x10, 0, 0])
        + b"mntrRGB XYZ "
        + struct.pack(">6H", 2024, 1, 1, 0, 0, 0)
        + b"acsp"
        + bytes(28)
        + s15(white_d50)
        + bytes(48)
    )
    assert len(header) == 128
    return header + struct.pack(">I", len(tags) + 2) + table + body


def set_mp4_rotation(path: Path, degrees: Literal[90, 180, 270]) -> None:
    """Set the display matrix of the first track (``moov/trak/tkhd``) in place, as phones
    record a portrait video: coded frames landscape, rotated by the player."""
    data = bytearray(path.read_bytes())
    tkhd = _find_box(data, [b"moov", b"trak", b"tkhd"], 0, len(data))
    if tkhd is None:
        raise ValueError(f"{path} has no moov/trak/tkhd box")
    matrix_at = tkhd + (40 if data[tkhd] == 0 else 52)  # version 1 has 64-bit times
    width, height = (v >> 16 for v in struct.unpack(">II", data[matrix_at + 36 : matrix_at + 44]))
    one, w, h = 0x10000, width << 16, height << 16
    matrix = {
        90: (0, one, 0, -one, 0, 0, h, 0, 0x40000000),
        180: (-one, 0, 0, 0, -one, 0, w, h, 0x40000000),
        270: (0, -one, 0, one, 0, 0, 0, w, 0x40000000),
    }[degrees]
    data[matrix_at : matrix_at + 36] = struct.pack(">9i", *matrix)
    path.write_bytes(bytes(data))


def _find_box(data: bytearray, trail: list[bytes], start: int, end: int) -> int | None:
    """Payload offset of the first box along ``trail`` (ISO BMFF nesting)."""
    for box_type, payload, box_end in _boxes(data, start, end):
        if box_type == trail[0]:
            return payload if len(trail) == 1 else _find_box(data, trail[1:], payload, box_end)
    return None


def _boxes(data: bytearray, start: int, end: int) -> Iterator[tuple[bytes, int, int]]:
    position = start
    while position + 8 <= end:
        size, box_type = struct.unpack(">I4s", data[position : position + 8])
        header = 8
        if size == 1:
            (size,) = struct.unpack(">Q", data[position + 8 : position + 16])
            header = 16
        elif size == 0:
            size = end - position
        if size < header:
            return
        yield box_type, position + header, position + size
        position += size


# --- benchmarks ---------------------------------------------------------------------------


def generate_jpegs(
    root: Path, count: int, megapixels: float, *, seed: int = 0, per_folder: int = 1000
) -> tuple[Path, ...]:
    """``count`` distinct JPEGs of about ``megapixels`` each, fast enough for benchmarks.

    Four frames are encoded once; each file is one of them with its own EXIF block
    spliced in (its own DateTimeOriginal), so every file has its own content hash at the
    cost of a copy, not an encode. Files go in folders of ``per_folder``.
    """
    if count < 0 or megapixels <= 0 or per_folder < 1:
        raise ValueError("need count >= 0, megapixels > 0, per_folder >= 1")
    width = max(16, round((megapixels * 1_000_000 * 4 / 3) ** 0.5))
    height = max(12, round(width * 3 / 4))
    rng = np.random.default_rng(seed)
    frames = []
    for index in range(4):
        picture = np.asarray(marker_picture(width, height, seed=seed + index), dtype=np.int16)
        grain = rng.integers(-12, 13, size=picture.shape, dtype=np.int16)  # camera-like noise
        buffer = io.BytesIO()
        Image.fromarray(np.clip(picture + grain, 0, 255).astype(np.uint8)).save(
            buffer, "JPEG", quality=90
        )
        frames.append(buffer.getvalue())
    start = datetime(2015, 1, 1, 8, 0, 0) + timedelta(days=seed % 1000)
    paths = []
    for index in range(count):
        exif = exif_bytes(
            make="Canon",
            model="Canon EOS 5D Mark IV",
            captured_at=start + timedelta(seconds=37 * index),
        )
        folder = root / f"{index // per_folder:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"IMG_{index:06d}.jpg"
        path.write_bytes(_with_exif(frames[index % len(frames)], exif))
        paths.append(path)
    return tuple(paths)


def _with_exif(jpeg: bytes, exif: bytes) -> bytes:
    """Insert an APP1 EXIF segment after SOI (and after a JFIF APP0 if present)."""
    position = 2
    if jpeg[2:4] == b"\xff\xe0":
        position = 4 + struct.unpack(">H", jpeg[4:6])[0]
    return jpeg[:position] + b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif + jpeg[position:]


def generate_day_library(
    root: Path,
    month: int,
    day: int,
    years: tuple[int, ...],
    *,
    seed: int = 0,
    ffmpeg: str | None = "ffmpeg",
) -> Manifest:
    """A library for "On this day" on ``month``/``day``: photos of that day in each of
    ``years`` (oldest first, at least three), and around them the days a correct query
    leaves out. Capture times carry no offset: each file is of the day its camera showed.

    - each year: one photo at 10:00; the newest year a second one at 15:30, stored
      turned (orientation 6);
    - ``years[1]``: an iPhone burst of three at 12:00, 150 ms apart (one Apple BurstUUID);
    - ``years[2]``: a Live Photo pair at 18:00 (HEIC and MOV, one content identifier),
      and a two-second video at 19:00 (both need ffmpeg; without it they are left out
      and the manifest says why);
    - left out by the day's query: the same day of the year after the newest (the year
      the page is asked for), and the days before and after it in ``years[0]``.
    """
    if len(years) < 3 or list(years) != sorted(set(years)):
        raise ValueError("need three or more years, oldest first, each once")
    root.mkdir(parents=True, exist_ok=True)
    found = shutil.which(ffmpeg) if ffmpeg else None
    lib = _Library(root=root, rng=random.Random(seed), ffmpeg=found)
    if found is None:
        lib.video_skipped_reason = "ffmpeg not found" if ffmpeg else "videos disabled"

    def at(year: int, hour: int, minute: int = 0) -> datetime:
        return datetime(year, month, day, hour, minute)

    for year in years:
        lib.photo(f"{year}/IMG_{year}_1000.JPG", "Canon", "Canon EOS R6", at(year, 10))
    newest = years[-1]
    lib.photo(
        f"{newest}/PXL_{newest}_1530.jpg",
        "Google",
        "Pixel 8",
        at(newest, 15, 30),
        orientation=6,
        size=(320, 480),
    )
    burst_id = lib.new_uuid()
    burst = lib.burst(
        [f"{years[1]}/burst/IMG_{years[1]}_12{i:02d}.JPG" for i in range(3)],
        ("Apple", "iPhone 12"),
        at(years[1], 12),
        timedelta(milliseconds=150),
        burst_id=burst_id,
    )
    live_at = at(years[2], 18)
    live_pair = lib.live_pair(
        f"{years[2]}/live/IMG_{years[2]}_1800", live_at, live_at.replace(tzinfo=UTC)
    )
    lib.video(
        f"{years[2]}/clip_{years[2]}_1900.mp4", at(years[2], 19).replace(tzinfo=UTC), seconds=2
    )
    after = datetime(newest + 1, month, day, 9)
    lib.photo(f"{newest + 1}/IMG_{newest + 1}_0900.JPG", "Canon", "Canon EOS R6", after)
    for offset, name in ((-1, "before"), (1, "after")):
        other = at(years[0], 11) + timedelta(days=offset)
        lib.photo(f"{years[0]}/{name}/IMG_{other:%Y%m%d}.JPG", "Canon", "Canon EOS R6", other)
    return Manifest(
        root=root,
        photos=tuple(lib.photos),
        videos=tuple(lib.videos),
        errors=(),
        ignored=(),
        bursts=(SampleBurst(burst, burst_id),),
        live_pairs=(live_pair,),
        video_skipped_reason=lib.video_skipped_reason,
    )
