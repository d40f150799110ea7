"""Metadata of photos and videos: round-trips from generated files, ExifTool as an oracle
where installed, robustness against broken EXIF and files, and no pixel decoding."""

from __future__ import annotations

import io
import json
import random
import shutil
import struct
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageFile

from safelight.library.files.errors import (
    CorruptMedia,
    MediaError,
    UnreadableFile,
    UnsupportedMedia,
)
from safelight.library.media.exif import ExifDate, read_exif
from safelight.library.media.metadata import (
    captured_at_from_exif,
    file_time,
    parse_exif_datetime,
    read_image_metadata,
    read_video_metadata,
    video_metadata_from_probe,
)
from safelight.testing.exif import apple_maker_note, exif_bytes
from safelight.testing.samplegen import Manifest, generate_library

HAVE_FFMPEG = shutil.which("ffmpeg") is not None and shutil.which("ffprobe") is not None
EXIFTOOL = shutil.which("exiftool")
needs_ffmpeg = pytest.mark.skipif(not HAVE_FFMPEG, reason="ffmpeg/ffprobe not installed")
needs_exiftool = pytest.mark.skipif(EXIFTOOL is None, reason="exiftool (test oracle) not installed")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return generate_library(tmp_path_factory.mktemp("library"), seed=3)


def jpeg_with(exif: bytes, size: tuple[int, int] = (64, 48)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (90, 120, 150)).save(buffer, "JPEG", exif=exif)
    return buffer.getvalue()


# --- round trips from the generated library -------------------------------------------------


def test_every_generated_photo_reads_back_as_written(library: Manifest) -> None:
    assert library.expected_image_count >= 25
    for photo in library.photos:
        meta = read_image_metadata(library.root / photo.path)
        assert (meta.width, meta.height) == (photo.width, photo.height), photo.path
        assert meta.orientation == photo.orientation, photo.path
        assert meta.captured_at == photo.captured_at, photo.path
        assert meta.captured_at.tzinfo == photo.captured_at.tzinfo, photo.path
        assert meta.captured_at_source == photo.captured_at_source, photo.path
        assert (meta.make, meta.model) == (photo.make, photo.model), photo.path
        assert meta.burst_id == photo.burst_id, photo.path
        assert meta.content_identifier == photo.content_identifier, photo.path


@pytest.mark.parametrize("orientation", range(1, 9))
def test_orientation_and_displayed_size(library: Manifest, orientation: int) -> None:
    photo = library.photo(f"orientation/orientation_{orientation}.jpg")
    meta = read_image_metadata(library.root / photo.path)
    assert meta.orientation == orientation
    with Image.open(library.root / photo.path) as stored:
        stored_size = stored.size
    swapped = orientation >= 5
    assert (meta.width, meta.height) == (stored_size[::-1] if swapped else stored_size)
    assert meta.width < meta.height if orientation % 2 == 0 else meta.width > meta.height


def test_capture_time_kinds(library: Manifest) -> None:
    aware = read_image_metadata(library.root / "2017/Summer/IMG_0001.JPG")
    assert aware.captured_at.utcoffset() == timedelta(hours=2)
    assert aware.captured_at.microsecond == 123000
    naive = read_image_metadata(library.root / "2017/Summer/DSC_0002.jpg")
    assert naive.captured_at.tzinfo is None  # wall clock, zone unknown
    assert naive.captured_at.microsecond == 880000
    png = library.root / "screenshots/Screenshot 2024-01-01 at 10.00.00.png"
    from_file = read_image_metadata(png)
    assert from_file.captured_at_source == "file"
    assert from_file.captured_at == file_time(png.stat().st_mtime_ns)
    assert from_file.captured_at.tzinfo is UTC


def test_burst_and_live_photo_identifiers(library: Manifest) -> None:
    apple_burst = next(b for b in library.bursts if b.burst_id)
    ids = {read_image_metadata(library.root / p).burst_id for p in apple_burst.paths}
    assert ids == {apple_burst.burst_id}
    other = next(b for b in library.bursts if b.burst_id is None)
    assert {read_image_metadata(library.root / p).burst_id for p in other.paths} == {None}
    pair = library.live_pairs[0]
    photo = read_image_metadata(library.root / pair.photo)
    assert photo.format == "HEIF"
    assert photo.content_identifier == pair.content_identifier


