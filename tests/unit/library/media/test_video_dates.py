"""A video's own local-time tag wins over the UTC ``creation_time`` (ADR 0054): Apple's
``com.apple.quicktime.creationdate`` and AVCHD's recording date (MDPM), read as ExifTool
reads them (``exiftool -time:all``, the oracle) from files the tests build."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from safelight.library.media.capturetime import mdpm_datetime, video_capture_time
from safelight.library.media.containers import avchd_recording_date
from safelight.library.media.metadata import read_video_metadata
from safelight.testing.familyvideos import avchd_clip, family_format_clip, quicktime_clip

FFMPEG = shutil.which("ffmpeg") and shutil.which("ffprobe")
EXIFTOOL = shutil.which("exiftool")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg/ffprobe not installed")
needs_exiftool = pytest.mark.skipif(EXIFTOOL is None, reason="exiftool (the oracle) not installed")

PARIS_SUMMER = timezone(timedelta(hours=2))
INDIA = timezone(timedelta(hours=5, minutes=30))
NEWFOUNDLAND = timezone(-timedelta(hours=3, minutes=30))


def exiftool_times(path: Path) -> dict[str, Any]:
    """``exiftool -time:all -j -G1``, without the file system's own times."""
    out = subprocess.run(
        ["exiftool", "-time:all", "-j", "-G1", str(path)], check=True, capture_output=True
    ).stdout
    [tags] = json.loads(out)
    return {k: v for k, v in tags.items() if not k.startswith(("System:", "SourceFile"))}


def exiftool_date(text: str) -> datetime:
    """ExifTool's ``2024:07:14 18:03:12+02:00`` (or without a zone, naive)."""
    date, _, time = text.partition(" ")
    return datetime.fromisoformat(date.replace(":", "-") + "T" + time)


# --- AVCHD's MDPM ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("0420240714180312", datetime(2024, 7, 14, 18, 3, 12, tzinfo=PARIS_SUMMER)),
        ("0b20231231233005", datetime(2023, 12, 31, 23, 30, 5, tzinfo=INDIA)),
        ("2720240101000000", datetime(2024, 1, 1, tzinfo=NEWFOUNDLAND)),
        ("4420240714180312", datetime(2024, 7, 14, 18, 3, 12, tzinfo=PARIS_SUMMER)),  # DST flag
        ("0020000101000000", datetime(2000, 1, 1, tzinfo=UTC)),
        ("8020240714180312", datetime(2024, 7, 14, 18, 3, 12)),  # the unused bit: no zone
        ("1e20240714180312", datetime(2024, 7, 14, 18, 3, 12)),  # 15 hours: no zone
        ("042024071418031a", None),  # not BCD
        ("0420240231180312", None),  # 31 February
        ("04202407141803", None),  # cut short
    ],
)
def test_an_mdpm_date_is_read_as_exiftool_reads_it(data: str, expected: datetime | None) -> None:
    parsed = mdpm_datetime(bytes.fromhex(data))
    assert parsed == expected
    if expected is not None:
        assert parsed is not None and parsed.utcoffset() == expected.utcoffset()


@needs_ffmpeg
@needs_exiftool
@pytest.mark.parametrize(
    ("suffix", "recorded"),
    [
        (".mts", datetime(2024, 7, 14, 18, 3, 12, tzinfo=PARIS_SUMMER)),
        (".m2ts", datetime(2023, 12, 31, 23, 30, 5, tzinfo=INDIA)),
        (".mts", datetime(2019, 3, 2, 7, 45, 0, tzinfo=NEWFOUNDLAND)),
        (".mts", datetime(2000, 1, 1, 0, 0, 0, tzinfo=UTC)),  # zeros: emulation prevention
    ],
)
def test_an_avchd_clip_is_dated_by_its_recording_date_as_exiftool_says(
    tmp_path: Path, suffix: str, recorded: datetime
) -> None:
    clip = avchd_clip(tmp_path / f"clip{suffix}", recorded=recorded)
    oracle = exiftool_times(clip)
    assert exiftool_date(oracle["H264:DateTimeOriginal"]) == recorded  # what the file holds
    meta = read_video_metadata(clip)
    assert (meta.captured_at, meta.captured_at_source) == (recorded, "video")
    assert meta.captured_at.utcoffset() == recorded.utcoffset()


@needs_ffmpeg
def test_the_recording_date_is_found_with_188_byte_packets_too(tmp_path: Path) -> None:
    recorded = datetime(2024, 7, 14, 18, 3, 12, tzinfo=PARIS_SUMMER)
    avchd = avchd_clip(tmp_path / "clip.mts", recorded=recorded)
    plain = tmp_path / "plain.ts"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(avchd), "-c", "copy", "-f", "mpegts", str(plain)],
        check=True,
    )
    assert plain.read_bytes()[188] == 0x47
    with plain.open("rb") as fp:
        assert mdpm_datetime(avchd_recording_date(fp) or b"") == recorded


@needs_ffmpeg
def test_clips_without_an_mdpm_have_no_recording_date(tmp_path: Path) -> None:
    for clip in (
        family_format_clip(tmp_path / "clip.mts"),
        quicktime_clip(tmp_path / "clip.mov", creation_time="2024-07-14T16:03:12Z"),
        family_format_clip(tmp_path / "clip.m2v"),
    ):
        with clip.open("rb") as fp:
            assert avchd_recording_date(fp) is None
    undated = read_video_metadata(tmp_path / "clip.mts")
    assert undated.captured_at_source == "file"


