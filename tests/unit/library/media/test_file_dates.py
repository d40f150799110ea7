"""The dates a file holds beyond the capture dates (ADR 0053): the order of precedence
with plain values, and the readers of EXIF's ModifyDate, FLIR's FFF block and a PNG's
``tIME`` and ``Creation Time``, each bounded and quiet on hostile bytes."""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime, timedelta, timezone

import pytest

from safelight.library.media.capturetime import (
    LESS_CERTAIN_SOURCES,
    CaptureTime,
    choose_capture_time,
    png_text_time,
)
from safelight.library.media.containers import png_facts
from safelight.library.media.exif import ExifDate, ExifFields, read_exif
from safelight.library.media.flir import flir_capture_time
from safelight.library.media.xmp import EMPTY, NS_TIFF, NS_XMP, parse_xmp
from safelight.testing.dateplaces import xmp_packet
from safelight.testing.filedates import (
    exif_with_modify_date,
    flir_segments,
    png_chunk,
    png_with,
    text_chunk,
    time_chunk,
    xmp_itxt_chunk,
)


def _zone(hours: float) -> timezone:
    return timezone(timedelta(hours=hours))


SHOT = ExifDate("2020:01:02 03:04:05", None, None)
WRITTEN = ExifDate("2021:06:07 08:09:10", "25", "+02:00")
MAKER = datetime(2019, 1, 1, 12, 0, tzinfo=_zone(-5))
PNG_CREATED = datetime(2018, 1, 1, 12, 10, 22, tzinfo=_zone(1))
PNG_MODIFIED = datetime(2017, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_each_place_wins_over_those_after_it() -> None:
    """sidecar > exif > xmp > iptc > maker > modified (EXIF, then XMP) > png (Creation
    Time, then tIME) > file: take the first place away, the next one dates the photo."""
    every = {"maker": MAKER, "png_created": PNG_CREATED, "png_modified": PNG_MODIFIED}
    exif = ExifFields(dates=(SHOT,), modified=WRITTEN)
    xmp_modify = parse_xmp(xmp_packet({(NS_XMP, "ModifyDate"): "2016-05-05T05:05:05"}))
    assert choose_capture_time(exif, xmp_modify, **every) == CaptureTime(
        datetime(2020, 1, 2, 3, 4, 5), "exif"
    )
    assert choose_capture_time(ExifFields(modified=WRITTEN), xmp_modify, **every) == (
        CaptureTime(MAKER, "maker")
    )
    every.pop("maker")
    written = datetime(2021, 6, 7, 8, 9, 10, 250000, tzinfo=_zone(2))
    assert choose_capture_time(ExifFields(modified=WRITTEN), xmp_modify, **every) == (
        CaptureTime(written, "modified")
    )
    assert choose_capture_time(ExifFields(), xmp_modify, **every) == CaptureTime(
        datetime(2016, 5, 5, 5, 5, 5), "modified"
    )
    assert choose_capture_time(ExifFields(), EMPTY, **every) == CaptureTime(PNG_CREATED, "png")
    every.pop("png_created")
    assert choose_capture_time(ExifFields(), EMPTY, **every) == CaptureTime(
        PNG_MODIFIED, "png", is_instant=True
    )
    assert choose_capture_time(ExifFields(), EMPTY) is None


def test_xmp_modify_date_comes_before_tiff_date_time_and_lends_its_zone() -> None:
    xmp = parse_xmp(
        xmp_packet(
            {
                (NS_TIFF, "DateTime"): "2010-01-01T00:00:00",
                (NS_XMP, "ModifyDate"): "2021-06-07T08:09:10-04:00",
            }
        )
    )
    found = choose_capture_time(ExifFields(), xmp)
    assert found == CaptureTime(datetime(2021, 6, 7, 8, 9, 10, tzinfo=_zone(-4)), "modified")
    # EXIF's DateTime without OffsetTime borrows the zone of the XMP of the same second.
    naive = ExifFields(modified=ExifDate("2021:06:07 08:09:10", None, None))
    assert choose_capture_time(naive, xmp) == found


def test_an_unset_modify_date_is_no_date() -> None:
    unset = ExifFields(modified=ExifDate("0000:00:00 00:00:00", None, None))
    assert choose_capture_time(unset, EMPTY) is None
    found = choose_capture_time(unset, EMPTY, png_modified=PNG_MODIFIED)
    assert found == CaptureTime(PNG_MODIFIED, "png", is_instant=True)


def test_only_the_dates_of_the_last_write_are_less_certain() -> None:
    assert {"modified", "png"} == LESS_CERTAIN_SOURCES


def test_exif_modify_date_is_read_with_its_subseconds_and_offset() -> None:
    written = datetime(2019, 5, 6, 7, 8, 9, 120000, tzinfo=_zone(5.5))
    fields = read_exif(exif_with_modify_date(written, make="Canon"))
    assert fields.modified == ExifDate("2019:05:06 07:08:09", "120", "+05:30")
    assert fields.dates == ()
    assert fields.make == "Canon"
    assert read_exif(exif_with_modify_date(written.replace(tzinfo=None))).modified == ExifDate(
        "2019:05:06 07:08:09", "120", None
    )


# --- FLIR ---------------------------------------------------------------------------------

TAKEN = datetime(2018, 3, 4, 10, 11, 12, 345000, tzinfo=_zone(-5))


def _app1(segments: list[bytes]) -> list[tuple[str, bytes]]:
    return [("APP1", s) for s in segments]


@pytest.mark.parametrize("chunks", [1, 2, 5])
@pytest.mark.parametrize("big_endian", [True, False])
def test_flir_date_is_read_in_its_zone_from_any_number_of_chunks(
    chunks: int, big_endian: bool
) -> None:
    segments = flir_segments(TAKEN, chunks=chunks, big_endian=big_endian)
    found = flir_capture_time(_app1(segments))
    assert found == TAKEN
    assert found is not None and found.utcoffset() == timedelta(hours=-5)
    # The chunks' numbers, not their order in the file, put them together.
    assert flir_capture_time(_app1(segments[::-1])) == TAKEN


def test_flir_chunks_that_do_not_add_up_give_no_date() -> None:
    segments = flir_segments(TAKEN, chunks=3)
    assert flir_capture_time(_app1(segments[:2])) is None  # one missing
    assert flir_capture_time(_app1([segments[0], segments[0], segments[1]])) is None
    wrong_count = segments[1][:7] + b"\x05" + segments[1][8:]
    assert flir_capture_time(_app1([segments[0], wrong_count, segments[2]])) is None
    assert flir_capture_time([("APP2", s) for s in segments]) is None
    assert flir_capture_time([]) is None


def test_a_flir_record_in_the_other_byte_order_is_turned() -> None:
    """ExifTool's rule: CameraInfo starts with 2 in its own byte order."""
    (whole,) = flir_segments(TAKEN, chunks=1, big_endian=True)
    fff = bytearray(whole[8:])
    record = 0x40 + 2 * 0x20
    fff[record : record + 2] = b"\x02\x00"  # the record says little-endian
    date_at = record + 0x384
    seconds, millis, west = int(TAKEN.timestamp()), 345, 300
    fff[date_at : date_at + 10] = (
        seconds.to_bytes(4, "little") + millis.to_bytes(4, "little") + west.to_bytes(2, "little")
    )
    assert flir_capture_time(_app1([whole[:8] + bytes(fff)])) == TAKEN


def test_a_flir_clock_never_set_or_a_zone_out_of_range_is_no_date() -> None:
    assert flir_capture_time(_app1(flir_segments(datetime(1970, 1, 2, tzinfo=UTC)))) is None
    (whole,) = flir_segments(TAKEN, chunks=1)
    zone_at = 8 + 0x40 + 2 * 0x20 + 0x384 + 8
    far = whole[:zone_at] + (15 * 60).to_bytes(2, "big") + whole[zone_at + 2 :]
    assert flir_capture_time(_app1([far])) is None


def test_hostile_flir_blocks_give_no_date_and_no_error() -> None:
    (whole,) = flir_segments(TAKEN, chunks=1)
    for cut in range(8, len(whole), 7):
        assert flir_capture_time(_app1([whole[:cut]])) is None
    header = 8
    huge_count = whole[: header + 0x1C] + b"\xff\xff\xff\xff" + whole[header + 0x20 :]
    assert flir_capture_time(_app1([huge_count])) is None
    far_directory = whole[: header + 0x18] + b"\x7f\xff\xff\xff" + whole[header + 0x1C :]
    assert flir_capture_time(_app1([far_directory])) is None
    bad_version = whole[: header + 0x14] + b"\0\0\0\0" + whole[header + 0x18 :]
    assert flir_capture_time(_app1([bad_version])) is None
    chance = random.Random(30)
    for _ in range(300):
        noisy = bytearray(whole)
        for _ in range(chance.randint(1, 12)):
            noisy[chance.randrange(8, len(noisy))] = chance.randrange(256)
        found = flir_capture_time(_app1([bytes(noisy)]))
        assert found is None or found.tzinfo is not None


# --- PNG ----------------------------------------------------------------------------------


def test_png_time_is_utc_and_read_wherever_it_is() -> None:
    written = datetime(2017, 1, 2, 3, 4, 5, tzinfo=_zone(9))
    for after in (True, False):
        facts = png_facts(io.BytesIO(png_with(time_chunk(written), after_pixels=after)))
        assert facts.modified == written and facts.modified.tzinfo == UTC
    assert png_facts(io.BytesIO(png_with())).modified is None


def test_a_bad_png_time_is_no_date() -> None:
    for data in (b"\x07\xe1\x0d\x01\0\0\0", b"\x07\xe1\x01\x01\x19\0\0", b"\x07\xe1\x01\x01"):
        assert png_facts(io.BytesIO(png_with(png_chunk(b"tIME", data)))).modified is None
    leap = png_chunk(b"tIME", b"\x07\xe1\x0c\x1f\x17\x3b\x3c")  # 2017-12-31 23:59:60
    assert png_facts(io.BytesIO(png_with(leap))).modified == datetime(
        2017, 12, 31, 23, 59, 59, tzinfo=UTC
    )


def test_png_creation_time_text_is_found_in_text_and_itxt_chunks() -> None:
    text = "Mon, 1 Jan 2018 12:10:22 +0100"
    assert png_facts(io.BytesIO(png_with(text_chunk("Creation Time", text)))).created == text
    itxt = png_chunk(b"iTXt", b"Creation Time\0\0\0\0\0" + text.encode())
    assert png_facts(io.BytesIO(png_with(itxt))).created == text
    assert png_facts(io.BytesIO(png_with(text_chunk("Comment", text)))).created is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mon, 1 Jan 2018 12:10:22 +0100", datetime(2018, 1, 1, 12, 10, 22, tzinfo=_zone(1))),
        ("1 Jan 2018 12:10:22 EST", datetime(2018, 1, 1, 12, 10, 22, tzinfo=_zone(-5))),
        ("1 Jan 2018 12:10", datetime(2018, 1, 1, 12, 10)),
        ("2007:02:13 06:34:38", datetime(2007, 2, 13, 6, 34, 38)),
        ("2007:02:13 06:34:38+02:00", datetime(2007, 2, 13, 6, 34, 38, tzinfo=_zone(2))),
        ("2018-01-01T12:00:00.5Z", datetime(2018, 1, 1, 12, 0, 0, 500000, tzinfo=UTC)),
        ("2018-01-01", None),
        ("Thu, 1 Jan 1970 00:00:00 +0000", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_png_creation_time_forms(text: str, expected: datetime | None) -> None:
    assert png_text_time(text) == expected


def test_png_xmp_after_the_pixels_is_found() -> None:
    packet = xmp_packet({(NS_XMP, "CreateDate"): "2016-02-03T04:05:06"})
    facts = png_facts(io.BytesIO(png_with(xmp_itxt_chunk(packet))))
    assert facts.xmp == packet
    assert parse_xmp(facts.xmp).get(NS_XMP, "CreateDate") == "2016-02-03T04:05:06"


def test_not_a_png_has_no_facts() -> None:
    assert png_facts(io.BytesIO(b"\xff\xd8\xff\xe0 not a png")).modified is None


# --- XMP with junk ------------------------------------------------------------------------

_WRAPPED = xmp_packet({(NS_XMP, "CreateDate"): "2016-02-03T04:05:06"})
_BARE = _WRAPPED[_WRAPPED.index(b"<x:xmpmeta") : _WRAPPED.index(b"</x:xmpmeta>") + 12]


@pytest.mark.parametrize(
    "junk",
    [
        _WRAPPED + b"\0\0\0\x89garbage\xff",
        _WRAPPED + b"\0" + _WRAPPED[:90],  # a second packet, cut short
        b"\xef\xbb\xbfjunk\0" + _WRAPPED,
        _BARE + b"\0garbage",  # no wrapper: to the closing </x:xmpmeta>
        _BARE + b"\r\n<?xpacket end='w'?>\0\0junk",  # the trailer is kept, the junk not
        _BARE + b"junk" + _WRAPPED,  # the first packet, not everything up to the last end
    ],
)
def test_an_xmp_packet_with_junk_around_it_keeps_its_fields(junk: bytes) -> None:
    assert parse_xmp(junk).get(NS_XMP, "CreateDate") == "2016-02-03T04:05:06"


def test_trimming_never_turns_a_refused_packet_into_one_that_parses() -> None:
    assert parse_xmp(b'<!DOCTYPE x [<!ENTITY e "boom">]>junk' + _WRAPPED) is EMPTY
    assert parse_xmp(_WRAPPED[: _WRAPPED.index(b"</x:xmpmeta>")] + b"junk") is EMPTY
