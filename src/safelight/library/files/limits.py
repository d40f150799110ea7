"""What one photo or video may cost the machine: memory, cores, time and priority.

A NAS runs safelight beside everything else it does, and a library holds files nobody
vetted. So no single file may take the machine's memory (a 226 KB PNG can declare
100 MP of 16-bit pixels), its cores, or an unbounded time (a video whose decode loops).

Memory. Each decode process has a budget (``Settings.decode_memory_mib``). A photo
whose decode at full size would not fit is refused before a pixel is decoded, with a
per-file error (``TooLargeToDecode``): JPEGs decode at a reduced size (libjpeg's DCT
scaling), so only the rest are at risk: PNG, TIFF, WebP, GIF, HEIF/AVIF (libheif has no
reduced decode). The budget also sizes the pool (no more processes than the available
memory holds), and is the decode process's address-space limit, plus room for its code,
so an estimate that is wrong ends in a ``MemoryError`` for one file, never the OOM
killer choosing among the NAS's processes.

Tools. ffprobe and ffmpeg are bounded by what the file is, never by what it claims (a
1.4 KB video can claim ten hours): their time limits follow the file's bytes and the
packets ffprobe counted in it, the web video's size follows those packets, and each runs
with an address-space limit (the decode processes', plus room for its threads), a thread
cap, at nice 10 and best-effort I/O priority 7. Their decoders refuse a frame above the
image pixel cap (``-max_pixels``, in ``metadata``).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
from collections.abc import Callable
from pathlib import Path

from safelight.library.files.errors import TooLargeToDecode

MIB = 1 << 20

DEFAULT_DECODE_MEMORY_MIB = 512
"""A decode process's budget. Fits a 48 MP iPhone HEIF (about 8 bytes a pixel while
libheif decodes it), a 100 MP 16-bit greyscale PNG, an RGB PNG or TIFF of about 100 MP,
and any JPEG up to ``metadata.MAX_IMAGE_PIXELS``."""

MIN_DECODE_MEMORY_MIB = 128

DECODE_BASELINE_BYTES = 96 * MIB
"""Of the budget, what a decode process needs besides the decoded pixels: the
interpreter with Pillow, libheif and lcms loaded (about 45 MiB resident, measured), and
the preview-sized copies made after the reduction (resize, sRGB, JPEG encoding)."""

ADDRESS_SPACE_HEADROOM_BYTES = 768 * MIB
"""Added to the budget for the address-space limit: a decode process maps about
200 MiB of code and data before it decodes anything, and each thread a codec starts
reserves a stack and a malloc arena (address space, mostly never touched)."""

_STORED_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16L": 2, "I;16B": 2, "I;16N": 2}
"""Bytes per pixel of a decoded image in Pillow's memory; every other mode takes 4
(RGB is stored as 4 bytes, LA too)."""

_DECODER_BYTES = {"HEIF": 4, "AVIF": 4, "WEBP": 12, "JXL": 24}
"""Bytes per pixel a format's decoder holds beside Pillow's image while it decodes
(measured): libheif's planes; libwebp's canvas, its previous canvas (for animations)
and the copy handed to Pillow; pillow-jxl-plugin's (an allowance, not measured: libjxl's
float planes, 12, and the plugin's two copies of its output, Rust's and Python's)."""


def decode_memory_bytes(
    format_name: str | None,
    mode: str,
    size: tuple[int, int],
    working_mode: str,
    working: tuple[int, int],
    working_is_copy: bool,
    first_pass_pixels: int,
) -> int:
    """Peak bytes, beyond ``DECODE_BASELINE_BYTES``, of decoding an image of ``mode``
    and ``size`` whole, making of it (in strips, ``images._shrink``) the upright
    ``working`` image in ``working_mode`` (unless the decoded image is used as it is),
    and resizing that, whose first pass makes ``first_pass_pixels``.

    The largest of three moments: the decode (the decoder's own buffers beside the
    image), the decoded image beside the working one, and the working image beside the
    resize's first pass (the decoded image freed, or being the working one)."""
    pixels = size[0] * size[1]
    decoded = pixels * _stored_bytes(mode)
    decoding = pixels * (_stored_bytes(mode) + _DECODER_BYTES.get(format_name or "", 0))
    working_bytes = working[0] * working[1] * _stored_bytes(working_mode)
    shrinking = decoded + (working_bytes if working_is_copy else 0)
    resizing = working_bytes + first_pass_pixels * _stored_bytes(working_mode)
    return max(decoding, shrinking, resizing)


def _stored_bytes(mode: str) -> int:
    return _STORED_BYTES.get(mode, 4)


