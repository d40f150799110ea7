"""Proxies of a video: a poster frame (thumbnail, preview, BlurHash, made like a photo's)
and a web video (H.264 in MP4, at most 720 px on the short side), with ffprobe/ffmpeg.
A source that is already that (``browser_ready``) is remuxed, its streams copied, not
encoded again.

HDR sources (PQ or HLG, as every recent iPhone records) are tone-mapped to SDR BT.709 for
both, when ffmpeg has the zscale filter.

Every ffmpeg/ffprobe runs as an asyncio subprocess in a session (process group) of its
own. If the awaiting task is cancelled (the attempt self-stops, loses its item, or the
worker shuts down), the whole group is SIGKILLed and reaped before the cancellation
propagates: no encoder keeps burning a NAS's CPU, or writing, for an attempt that ended.

Each tool is bounded by what the file is, not by what it claims (``limits``): ffprobe
counts the packets of every stream, and the time limits follow the file's bytes and those
packets (on the injected clock; past one the group is killed exactly as on cancellation,
and the file gets ``ToolTimedOut``). The web video is encoded with a variable frame rate
(a gap in the timestamps stays a gap, never filled with copies of a frame), at most one
frame a packet, and within a size limit from the packets (``-fs``). Both tools run with
an address-space limit (``limits.tool_address_space_bytes``) and refuse a frame over the
image pixel cap (``-max_pixels``); each failure is recorded with its reason
(``toolfailures``). Tools run at nice 10 and best-effort I/O priority 7
(``limits.lower_priority``, set in the child before it executes the tool), and ffmpeg
with at most ``limits.tool_threads()`` threads.

ffmpeg reads originals only through the ``file`` protocol and known demuxers (see
``metadata.ffmpeg_input_options``), and writes only into the caller's temporary folder;
publishing the web video is the caller's ``publishing.move_into_place``. Given the crawl's
open original (``originals.Original``), ffprobe and ffmpeg never look its name up: they
inherit its descriptor (``pass_fds``) and open ``/dev/fd/<n>``, a new open file of the
same inode (its own offset, so seeking works as on the path).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from safelight.core.clock import Clock, SystemClock, wait_done
from safelight.library.files.confinement import open_original
from safelight.library.files.errors import CorruptMedia, MediaError, UnsupportedMedia
from safelight.library.files.limits import (
    DEFAULT_DECODE_MEMORY_MIB,
    MIB,
    ffmpeg_timeout_seconds,
    ffprobe_timeout_seconds,
    lower_priority,
    remux_max_bytes,
    tool_address_space_bytes,
    tool_preexec,
    tool_threads,
    web_video_max_bytes,
)
from safelight.library.files.originals import Original
from safelight.library.media.containers import avchd_recording_date
from safelight.library.media.metadata import (
    VideoMetadata,
    ffmpeg_input_options,
    ffprobe_command,
    parse_ffprobe_output,
)
from safelight.library.media.toolfailures import out_of_memory, tool_failure
from safelight.library.render.heard import said_lines, tell_heard
from safelight.library.render.images import ImageProxies, ProxySpec, proxies_from_upright_image

WEB_VIDEO_NAME = "video.mp4"


@dataclass(frozen=True, slots=True)
class VideoProxySpec:
    image: ProxySpec
    """Sizes and qualities of the poster's thumbnail and preview."""
    web_video_short_side: int = 720
    """Height of a landscape web video, width of a portrait one; never upscaled."""
    crf: int = 23
    preset: str = "veryfast"
    audio_bitrate_kbps: int = 128
    max_fps: int = 60
    """Slow-motion (120/240 fps) sources are played back at this rate at most."""
    poster_at_seconds: float = 1.0
    """Poster time, capped at half the video's span (``poster_time``)."""
    ffmpeg: str = "ffmpeg"
    ffprobe: str = "ffprobe"

    def __post_init__(self) -> None:
        if self.web_video_short_side < 2 or self.web_video_short_side % 2:
            raise ValueError("web_video_short_side must be a positive even number")
        if not 0 <= self.crf <= 51:
            raise ValueError("crf must be within 0..51")


@dataclass(frozen=True, slots=True)
class VideoProxies:
    metadata: VideoMetadata
    poster: ImageProxies
    """Thumbnail, preview and BlurHash of the poster frame (upright)."""
    web_video: Path
    """The encoded MP4 inside ``out_dir_tmp``; publish it with ``publishing.move_into_place``."""
    web_video_width: int
    web_video_height: int


