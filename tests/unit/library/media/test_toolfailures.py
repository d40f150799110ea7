"""What a failed ffprobe/ffmpeg run is recorded as: the pixel cap, the memory limit, the
signal, or the tool's last lines; never a bare "no error output"."""

from __future__ import annotations

import signal

from safelight.library.files.errors import CorruptMedia, DecompressionBomb
from safelight.library.media.toolfailures import ToolOutOfMemory, last_lines, tool_failure

MIB = 1 << 20
WHAT = "could not encode the web video"


def test_a_frame_over_the_pixel_cap_is_named_with_its_size() -> None:
    stderr = (
        b"[png @ 0x1] [IMGUTILS @ 0x2] Picture size 16000x16000 exceeds specified max pixel "
        b"count 250000000, see the documentation if you wish to increase it\n"
        b"Error while decoding stream #0:0: Invalid argument\n"
    )
    error = tool_failure("ffmpeg", WHAT, 1, stderr, 1792 * MIB)
    assert isinstance(error, DecompressionBomb)
    assert error.reason == (
        "a frame of 16000x16000 (256.0 MP) is larger than the pixel cap of 250 MP"
    )


def test_a_failed_allocation_names_the_memory_limit() -> None:
    for line in (
        b"Error while decoding stream #0:0: Cannot allocate memory",
        b"[png @ 0x1] get_buffer() failed",
        b"Failed to inject frame into filter network: Resource temporarily unavailable",
    ):
        error = tool_failure("ffmpeg", WHAT, 1, line + b"\n", 1792 * MIB)
        assert isinstance(error, ToolOutOfMemory)
        assert error.reason == (
            f"ffmpeg {WHAT}: it exceeded its memory limit of 1792 MiB (address space; "
            "SAFELIGHT_DECODE_MEMORY_MIB raises it)"
        )
    # Without a limit, the same words are only the tool's.
    unlimited = tool_failure("ffmpeg", WHAT, 1, b"Cannot allocate memory\n", None)
    assert unlimited.reason == f"ffmpeg {WHAT}: Cannot allocate memory"


def test_a_tool_killed_by_a_signal_says_which() -> None:
    error = tool_failure("ffmpeg", WHAT, -signal.SIGSEGV, b"", 1024 * MIB)
    assert isinstance(error, CorruptMedia)
    assert error.reason == f"ffmpeg {WHAT}: it was killed by SIGSEGV (its memory limit is 1024 MiB)"
    assert (
        tool_failure("ffprobe", "x", -200, b"", None).reason
        == "ffprobe x: it was killed by signal 200"
    )


def test_silence_gives_the_exit_status() -> None:
    assert tool_failure("ffmpeg", WHAT, 1, b"", None).reason == (
        f"ffmpeg {WHAT}: exit status 1, no error output"
    )
    assert (
        tool_failure("ffmpeg", WHAT, 1, b"a\nb\n\nc\nd\n", None).reason
        == f"ffmpeg {WHAT}: b | c | d"
    )
    assert last_lines(b"\n \n") == "no error output"
