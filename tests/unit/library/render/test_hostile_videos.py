"""Issue 27's hostile videos, made here with ffmpeg: the file bounds what ffprobe and
ffmpeg spend, not what it claims. A 1.3 KB MKV whose timestamps jump ten hours makes a
web video of two frames; a 16000x16000 frame is refused for the pixel cap before a pixel
is decoded; a frame under the cap that would take more memory than the tools' limit is a
per-file failure that says so. Also the command lines that carry those bounds."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from safelight.library.files.errors import CorruptMedia, DecompressionBomb
from safelight.library.files.limits import MIB, web_video_max_bytes
from safelight.library.media.metadata import (
    MAX_IMAGE_PIXELS,
    VideoMetadata,
    ffprobe_command,
    read_video_metadata,
)
from safelight.library.media.toolfailures import ToolOutOfMemory
from safelight.library.render import video
from safelight.library.render.video import (
    ToolBounds,
    _poster_command,
    _remux_command,
    _web_video_command,
    make_video_proxies,
    poster_time,
    probe_video,
    tool_address_space,
)
from safelight.testing.hostilevideos import (
    GAP_SECONDS,
    HostileVideos,
    claimed_duration_seconds,
    hostile_videos,
    huge_frame_video,
)
from safelight.testing.specs import VIDEO_SPEC, video_spec

pytestmark = [
    pytest.mark.skipif(
        shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
        reason="ffmpeg/ffprobe not installed",
    ),
    pytest.mark.usefixtures("loop_errors"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileVideos:
    return hostile_videos(tmp_path_factory.getbasetemp() / "hostile-videos")


def alive() -> None:
    pass


def packets(path: Path) -> int:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0",
         "-show_entries", "stream=nb_read_packets", "-print_format", "json", str(path)],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return int(json.loads(out)["streams"][0]["nb_read_packets"])


def recording_tool(folder: Path, tool: str) -> str:
    """The real ``tool``, run by a script that first appends its address-space limit
    (``ulimit -v``, KiB) and its arguments to ``folder/calls``."""
    real = shutil.which(tool)
    folder.mkdir()
    script = folder / tool
    script.write_text(
        f'#!/bin/sh\necho "$(ulimit -v) $*" >> {folder / "calls"}\nexec {real} "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


# --- the timestamp gap ------------------------------------------------------------------


async def test_the_timestamp_gap_video_claims_ten_hours_in_two_packets(
    hostile: HostileVideos,
) -> None:
    assert hostile.timestamp_gap.stat().st_size < 2048
    assert claimed_duration_seconds(hostile.timestamp_gap) == pytest.approx(GAP_SECONDS, abs=1)
    probed = await probe_video(hostile.timestamp_gap)
    assert (probed.video_packets, probed.audio_packets) == (2, None)
    assert probed.size_bytes == hostile.timestamp_gap.stat().st_size


async def test_the_timestamp_gap_makes_a_web_video_of_two_frames_not_ten_hours(
    hostile: HostileVideos, tmp_path: Path
) -> None:
    """At a constant frame rate the gap was 1,080,000 copies of the first frame (29.7
    MB after 8 minutes on both cores); with a variable one it is a gap."""
    made = await make_video_proxies(hostile.timestamp_gap, tmp_path, VIDEO_SPEC, alive)
    size = made.web_video.stat().st_size
    assert size < 16 * 1024
    assert size < web_video_max_bytes(2, 0)
    assert packets(made.web_video) == 2
    assert (made.poster.width, made.poster.height) == (64, 48)


# --- the huge frame -----------------------------------------------------------------------


async def test_the_huge_frame_is_refused_for_the_pixel_cap_before_it_is_decoded(
    hostile: HostileVideos, tmp_path: Path
) -> None:
    """ffprobe decodes a frame to learn the stream's format: with ``-max_pixels`` it
    refuses this one (768 MB of RGB) and says so, and no ffmpeg runs at all."""
    ffprobe = recording_tool(tmp_path / "ffprobe", "ffprobe")
    ffmpeg = recording_tool(tmp_path / "ffmpeg", "ffmpeg")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DecompressionBomb) as caught:
        await make_video_proxies(
            hostile.huge_frame, out, video_spec(ffprobe=ffprobe, ffmpeg=ffmpeg), alive
        )
    assert caught.value.reason == (
        "a frame of 16000x16000 (256.0 MP) is larger than the pixel cap of 250 MP"
    )
    assert not (tmp_path / "ffmpeg" / "calls").exists()
    [probe] = (tmp_path / "ffprobe" / "calls").read_text().splitlines()
    limit_kib, _, arguments = probe.partition(" ")
    assert int(limit_kib) * 1024 == tool_address_space(VIDEO_SPEC.image.decode_memory_mib)
    assert f"-max_pixels {MAX_IMAGE_PIXELS}" in arguments
    assert list(out.iterdir()) == []


def test_the_sync_probe_refuses_the_huge_frame_too(hostile: HostileVideos) -> None:
    with pytest.raises(DecompressionBomb, match="larger than the pixel cap of 250 MP"):
        read_video_metadata(hostile.huge_frame)


async def test_a_frame_under_the_cap_beyond_the_memory_limit_fails_for_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 100 MP frame passes the pixel cap; decoding it takes 300 MB of RGB. Under an
    address-space limit of 500 MiB (ffmpeg maps 300 MiB before it decodes anything) the
    allocation fails inside ffmpeg: the file's error names the limit, and the machine
    lent nothing beyond it."""
    source = huge_frame_video(tmp_path / "large.mkv", side=10_000)
    monkeypatch.setattr(video, "tool_address_space", lambda _mib: 500 * MIB)
    with pytest.raises(ToolOutOfMemory) as caught:
        await make_video_proxies(source, tmp_path, VIDEO_SPEC, alive)
    assert caught.value.reason == (
        "ffmpeg could not extract a poster frame: it exceeded its memory limit of 500 MiB "
        "(address space; SAFELIGHT_DECODE_MEMORY_MIB raises it)"
    )