class ToolTimedOut(MediaError):
    """ffprobe or ffmpeg ran past its time limit and was killed."""


@dataclass(frozen=True, slots=True)
class Completed:
    returncode: int
    stdout: bytes
    stderr: bytes


# ``setpriv --pdeathsig KILL`` (util-linux) makes the kernel kill ffmpeg when the
# Worker dies, however it dies: a SIGKILLed Worker cannot kill its children's process
# group itself, and an orphaned ffmpeg would keep writing under the proxy root. Set in
# the child before it executes ffmpeg; the signal comes when the thread that spawned it
# ends, and asyncio spawns from the event loop's thread, which lives as long as the
# Worker. Where setpriv is missing, the process group kill on cancellation still holds.
_SETPRIV = shutil.which("setpriv")


def killable_command(args: Sequence[str], setpriv: str | None) -> list[str]:
    """``args``, run so that the child dies with this process where the OS allows it."""
    if setpriv is None:
        return list(args)
    return [setpriv, "--pdeathsig", "KILL", "--", *args]


async def run_killable(
    args: Sequence[str],
    *,
    timeout_seconds: float | None = None,
    clock: Clock | None = None,
    pass_fds: Sequence[int] = (),
    address_space_bytes: int | None = None,
    about: str | None = None,
) -> Completed:
    """Run ``args`` in its own process group, at a lower CPU and I/O priority, within
    ``address_space_bytes`` of address space (if given), and collect its output; the
    child inherits the descriptors ``pass_fds`` (at the same numbers) and no other.
    ``about``: the file it reads, whose name goes with what a run that succeeded wrote
    to its stderr, to the log (``heard``; a failed run's lines make its reason).

    On cancellation (or any other exception while waiting) the whole process group is
    SIGKILLed and the child reaped, then the exception propagates unchanged. That holds
    from the first instant: a cancellation that arrives while the process is being
    spawned lets the spawn finish, then kills what it started. A missing executable is
    ``UnsupportedMedia``. The child is also killed if this process dies
    (:func:`killable_command`). Past ``timeout_seconds`` on ``clock`` (the system
    clock if None), the group is killed the same way and ``ToolTimedOut`` raised.
    """
    if shutil.which(args[0]) is None:  # setpriv would report it only by its exit code
        raise UnsupportedMedia(f"{args[0]} is not installed")
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *killable_command(args, _SETPRIV),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
            # Only system calls, before the exec: no lock of this process is taken.
            preexec_fn=(
                lower_priority if address_space_bytes is None else tool_preexec(address_space_bytes)
            ),
        )
    )
    try:
        process = await asyncio.shield(spawn)
    except FileNotFoundError as error:
        raise UnsupportedMedia(f"{args[0]} is not installed") from error
    except BaseException:
        await _settle(spawn)
        if not spawn.cancelled() and spawn.exception() is None:
            started = spawn.result()
            _kill_group(started.pid)
            await _settle(asyncio.ensure_future(started.wait()))
        raise
    communicate = asyncio.ensure_future(process.communicate())
    try:
        if timeout_seconds is None:
            stdout, stderr = await communicate
        elif await wait_done(clock or SystemClock(), communicate, timeout_seconds):
            stdout, stderr = communicate.result()
        else:
            raise ToolTimedOut(
                f"{Path(args[0]).name} ran past its time limit of {timeout_seconds:g} s "
                "and was killed"
            )
    except BaseException:
        _kill_group(process.pid)
        communicate.cancel()
        await _settle(communicate)
        if not communicate.cancelled():
            communicate.exception()  # retrieved: the error being raised is what counts
        await _settle(asyncio.ensure_future(process.wait()))
        raise
    assert process.returncode is not None
    if about is not None and process.returncode == 0:
        tell_heard(about, said_lines(stderr))
    return Completed(process.returncode, stdout, stderr)


def _kill_group(pid: int) -> None:
    # The group id is the child's pid (start_new_session). While any member of the
    # group lives, Linux does not hand that id to a new process; once none does, the
    # kill finds no group (a new group would need the pid to wrap around meanwhile).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


async def _settle(future: asyncio.Future[Any]) -> None:
    """Wait for ``future`` to finish, even if cancelled again meanwhile (spawning or
    reaping a killed child takes milliseconds); the caller then re-raises the first
    cancellation. Its outcome is left in the future."""
    while not future.done():
        with contextlib.suppress(BaseException):
            await asyncio.shield(future)