def test_reading_metadata_decodes_no_pixels(
    library: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pillow_heif.as_plugin

    def refuse(self: object) -> None:
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", refuse)
    monkeypatch.setattr(Image.Image, "load", refuse)
    monkeypatch.setattr(pillow_heif.as_plugin._LibHeifImageFile, "load", refuse)
    for path in (
        "2021/large/PXL_0300.jpg",
        "2020/live/IMG_0200.HEIC",
        "screenshots/Screenshot 2024-01-01 at 10.00.00.png",
        "orientation/orientation_6.jpg",
    ):
        assert read_image_metadata(library.root / path).width > 0


@needs_exiftool
def test_exiftool_agrees_on_generated_photos(library: Manifest) -> None:
    assert EXIFTOOL is not None
    jpegs = [p for p in library.photos if p.captured_at_source == "exif"]
    out = subprocess.run(
        [EXIFTOOL, "-j", "-n", "-G1", "-a", "-IFD0:Orientation", "-ExifIFD:DateTimeOriginal",
         "-ExifIFD:SubSecTimeOriginal", "-ExifIFD:OffsetTimeOriginal", "-IFD0:Make", "-IFD0:Model",
         "-Apple:BurstUUID", "-Apple:MediaGroupUUID", *(str(library.root / p.path) for p in jpegs)],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    by_file = {
        Path(row["SourceFile"]).relative_to(library.root).as_posix(): row for row in json.loads(out)
    }
    for photo in jpegs:
        row = by_file[photo.path]
        meta = read_image_metadata(library.root / photo.path)
        assert row["IFD0:Orientation"] == meta.orientation, photo.path
        assert row["ExifIFD:DateTimeOriginal"] == meta.captured_at.strftime("%Y:%m:%d %H:%M:%S")
        assert int(row["ExifIFD:SubSecTimeOriginal"]) * 1000 == meta.captured_at.microsecond
        offset = row.get("ExifIFD:OffsetTimeOriginal")
        assert (offset is None) == (meta.captured_at.tzinfo is None), photo.path
        assert (row["IFD0:Make"], row["IFD0:Model"]) == (meta.make, meta.model)
        assert row.get("Apple:BurstUUID") == meta.burst_id, photo.path
        assert row.get("Apple:MediaGroupUUID") == meta.content_identifier, photo.path


# --- EXIF dates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "subsec", "offset", "expected"),
    [
        ("2021:04:11 15:47:53", "054", "-05:00",
         datetime(2021, 4, 11, 15, 47, 53, 54000, tzinfo=timezone(-timedelta(hours=5)))),
        ("2021:04:11 15:47:53", "5", None, datetime(2021, 4, 11, 15, 47, 53, 500000)),
        ("2021:04:11 15:47:53", "0234567", "+05:30",
         datetime(2021, 4, 11, 15, 47, 53, 23456, tzinfo=timezone(timedelta(hours=5, minutes=30)))),
        ("2021-04-11 15:47:53", None, None, datetime(2021, 4, 11, 15, 47, 53)),
        ("2021:04:11 15:47:53\x00", " ", "   :  ", datetime(2021, 4, 11, 15, 47, 53)),
        ("2021:04:11 15:47:53", "x1", "+25:00", datetime(2021, 4, 11, 15, 47, 53)),
        ("0000:00:00 00:00:00", None, None, None),
        ("2021:02:30 10:00:00", None, None, None),
        ("    :  :     :  :  ", None, None, None),
        ("", None, None, None),
    ],
)  # fmt: skip
def test_parse_exif_datetime(
    value: str, subsec: str | None, offset: str | None, expected: datetime | None
) -> None:
    parsed = parse_exif_datetime(value, subsec, offset)
    assert parsed == expected
    if expected is not None:
        assert parsed is not None and parsed.tzinfo == expected.tzinfo


def test_digitized_is_used_when_original_is_unusable() -> None:
    dates = (
        ExifDate("0000:00:00 00:00:00", None, None),
        ExifDate("2020:01:02 03:04:05", None, None),
    )
    assert captured_at_from_exif(dates) == datetime(2020, 1, 2, 3, 4, 5)
    assert captured_at_from_exif(()) is None


def test_file_time_keeps_microseconds() -> None:
    stamp = file_time(1_700_000_000_123_456_789)
    assert stamp == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)


