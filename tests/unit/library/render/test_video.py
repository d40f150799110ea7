"""Video proxies with ffmpeg: poster and web video, upright and at most 720p; failures as
MediaError; and no ffmpeg left running when the task is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from safelight.library.files.errors import CorruptMedia, UnsupportedMedia
from safelight.library.files.limits import (
    FFPROBE_TIMEOUT_SECONDS,
    ffmpeg_timeout_seconds,
    ffprobe_timeout_seconds,
)
from safelight.library.render import video
from safelight.library.render.video import (
    ToolTimedOut,
    VideoProxies,
    killable_command,
    make_video_proxies,
    probe_video,
    run_killable,
)
from safelight.testing.fakeclock import FakeClock
from safelight.testing.samplegen import (
    GREEN,
    RED,
    Manifest,
    generate_library,
    marker_picture,
    set_mp4_rotation,
)
from safelight.testing.specs import VIDEO_SPEC, video_spec

FFMPEG = shutil.which("ffmpeg")
pytestmark = [
    pytest.mark.skipif(
        FFMPEG is None or shutil.which("ffprobe") is None, reason="ffmpeg/ffprobe not installed"
    ),
    # Killing and reaping must leave no orphaned task or unretrieved exception behind.
    pytest.mark.usefixtures("loop_errors"),
]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    manifest = generate_library(tmp_path_factory.mktemp("library"), seed=9)
    assert manifest.video_skipped_reason is None
    return manifest


def alive() -> None:
    pass


def streams(path: Path) -> list[dict[str, object]]:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-print_format", "json", "-show_streams", str(path)],
        capture_output=True,
        check=True,
    ).stdout
    result: list[dict[str, object]] = json.loads(out)["streams"]
    return result


def top_level_boxes(path: Path) -> list[bytes]:
    data, names, position = path.read_bytes(), [], 0
    while position + 8 <= len(data):
        size = int.from_bytes(data[position : position + 4], "big")
        names.append(data[position + 4 : position + 8])
        if size < 8:
            break
        position += size
    return names


def frame_of(video: Path, tmp_path: Path) -> Image.Image:
    png = tmp_path / "frame.png"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-i", str(video), "-frames:v", "1", str(png)], check=True
    )
    return Image.open(png).convert("RGB")


def assert_upright(image: Image.Image) -> None:
    def near(xy: tuple[float, float], colour: tuple[int, int, int]) -> bool:
        value = image.getpixel((int(image.width * xy[0]), int(image.height * xy[1])))
        assert isinstance(value, tuple)
        return all(abs(a - b) <= 45 for a, b in zip(value[:3], colour, strict=True))

    assert near((0.08, 0.08), RED), "red block not top-left"
    assert near((0.92, 0.08), GREEN), "green block not top-right"


def marker_video(path: Path, size: tuple[int, int], rotation: int = 0) -> Path:
    """A short marker video of ``size`` as displayed; rotated ones are stored sideways."""
    upright = marker_picture(*size, seed=1)
    stored = upright.transpose(Image.Transpose.ROTATE_90) if rotation == 90 else upright
    frame = path.with_suffix(".png")
    stored.save(frame)
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-loop", "1", "-framerate", "10", "-i", str(frame),
         "-t", "0.4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path)],
        check=True,
    )  # fmt: skip
    if rotation:
        set_mp4_rotation(path, 90)
    return path


# --- proxies ------------------------------------------------------------------------------


async def test_clip_with_audio(library: Manifest, tmp_path: Path) -> None:
    calls = 0

    def counting() -> None:
        nonlocal calls
        calls += 1

    result = await make_video_proxies(
        library.root / "2022/videos/clip.mp4", tmp_path, VIDEO_SPEC, counting
    )
    assert calls >= 4
    assert result.web_video == tmp_path / "video.mp4"
    assert (result.web_video_width, result.web_video_height) == (320, 240)  # not upscaled
    video, audio = streams(result.web_video)
    # Already H.264 and AAC at 240p: remuxed, so the source's own profile stays.
    (source_video, _) = streams(library.root / "2022/videos/clip.mp4")
    assert (video["codec_name"], video["pix_fmt"]) == ("h264", "yuv420p")
    assert video["profile"] == source_video["profile"]
    assert audio["codec_name"] == "aac"
    boxes = top_level_boxes(result.web_video)
    assert boxes.index(b"moov") < boxes.index(b"mdat")  # faststart: playable while loading
    assert result.metadata.has_audio and result.metadata.duration_seconds == pytest.approx(
        2, abs=0.1
    )
    poster = Image.open(io.BytesIO(result.poster.preview.data))
    assert poster.size == (320, 240)
    assert_upright(poster.convert("RGB"))
    assert result.poster.thumbnail.width == 300
    assert result.poster.blurhash.startswith("L")
    assert_upright(frame_of(result.web_video, tmp_path))


async def test_rotated_portrait_video_comes_out_upright(library: Manifest, tmp_path: Path) -> None:
    result = await make_video_proxies(
        library.root / "2022/videos/portrait.mp4", tmp_path, VIDEO_SPEC, alive
    )
    assert result.metadata.rotation == 90
    assert (result.web_video_width, result.web_video_height) == (240, 320)
    (video,) = streams(result.web_video)
    assert not video.get("side_data_list")  # rotation applied to the pixels, not flagged
    assert_upright(Image.open(io.BytesIO(result.poster.preview.data)).convert("RGB"))
    assert_upright(frame_of(result.web_video, tmp_path))


@pytest.mark.parametrize(
    ("size", "rotation", "expected"),
    [((1280, 960), 0, (960, 720)), ((1080, 1440), 90, (720, 960))],
)
async def test_large_videos_are_scaled_to_720_on_the_short_side(
    tmp_path: Path, size: tuple[int, int], rotation: int, expected: tuple[int, int]
) -> None:
    source = marker_video(tmp_path / "big.mp4", size, rotation)
    out = tmp_path / "out"
    out.mkdir()
    result = await make_video_proxies(source, out, VIDEO_SPEC, alive)
    assert (result.web_video_width, result.web_video_height) == expected
    assert (result.poster.preview.width, result.poster.preview.height) == size  # < 1920 wide
    assert_upright(frame_of(result.web_video, tmp_path))


def hlg_video(path: Path) -> Path:
    """A 10-bit HEVC clip tagged BT.2020 HLG, as an iPhone records by default."""
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:d=0.4",
         "-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p10le",
         "-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc",
         "-tag:v", "hvc1", str(path)],
        check=True,
    )  # fmt: skip
    return path


async def test_hdr_video_is_tone_mapped_to_sdr(tmp_path: Path) -> None:
    source = hlg_video(tmp_path / "hlg.mov")
    out = tmp_path / "out"
    out.mkdir()
    result = await make_video_proxies(source, out, VIDEO_SPEC, alive)
    assert result.metadata.hdr and result.metadata.codec == "hevc"
    (video,) = streams(result.web_video)
    assert (video["color_transfer"], video["color_primaries"]) == ("bt709", "bt709")
    assert video["pix_fmt"] == "yuv420p"


async def test_hdr_without_zscale_falls_back_to_plain_scaling(tmp_path: Path) -> None:
    assert FFMPEG is not None
    ffmpeg = fake_tool(
        tmp_path,
        f'case "$*" in *zscale=t*) echo "No such filter: \'zscale\'" >&2; exit 1;; esac\n'
        f'exec {FFMPEG} "$@"',
    )
    out = tmp_path / "out"
    out.mkdir()
    source = hlg_video(tmp_path / "hlg.mov")
    result = await make_video_proxies(source, out, video_spec(ffmpeg=ffmpeg), alive)
    assert (result.web_video_width, result.web_video_height) == (320, 240)
    assert result.poster.preview.width == 320


async def test_live_photo_video_keeps_its_identifier_in_metadata(
    library: Manifest, tmp_path: Path
) -> None:
    pair = library.live_pairs[0]
    assert pair.video is not None
    result = await make_video_proxies(library.root / pair.video, tmp_path, VIDEO_SPEC, alive)
    assert result.metadata.content_identifier == pair.content_identifier
    probed = await probe_video(result.web_video)
    assert probed.content_identifier is None  # no metadata copied into the proxy


async def test_ensure_alive_stops_the_work(library: Manifest, tmp_path: Path) -> None:
    class Lost(Exception):
        pass

    calls = 0

    def lost_after_probe() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise Lost

    with pytest.raises(Lost):
        await make_video_proxies(
            library.root / "2022/videos/clip.mp4", tmp_path, VIDEO_SPEC, lost_after_probe
        )
    assert not (tmp_path / "video.mp4").exists()


# --- failures ---------------------------------------------------------------------------------


def fake_tool(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-ffmpeg"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


async def test_ffmpeg_failure_reports_its_stderr(library: Manifest, tmp_path: Path) -> None:
    ffmpeg = fake_tool(tmp_path, "echo 'first line' >&2\necho 'boom: codec exploded' >&2\nexit 1")
    spec = video_spec(ffmpeg=ffmpeg)
    with pytest.raises(CorruptMedia, match="boom: codec exploded"):
        await make_video_proxies(library.root / "2022/videos/clip.mp4", tmp_path, spec, alive)


def wrapping(folder: Path, tool: str, when_web_video: str) -> str:
    """The real ``tool``, except that a call naming the web video runs ``when_web_video``
    (shell) instead; every call's arguments are appended to ``folder/calls``."""
    real = shutil.which(tool)
    folder.mkdir()
    return fake_tool(
        folder,
        f'echo "$*" >> {folder / "calls"}\n'
        f'case "$*" in *video.mp4*) {when_web_video};; esac\n'
        f'exec {real} "$@"',
    )


