"""Canon's CIFF heap, read by ``jpegblocks.read_ciff``: the APP0 block of early Canon
JPEGs and the whole of a CRW file, at the edges of what a camera writes."""

from __future__ import annotations

import struct
from datetime import UTC, datetime

import pytest

from safelight.library.jpegblocks import MakerBlock, read_ciff, read_maker_blocks
from safelight.testing.dateplaces import ciff_app0


def ciff(*entries: tuple[int, bytes]) -> bytes:
    """A CIFF file of one heap holding ``entries`` (tag, value), each value in the heap."""
    heap = b""
    directory = b""
    for tag, value in entries:
        directory += struct.pack("<HII", tag, len(value), len(heap))
        heap += value
    heap_end = len(heap)
    heap += struct.pack("<H", len(entries)) + directory + struct.pack("<I", heap_end)
    return b"II" + struct.pack("<I", 14) + b"HEAPCCDR" + heap


MAKE_MODEL = 0x080A
TIME_STAMP = 0x180E


def seconds(when: datetime) -> int:
    return int(when.replace(tzinfo=UTC).timestamp())


def test_the_make_and_model_with_or_without_their_last_nul() -> None:
    assert read_ciff(ciff((MAKE_MODEL, b"Canon\0EOS D30\0"))) == MakerBlock("Canon", "EOS D30")
    assert read_ciff(ciff((MAKE_MODEL, b"Canon\0EOS D30"))) == MakerBlock("Canon", "EOS D30")
    assert read_ciff(ciff((MAKE_MODEL, b"Canon"))) == MakerBlock("Canon", None)
    assert read_ciff(ciff((MAKE_MODEL, b"\0EOS D30\0"))) == MakerBlock(None, "EOS D30")


@pytest.mark.parametrize(
    "when", [datetime(2001, 5, 6, 7, 8, 9), datetime(2040, 1, 2, 3, 4, 5)], ids=["2001", "2040"]
)
def test_the_time_stamp_is_the_wall_clock_past_2038_too(when: datetime) -> None:
    stamp = struct.pack("<III", seconds(when), 0, 0)
    assert read_ciff(ciff((TIME_STAMP, stamp))).captured_at == when
    # Four bytes are enough: the seconds alone.
    assert read_ciff(ciff((TIME_STAMP, stamp[:4]))).captured_at == when
    assert read_ciff(ciff((TIME_STAMP, stamp[:3]))).captured_at is None


def test_no_time_stamp_is_no_time() -> None:
    found = read_ciff(ciff((MAKE_MODEL, b"Canon\0EOS D30\0")))
    assert found.captured_at is None


def test_a_heap_in_another_byte_order_is_not_read() -> None:
    data = ciff((MAKE_MODEL, b"Canon\0EOS D30\0"))
    assert read_ciff(b"MM" + data[2:]) == MakerBlock()
    assert read_ciff(data[:13]) == MakerBlock()


def test_a_jpeg_s_ciff_block_with_a_make_and_no_usable_time_still_names_the_camera() -> None:
    # An unset clock (1970) gives no time, but the camera is still known.
    unset = ciff_app0("Canon", "Canon PowerShot A5", datetime(1970, 1, 1, 0, 0, 1))
    found = read_maker_blocks([("APP0", unset)])
    assert (found.make, found.model, found.captured_at) == ("Canon", "Canon PowerShot A5", None)