async def probe_video(
    src: Path | Original,
    ffprobe: str = "ffprobe",
    *,
    clock: Clock | None = None,
    decode_memory_mib: int = DEFAULT_DECODE_MEMORY_MIB,
    about: str | None = None,
) -> VideoMetadata:
    """``metadata.read_video_metadata``, async and cancellable: within a time limit from
    the file's size and an address-space limit from ``decode_memory_mib``; ``about``:
    see ``run_killable``."""
    st, recorded = await asyncio.to_thread(_stat_and_recording_date, src)
    name, fds = _input(src)
    address_space = tool_address_space(decode_memory_mib)
    result = await run_killable(
        ffprobe_command(name, ffprobe),
        timeout_seconds=ffprobe_timeout_seconds(st.st_size),
        clock=clock,
        pass_fds=fds,
        address_space_bytes=address_space,
        about=about,
    )
    return parse_ffprobe_output(
        result.returncode,
        result.stdout,
        result.stderr,
        st.st_mtime_ns,
        address_space,
        recorded=recorded,
    )


def tool_address_space(decode_memory_mib: int) -> int:
    """The address-space limit of one ffprobe or ffmpeg (``limits``)."""
    return tool_address_space_bytes(decode_memory_mib * MIB, tool_threads())


def _input(src: Path | Original) -> tuple[str, tuple[int, ...]]:
    """The name ffprobe/ffmpeg open ``src`` by, and the descriptors they must inherit."""
    if isinstance(src, Original):
        return src.dev_fd, (src.fd,)
    return str(src), ()


def _stat_and_recording_date(src: Path | Original) -> tuple[os.stat_result, bytes | None]:
    """The stat of ``src`` and its AVCHD recording date (``containers``), which ffprobe
    does not show: read by position, through the crawl's descriptor or a new read-only
    open (no symlink, no FIFO)."""
    if isinstance(src, Original):
        with os.fdopen(os.dup(src.fd), "rb", buffering=0) as original:
            return os.fstat(original.fileno()), avchd_recording_date(original)
    with open_original(src) as original:
        return os.fstat(original.fileno()), avchd_recording_date(original)


async def make_video_proxies(
    src: Path | Original,
    out_dir_tmp: Path,
    spec: VideoProxySpec,
    ensure_alive: Callable[[], None],
    *,
    clock: Clock | None = None,
    about: str | None = None,
) -> VideoProxies:
    """Probe ``src``, make its poster proxies and encode its web video into
    ``out_dir_tmp`` (an existing folder on the proxy filesystem, owned by the caller).

    ``ensure_alive()`` is called before each step; what it raises propagates unchanged.
    Raises ``MediaError`` when the file is not a readable video or ffmpeg fails (with the
    last lines of ffmpeg's stderr), ``UnsupportedMedia`` when ffmpeg/ffprobe is missing,
    ``ToolTimedOut`` when one runs past its time limit on ``clock``. ``about``: the
    file's name, for what ffmpeg says of a run that succeeded (``run_killable``).
    """
    ensure_alive()
    metadata = await probe_video(
        src,
        spec.ffprobe,
        clock=clock,
        decode_memory_mib=spec.image.decode_memory_mib,
        about=about,
    )
    ensure_alive()
    poster = await _poster(src, metadata, spec, clock, about)
    web = await make_web_video(
        src, metadata, out_dir_tmp, spec, ensure_alive, clock=clock, about=about
    )
    return VideoProxies(
        metadata=metadata,
        poster=poster,
        web_video=web.path,
        web_video_width=web.width,
        web_video_height=web.height,
    )


@dataclass(frozen=True, slots=True)
class WebVideo:
    path: Path
    """The MP4 inside the caller's temporary folder; publish it with ``move_into_place``."""
    width: int
    height: int


