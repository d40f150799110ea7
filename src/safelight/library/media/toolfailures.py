"""What a failed ffprobe or ffmpeg run is recorded as: the bound the file hit (the pixel
cap, the memory limit), the signal that killed the tool, or the tool's last words; never
a bare "no error output".

ffmpeg reports a frame over ``-max_pixels`` and a failed allocation in its stderr, and
may still exit 0 (a poster that was never written, a probe with no frame size), so the
stderr is read whatever the exit status.
"""

from __future__ import annotations

import re
import signal

from safelight.library.files.errors import CorruptMedia, DecompressionBomb, MediaError

_MIB = 1 << 20

_PIXEL_CAP = re.compile(rb"Picture size (\d+)x(\d+) exceeds specified max pixel count (\d+)")
"""libavutil's refusal of a frame over ``-max_pixels`` (``av_image_check_size2``)."""

_OUT_OF_MEMORY = (
    b"Cannot allocate memory",  # ENOMEM, from any library
    b"get_buffer() failed",  # a decoder's frame allocation
    b"Resource temporarily unavailable",  # EAGAIN: a thread's stack could not be mapped
    b"std::bad_alloc",  # a C++ library (libzimg)
)
"""How ffmpeg's libraries say an allocation failed: under the address-space limit, the
file asked for more memory than a tool may take."""


class ToolOutOfMemory(MediaError):
    """ffprobe or ffmpeg reached its address-space limit on this file."""


def last_lines(stderr: bytes, count: int = 3) -> str:
    """The last lines of a tool's stderr, for a reason that says what went wrong."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    tail = [line for line in lines if line][-count:]
    return " | ".join(tail) if tail else "no error output"


def pixel_cap_exceeded(stderr: bytes) -> DecompressionBomb | None:
    """The error of a frame the decoder refused for the pixel cap, if it did."""
    match = _PIXEL_CAP.search(stderr)
    if match is None:
        return None
    width, height, cap = (int(group) for group in match.groups())
    return DecompressionBomb(
        f"a frame of {width}x{height} ({width * height / 1e6:.1f} MP) is larger than the "
        f"pixel cap of {cap / 1e6:g} MP"
    )


def out_of_memory(stderr: bytes) -> bool:
    return any(marker in stderr for marker in _OUT_OF_MEMORY)


def tool_failure(
    tool: str, what: str, returncode: int, stderr: bytes, address_space_bytes: int | None
) -> MediaError:
    """The error of ``tool`` (its name) that failed to do ``what`` ("could not encode
    the web video"), from its exit status and stderr; ``address_space_bytes``, its
    address-space limit, if it had one."""
    bomb = pixel_cap_exceeded(stderr)
    if bomb is not None:
        return bomb
    mib = None if address_space_bytes is None else address_space_bytes // _MIB
    if mib is not None and out_of_memory(stderr):
        return ToolOutOfMemory(
            f"{tool} {what}: it exceeded its memory limit of {mib} MiB (address space; "
            "SAFELIGHT_DECODE_MEMORY_MIB raises it)"
        )
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        memory = "" if mib is None else f" (its memory limit is {mib} MiB)"
        return CorruptMedia(f"{tool} {what}: it was killed by {name}{memory}")
    detail = last_lines(stderr)
    if detail == "no error output":
        detail = f"exit status {returncode}, no error output"
    return CorruptMedia(f"{tool} {what}: {detail}")