# --- maker notes ----------------------------------------------------------------------------


def test_apple_maker_note_round_trip() -> None:
    fields = read_exif(
        exif_bytes(
            make="Apple", maker_note=apple_maker_note(burst_id="B-1", content_identifier="C-2")
        )
    )
    assert (fields.burst_id, fields.content_identifier) == ("B-1", "C-2")


def canon_exif(continuous_drive: int, sequence_number: int) -> bytes:
    """EXIF with a Canon maker note (plain IFD, offsets relative to the TIFF header):
    CameraSettings[5] = ContinuousDrive, ShotInfo[9] = SequenceNumber."""
    settings = struct.pack(">6h", 12, 0, 0, 0, 0, continuous_drive)  # Pillow writes "MM"
    shot_info = struct.pack(">10h", 20, 0, 0, 0, 0, 0, 0, 0, 0, sequence_number)
    note_length = 2 + 2 * 12 + 4 + len(settings) + len(shot_info)
    placeholder = bytes([0xA5]) * note_length
    blob = exif_bytes(make="Canon", model="Canon EOS 7D", maker_note=placeholder)
    note_at = blob.index(placeholder) - 6  # the TIFF header follows "Exif\0\0"
    data_at = note_at + 2 + 2 * 12 + 4
    note = (
        struct.pack(">H", 2)
        + struct.pack(">HHII", 0x0001, 3, 6, data_at)
        + struct.pack(">HHII", 0x0004, 3, 10, data_at + len(settings))
        + bytes(4) + settings + shot_info
    )  # fmt: skip
    assert len(note) == note_length
    return blob.replace(placeholder, note)


def test_canon_sequence_number_only_in_continuous_drive() -> None:
    assert read_exif(canon_exif(continuous_drive=1, sequence_number=3)).sequence_number == 3
    assert read_exif(canon_exif(continuous_drive=0, sequence_number=3)).sequence_number is None


def panasonic_exif(burst_mode: int, sequence_number: int) -> bytes:
    """Little-endian note in a big-endian TIFF, as ExifTool allows: the order is guessed."""
    ifd = (
        struct.pack("<H", 2)
        + struct.pack("<HHIHH", 0x002A, 3, 1, burst_mode, 0)
        + struct.pack("<HHII", 0x002B, 4, 1, sequence_number)
        + bytes(4)
    )
    return exif_bytes(make="Panasonic", maker_note=b"Panasonic\0\0\0" + ifd)


def fujifilm_exif(sequence_number: int) -> bytes:
    ifd = struct.pack("<H", 1) + struct.pack("<HHIHH", 0x1101, 3, 1, sequence_number, 0) + bytes(4)
    return exif_bytes(make="FUJIFILM", maker_note=b"FUJIFILM" + struct.pack("<I", 12) + ifd)


def test_panasonic_and_fujifilm_sequence_numbers() -> None:
    assert read_exif(panasonic_exif(burst_mode=1, sequence_number=4)).sequence_number == 4
    assert read_exif(panasonic_exif(burst_mode=0, sequence_number=4)).sequence_number is None
    assert read_exif(fujifilm_exif(2)).sequence_number == 2
    assert read_exif(fujifilm_exif(0)).sequence_number is None