async def make_web_video(
    src: Path | Original,
    metadata: VideoMetadata,
    out_dir_tmp: Path,
    spec: VideoProxySpec,
    ensure_alive: Callable[[], None],
    *,
    clock: Clock | None = None,
    about: str | None = None,
) -> WebVideo:
    """Encode the web video of ``src`` (probed as ``metadata``) into ``out_dir_tmp``:
    a video's, or the one embedded in a motion photo (copied out to a staging file)."""
    ensure_alive()
    bounds = ToolBounds.of(metadata, spec)
    output = out_dir_tmp / WEB_VIDEO_NAME
    name, fds = _input(src)
    if browser_ready(metadata, spec):
        # Already what the encode would make: copy the streams into a fresh MP4, in a
        # fraction of the time. Should the copy fail, the encode below still runs.
        copied = await run_killable(
            _remux_command(name, output, bounds, spec),
            timeout_seconds=bounds.time_seconds,
            clock=clock,
            pass_fds=fds,
            address_space_bytes=bounds.address_space_bytes,
            about=about,
        )
        if copied.returncode == 0 and not _reached(output, bounds.remux_bytes):
            ensure_alive()
            remuxed = await _probe_output(output, spec, clock)
            return WebVideo(output, remuxed.width, remuxed.height)
        output.unlink(missing_ok=True)
        ensure_alive()
    result = await _run_filtered(
        metadata, lambda filters: _web_video_command(name, output, filters, bounds, metadata, spec),
        _web_video_scale(spec), bounds, clock, fds, about,
    )  # fmt: skip
    if result.returncode != 0 or out_of_memory(result.stderr):
        output.unlink(missing_ok=True)
        raise _failure("ffmpeg", "could not encode the web video", result, bounds)
    if _reached(output, bounds.web_video_bytes):
        output.unlink(missing_ok=True)
        raise CorruptMedia(
            "ffmpeg could not encode the web video: it reached its size limit of "
            f"{bounds.web_video_bytes / 1e6:.1f} MB for {bounds.video_packets} video "
            f"and {bounds.audio_packets} audio packets"
        )
    ensure_alive()
    encoded = await _probe_output(output, spec, clock)
    return WebVideo(output, encoded.width, encoded.height)


@dataclass(frozen=True, slots=True)
class ToolBounds:
    """What ffmpeg may spend on one video, from what ffprobe counted in the file
    (``limits``), never from the duration its header claims."""

    video_packets: int
    audio_packets: int
    time_seconds: float
    address_space_bytes: int
    web_video_bytes: int
    """The encode's ``-fs``."""
    remux_bytes: int
    """The remux's ``-fs``."""

    @classmethod
    def of(cls, metadata: VideoMetadata, spec: VideoProxySpec) -> ToolBounds:
        """Raises ``CorruptMedia`` for a video stream of no packets (nothing to decode),
        or one ffprobe did not count."""
        if not metadata.video_packets:
            raise CorruptMedia("the video stream holds no packets: there is no frame to show")
        video = metadata.video_packets
        audio = (metadata.audio_packets or 0) if metadata.has_audio else 0
        size = metadata.size_bytes or 0
        return cls(
            video_packets=video,
            audio_packets=audio,
            time_seconds=ffmpeg_timeout_seconds(size, video, audio),
            address_space_bytes=tool_address_space(spec.image.decode_memory_mib),
            web_video_bytes=web_video_max_bytes(video, audio),
            remux_bytes=remux_max_bytes(size, video + audio),
        )


def _reached(output: Path, limit_bytes: int) -> bool:
    """Whether ffmpeg stopped at its ``-fs`` (it then ends the file and exits 0)."""
    try:
        return output.stat().st_size >= limit_bytes
    except FileNotFoundError:
        return False


async def _probe_output(output: Path, spec: VideoProxySpec, clock: Clock | None) -> VideoMetadata:
    return await probe_video(
        output, spec.ffprobe, clock=clock, decode_memory_mib=spec.image.decode_memory_mib
    )


def _failure(tool: str, what: str, result: Completed, bounds: ToolBounds) -> MediaError:
    return tool_failure(tool, what, result.returncode, result.stderr, bounds.address_space_bytes)


_TONE_MAP = (
    "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,"
    "tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"
)
"""HDR (PQ/HLG, BT.2020) to SDR BT.709: without it an iPhone video's poster and web
video look washed out. Needs ffmpeg's zscale (libzimg, in Debian's ffmpeg)."""


