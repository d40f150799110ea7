"""Canon's CIFF heap, read by ``jpegblocks.read_ciff``: the APP0 block of early Canon
JPEGs and the whole of a CRW file, at the edges of what a camera writes."""

from __future__ import annotations

import struct
from datetime import UTC, datetime

import pytest

from safelight.library.media.jpegblocks import MakerBlock, read_ciff, read_maker_blocks
from safelight.testing.dateplaces import ciff_app0


def heap(*entries: tuple[int, bytes]) -> bytes:
    """A CIFF heap holding ``entries`` (tag, value): the values, then the directory,
    then the directory's offset in the heap's last four bytes."""
    values = b""
    records = []
    for tag, value in entries:
        records.append((tag, len(value), len(values)))
        values += value
    return heap_of_records(values, *records)


def heap_of_records(values: bytes, *records: tuple[int, int, int], at: int | None = None) -> bytes:
    """A heap of ``values`` and a directory of ``records`` (tag, size, offset) as given,
    however they point; the directory's offset is ``at``, by default where it is."""
    directory = struct.pack("<H", len(records)) + b"".join(
        struct.pack("<HII", *record) for record in records
    )
    return values + directory + struct.pack("<I", len(values) if at is None else at)


def ciff_file(heap: bytes) -> bytes:
    return b"II" + struct.pack("<I", 14) + b"HEAPCCDR" + heap


def ciff(*entries: tuple[int, bytes]) -> bytes:
    """A CIFF file of one heap holding ``entries`` (tag, value), each value in the heap."""
    return ciff_file(heap(*entries))


MAKE_MODEL = 0x080A
TIME_STAMP = 0x180E
IN_RECORD = 0x4000
"""The location bits of a tag whose value (up to 8 bytes) is in its directory entry."""
SUBHEAP_KINDS = {"0x2800": 0x2807, "0x3000": 0x300A}
"""A tag of each of the two data kinds that are subheaps (CameraObject, ImageProps)."""
CANON_A5 = MakerBlock("Canon", "PowerShot A5")


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


@pytest.mark.parametrize("subheap", SUBHEAP_KINDS.values(), ids=SUBHEAP_KINDS.keys())
def test_the_values_of_a_subheap_of_either_kind_are_read(subheap: int) -> None:
    inner = heap((MAKE_MODEL, b"Canon\0PowerShot A5\0"))
    assert read_ciff(ciff((subheap, inner))) == CANON_A5


def test_subheaps_are_read_four_deep_and_no_deeper() -> None:
    # A bound on the recursion: a hostile file nests subheaps without end.
    nested = heap((MAKE_MODEL, b"Canon\0PowerShot A5\0"))
    for depth in range(1, 6):
        nested = heap((SUBHEAP_KINDS["0x3000"], nested))
        found = read_ciff(ciff_file(nested))
        # The make and model are ``depth`` subheaps below the root heap.
        assert found == (CANON_A5 if depth <= 4 else MakerBlock()), depth


def test_a_value_kept_in_its_directory_entry_is_read() -> None:
    def in_record(tag: int, value: bytes) -> tuple[int, int, int]:
        # Its eight bytes are where a value in the heap has its size and offset.
        size, offset = struct.unpack("<II", value)
        return tag | IN_RECORD, size, offset

    when = datetime(2001, 5, 6, 7, 8, 9)
    data = heap_of_records(
        b"",
        in_record(TIME_STAMP, struct.pack("<II", seconds(when), 0)),
        in_record(MAKE_MODEL, b"Canon\0A5"),
    )
    assert read_ciff(ciff_file(data)) == MakerBlock("Canon", "A5", when)


def test_a_value_reaching_the_heaps_last_byte_is_read_and_one_past_it_is_skipped() -> None:
    # The directory at the heap's start, the value after it and so in the heap's last
    # bytes, whose last four (the directory's offset, 0) end the model with NULs.
    value = b"Canon\0PowerShot A5\0"

    def directory_first(size: int) -> bytes:
        return struct.pack("<HHII", 1, MAKE_MODEL, size, 12) + value + struct.pack("<I", 0)

    reaching = directory_first(len(value) + 4)
    assert 12 + len(value) + 4 == len(reaching)
    assert read_ciff(ciff_file(reaching)) == CANON_A5
    assert read_ciff(ciff_file(directory_first(len(value) + 5))) == MakerBlock()


@pytest.mark.parametrize(
    "size", [1 << 20, 0xFFFFFFFF], ids=["past-the-heap", "2**32-1, or -1 as a signed size"]
)
def test_a_value_running_past_the_heap_is_skipped_and_the_next_entry_still_read(
    size: int,
) -> None:
    make_model = b"Canon\0PowerShot A5\0"
    stamp = struct.pack("<I", seconds(datetime(2001, 5, 6, 7, 8, 9)))
    data = heap_of_records(
        make_model + stamp,
        (MAKE_MODEL, size, 0),  # from the make and model on, past the heap's end
        (0x8000 | MAKE_MODEL, len(make_model), 0),  # no location a camera writes
        (TIME_STAMP, len(stamp), len(make_model)),
    )
    assert read_ciff(ciff_file(data)) == MakerBlock(None, None, datetime(2001, 5, 6, 7, 8, 9))


def test_a_directory_offset_outside_the_heap_reads_nothing_and_raises_nothing() -> None:
    good = heap((MAKE_MODEL, b"Canon\0PowerShot A5\0"))
    assert read_ciff(ciff_file(good)) == CANON_A5
    body = good[:-4]
    for at in (len(good), len(good) - 1, 0xFFFFFFF0):
        # 0xFFFFFFF0 is -16 as a signed number: the directory 16 bytes from the end.
        assert read_ciff(ciff_file(body + struct.pack("<I", at))) == MakerBlock(), at
    for short in (b"", b"\0\0\0"):  # not even the four bytes of a directory offset
        assert read_ciff(ciff_file(short)) == MakerBlock()
        assert read_ciff(ciff((SUBHEAP_KINDS["0x2800"], short))) == MakerBlock()


def test_a_directory_of_256_entries_is_read_and_one_of_257_is_refused() -> None:
    filler = [(0x0032 + index, b"") for index in range(255)]
    last = (MAKE_MODEL, b"Canon\0PowerShot A5\0")
    assert read_ciff(ciff(*filler, last)) == CANON_A5
    assert read_ciff(ciff(*filler, (0x0031, b""), last)) == MakerBlock()