@needs_exiftool
def test_exiftool_reads_the_same_sequence_numbers(tmp_path: Path) -> None:
    assert EXIFTOOL is not None
    cases = {
        "canon.jpg": (canon_exif(1, 3), "Canon:SequenceNumber", 3),
        "panasonic.jpg": (panasonic_exif(1, 4), "Panasonic:SequenceNumber", 4),
        "fuji.jpg": (fujifilm_exif(2), "FujiFilm:SequenceNumber", 2),
    }
    for name, (exif, _, expected) in cases.items():
        (tmp_path / name).write_bytes(jpeg_with(exif))
        assert read_image_metadata(tmp_path / name).sequence_number == expected
    out = subprocess.run(
        [EXIFTOOL, "-j", "-n", "-G1", "-SequenceNumber", *(str(tmp_path / n) for n in cases)],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    rows = {Path(r["SourceFile"]).name: r for r in json.loads(out)}
    for name, (_, tag, expected) in cases.items():
        assert rows[name][tag] == expected, name


# --- broken EXIF and broken files ------------------------------------------------------------


def test_exif_reader_survives_garbage() -> None:
    """Every truncation and 300 random corruptions of a real block: never an exception."""
    blob = exif_bytes(
        make="Apple", model="iPhone 12", orientation=6,
        captured_at=datetime(2020, 5, 6, 7, 8, 9, tzinfo=UTC),
        maker_note=apple_maker_note(burst_id="B", content_identifier="C"),
    )  # fmt: skip
    assert read_exif(blob).burst_id == "B"
    for end in range(len(blob)):
        read_exif(blob[:end])
    rng = random.Random(1)
    for _ in range(300):
        broken = bytearray(blob)
        for _ in range(rng.randrange(1, 8)):
            broken[rng.randrange(6, len(broken))] = rng.randrange(256)
        fields = read_exif(bytes(broken))
        assert fields.orientation is None or 1 <= fields.orientation <= 8
    assert read_exif(b"") == read_exif(b"Exif\0\0") == read_exif(b"garbage!")


# Pillow's JPEG plugin parses EXIF at open to look for a resolution, and warns about the
# block this test breaks on purpose: Pillow's warning, not ours (only a log line in use).
@pytest.mark.filterwarnings("ignore:Corrupt EXIF data:UserWarning")
def test_broken_exif_in_a_good_jpeg_still_reads(tmp_path: Path) -> None:
    blob = bytearray(exif_bytes(make="Canon", orientation=3, captured_at=datetime(2020, 1, 1)))
    blob[10:14] = b"\xff\xff\xff\xff"  # IFD0 offset points nowhere
    path = tmp_path / "odd.jpg"
    path.write_bytes(jpeg_with(bytes(blob)))
    meta = read_image_metadata(path)
    assert (meta.width, meta.height, meta.orientation, meta.captured_at_source) == (
        64,
        48,
        1,
        "file",
    )


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"this is not a photo at all", UnsupportedMedia),
        (b"", UnsupportedMedia),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", MediaError),  # a JPEG cut inside its header
    ],
)
def test_files_that_are_not_images(tmp_path: Path, content: bytes, error: type[MediaError]) -> None:
    path = tmp_path / "fake.jpg"
    path.write_bytes(content)
    with pytest.raises(error) as caught:
        read_image_metadata(path)
    assert caught.value.reason


def test_truncated_header_of_a_real_jpeg(library: Manifest, tmp_path: Path) -> None:
    data = (library.root / "2017/Summer/DSC_0002.jpg").read_bytes()
    path = tmp_path / "cut.jpg"
    path.write_bytes(data[:300])
    with pytest.raises(CorruptMedia):
        read_image_metadata(path)


def test_a_folder_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "album.jpg").mkdir()
    with pytest.raises(UnreadableFile):
        read_image_metadata(tmp_path / "album.jpg")


# --- videos ---------------------------------------------------------------------------------


@needs_ffmpeg
def test_every_generated_video_reads_back(library: Manifest) -> None:
    assert library.expected_video_count == 3
    for video in library.videos:
        meta = read_video_metadata(library.root / video.path)
        assert (meta.width, meta.height, meta.rotation) == (
            video.width,
            video.height,
            video.rotation,
        )
        assert meta.captured_at == video.captured_at, video.path
        assert meta.captured_at_source == "video"
        assert meta.has_audio == video.has_audio
        assert meta.codec == "h264"
        assert meta.duration_seconds == pytest.approx(video.duration_seconds, abs=0.1)
        assert meta.content_identifier == video.content_identifier
    live = read_video_metadata(library.root / library.live_pairs[0].video)  # type: ignore[operator]
    assert (live.make, live.model) == ("Apple", "iPhone 13")
    assert live.captured_at.utcoffset() == timedelta(hours=2)  # Apple's local creation date