async def _run_filtered(
    metadata: VideoMetadata,
    build: Callable[[str], list[str]],
    scale: str,
    bounds: ToolBounds,
    clock: Clock | None,
    pass_fds: tuple[int, ...] = (),
    about: str | None = None,
) -> Completed:
    """Run ``build(filters)`` within ``bounds``, tone-mapping HDR first; an ffmpeg without
    zscale gets a second run without it (washed out beats missing)."""
    if metadata.hdr:
        result = await run_killable(
            build(f"{_TONE_MAP},{scale}"),
            timeout_seconds=bounds.time_seconds,
            clock=clock,
            pass_fds=pass_fds,
            address_space_bytes=bounds.address_space_bytes,
            about=about,
        )
        if result.returncode == 0 or b"zscale" not in result.stderr:
            return result
    return await run_killable(
        build(scale),
        timeout_seconds=bounds.time_seconds,
        clock=clock,
        pass_fds=pass_fds,
        address_space_bytes=bounds.address_space_bytes,
        about=about,
    )


def _thread_options() -> list[str]:
    """ffmpeg's thread cap: for the filters (zscale, scale) and, placed before ``-i``
    and again before the output, for the decoder and the encoder."""
    threads = str(tool_threads())
    return ["-filter_threads", threads, "-threads", threads]


def poster_time(metadata: VideoMetadata, spec: VideoProxySpec) -> float:
    """Where the poster is taken (ADR 0054): ``spec.poster_at_seconds`` (first frames are
    often black), capped at half the video's span, so that a clip of a few frames is
    not seeked past its last one.

    The span is the shorter of the container's duration and the video stream's own
    length as counted (its packets over its frame rate): a container may claim more than
    its frames cover (a long audio track, a header that lies), and a raw elementary
    stream (``.m2v``) has no duration at all. A single frame, or a span nothing gives,
    is taken at the start."""
    counted = None
    if metadata.video_packets is not None and metadata.frame_rate:
        if metadata.video_packets <= 1:
            return 0.0
        counted = metadata.video_packets / metadata.frame_rate
    spans = [s for s in (metadata.duration_seconds, counted) if s is not None and s > 0]
    if not spans:
        return 0.0
    return max(0.0, min(spec.poster_at_seconds, min(spans) / 2))


async def _poster(
    src: Path | Original,
    metadata: VideoMetadata,
    spec: VideoProxySpec,
    clock: Clock | None = None,
    about: str | None = None,
) -> ImageProxies:
    """One frame, upright (ffmpeg applies the rotation), scaled to the preview width by
    ffmpeg so a 4K frame does not cross the pipe, as BMP (no compression to undo).

    The frame at ``poster_time``, else the first one: when the seek gives no frame (the
    timestamps do not reach it) or fails outright (newer ffmpegs end with an error when
    no frame reached the encoder). Out of memory and past the time limit, no second
    run: it would fail alike."""
    bounds = ToolBounds.of(metadata, spec)
    at = poster_time(metadata, spec)
    name, fds = _input(src)
    scale = f"scale=w='min(iw,{spec.image.preview_width})':h=-2:flags=lanczos"

    # Seeking to the poster decodes at most from the key frame before it.
    def at_time(seconds: float) -> Callable[[str], list[str]]:
        return lambda filters: _poster_command(name, seconds, filters, spec)

    result = await _run_filtered(metadata, at_time(at), scale, bounds, clock, fds, about)
    if not result.stdout and at > 0 and not out_of_memory(result.stderr):
        result = await _run_filtered(metadata, at_time(0.0), scale, bounds, clock, fds, about)
    if result.returncode != 0 or not result.stdout:
        if result.returncode == 0 and not out_of_memory(result.stderr):
            where = f"at the poster time ({at:g} s) or at the start" if at > 0 else "at all"
            raise CorruptMedia(f"ffmpeg could not extract a poster frame: no frame {where}")
        raise _failure("ffmpeg", "could not extract a poster frame", result, bounds)
    return await asyncio.to_thread(_poster_proxies, result.stdout, spec.image)


def _poster_command(name: str, at: float, filters: str, spec: VideoProxySpec) -> list[str]:
    return [
        spec.ffmpeg, "-nostdin", "-hide_banner", "-v", "error", *_thread_options(),
        *ffmpeg_input_options(), "-ss", f"{at:.3f}", "-i", f"file:{name}",
        "-map", "0:v:0", "-frames:v", "1", "-vf", filters,
        "-threads", str(tool_threads()), "-f", "image2pipe", "-c:v", "bmp", "-",
    ]  # fmt: skip


def _poster_proxies(bmp: bytes, spec: ProxySpec) -> ImageProxies:
    try:
        # ffmpeg was asked for a BMP ("-c:v bmp"): nothing else is opened.
        with Image.open(io.BytesIO(bmp), formats=("BMP",)) as frame:
            frame.load()
            return proxies_from_upright_image(frame.convert("RGB"), spec)
    except (OSError, ValueError, SyntaxError) as error:
        raise MediaError(f"unreadable poster frame from ffmpeg: {error}") from error


