"""Generated photo libraries for tests, benchmarks and ``safelight demo``.

``generate_library`` writes a small library that exercises what a crawl must handle:
several cameras, all eight EXIF orientations (pictures whose upright state is checkable:
a red block top-left and a green block top-right *as displayed*), an iPhone burst with an
Apple BurstUUID, a time-only burst from another camera, a Live Photo pair (HEIC with an
Apple MediaGroupUUID + MOV with the same ``com.apple.quicktime.content.identifier``),
videos (one rotated like a portrait phone video), a PNG without EXIF, a Display P3 photo,
a 12 MP photo, a deep folder, a truncated JPEG, an empty file, and names a crawl must
ignore (hidden folder, AppleDouble file, Synology ``@eaDir``, a text file, a sidecar).
The returned ``Manifest`` says what a correct crawl finds.

EXIF is written with Pillow's ``Image.Exif``; the Apple maker note is built here (a
small big-endian IFD after the ``Apple iOS`` header, offsets relative to the note, as
ExifTool and ``exif.py`` read it). Videos need ffmpeg; without it they are skipped and
the manifest says why. Output is deterministic for a given seed and library versions.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import struct
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image

from safelight.library import metadata as _metadata  # registers the HEIF plugin

ErrorStage = Literal["hash", "metadata", "proxies"]

RED = (230, 20, 20)
GREEN = (20, 200, 40)
P3_PATCH = (200, 80, 40)
"""The Display P3 photo is filled with this colour, in Display P3 values."""

_INVERSE_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}
"""Upright picture -> stored pixels that a viewer turns upright with EXIF orientation n."""

_FILE_TIME = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
"""Modification time of every generated file (plus one second per file, in order)."""


@dataclass(frozen=True, slots=True)
class SamplePhoto:
    path: str
    """Relative to the library root, with ``/``."""
    make: str | None
    model: str | None
    captured_at: datetime
    """What metadata must read: naive without an EXIF offset, aware with one, aware UTC
    (the file time) when the photo has no EXIF date."""
    captured_at_source: Literal["exif", "file"]
    orientation: int
    width: int
    """As displayed."""
    height: int
    burst_id: str | None = None
    content_identifier: str | None = None
    markers: bool = False
    """Red block top-left and green block top-right when upright."""
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
    stage: ErrorStage
    """The first step that fails: hashing, metadata or proxies."""
    error: str
    """The ``MediaError`` subclass name."""


@dataclass(frozen=True, slots=True)
class SampleBurst:
    paths: tuple[str, ...]
    burst_id: str | None
    """Apple BurstUUID, or None for a burst recognisable only by time and camera."""


@dataclass(frozen=True, slots=True)
class LivePair:
    photo: str
    video: str | None
    """None when ffmpeg was unavailable (the photo alone was written)."""
    content_identifier: str


@dataclass(frozen=True, slots=True)
class Manifest:
    root: Path
    photos: tuple[SamplePhoto, ...]
    """Every photo a crawl must index with proxies."""
    videos: tuple[SampleVideo, ...]
    errors: tuple[ExpectedError, ...]
    """Files with a media extension that must fail, each with the reason's class."""
    ignored: tuple[str, ...]
    """Files a crawl must not index at all (hidden, housekeeping, not media)."""
    bursts: tuple[SampleBurst, ...]
    live_pairs: tuple[LivePair, ...]
    video_skipped_reason: str | None
    """Why no video was written (ffmpeg missing or failed), else None."""

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
class _Writer:
    root: Path
    rng: random.Random
    ffmpeg: str | None
    files: int = 0
    photos: list[SamplePhoto] = field(default_factory=list)
    videos: list[SampleVideo] = field(default_factory=list)
    errors: list[ExpectedError] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    bursts: list[SampleBurst] = field(default_factory=list)
    live_pairs: list[LivePair] = field(default_factory=list)
    video_skipped_reason: str | None = None

    def write(self, relative: str, data: bytes) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.stamp(path)

    def stamp(self, path: Path) -> Path:
        """Give each file its own known modification time (for the "file" capture time)."""
        mtime = self.next_file_time()
        seconds = int(mtime.timestamp())
        os.utime(path, ns=(seconds * 1_000_000_000, seconds * 1_000_000_000))
        return path

    def next_file_time(self) -> datetime:
        self.files += 1
        return _FILE_TIME + timedelta(seconds=self.files)

    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).upper()