@needs_ffmpeg
def test_video_that_is_not_a_video(tmp_path: Path) -> None:
    path = tmp_path / "broken.mp4"
    path.write_bytes(b"\0\0\0\x18ftypmp42" + bytes(200))
    with pytest.raises(CorruptMedia, match="ffprobe could not read the video"):
        read_video_metadata(path)


@needs_ffmpeg
def test_playlist_disguised_as_a_video_is_refused(tmp_path: Path) -> None:
    """ffmpeg would follow an HLS playlist to other files; only video demuxers may run."""
    secret = tmp_path / "secret.ts"
    secret.write_bytes(b"G" + bytes(187))
    path = tmp_path / "movie.mp4"
    path.write_text(
        f"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile://{secret}\n#EXT-X-ENDLIST\n"
    )
    with pytest.raises(CorruptMedia):
        read_video_metadata(path)


def test_missing_ffprobe(tmp_path: Path) -> None:
    path = tmp_path / "clip.mp4"
    path.write_bytes(b"x")
    with pytest.raises(UnsupportedMedia, match="not installed"):
        read_video_metadata(path, ffprobe=str(tmp_path / "no-ffprobe"))


def probe(stream: dict[str, Any], tags: dict[str, str] | None = None) -> dict[str, Any]:
    base = {"codec_type": "video", "codec_name": "hevc", "width": 1920, "height": 1080}
    return {"streams": [{**base, **stream}], "format": {"duration": "3.5", "tags": tags or {}}}


def test_probe_rotation_forms() -> None:
    side = probe({"side_data_list": [{"side_data_type": "Display Matrix", "rotation": -90}]})
    meta = video_metadata_from_probe(side, 0)
    assert (meta.rotation, meta.width, meta.height) == (90, 1080, 1920)
    assert video_metadata_from_probe(probe({"tags": {"rotate": "270"}}), 0).rotation == 270
    assert (
        video_metadata_from_probe(probe({"side_data_list": [{"rotation": 180}]}), 0).rotation == 180
    )
    assert video_metadata_from_probe(probe({}), 0).rotation == 0


def test_probe_capture_time_preference() -> None:
    both = probe({}, {"com.apple.quicktime.creationdate": "2021-04-11T15:47:53-0500",
                      "creation_time": "2021-04-11T20:47:53.000000Z"})  # fmt: skip
    meta = video_metadata_from_probe(both, 0)
    assert meta.captured_at == datetime(
        2021, 4, 11, 15, 47, 53, tzinfo=timezone(-timedelta(hours=5))
    )
    assert meta.captured_at.utcoffset() == -timedelta(hours=5)
    utc = video_metadata_from_probe(probe({}, {"creation_time": "2021-04-11T20:47:53Z"}), 0)
    assert utc.captured_at == datetime(2021, 4, 11, 20, 47, 53, tzinfo=UTC)
    unset = video_metadata_from_probe(probe({}, {"creation_time": "1970-01-01T00:00:00Z"}), 10**18)
    assert unset.captured_at_source == "file"
    assert unset.captured_at == file_time(10**18)
    assert unset.duration_seconds == 3.5


def test_probe_without_video_stream_or_size() -> None:
    audio_only = {"streams": [{"codec_type": "audio"}], "format": {}}
    with pytest.raises(UnsupportedMedia, match="no video stream"):
        video_metadata_from_probe(audio_only, 0)
    cover_art = {"streams": [{"codec_type": "video", "width": 10, "height": 10,
                              "disposition": {"attached_pic": 1}}], "format": {}}  # fmt: skip
    with pytest.raises(UnsupportedMedia):
        video_metadata_from_probe(cover_art, 0)
    with pytest.raises(CorruptMedia):
        video_metadata_from_probe(probe({"width": 0}), 0)


@pytest.mark.parametrize(
    ("transfer", "hdr"),
    [("arib-std-b67", True), ("smpte2084", True), ("bt709", False), (None, False)],
)
def test_probe_hdr(transfer: str | None, hdr: bool) -> None:
    stream = {"color_transfer": transfer} if transfer else {}
    assert video_metadata_from_probe(probe(stream), 0).hdr is hdr