# --- QuickTime ------------------------------------------------------------------------------


@needs_ffmpeg
@needs_exiftool
def test_apples_creationdate_wins_over_the_utc_creation_time(tmp_path: Path) -> None:
    """Shot at 01:03 on 15 July in Paris: the UTC creation time says 14 July."""
    clip = quicktime_clip(
        tmp_path / "IMG_0001.MOV",
        creation_time="2024-07-14T23:03:12Z",
        creationdate="2024-07-15T01:03:12+0200",
    )
    oracle = exiftool_times(clip)
    assert exiftool_date(oracle["Keys:CreationDate"]) == datetime(
        2024, 7, 15, 1, 3, 12, tzinfo=PARIS_SUMMER
    )
    assert oracle["QuickTime:CreateDate"] == "2024:07:14 23:03:12"  # UTC, as the spec says
    meta = read_video_metadata(clip)
    assert meta.captured_at.isoformat() == "2024-07-15T01:03:12+02:00"
    assert meta.captured_at_source == "video"


@needs_ffmpeg
@needs_exiftool
def test_a_utc_creation_time_alone_is_read_as_utc(tmp_path: Path) -> None:
    clip = quicktime_clip(tmp_path / "clip.mp4", creation_time="2024-07-14T23:03:12Z")
    oracle = exiftool_times(clip)
    assert "Keys:CreationDate" not in oracle
    assert oracle["QuickTime:CreateDate"] == "2024:07:14 23:03:12"
    meta = read_video_metadata(clip)
    assert meta.captured_at.isoformat() == "2024-07-14T23:03:12+00:00"
    # An instant without a local time: its position gives the local day (ADR 0065).
    assert meta.captured_is_instant


def test_only_the_utc_creation_time_is_an_instant_without_a_local_time() -> None:
    def instant(creationdate: object, content_date: object, creation_time: object) -> bool:
        chosen = video_capture_time(
            creationdate=creationdate,
            recorded=None,
            content_date=content_date,
            creation_time=creation_time,
        )
        assert chosen is not None
        return chosen.is_instant

    utc = "2024-07-14T23:03:12Z"
    assert instant(None, None, utc)
    assert not instant("2024-07-15T01:03:12+0200", None, utc)
    assert not instant(None, "2024-07-14T20:03:12-0300", utc)
    assert not instant("2024-07-15T01:03:12", None, utc)  # a wall clock, zone unknown


def test_the_order_of_a_videos_dates() -> None:
    mdpm = bytes.fromhex("0420240714180312")
    local = "2024-07-15T01:03:12+0200"
    day = "2024-07-14T20:03:12-0300"
    utc = "2024-07-14T23:03:12Z"

    def at(
        creationdate: object, recorded: bytes | None, content_date: object, creation_time: object
    ) -> str | None:
        chosen = video_capture_time(
            creationdate=creationdate,
            recorded=recorded,
            content_date=content_date,
            creation_time=creation_time,
        )
        if chosen is None:
            return None
        assert chosen.source == "video"
        return chosen.at.isoformat()

    assert at(local, mdpm, day, utc) == "2024-07-15T01:03:12+02:00"
    assert at(None, mdpm, day, utc) == "2024-07-14T18:03:12+02:00"
    assert at(None, None, day, utc) == "2024-07-14T20:03:12-03:00"
    assert at("not a date", None, None, utc) == "2024-07-14T23:03:12+00:00"
    assert at(None, None, None, "2024-07-14T23:03:12") == "2024-07-14T23:03:12+00:00"  # UTC
    assert at("2024-07-15T01:03:12", None, None, utc) == "2024-07-15T01:03:12"  # a wall clock
    assert at(None, None, "2024-07-14 20:03:12", utc) == "2024-07-14T20:03:12"
    assert at(None, None, "2024-07-14", utc) == "2024-07-14T23:03:12+00:00"  # no time of day
    assert at(None, None, "2009", utc) == "2024-07-14T23:03:12+00:00"  # a song's year
    assert at(None, bytes.fromhex("04202407141803ff"), None, utc) == "2024-07-14T23:03:12+00:00"
    assert at(None, None, None, "1904-01-01T00:00:00Z") is None  # QuickTime's unset time
    assert at("1970-01-01T00:00:00+0000", None, None, None) is None
    assert at(None, None, None, None) is None


@needs_ffmpeg
@needs_exiftool
@pytest.mark.parametrize("suffix", [".mov", ".mp4"])
def test_a_content_date_with_its_zone_wins_over_the_utc_creation_time(
    tmp_path: Path, suffix: str
) -> None:
    """``©day`` as an older iPhone wrote it: 13:27 on 12 February in California, which
    is 21:27 UTC."""
    clip = quicktime_clip(
        tmp_path / f"clip{suffix}",
        creation_time="2010-02-12T21:27:14Z",
        content_date="2010-02-12T13:27:14-0800",
    )
    oracle = exiftool_times(clip)
    [content] = [v for k, v in oracle.items() if k.endswith(":ContentCreateDate")]
    assert exiftool_date(content).isoformat() == "2010-02-12T13:27:14-08:00"
    assert read_video_metadata(clip).captured_at.isoformat() == "2010-02-12T13:27:14-08:00"
