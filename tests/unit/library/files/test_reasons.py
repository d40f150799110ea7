"""Reasons that group (ADR 0057): what varies from run to run in the text of one cause
(memory addresses, descriptor numbers, temporary names, process ids) is made constant
where a reason is made, so one cause is one reason across files and runs."""

from __future__ import annotations

import io
import os
import re
import tempfile

import pytest
from PIL import Image, UnidentifiedImageError

from safelight.library.files.errors import CorruptMedia, MediaError, plain_reason

VARYING = re.compile(r"0x[0-9a-fA-F]{4,}|/dev/fd/\d|/proc/\d+/fd/\d|name=\d|pid \d")


def pillow_reason() -> str:
    """The reason of Pillow's own exception for an unreadable file in memory: it names
    the ``BytesIO`` object, at its address."""
    with pytest.raises(UnidentifiedImageError) as caught:
        Image.open(io.BytesIO(b"not an image"))
    return CorruptMedia(f"cannot decode image: {caught.value}").reason


def test_an_exception_that_names_an_object_gives_one_reason_whatever_its_address() -> None:
    one, two = pillow_reason(), pillow_reason()
    assert re.search(r"at 0x[0-9a-f]+", repr(io.BytesIO()))
    assert one == two
    assert "cannot identify image file <_io.BytesIO object at 0x...>" in one
    assert not VARYING.search(one)


def test_an_open_descriptor_and_a_tools_lines_give_one_reason_whatever_their_numbers() -> None:
    reasons = set()
    for _ in range(2):
        with tempfile.TemporaryFile() as held, os.fdopen(os.dup(held.fileno()), "rb") as f:
            shown = f"cannot decode image: {f!r}; [mov,mp4 @ {id(f):#x}] moov atom not found"
            reasons.add(MediaError(f"{shown}; /dev/fd/{f.fileno()}: invalid data").reason)
    assert reasons == {
        "cannot decode image: <_io.BufferedReader name=N>; [mov,mp4 @ 0x...] moov atom not "
        "found; /dev/fd/N: invalid data"
    }


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("/proc/21651/fd/12 was closed", "/proc/PID/fd/N was closed"),
        ("/proc/self/fd/3: gone", "/proc/PID/fd/N: gone"),
        ("killed pid 4242, process 77", "killed pid N, process N"),
        ("cannot write /var/tmp/tmpk3j_9xq2/frame.png", "cannot write /var/tmp/tmp.../frame.png"),
        # What does not vary stays: a size, an exit code, a path of the library.
        ("exit code 1 after 300 frames of 0x12", "exit code 1 after 300 frames of 0x12"),
        ("the root /tmp/photos cannot be listed", "the root /tmp/photos cannot be listed"),
    ],
)
def test_what_varies_is_made_constant_and_nothing_else(text: str, plain: str) -> None:
    assert plain_reason(text) == plain
    assert plain_reason(plain) == plain  # once is enough