def _web_video_scale(spec: VideoProxySpec) -> str:
    """Expressions see the frames after autorotation. Landscape: height = min(720, ih);
    portrait: width = min(720, iw); the other side keeps the aspect (-2: even, as yuv420p
    needs). Never upscaled."""
    short = spec.web_video_short_side
    return (
        f"scale=w='if(gte(iw,ih),-2,min({short},trunc(iw/2)*2))'"
        f":h='if(gte(iw,ih),min({short},trunc(ih/2)*2),-2)'"
    )


_BROWSER_CONTAINER = "mov,mp4,m4a,3gp,3g2,mj2"
"""ffprobe's name of the MP4/QuickTime demuxer: the only sources a remux takes."""
_BROWSER_PIXEL_FORMATS = frozenset({"yuv420p", "yuvj420p"})
"""8-bit 4:2:0, what every browser's H.264 decoder plays (not High 10 or 4:2:2)."""


def browser_ready(metadata: VideoMetadata, spec: VideoProxySpec) -> bool:
    """Whether the encode would change nothing a browser needs: H.264 in 8-bit 4:2:0, with
    AAC or no audio, in MP4 or QuickTime, SDR, upright, at most the web size on its short
    side and the frame-rate cap. Such a video is remuxed (streams copied), not encoded."""
    fps = metadata.frame_rate
    return (
        metadata.codec == "h264"
        and metadata.container == _BROWSER_CONTAINER
        and metadata.pixel_format in _BROWSER_PIXEL_FORMATS
        and not metadata.hdr
        # A rotated source is turned upright by the encode; a copy would keep the
        # rotation in the track's matrix, which the proxy's width and height do not say.
        and metadata.rotation == 0
        and min(metadata.width, metadata.height) <= spec.web_video_short_side
        and fps is not None
        and fps <= spec.max_fps
        and (not metadata.has_audio or metadata.audio_codec == "aac")
    )


def _remux_command(
    src: Path | str, output: Path, bounds: ToolBounds, spec: VideoProxySpec
) -> list[str]:
    """The web video by copying the first video stream (and audio stream), with the index
    in front for playback while downloading and no metadata (GPS, names) carried over;
    no larger than the source and its index (``-fs``)."""
    return [
        spec.ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y",
        *ffmpeg_input_options(), "-i", f"file:{src}",
        "-map", "0:v:0", "-map", "0:a:0?", "-c", "copy",
        "-map_metadata", "-1", "-map_chapters", "-1",
        "-fs", str(bounds.remux_bytes),
        "-movflags", "+faststart", "-f", "mp4", str(output),
    ]  # fmt: skip


def _web_video_command(
    src: Path | str,
    output: Path,
    filters: str,
    bounds: ToolBounds,
    metadata: VideoMetadata,
    spec: VideoProxySpec,
) -> list[str]:
    """The encode. ``-fps_mode vfr``: each frame keeps its timestamp (frames closer than
    the ``-fpsmax`` cap are dropped), so a file whose timestamps jump ten hours makes two
    frames, not ten hours of copies of the first. At most one frame a counted packet
    (``-frames:v``), and at most the size that many packets may make (``-fs``)."""
    command = [
        spec.ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y", *_thread_options(),
        *ffmpeg_input_options(), "-i", f"file:{src}",
        "-map", "0:v:0", "-map", "0:a:0?", "-threads", str(tool_threads()),
        "-vf", filters, "-fpsmax", str(spec.max_fps), "-fps_mode", "vfr",
        "-frames:v", str(bounds.video_packets),
        "-c:v", "libx264", "-preset", spec.preset, "-crf", str(spec.crf),
        "-pix_fmt", "yuv420p", "-profile:v", "high",
    ]  # fmt: skip
    if metadata.has_audio:
        command += ["-c:a", "aac", "-b:a", f"{spec.audio_bitrate_kbps}k", "-ac", "2"]
    command += [
        "-map_metadata", "-1", "-map_chapters", "-1",  # no GPS or names in the proxy
        "-fs", str(bounds.web_video_bytes),
        "-movflags", "+faststart", "-f", "mp4", str(output),
    ]  # fmt: skip
    return command