def check_decode_fits(
    format_name: str | None,
    mode: str,
    size: tuple[int, int],
    working_mode: str,
    working: tuple[int, int],
    working_is_copy: bool,
    first_pass_pixels: int,
    budget_bytes: int,
) -> None:
    """Raise ``TooLargeToDecode`` if decoding this image would not fit ``budget_bytes``
    (see ``decode_memory_bytes``; the estimate is above the peak measured for every
    mode, docs/benchmarks.md)."""
    available = budget_bytes - DECODE_BASELINE_BYTES
    needed = decode_memory_bytes(
        format_name, mode, size, working_mode, working, working_is_copy, first_pass_pixels
    )
    if needed <= available:
        return
    pixels = size[0] * size[1]
    per_pixel = needed / pixels
    limit = max(0, available) / per_pixel
    raise TooLargeToDecode(
        f"too large to decode safely: {pixels / 1e6:.1f} MP, limit {limit / 1e6:.1f} MP "
        f"for a {mode} {format_name or 'image'} in a decode budget of "
        f"{budget_bytes // MIB} MiB (SAFELIGHT_DECODE_MEMORY_MIB)"
    )


# --- the decode pool ---------------------------------------------------------------------


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity outside Linux
        return os.cpu_count() or 1


def decode_processes_for(cores: int, available_bytes: int | None, budget_bytes: int) -> int:
    """One decode process per core, but no more than the available memory holds at
    ``budget_bytes`` each; at least one (a single photo too large for the machine then
    fails alone, by its address-space limit)."""
    count = cores
    if available_bytes is not None:
        count = min(count, available_bytes // budget_bytes)
    return max(1, count)


def available_memory_bytes(
    meminfo: Path = Path("/proc/meminfo"), cgroup: Path = Path("/sys/fs/cgroup")
) -> int | None:
    """Memory this process could take without pushing others out: the kernel's
    MemAvailable, or less if a cgroup (v2) limit leaves less. None where unknown."""
    found: int | None = None
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            used = int((cgroup / "memory.current").read_text().strip())
            left = max(0, int(limit) - used)
            found = left if found is None else min(found, left)
    except (OSError, ValueError):
        pass
    return found


def address_space_limit_bytes(budget_bytes: int) -> int:
    return budget_bytes + ADDRESS_SPACE_HEADROOM_BYTES


def limit_address_space(budget_bytes: int) -> None:
    """Cap this process's address space (in a decode process: allocations past it fail
    as ``MemoryError`` instead of the machine swapping or the OOM killer striking)."""
    cap_address_space(address_space_limit_bytes(budget_bytes))


def cap_address_space(limit_bytes: int) -> None:
    """Set this process's ``RLIMIT_AS`` to ``limit_bytes``; an existing hard limit that
    is lower is kept. Only system calls: safe between fork and exec (``preexec_fn``)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = limit_bytes if hard == resource.RLIM_INFINITY else min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


# --- ffprobe and ffmpeg ------------------------------------------------------------------

FFPROBE_TIMEOUT_SECONDS = 60.0
"""ffprobe's time limit before the file's bytes: it reads the headers, decodes a frame
or two, and counts the packets (``-count_packets``: demuxing alone, no decode)."""
FFPROBE_SECONDS_PER_MIB = 0.5
"""Reading the whole file to count its packets: 2 MiB/s, a busy NAS disk at I/O
priority 7, behind a RAID scrub."""
FFMPEG_BASE_SECONDS = 300.0
FFMPEG_SECONDS_PER_VIDEO_PACKET = 0.5
"""Decoding, filtering and encoding one frame: a slow NAS (ARM, 4 cores, nice 10)
takes 4K HEVC HDR to 720p H.264 at a few frames a second; 0.5 s a frame leaves room for
that and more (the old 20 s per second of video at 40 fps). ffmpeg makes no frame but
from a packet: the web video is encoded with a variable frame rate, so a gap in the
timestamps is a gap in the output, not copies of the frame before it."""
FFMPEG_SECONDS_PER_OTHER_PACKET = 0.05
"""Decoding and encoding one audio packet (AAC's 21 ms, FLAC's up to 1.4 s)."""
FFMPEG_SECONDS_PER_MIB = 0.5
"""Reading the file once, as ffprobe's count did."""
FFMPEG_MAX_SECONDS = 6 * 3600.0
"""No video gets more, whatever it holds."""
WEB_VIDEO_BASE_BYTES = 1 * MIB
"""The web video's container and headers, beside its frames and audio."""
WEB_VIDEO_BYTES_PER_VIDEO_PACKET = 256 * 1024
"""At most one frame a packet, and a 720p H.264 frame at CRF 23 of even the noisiest
picture stays far below this (about 120 Mb/s at 60 fps)."""
WEB_VIDEO_BYTES_PER_OTHER_PACKET = 32 * 1024
"""One audio packet's AAC at 128 kb/s: 1.4 s of FLAC makes 22 KB."""
REMUX_BYTES_PER_PACKET = 64
"""A remux copies the packets; MP4 adds at most a few index entries for each."""
TOOL_THREAD_ADDRESS_SPACE_BYTES = 256 * MIB
"""Address space one more thread of ffmpeg takes: a stack, a malloc arena, the frames a
frame-threaded decoder and x264 hold in flight, the tone map's float planes (measured:
4K HEVC 10-bit with the tone map to 720p needs about 1.2 GiB of address space at 2
threads, 1.7 at 4 and 2.5 at 8; ffmpeg itself maps about 300 MiB of libraries)."""
MAX_TOOL_THREADS = 8
"""x264 at 720p and the decoders gain little beyond this, and each thread holds frames."""
NICE = 10
IOPRIO_CLASS_BEST_EFFORT = 2
IOPRIO_LEVEL = 7  # the lowest of best-effort: idle (class 3) could starve behind a scrub
_IOPRIO_CLASS_SHIFT = 13
_IOPRIO_WHO_PROCESS = 1
_SYS_IOPRIO_SET = {
    "x86_64": 251,
    "i386": 289,
    "i686": 289,
    "aarch64": 30,
    "riscv64": 30,
    "armv7l": 314,
    "armv6l": 314,
    "ppc64le": 273,
    "s390x": 282,
}


def ffprobe_timeout_seconds(size_bytes: int) -> float:
    """How long ffprobe may take over a file of ``size_bytes``."""
    return min(
        FFMPEG_MAX_SECONDS, FFPROBE_TIMEOUT_SECONDS + _mib(size_bytes) * FFPROBE_SECONDS_PER_MIB
    )


def ffmpeg_timeout_seconds(size_bytes: int, video_packets: int, other_packets: int) -> float:
    """How long ffmpeg may take over a file of ``size_bytes`` holding ``video_packets``
    of the video stream it reads and ``other_packets`` of the audio stream: the work it
    can do, whatever duration the file claims."""
    return min(
        FFMPEG_MAX_SECONDS,
        FFMPEG_BASE_SECONDS
        + max(0, video_packets) * FFMPEG_SECONDS_PER_VIDEO_PACKET
        + max(0, other_packets) * FFMPEG_SECONDS_PER_OTHER_PACKET
        + _mib(size_bytes) * FFMPEG_SECONDS_PER_MIB,
    )


def web_video_max_bytes(video_packets: int, other_packets: int) -> int:
    """The web video's size limit (ffmpeg's ``-fs``) for an encode of that many packets."""
    return (
        WEB_VIDEO_BASE_BYTES
        + max(0, video_packets) * WEB_VIDEO_BYTES_PER_VIDEO_PACKET
        + max(0, other_packets) * WEB_VIDEO_BYTES_PER_OTHER_PACKET
    )


def remux_max_bytes(size_bytes: int, packets: int) -> int:
    """The size limit of a remux (streams copied) of a file of ``size_bytes``."""
    return WEB_VIDEO_BASE_BYTES + max(0, size_bytes) + max(0, packets) * REMUX_BYTES_PER_PACKET


def tool_address_space_bytes(budget_bytes: int, threads: int) -> int:
    """ffprobe's and ffmpeg's address-space limit: a decode process's (the same budget,
    ``Settings.decode_memory_mib``), plus room for each of its ``threads``."""
    return address_space_limit_bytes(budget_bytes) + threads * TOOL_THREAD_ADDRESS_SPACE_BYTES


def _mib(size_bytes: int) -> float:
    return max(0, size_bytes) / MIB


def tool_threads(cores: int | None = None) -> int:
    """Threads one ffmpeg may use: the cores this process may run on, at most
    ``MAX_TOOL_THREADS``."""
    return max(1, min(available_cores() if cores is None else cores, MAX_TOOL_THREADS))


def ioprio_value() -> int:
    return IOPRIO_CLASS_BEST_EFFORT << _IOPRIO_CLASS_SHIFT | IOPRIO_LEVEL


_libc = ctypes.CDLL(None, use_errno=True)
_SYS_IOPRIO_SET_NUMBER = _SYS_IOPRIO_SET.get(platform.machine())


def lower_priority() -> None:
    """Nice 10 and best-effort I/O priority 7 for this process (at least: a process
    already nicer stays so). Runs in the child between fork and exec (``preexec_fn``),
    so it only makes system calls: no locks, no imports, no allocation to speak of.
    Best effort: a kernel or sandbox that refuses leaves the priority as it was."""
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) < NICE:
            os.setpriority(os.PRIO_PROCESS, 0, NICE)
    except OSError:
        pass
    if _SYS_IOPRIO_SET_NUMBER is not None:
        _libc.syscall(
            ctypes.c_long(_SYS_IOPRIO_SET_NUMBER),
            ctypes.c_long(_IOPRIO_WHO_PROCESS),
            ctypes.c_long(0),
            ctypes.c_long(ioprio_value()),
        )


def tool_preexec(address_space_bytes: int) -> Callable[[], None]:
    """What a tool's child runs between fork and exec: the lower priority and the
    address-space limit (a hostile frame or stream then fails ffmpeg's allocation, for
    that file, instead of taking the NAS's memory)."""

    def preexec() -> None:
        lower_priority()
        cap_address_space(address_space_bytes)

    return preexec