async def until_exists(path: Path) -> None:
    """A real-time guard for a test's fake tool to have started."""
    for _ in range(2000):
        if await asyncio.to_thread(path.exists):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


async def test_both_probes_use_the_specs_ffprobe(library: Manifest, tmp_path: Path) -> None:
    clip = library.root / "2022/videos/clip.mp4"
    ffprobe = wrapping(tmp_path / "ffprobe", "ffprobe", ":")
    out = tmp_path / "out"
    out.mkdir()
    await make_video_proxies(clip, out, video_spec(ffprobe=ffprobe), alive)
    first, second = (tmp_path / "ffprobe" / "calls").read_text().splitlines()
    assert str(clip) in first and str(out / "video.mp4") in second


async def test_a_failed_encode_reports_ffmpegs_stderr_and_leaves_no_web_video(
    library: Manifest, tmp_path: Path
) -> None:
    ffmpeg = wrapping(tmp_path / "ffmpeg", "ffmpeg", "echo 'boom: encoder' >&2; exit 1")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(CorruptMedia) as caught:
        await make_video_proxies(
            library.root / "2022/videos/clip.mp4", out, video_spec(ffmpeg=ffmpeg), alive
        )
    assert caught.value.reason == "ffmpeg could not encode the web video: boom: encoder"
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("tool", ["ffmpeg", "ffprobe"])
async def test_a_hung_web_video_step_is_killed_at_its_limit_on_the_clock(
    library: Manifest, tmp_path: Path, tool: str
) -> None:
    """The encode, and the probe of what it wrote, each have a time limit on the clock
    the caller gave (the probe of the source has its own, the poster's is test_limits')."""
    clip = library.root / "2022/videos/clip.mp4"
    started = tmp_path / "started"
    hung = wrapping(tmp_path / tool, tool, f"touch {started}; exec sleep 600")
    probed = await probe_video(clip)
    assert probed.size_bytes and probed.video_packets and probed.audio_packets
    clock = FakeClock()
    out = tmp_path / "out"
    out.mkdir()
    task = asyncio.create_task(
        make_video_proxies(clip, out, video_spec(**{tool: hung}), alive, clock=clock)
    )
    await until_exists(started)
    # The encode's limit follows the source's bytes and packets; the probe's, the bytes
    # of the web video it reads.
    limit = (
        ffmpeg_timeout_seconds(probed.size_bytes, probed.video_packets, probed.audio_packets)
        if tool == "ffmpeg"
        else ffprobe_timeout_seconds((out / "video.mp4").stat().st_size)
    )
    await clock.advance(limit - 1)
    assert not task.done()
    await clock.advance(1)
    with pytest.raises(ToolTimedOut) as caught:
        await asyncio.wait_for(task, 10)
    assert (
        caught.value.reason == f"fake-ffmpeg ran past its time limit of {limit:g} s and was killed"
    )