# --- the poster ---------------------------------------------------------------------------


def short_video_long_audio(path: Path) -> Path:
    """0.2 s of video beside 4 s of audio: the container's duration (4 s) alone would
    put the poster time (1 s) after the last frame; the counted frames keep it within
    them (0.1 s, ADR 0054)."""
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y",
         "-f", "lavfi", "-i", "color=c=blue:s=64x48:r=10:d=0.2",
         "-f", "lavfi", "-i", "sine=frequency=440:duration=4",
         "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-f", "matroska", str(path)],
        check=True,
    )  # fmt: skip
    return path


async def test_a_container_longer_than_its_frames_still_gets_a_poster(
    tmp_path: Path,
) -> None:
    source = short_video_long_audio(tmp_path / "short.mkv")
    made = await make_video_proxies(source, tmp_path, VIDEO_SPEC, alive)
    assert made.metadata.duration_seconds is not None and made.metadata.duration_seconds > 2
    assert poster_time(made.metadata, VIDEO_SPEC) == pytest.approx(0.1)
    assert (made.poster.width, made.poster.height) == (64, 48)


async def test_a_poster_that_never_comes_says_so(tmp_path: Path) -> None:
    """An ffmpeg that writes no frame and no error (the frame is not there) gets that
    reason, not "no error output"."""
    source = short_video_long_audio(tmp_path / "short.mkv")
    real = shutil.which("ffmpeg")
    script = tmp_path / "ffmpeg"
    script.write_text(f'#!/bin/sh\ncase "$*" in *image2pipe*) exit 0;; esac\nexec {real} "$@"\n')
    script.chmod(0o755)
    with pytest.raises(CorruptMedia) as caught:
        await make_video_proxies(source, tmp_path, video_spec(ffmpeg=str(script)), alive)
    assert caught.value.reason == (
        "ffmpeg could not extract a poster frame: no frame at the poster time (0.1 s) or at the "
        "start"
    )


# --- the command lines --------------------------------------------------------------------


def metadata(**changes: object) -> VideoMetadata:
    values: dict[str, object] = {
        "width": 1920, "height": 1080, "rotation": 0, "duration_seconds": 36_000.0,
        "codec": "h264", "has_audio": True, "captured_at": datetime(2020, 1, 1, tzinfo=UTC),
        "captured_at_source": "file", "make": None, "model": None, "content_identifier": None,
        "video_packets": 2, "audio_packets": 10, "size_bytes": 1420,
    }  # fmt: skip
    values.update(changes)
    return VideoMetadata(**values)  # type: ignore[arg-type]


