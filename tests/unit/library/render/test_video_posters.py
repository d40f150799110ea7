"""Every clip a family films gets a poster and a web video (ADR 0054): clips of one
frame to a few seconds, a container that claims more than its frames cover, the old
phone formats, a raw MPEG-2 stream with no duration, and AVCHD's 192-byte MPEG-TS."""

from __future__ import annotations

import io
import shutil
import stat
import subprocess
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from safelight.library.files.mediatypes import media_type
from safelight.library.media.metadata import VideoMetadata
from safelight.library.render.video import (
    VideoProxies,
    make_video_proxies,
    poster_time,
    probe_video,
)
from safelight.testing.familyvideos import (
    black_clip,
    claim_duration,
    family_format_clip,
    short_clip,
)
from safelight.testing.specs import VIDEO_SPEC, video_spec

FFMPEG = shutil.which("ffmpeg")
needs_ffmpeg = pytest.mark.skipif(
    FFMPEG is None or shutil.which("ffprobe") is None, reason="ffmpeg/ffprobe not installed"
)

BLANK_STDDEV = 5.0
"""Below this spread of grey levels a poster is one flat colour; testsrc2's bars and
pattern spread over 60."""


def alive() -> None:
    pass


def probed(
    *, duration: float | None, packets: int | None, fps: float | None = 25.0
) -> VideoMetadata:
    return VideoMetadata(
        width=320, height=240, rotation=0, duration_seconds=duration, codec="h264",
        has_audio=False, captured_at=datetime(2024, 1, 1, tzinfo=UTC),
        captured_at_source="file", make=None, model=None, content_identifier=None,
        frame_rate=fps, video_packets=packets,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("duration", "packets", "fps", "expected"),
    [
        (3.0, 75, 25.0, 1.0),  # a long clip: the spec's second
        (0.5, 13, 25.0, 0.25),  # short: half of it
        (0.2, 5, 25.0, 0.1),
        (0.04, 1, 25.0, 0.0),  # one frame: the start, never a seek
        (5.0, 2, 25.0, 0.04),  # a 5 s audio track beside two frames: half of the frames'
        (None, 25, 25.0, 0.5),  # a raw stream (.m2v): no duration, counted instead
        (2.0, None, None, 1.0),  # nothing counted: the container's word
        (None, None, None, 0.0),  # nothing known: the start
        (0.0, 10, None, 0.0),
    ],
)
def test_the_poster_time_is_within_the_frames(
    duration: float | None, packets: int | None, fps: float | None, expected: float
) -> None:
    at = poster_time(probed(duration=duration, packets=packets, fps=fps), VIDEO_SPEC)
    assert at == pytest.approx(expected)


def test_the_poster_time_follows_the_spec_for_long_clips() -> None:
    long_clip = probed(duration=600.0, packets=15000)
    assert poster_time(long_clip, video_spec(poster_at_seconds=2.5)) == 2.5
    assert poster_time(replace(long_clip, video_packets=20), VIDEO_SPEC) == pytest.approx(0.4)


def poster_of(result: VideoProxies) -> Image.Image:
    return Image.open(io.BytesIO(result.poster.preview.data)).convert("L")


def spread(image: Image.Image) -> float:
    return float(ImageStat.Stat(image).stddev[0])


async def proxies(source: Path, tmp_path: Path, ffmpeg: str = "ffmpeg") -> VideoProxies:
    out = tmp_path / f"out-{source.stem}"
    out.mkdir()
    return await make_video_proxies(source, out, video_spec(ffmpeg=ffmpeg), alive)


@needs_ffmpeg
@pytest.mark.parametrize(
    ("frames", "audio_seconds"),
    [(1, None), (5, None), (13, None), (75, None), (1, 5.0), (3, 4.0)],
    ids=["1-frame", "0.2s", "0.5s", "3s", "1-frame-in-5s-audio", "3-frames-in-4s-audio"],
)
async def test_every_short_clip_gets_a_poster_of_its_frames(
    tmp_path: Path, frames: int, audio_seconds: float | None
) -> None:
    clip = short_clip(tmp_path / "clip.mp4", frames=frames, audio_seconds=audio_seconds)
    result = await proxies(clip, tmp_path)
    assert poster_of(result).size == (320, 240)
    assert spread(poster_of(result)) > BLANK_STDDEV * 4
    assert result.web_video.stat().st_size > 0