def generate_library(root: Path, *, seed: int = 0, ffmpeg: str | None = "ffmpeg") -> Manifest:
    """Write a sample library under ``root`` (created if needed; should be empty).

    ``ffmpeg=None`` (or an ffmpeg that is not installed) skips the videos.
    """
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    found = shutil.which(ffmpeg) if ffmpeg else None
    w = _Writer(root=root, rng=rng, ffmpeg=found)
    if found is None:
        w.video_skipped_reason = "ffmpeg not found" if ffmpeg else "videos disabled"
    base = datetime(2016, 3, 1, 9, 0, 0) + timedelta(days=rng.randrange(365))

    _orientations(w, base)
    _cameras(w, base)
    _apple_burst(w, base + timedelta(days=400))
    _time_only_burst(w, base + timedelta(days=420))
    _live_photo(w, base + timedelta(days=500))
    _special_photos(w, base + timedelta(days=600))
    _videos(w, base + timedelta(days=700))
    _broken_and_ignored(w, base)
    return Manifest(
        root=root,
        photos=tuple(w.photos),
        videos=tuple(w.videos),
        errors=tuple(w.errors),
        ignored=tuple(w.ignored),
        bursts=tuple(w.bursts),
        live_pairs=tuple(w.live_pairs),
        video_skipped_reason=w.video_skipped_reason,
    )


# --- pictures -----------------------------------------------------------------------------