def option(command: list[str], name: str, before: str | None = None) -> str:
    """The value of ``name`` in ``command`` (before ``before``'s position, if given)."""
    end = command.index(before) if before is not None else len(command)
    assert name in command[:end], f"{name} missing from {command}"
    return command[command.index(name) + 1]


def test_the_bounds_come_from_the_packets_not_the_claimed_duration() -> None:
    bounds = ToolBounds.of(metadata(), VIDEO_SPEC)
    assert (bounds.video_packets, bounds.audio_packets) == (2, 10)
    assert bounds.time_seconds == pytest.approx(300 + 2 * 0.5 + 10 * 0.05 + 1420 / MIB * 0.5)
    assert bounds.web_video_bytes == web_video_max_bytes(2, 10)
    assert bounds.address_space_bytes == tool_address_space(VIDEO_SPEC.image.decode_memory_mib)
    # Audio packets count only when the web video keeps the audio.
    assert ToolBounds.of(metadata(has_audio=False), VIDEO_SPEC).audio_packets == 0


@pytest.mark.parametrize("counted", [0, None])
def test_a_video_stream_of_no_packets_is_refused(counted: int | None) -> None:
    with pytest.raises(CorruptMedia, match="holds no packets"):
        ToolBounds.of(metadata(video_packets=counted), VIDEO_SPEC)


def test_the_web_video_command_is_bounded_by_the_stream() -> None:
    meta = metadata(video_packets=1800)
    bounds = ToolBounds.of(meta, VIDEO_SPEC)
    command = _web_video_command("in.mkv", Path("out.mp4"), "scale", bounds, meta, VIDEO_SPEC)
    assert option(command, "-max_pixels", before="-i") == str(MAX_IMAGE_PIXELS)
    after = command[command.index("-i") :]
    assert option(after, "-fps_mode") == "vfr"
    assert option(after, "-fpsmax") == str(VIDEO_SPEC.max_fps)
    assert option(after, "-frames:v") == "1800"
    assert option(after, "-fs") == str(bounds.web_video_bytes)
    assert command[-1] == "out.mp4"


def test_the_remux_and_poster_commands_are_bounded_too() -> None:
    meta = metadata()
    bounds = ToolBounds.of(meta, VIDEO_SPEC)
    remux = _remux_command("in.mp4", Path("out.mp4"), bounds, VIDEO_SPEC)
    assert option(remux, "-max_pixels", before="-i") == str(MAX_IMAGE_PIXELS)
    assert option(remux, "-fs") == str(bounds.remux_bytes) == str(MIB + 1420 + 12 * 64)
    poster = _poster_command("in.mp4", 1.0, "scale", VIDEO_SPEC)
    assert option(poster, "-max_pixels", before="-i") == str(MAX_IMAGE_PIXELS)
    assert option(poster, "-frames:v") == "1"


def test_ffprobe_counts_packets_and_caps_pixels() -> None:
    command = ffprobe_command("/dev/fd/5")
    assert "-count_packets" in command
    assert option(command, "-max_pixels") == str(MAX_IMAGE_PIXELS)
    assert command[-1] == "file:/dev/fd/5"


async def test_every_tool_of_a_video_runs_under_the_address_space_limit(
    hostile: HostileVideos, tmp_path: Path
) -> None:
    """Probe, poster, encode and the probe of the web video: each with ``ulimit -v`` set
    to the tools' limit, from the spec's decode memory."""
    spec = video_spec(
        ffprobe=recording_tool(tmp_path / "ffprobe", "ffprobe"),
        ffmpeg=recording_tool(tmp_path / "ffmpeg", "ffmpeg"),
    )
    out = tmp_path / "out"
    out.mkdir()
    await make_video_proxies(hostile.timestamp_gap, out, spec, alive)
    expected = tool_address_space(spec.image.decode_memory_mib)
    calls = [
        line
        for tool in ("ffprobe", "ffmpeg")
        for line in (tmp_path / tool / "calls").read_text().splitlines()
    ]
    assert len(calls) == 4  # probe, probe of the web video; poster, encode
    for call in calls:
        assert int(call.split(" ", 1)[0]) * 1024 == expected, call