@needs_ffmpeg
async def test_a_header_that_claims_minutes_gets_a_poster_of_its_frames(tmp_path: Path) -> None:
    clip = claim_duration(short_clip(tmp_path / "clip.mp4", frames=5), 100.0)
    metadata = await probe_video(clip)
    assert metadata.duration_seconds == pytest.approx(100.0)
    assert poster_time(metadata, VIDEO_SPEC) == pytest.approx(0.1)
    result = await proxies(clip, tmp_path)
    assert spread(poster_of(result)) > BLANK_STDDEV * 4


@needs_ffmpeg
async def test_a_black_clip_has_a_blank_poster(tmp_path: Path) -> None:
    """The measure above tells a blank poster from a clip's frame."""
    result = await proxies(black_clip(tmp_path / "black.mp4", seconds=0.2), tmp_path)
    assert spread(poster_of(result)) < BLANK_STDDEV


def ffmpeg_that_fails_to_seek(folder: Path) -> Path:
    """The real ffmpeg, except that a poster asked for past the start ends with an error
    and no frame, as newer ffmpegs end when no frame reached the encoder."""
    script = folder / "ffmpeg"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {folder / "calls"}\n'
        'case "$*" in *"-ss 0.000 "*) ;; *-ss*) echo "Could not open encoder" >&2; exit 1;; esac\n'
        f'exec {FFMPEG} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@needs_ffmpeg
async def test_a_seek_that_fails_falls_back_to_the_first_frame(tmp_path: Path) -> None:
    clip = short_clip(tmp_path / "clip.mp4", frames=40)
    ffmpeg = ffmpeg_that_fails_to_seek(tmp_path)
    result = await proxies(clip, tmp_path, str(ffmpeg))
    assert spread(poster_of(result)) > BLANK_STDDEV * 4
    posters = [c for c in (tmp_path / "calls").read_text().splitlines() if "image2pipe" in c]
    assert [c.split("-ss ")[1].split()[0] for c in posters] == ["0.800", "0.000"]


@needs_ffmpeg
async def test_a_single_frame_is_taken_without_a_seek(tmp_path: Path) -> None:
    clip = short_clip(tmp_path / "clip.mp4", frames=1, audio_seconds=5.0)
    metadata = await probe_video(clip)
    assert metadata.video_packets == 1
    assert metadata.duration_seconds == pytest.approx(5.0, 0.05)
    assert poster_time(metadata, VIDEO_SPEC) == 0.0


FAMILY_FORMATS = [".3gp", ".3g2", ".m2v", ".m2ts", ".mts"]


@needs_ffmpeg
@pytest.mark.parametrize("suffix", FAMILY_FORMATS)
async def test_every_family_format_makes_a_poster_and_a_web_video(
    tmp_path: Path, suffix: str
) -> None:
    clip = family_format_clip(tmp_path / f"clip{suffix}")
    assert media_type(clip) == "video"
    result = await proxies(clip, tmp_path)
    assert spread(poster_of(result)) > BLANK_STDDEV * 4
    web = await probe_video(result.web_video)
    assert (web.codec, web.container) == ("h264", "mov,mp4,m4a,3gp,3g2,mj2")
    assert web.video_packets is not None and web.video_packets >= 10


@needs_ffmpeg
async def test_a_raw_mpeg2_stream_has_no_duration_and_a_poster_within_its_frames(
    tmp_path: Path,
) -> None:
    metadata = await probe_video(family_format_clip(tmp_path / "clip.m2v", seconds=1.0))
    assert (metadata.container, metadata.duration_seconds) == ("mpegvideo", None)
    assert poster_time(metadata, VIDEO_SPEC) == pytest.approx(0.5)


@needs_ffmpeg
@pytest.mark.parametrize("suffix", [".m2ts", ".mts"])
def test_avchd_clips_have_192_byte_packets(tmp_path: Path, suffix: str) -> None:
    """AVCHD's layout: a 4-byte arrival time stamp, then a 188-byte packet whose first
    byte is the sync byte 0x47; a plain ``-f mpegts`` has the sync byte every 188."""
    data = family_format_clip(tmp_path / f"clip{suffix}").read_bytes()
    assert len(data) % 192 == 0
    assert all(data[4 + i * 192] == 0x47 for i in range(len(data) // 192))
    plain = tmp_path / "plain.ts"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(tmp_path / f"clip{suffix}"), "-c", "copy",
         "-f", "mpegts", str(plain)],
        check=True,
    )  # fmt: skip
    packets = plain.read_bytes()
    assert all(packets[i * 188] == 0x47 for i in range(len(packets) // 188))
    assert not all(packets[4 + i * 192] == 0x47 for i in range(len(packets) // 192))