def marker_picture(width: int, height: int, seed: int) -> Image.Image:
    """An upright test picture: soft gradient, red block top-left, green block top-right."""
    ys, xs = np.mgrid[0:height, 0:width]
    tint = seed % 97
    pixels = np.stack(
        [
            60 + (xs * 120 // max(width - 1, 1)),
            90 + (ys * 100 // max(height - 1, 1)),
            np.full_like(xs, 120 + tint),
        ],
        axis=-1,
    ).astype(np.uint8)
    bw, bh = max(width // 4, 1), max(height // 4, 1)
    pixels[:bh, :bw] = RED
    pixels[:bh, width - bw :] = GREEN
    return Image.fromarray(pixels, "RGB")


def exif_bytes(
    *,
    make: str | None = None,
    model: str | None = None,
    orientation: int | None = None,
    captured_at: datetime | None = None,
    maker_note: bytes | None = None,
) -> bytes:
    """An EXIF block: IFD0 Make/Model/Orientation, Exif IFD DateTimeOriginal and
    DateTimeDigitized (+ SubsecTime*, + OffsetTime* when ``captured_at`` is aware)."""
    exif = Image.Exif()
    if make is not None:
        exif[0x010F] = make
    if model is not None:
        exif[0x0110] = model
    if orientation is not None:
        exif[0x0112] = orientation
    sub = exif.get_ifd(0x8769)
    if captured_at is not None:
        stamp = captured_at.strftime("%Y:%m:%d %H:%M:%S")
        subsec = f"{captured_at.microsecond // 1000:03d}"
        sub[0x9003] = sub[0x9004] = stamp
        sub[0x9291] = sub[0x9292] = subsec
        offset = captured_at.utcoffset()
        if offset is not None:
            minutes = int(offset.total_seconds()) // 60
            sign = "-" if minutes < 0 else "+"
            sub[0x9011] = sub[0x9012] = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    if maker_note is not None:
        sub[0x927C] = maker_note
    return exif.tobytes()


def apple_maker_note(
    *, burst_id: str | None = None, content_identifier: str | None = None
) -> bytes:
    """An Apple iOS maker note with MakerNoteVersion, BurstUUID and MediaGroupUUID."""
    strings = [(tag, value) for tag, value in ((0x000B, burst_id), (0x0011, content_identifier))]
    present = [(tag, value.encode("ascii") + b"\0") for tag, value in strings if value]
    count = 1 + len(present)
    data_start = 14 + 2 + 12 * count + 4
    table = struct.pack(">HHIi", 0x0001, 9, 1, 14)  # MakerNoteVersion 14
    data = b""
    for tag, raw in present:
        table += struct.pack(">HHII", tag, 2, len(raw), data_start + len(data))
        data += raw
    return (
        b"Apple iOS\0" + b"\x00\x01" + b"MM" + struct.pack(">H", count) + table + b"\0" * 4 + data
    )


def display_p3_profile() -> bytes:
    """An ICC v2 display profile for Display P3 (P3 primaries, D65 white, sRGB curve),
    built from the published primaries: colorants Bradford-adapted to the D50 PCS."""
    primaries = np.array([[0.680, 0.320], [0.265, 0.690], [0.150, 0.060]])
    white_d65 = _xy_to_xyz(0.3127, 0.3290)
    white_d50 = np.array([0.9642, 1.0, 0.8249])
    columns = np.stack([_xy_to_xyz(x, y) for x, y in primaries], axis=1)
    scale = np.linalg.solve(columns, white_d65)
    rgb_to_xyz_d65 = columns * scale
    bradford = np.array(
        [[0.8951, 0.2664, -0.1614], [-0.7502, 1.7135, 0.0367], [0.0389, -0.0685, 1.0296]]
    )
    cone_ratio = np.diag((bradford @ white_d50) / (bradford @ white_d65))
    adapt = np.linalg.inv(bradford) @ cone_ratio @ bradford
    rgb_to_xyz_d50 = adapt @ rgb_to_xyz_d65

    def xyz_tag(xyz: np.ndarray) -> bytes:
        return b"XYZ \0\0\0\0" + b"".join(struct.pack(">i", round(v * 65536)) for v in xyz)

    def text_description(text: str) -> bytes:
        raw = text.encode("ascii") + b"\0"
        return b"desc\0\0\0\0" + struct.pack(">I", len(raw)) + raw + b"\0" * (4 + 4 + 2 + 1 + 67)

    curve = [
        round(65535 * ((v / 12.92) if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4))
        for v in (i / 1023 for i in range(1024))
    ]
    trc = b"curv\0\0\0\0" + struct.pack(">I", 1024) + struct.pack(">1024H", *curve)
    tags: list[tuple[bytes, bytes]] = [
        (b"desc", text_description("Display P3 (safelight samples)")),
        (b"cprt", b"text\0\0\0\0" + b"No copyright, use freely\0"),
        (b"wtpt", xyz_tag(white_d50)),
        (b"rXYZ", xyz_tag(rgb_to_xyz_d50[:, 0])),
        (b"gXYZ", xyz_tag(rgb_to_xyz_d50[:, 1])),
        (b"bXYZ", xyz_tag(rgb_to_xyz_d50[:, 2])),
        (b"rTRC", trc),
    ]
    offset = 128 + 4 + 12 * (len(tags) + 2)
    table, body = b"", b""
    for signature, payload in tags:
        table += struct.pack(">4sII", signature, offset + len(body), len(payload))
        if signature == b"rTRC":
            trc_offset = offset + len(body)
        body += payload + b"\0" * (-len(payload) % 4)
    for signature in (b"gTRC", b"bTRC"):  # the three curves share one table
        table += struct.pack(">4sII", signature, trc_offset, len(trc))
    size = offset + len(body)
    header = (
        struct.pack(">I", size)
        + b"\0\0\0\0"
        + bytes([2, 0x10, 0, 0])
        + b"mntrRGB XYZ "
        + struct.pack(">6H", 2024, 1, 1, 0, 0, 0)
        + b"acsp"
        + b"\0" * 24
        + struct.pack(">I", 0)
        + b"".join(struct.pack(">i", round(v * 65536)) for v in white_d50)
        + b"\0" * 4
        + b"\0" * 16
        + b"\0" * 28
    )
    assert len(header) == 128
    return header + struct.pack(">I", len(tags) + 2) + table + body


def _xy_to_xyz(x: float, y: float) -> np.ndarray:
    return np.array([x / y, 1.0, (1 - x - y) / y])


def _jpeg(
    image: Image.Image, exif: bytes | None, quality: int = 90, icc: bytes | None = None
) -> bytes:
    buffer = io.BytesIO()
    options: dict[str, object] = {"quality": quality}
    if exif is not None:
        options["exif"] = exif
    if icc is not None:
        options["icc_profile"] = icc
    image.save(buffer, "JPEG", **options)
    return buffer.getvalue()


def _photo(
    w: _Writer,
    relative: str,
    *,
    make: str | None,
    model: str | None,
    captured_at: datetime | None,
    size: tuple[int, int] = (480, 320),
    orientation: int = 1,
    maker_note: bytes | None = None,
    burst_id: str | None = None,
    content_identifier: str | None = None,
) -> SamplePhoto:
    upright = marker_picture(*size, seed=w.files)
    stored = upright.transpose(_INVERSE_TRANSPOSE[orientation]) if orientation != 1 else upright
    exif = exif_bytes(
        make=make,
        model=model,
        orientation=orientation,
        captured_at=captured_at,
        maker_note=maker_note,
    )
    path = w.write(relative, _jpeg(stored, exif))
    photo = SamplePhoto(
        path=relative,
        make=make,
        model=model,
        captured_at=captured_at if captured_at is not None else _mtime(path),
        captured_at_source="exif" if captured_at is not None else "file",
        orientation=orientation,
        width=size[0],
        height=size[1],
        burst_id=burst_id,
        content_identifier=content_identifier,
        markers=True,
    )
    w.photos.append(photo)
    return photo


def _mtime(path: Path) -> datetime:
    return _metadata.file_time(path.stat().st_mtime_ns)


def _orientations(w: _Writer, base: datetime) -> None:
    for orientation in range(1, 9):
        _photo(
            w,
            f"orientation/orientation_{orientation}.jpg",
            make="Canon",
            model="Canon EOS R5",
            captured_at=base + timedelta(days=orientation, hours=orientation),
            orientation=orientation,
            size=(480, 320) if orientation % 2 else (320, 480),  # landscape and portrait
        )


def _cameras(w: _Writer, base: datetime) -> None:
    paris = timezone(timedelta(hours=2))
    new_york = timezone(timedelta(hours=-4))
    _photo(
        w,
        "2017/Summer/IMG_0001.JPG",
        make="Apple",
        model="iPhone 7",
        captured_at=(base + timedelta(days=100, microseconds=123000)).replace(tzinfo=paris),
        orientation=6,
        size=(360, 480),
    )
    _photo(
        w,
        "2017/Summer/DSC_0002.jpg",
        make="NIKON CORPORATION",
        model="NIKON D750",
        captured_at=base + timedelta(days=101, microseconds=880000),
    )
    _photo(
        w,
        "2017/Autumn/DSCF0003.jpg",
        make="FUJIFILM",
        model="X-T4",
        captured_at=(base + timedelta(days=180)).replace(tzinfo=new_york),
    )
    _photo(
        w,
        "2017/Autumn/DSC00004.JPG",
        make="SONY",
        model="ILCE-7M3",
        captured_at=base + timedelta(days=181),
        orientation=8,
        size=(320, 480),
    )
    _photo(
        w,
        "2018/Trips/Norway/Day 1/P1000005.JPG",
        make="Panasonic",
        model="DC-GH5",
        captured_at=base + timedelta(days=250),
    )


def _apple_burst(w: _Writer, start: datetime) -> None:
    """Five frames within 0.6 s, one Apple BurstUUID."""
    burst_id = w.new_uuid()
    zone = timezone(timedelta(hours=1))
    paths = []
    for index in range(5):
        relative = f"2019/burst/IMG_{101 + index:04d}.JPG"
        _photo(
            w,
            relative,
            make="Apple",
            model="iPhone 12",
            captured_at=(start + timedelta(milliseconds=150 * index)).replace(tzinfo=zone),
            maker_note=apple_maker_note(burst_id=burst_id),
            burst_id=burst_id,
        )
        paths.append(relative)
    w.bursts.append(SampleBurst(paths=tuple(paths), burst_id=burst_id))


def _time_only_burst(w: _Writer, start: datetime) -> None:
    """Four frames 0.25 s apart from a camera that records no burst id."""
    paths = []
    for index in range(4):
        relative = f"2019/sports/IMG_{2001 + index:04d}.JPG"
        _photo(
            w,
            relative,
            make="Canon",
            model="Canon EOS 90D",
            captured_at=start + timedelta(milliseconds=250 * index),
        )
        paths.append(relative)
    w.bursts.append(SampleBurst(paths=tuple(paths), burst_id=None))


def _live_photo(w: _Writer, captured: datetime) -> None:
    """IMG_0200.HEIC + IMG_0200.MOV, one content identifier, the same capture second."""
    content_id = w.new_uuid()
    zone = timezone(timedelta(hours=2))
    captured_at = captured.replace(microsecond=250000, tzinfo=zone)
    exif = exif_bytes(
        make="Apple",
        model="iPhone 13",
        orientation=1,
        captured_at=captured_at,
        maker_note=apple_maker_note(content_identifier=content_id),
    )
    picture = marker_picture(480, 360, seed=200)
    relative = "2020/live/IMG_0200.HEIC"
    buffer = io.BytesIO()
    try:
        picture.save(buffer, format="HEIF", quality=70, exif=exif)
    except (OSError, ValueError, RuntimeError):  # a pillow-heif without an encoder
        relative = "2020/live/IMG_0200.JPG"
        buffer = io.BytesIO(_jpeg(picture, exif))
    path = w.write(relative, buffer.getvalue())
    del path
    w.photos.append(
        SamplePhoto(
            path=relative,
            make="Apple",
            model="iPhone 13",
            captured_at=captured_at,
            captured_at_source="exif",
            orientation=1,
            width=480,
            height=360,
            content_identifier=content_id,
            markers=True,
        )
    )
    video: str | None = None
    if w.ffmpeg is not None:
        video = "2020/live/IMG_0200.MOV"
        creation = captured_at.strftime("%Y-%m-%dT%H:%M:%S%z")
        if _ffmpeg_video(
            w,
            video,
            seconds=1,
            size=(240, 180),
            audio=False,
            extra=[
                "-movflags",
                "use_metadata_tags",
                "-metadata",
                f"com.apple.quicktime.content.identifier={content_id}",
                "-metadata",
                f"com.apple.quicktime.creationdate={creation}",
                "-metadata",
                "com.apple.quicktime.make=Apple",
                "-metadata",
                "com.apple.quicktime.model=iPhone 13",
            ],
        ):
            w.videos.append(
                SampleVideo(
                    path=video,
                    captured_at=captured_at.replace(microsecond=0),
                    width=240,
                    height=180,
                    rotation=0,
                    duration_seconds=1.0,
                    has_audio=False,
                    content_identifier=content_id,
                )
            )
        else:
            video = None
    w.live_pairs.append(LivePair(photo=relative, video=video, content_identifier=content_id))


def _special_photos(w: _Writer, captured: datetime) -> None:
    # 12 MP: exercises DCT-scaled decoding and real downscaling.
    _photo(
        w,
        "2021/large/PXL_0300.jpg",
        make="Google",
        model="Pixel 7",
        captured_at=captured,
        size=(4000, 3000),
    )
    # Display P3: a flat patch whose sRGB value a test can compute independently.
    patch = Image.new("RGB", (400, 300), P3_PATCH)
    exif = exif_bytes(
        make="Apple", model="iPhone 14", orientation=1, captured_at=captured + timedelta(days=1)
    )
    relative = "2021/p3/IMG_0400.jpg"
    w.write(relative, _jpeg(patch, exif, quality=95, icc=display_p3_profile()))
    w.photos.append(
        SamplePhoto(
            path=relative,
            make="Apple",
            model="iPhone 14",
            captured_at=captured + timedelta(days=1),
            captured_at_source="exif",
            orientation=1,
            width=400,
            height=300,
            display_p3=True,
        )
    )
    # PNG without EXIF: the capture time is the file's modification time.
    relative = "screenshots/Screenshot 2024-01-01 at 10.00.00.png"
    buffer = io.BytesIO()
    marker_picture(320, 200, seed=7).save(buffer, "PNG")
    path = w.write(relative, buffer.getvalue())
    w.photos.append(
        SamplePhoto(
            path=relative,
            make=None,
            model=None,
            captured_at=_mtime(path),
            captured_at_source="file",
            orientation=1,
            width=320,
            height=200,
            markers=True,
        )
    )


def _videos(w: _Writer, captured: datetime) -> None:
    if w.ffmpeg is None:
        return
    stamp = captured.replace(tzinfo=UTC)
    if _ffmpeg_video(
        w,
        "2022/videos/clip.mp4",
        seconds=2,
        size=(320, 240),
        audio=True,
        extra=["-metadata", f"creation_time={stamp:%Y-%m-%dT%H:%M:%SZ}"],
    ):
        w.videos.append(
            SampleVideo(
                path="2022/videos/clip.mp4",
                captured_at=stamp,
                width=320,
                height=240,
                rotation=0,
                duration_seconds=2.0,
                has_audio=True,
            )
        )
    stamp2 = stamp + timedelta(hours=1)
    relative = "2022/videos/portrait.mp4"
    if _ffmpeg_video(
        w,
        relative,
        seconds=1,
        size=(320, 240),
        audio=False,
        extra=["-metadata", f"creation_time={stamp2:%Y-%m-%dT%H:%M:%SZ}"],
    ):
        # ffmpeg 5 cannot write a rotation; patch the track matrix as a phone would write it.
        set_mp4_rotation(w.root / relative, 90)
        w.videos.append(
            SampleVideo(
                path=relative,
                captured_at=stamp2,
                width=240,
                height=320,
                rotation=90,
                duration_seconds=1.0,
                has_audio=False,
            )
        )


def _ffmpeg_video(
    w: _Writer, relative: str, *, seconds: int, size: tuple[int, int], audio: bool, extra: list[str]
) -> bool:
    """Encode a test-pattern video; False (and the manifest says why) if ffmpeg fails."""
    assert w.ffmpeg is not None
    path = w.root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        w.ffmpeg,
        "-nostdin",
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"testsrc=size={size[0]}x{size[1]}:rate=15:duration={seconds}",
    ]
    if audio:
        command += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}"]
    command += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    command += ["-c:a", "aac", "-shortest"] if audio else ["-an"]
    command += [*extra, str(path)]
    result = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        w.video_skipped_reason = "ffmpeg failed: " + _metadata.last_lines(result.stderr)
        path.unlink(missing_ok=True)
        return False
    w.stamp(path)
    return True


def set_mp4_rotation(path: Path, degrees: Literal[90, 180, 270]) -> None:
    """Set the display matrix of the first track (``moov/trak/tkhd``) in place."""
    data = bytearray(path.read_bytes())
    tkhd = _find_box(data, [b"moov", b"trak", b"tkhd"])
    if tkhd is None:
        raise ValueError(f"{path} has no moov/trak/tkhd box")
    version = data[tkhd]
    matrix_at = tkhd + (40 if version == 0 else 52)
    width, height = (v >> 16 for v in struct.unpack(">II", data[matrix_at + 36 : matrix_at + 44]))
    one, w_fixed, h_fixed = 0x10000, width << 16, height << 16
    matrix = {
        90: (0, one, 0, -one, 0, 0, h_fixed, 0, 0x40000000),
        180: (-one, 0, 0, 0, -one, 0, w_fixed, h_fixed, 0x40000000),
        270: (0, -one, 0, one, 0, 0, 0, w_fixed, 0x40000000),
    }[degrees]
    data[matrix_at : matrix_at + 36] = struct.pack(">9i", *matrix)
    path.write_bytes(bytes(data))


def _find_box(
    data: bytearray, trail: list[bytes], start: int = 0, end: int | None = None
) -> int | None:
    """Offset of the payload of the box at ``trail`` (first match at each level)."""
    end = len(data) if end is None else end
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


def _broken_and_ignored(w: _Writer, base: datetime) -> None:
    good = _jpeg(marker_picture(480, 320, seed=1), exif_bytes(captured_at=base))
    w.write("broken/truncated.jpg", good[: len(good) * 6 // 10])
    w.errors.append(ExpectedError("broken/truncated.jpg", "proxies", "CorruptMedia"))
    w.write("broken/empty.jpg", b"")
    w.errors.append(ExpectedError("broken/empty.jpg", "hash", "EmptyFile"))
    ignored = {
        ".thumbnails/hidden.jpg": good,
        "2017/Summer/._IMG_0001.JPG": b"\0\x05\x16\x07\0\x02\0\0Mac OS X        ",
        "@eaDir/IMG_0001.JPG/SYNOPHOTO_THUMB_M.jpg": good,
        "notes.txt": b"Summer 2017: Norway trip.\n",
        "2017/Summer/IMG_0001.xmp": b"<x:xmpmeta xmlns:x='adobe:ns:meta/'/>\n",
    }
    for relative, data in ignored.items():
        w.write(relative, data)
        w.ignored.append(relative)


# --- benchmarks ---------------------------------------------------------------------------


def generate_jpegs(
    root: Path, count: int, megapixels: float, *, seed: int = 0, per_folder: int = 1000
) -> tuple[Path, ...]:
    """``count`` distinct JPEGs of about ``megapixels`` each, fast enough for benchmarks.

    Four frames are encoded once; each file is one of them with its own EXIF block
    spliced in (a different DateTimeOriginal), so every file has its own content hash
    without another encode. Files go in folders of ``per_folder``.
    """
    if count < 0 or megapixels <= 0:
        raise ValueError("count must be >= 0 and megapixels > 0")
    width = max(16, round((megapixels * 1_000_000 * 4 / 3) ** 0.5))
    height = max(12, round(width * 3 / 4))
    rng = np.random.default_rng(seed)
    frames = []
    for index in range(4):
        picture = np.asarray(marker_picture(width, height, seed=seed + index), dtype=np.int16)
        noise = rng.integers(-12, 13, size=picture.shape, dtype=np.int16)  # camera-like grain
        frames.append(
            _jpeg(Image.fromarray(np.clip(picture + noise, 0, 255).astype(np.uint8)), None)
        )
    start = datetime(2015, 1, 1, 8, 0, 0) + timedelta(days=seed % 1000)
    paths = []
    for index in range(count):
        frame = frames[index % len(frames)]
        exif = exif_bytes(
            make="Canon",
            model="Canon EOS 5D Mark IV",
            captured_at=start + timedelta(seconds=37 * index),
        )
        folder = root / f"{index // per_folder:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"IMG_{index:06d}.jpg"
        path.write_bytes(_with_exif(frame, exif))
        paths.append(path)
    return tuple(paths)


def _with_exif(jpeg: bytes, exif: bytes) -> bytes:
    """Insert an APP1 EXIF segment after SOI (and after a JFIF APP0 if present)."""
    position = 2
    if jpeg[2:4] == b"\xff\xe0":
        position = 4 + struct.unpack(">H", jpeg[4:6])[0]
    segment = b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif
    return jpeg[:position] + segment + jpeg[position:]