async def test_a_hung_probe_of_the_source_is_killed_at_its_limit_on_the_clock(
    library: Manifest, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    hung = fake_tool(tmp_path, f"touch {started}; exec sleep 600")
    clock = FakeClock()
    task = asyncio.create_task(
        make_video_proxies(
            library.root / "2022/videos/clip.mp4",
            tmp_path,
            video_spec(ffprobe=hung),
            alive,
            clock=clock,
        )
    )
    await until_exists(started)
    source = library.root / "2022/videos/clip.mp4"
    limit = ffprobe_timeout_seconds(source.stat().st_size)
    assert limit > FFPROBE_TIMEOUT_SECONDS
    await clock.advance(limit - 0.01)
    assert not task.done()
    await clock.advance(0.01)
    with pytest.raises(ToolTimedOut):
        await asyncio.wait_for(task, 10)


async def test_truncated_video(library: Manifest, tmp_path: Path) -> None:
    data = (library.root / "2022/videos/clip.mp4").read_bytes()
    source = tmp_path / "cut.mp4"
    source.write_bytes(data[: len(data) * 4 // 10])
    with pytest.raises(CorruptMedia) as caught:
        await make_video_proxies(source, tmp_path, VIDEO_SPEC, alive)
    assert "ffprobe" in caught.value.reason


@pytest.mark.parametrize("tool", ["ffmpeg", "ffprobe"])
async def test_missing_tools(library: Manifest, tmp_path: Path, tool: str) -> None:
    missing = tmp_path / f"no-{tool}"
    tools: dict[str, Any] = {tool: str(missing)}
    spec = video_spec(**tools)
    with pytest.raises(UnsupportedMedia) as caught:
        await make_video_proxies(library.root / "2022/videos/clip.mp4", tmp_path, spec, alive)
    assert caught.value.reason == f"{missing} is not installed"


async def test_a_tool_that_vanishes_after_the_look_up_is_still_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found on the PATH, gone at the spawn: the spawn's own error says so."""
    monkeypatch.setattr(video, "_SETPRIV", None)
    monkeypatch.setattr(shutil, "which", lambda name: name)
    with pytest.raises(UnsupportedMedia) as caught:
        await run_killable([str(tmp_path / "gone")])
    assert caught.value.reason == f"{tmp_path / 'gone'} is not installed"


async def test_a_tool_reads_nothing_from_the_workers_stdin() -> None:
    """The Worker's own stdin (a terminal, a pipe) is never handed to ffmpeg."""
    read, write = os.pipe()
    saved = os.dup(0)
    try:
        os.dup2(read, 0)
        result = await run_killable(["readlink", "/proc/self/fd/0"])
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read, write):
            os.close(fd)
    assert result.stdout.decode().strip() == "/dev/null"


def test_spec_is_validated() -> None:
    with pytest.raises(ValueError):
        video_spec(web_video_short_side=719)
    with pytest.raises(ValueError):
        video_spec(crf=60)


# --- cancellation kills the process group ---------------------------------------------------


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an orphan's zombie may linger if
    this container's init does not reap; it runs no code either way)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def children_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)
            comm = fields[0].split("(", 1)[1]
            ppid = int(fields[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and comm == name:
            found.append(int(entry.name))
    return found


async def wait_for(condition: Callable[[], object], seconds: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def cancel_within(task: asyncio.Task[object], group: int, seconds: float = 10.0) -> None:
    """Cancel ``task``; it must end (cancelled) within ``seconds``. If it does not, the
    test kills the group itself so nothing outlives the failure."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        assert group > 1 and group != os.getpgid(0)  # never this test run's own group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(asyncio.CancelledError):
            await task
        pytest.fail("the cancelled task did not end: its process group was not killed")
    assert task.cancelled()


async def test_cancel_kills_a_real_ffmpeg() -> None:
    assert FFMPEG is not None
    before = set(children_named("ffmpeg"))
    task = asyncio.create_task(
        run_killable([FFMPEG, "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i",
                      "testsrc=size=320x240:duration=600", "-f", "null", "-"])
    )  # fmt: skip
    await wait_for(lambda: set(children_named("ffmpeg")) - before)
    (pid,) = set(children_named("ffmpeg")) - before
    assert os.getpgid(pid) == pid  # its own process group
    assert running(pid)
    await cancel_within(task, pid)
    assert not running(pid)


async def test_cancel_kills_the_whole_group_of_make_video_proxies(
    library: Manifest, tmp_path: Path
) -> None:
    """The 'ffmpeg' here is a shell that starts a grandchild; both must die."""
    pids = tmp_path / "pids"
    ffmpeg = fake_tool(
        tmp_path, f"sleep 600 &\necho $$ $! > {pids}.tmp\nmv {pids}.tmp {pids}\nwait"
    )
    spec = video_spec(ffmpeg=ffmpeg)
    task = asyncio.create_task(
        make_video_proxies(library.root / "2022/videos/clip.mp4", tmp_path, spec, alive)
    )
    await wait_for(pids.exists)
    shell, grandchild = (int(p) for p in pids.read_text().split())
    assert running(shell) and running(grandchild)
    assert os.getpgid(grandchild) == shell
    await cancel_within(task, shell)
    assert not running(shell)
    await wait_for(lambda: not running(grandchild), seconds=5)


def processes_with_argument(argument: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                arguments = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in arguments and running(int(entry.name)):
                found.append(int(entry.name))
    return found


async def test_cancel_right_at_the_spawn_leaves_nothing_running(tmp_path: Path) -> None:
    """Cancelled while the child is still being spawned: the spawn is allowed to finish
    and its whole group is killed, so neither the shell nor its sleep survives."""
    script = fake_tool(tmp_path, "sleep 613 &\nsleep 614")
    task = asyncio.create_task(run_killable([script]))
    await asyncio.sleep(0)  # the task is inside create_subprocess_exec()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=10)
    if not done:  # clean up what the failing code left, then fail
        for pid in processes_with_argument("614"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        with contextlib.suppress(asyncio.CancelledError):
            await task
        pytest.fail("the cancelled spawn did not end: its process group was not killed")
    assert task.cancelled()
    for _ in range(30):  # anything that escaped the kill would show up meanwhile
        assert processes_with_argument("613") == processes_with_argument("614") == []
        await asyncio.sleep(0.01)


async def test_a_second_cancel_while_reaping_still_reaps() -> None:
    before = set(children_named("sleep"))
    task = asyncio.create_task(run_killable(["sleep", "600"]))
    await wait_for(lambda: set(children_named("sleep")) - before)
    (pid,) = set(children_named("sleep")) - before
    task.cancel()
    await asyncio.sleep(0)
    await cancel_within(task, pid)  # cancelled again while the first cancel is reaping
    assert not running(pid)


def test_killable_command_asks_for_the_parent_death_signal() -> None:
    assert killable_command(["ffmpeg", "-i", "x"], None) == ["ffmpeg", "-i", "x"]
    assert killable_command(["ffmpeg", "-i", "x"], "/usr/bin/setpriv") == [
        "/usr/bin/setpriv",
        "--pdeathsig",
        "KILL",
        "--",
        "ffmpeg",
        "-i",
        "x",
    ]


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) not installed")
async def test_a_tool_dies_with_a_worker_that_is_sigkilled() -> None:
    """A SIGKILLed Worker cannot kill its children itself: the kernel must."""
    code = (
        "import asyncio\n"
        "from safelight.library.render.video import run_killable\n"
        "asyncio.run(run_killable(['sleep', '619']))\n"
    )
    worker = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
    try:
        await wait_for(lambda: processes_with_argument("619"))
        (tool,) = processes_with_argument("619")
        worker.kill()
        await worker.wait()
        try:
            await wait_for(lambda: not running(tool))
        except AssertionError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(tool, signal.SIGKILL)
            raise
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()


# --- remux or encode ------------------------------------------------------------------


def clip(
    path: Path,
    *,
    size: str = "320x240",
    codec: str = "libx264",
    pix_fmt: str = "yuv420p",
    audio: str | None = "aac",
    rate: int = 25,
) -> Path:
    command = [
        "ffmpeg",
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"testsrc2=s={size}:d=0.4:r={rate}",
    ]
    if audio is not None:
        command += ["-f", "lavfi", "-i", "sine=frequency=440:duration=0.4", "-c:a", audio]
    command += ["-c:v", codec, "-preset", "ultrafast", "-pix_fmt", pix_fmt, "-shortest", str(path)]
    subprocess.run(command, check=True)  # fmt: skip
    return path


def video_md5(path: Path) -> str:
    """The video stream's packets, hashed: equal only if the bitstream was copied."""
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-map", "0:v:0", "-c", "copy",
         "-f", "md5", "-"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def ffmpeg_calls(folder: Path) -> list[str]:
    return (folder / "calls").read_text().splitlines()


async def proxies_through_wrapped_ffmpeg(tmp_path: Path, source: Path) -> tuple[VideoProxies, str]:
    """The proxies of ``source`` made through an ffmpeg that logs its calls, and the one
    call that made the web video."""
    ffmpeg = wrapping(tmp_path / "ffmpeg", "ffmpeg", ":")
    out = tmp_path / "out"
    out.mkdir()
    result = await make_video_proxies(source, out, video_spec(ffmpeg=ffmpeg), alive)
    [web_call] = [c for c in ffmpeg_calls(tmp_path / "ffmpeg") if "video.mp4" in c]
    return result, web_call


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("no-audio.mp4", {"audio": None}),
        ("with-aac.mov", {}),
        ("at-720p.mp4", {"size": "1280x720"}),
    ],
)
async def test_a_browser_ready_video_is_remuxed_not_encoded(
    tmp_path: Path, name: str, options: dict[str, Any]
) -> None:
    source = clip(tmp_path / name, **options)
    result, web_call = await proxies_through_wrapped_ffmpeg(tmp_path, source)
    assert video.browser_ready(result.metadata, VIDEO_SPEC)
    assert video_md5(result.web_video) == video_md5(source)  # the same H.264, copied
    assert "-c copy" in web_call and "libx264" not in web_call
    boxes = top_level_boxes(result.web_video)
    assert boxes.index(b"moov") < boxes.index(b"mdat")  # faststart
    width, height = (int(n) for n in options.get("size", "320x240").split("x"))
    assert (result.web_video_width, result.web_video_height) == (width, height)
    kinds = [s["codec_type"] for s in streams(result.web_video)]
    assert kinds == (["video"] if options.get("audio", "aac") is None else ["video", "audio"])


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("hevc.mp4", {"codec": "libx265", "audio": None}),
        ("big.mp4", {"size": "1920x1080", "audio": None}),
        ("yuv444.mp4", {"pix_fmt": "yuv444p", "audio": None}),
        ("mp3-audio.mov", {"audio": "libmp3lame"}),
        ("fast.mp4", {"rate": 120, "audio": None}),
        ("matroska.mkv", {"audio": None}),
    ],
)
async def test_a_video_a_browser_may_not_play_is_encoded(
    tmp_path: Path, name: str, options: dict[str, Any]
) -> None:
    result, web_call = await proxies_through_wrapped_ffmpeg(
        tmp_path, clip(tmp_path / name, **options)
    )
    assert not video.browser_ready(result.metadata, VIDEO_SPEC)
    assert "libx264" in web_call and "-c copy" not in web_call
    (encoded, *_) = streams(result.web_video)
    assert (encoded["codec_name"], encoded["pix_fmt"]) == ("h264", "yuv420p")
    assert min(result.web_video_width, result.web_video_height) <= 720


async def test_a_rotated_video_is_encoded_upright_not_remuxed(tmp_path: Path) -> None:
    source = marker_video(tmp_path / "portrait.mp4", (240, 320), rotation=90)
    out = tmp_path / "out"
    out.mkdir()
    result = await make_video_proxies(source, out, VIDEO_SPEC, alive)
    assert result.metadata.rotation == 90 and not video.browser_ready(result.metadata, VIDEO_SPEC)
    assert_upright(frame_of(result.web_video, tmp_path))


async def test_a_failed_remux_falls_back_to_the_encode(tmp_path: Path) -> None:
    source = clip(tmp_path / "clip.mp4")
    ffmpeg = wrapping(tmp_path / "ffmpeg", "ffmpeg", 'case "$*" in *"-c copy"*) exit 1;; esac')
    out = tmp_path / "out"
    out.mkdir()
    result = await make_video_proxies(source, out, video_spec(ffmpeg=ffmpeg), alive)
    web_calls = [c for c in ffmpeg_calls(tmp_path / "ffmpeg") if "video.mp4" in c]
    assert ["-c copy" in c for c in web_calls] == [True, False]
    assert video_md5(result.web_video) != video_md5(source)  # encoded again
    assert list(out.iterdir()) == [result.web_video]
