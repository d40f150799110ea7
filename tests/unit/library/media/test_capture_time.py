"""Capture time from every place a camera or an editor writes it (ADR 0026): EXIF, the
embedded XMP packet, IPTC, the maker's own blocks; the file's time only when none holds
a date. Make and model from XMP when EXIF lacks them. XMP is parsed safely."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from PIL import Image, PngImagePlugin

from safelight.library.media.capturetime import (
    choose_capture_time,
    iptc_capture_time,
    parse_exif_datetime,
    with_zone,
)
from safelight.library.media.exif import ExifDate, ExifFields, read_exif
from safelight.library.media.metadata import read_image_metadata
from safelight.library.media.xmp import (
    EMPTY,
    NS_EXIF,
    NS_GCONTAINER,
    NS_GCONTAINER_ITEM,
    NS_PHOTOSHOP,
    NS_TIFF,
    NS_XMP,
    XMP_MAX_BYTES,
    find_xmp_packet,
    parse_xmp,
    parse_xmp_date,
)
from safelight.testing.dateplaces import (
    ciff_app0,
    iptc_app13,
    olympus_app12,
    reconyx_maker_note,
    with_segment,
    xmp_packet,
)
from safelight.testing.exif import exif_bytes

PLUS_TWO = timezone(timedelta(hours=2))
MINUS_FOUR = timezone(timedelta(hours=-4))


def jpeg(**save: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), (90, 120, 150)).save(buffer, "JPEG", **save)
    return buffer.getvalue()


def written(tmp_path: Path, data: bytes, name: str = "photo.jpg") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- XMP packets ----------------------------------------------------------------------------


def test_a_packet_is_found_in_a_files_bytes_in_either_form() -> None:
    packet = xmp_packet({(NS_XMP, "CreateDate"): "2010-09-27T14:35:33+02:00"})
    assert find_xmp_packet(b"\xff\xd8junk" + packet + b"more") == packet
    bare = packet[packet.index(b"<x:xmpmeta") : packet.index(b"</x:xmpmeta>") + 12]
    assert find_xmp_packet(b"junk" + bare + b"<?xpacket end") == bare
    assert find_xmp_packet(b"no packet here") is None
    assert find_xmp_packet(b"<x:xmpmeta xmlns:x='adobe:ns:meta/'> cut short") is None


def test_a_packet_without_an_end_within_the_bound_is_not_guessed_at() -> None:
    huge = b"<x:xmpmeta>" + b" " * XMP_MAX_BYTES + b"</x:xmpmeta>"
    assert find_xmp_packet(huge) is None
    assert parse_xmp(huge) is EMPTY


def test_properties_are_read_as_attributes_and_as_elements_by_namespace_uri() -> None:
    values = {
        (NS_XMP, "CreateDate"): "2010-09-27T14:35:33+02:00",
        (NS_TIFF, "Make"): "Canon",
        (NS_PHOTOSHOP, "DateCreated"): "2010-09-27T14:35:33.5",
    }
    for as_elements in (False, True):
        properties = parse_xmp(xmp_packet(values, as_elements=as_elements))
        assert {name: properties.get(*name) for name in values} == values
        assert properties.get(NS_EXIF, "DateTimeOriginal") is None


def test_a_utf16_sidecar_text_parses() -> None:
    packet = xmp_packet({(NS_XMP, "CreateDate"): "2010-09-27T14:35:33+02:00"})
    text = packet.decode().replace('<?xpacket begin="\ufeff"', '<?xpacket begin=""')
    utf16 = '<?xml version="1.0" encoding="UTF-16"?>'.encode("utf-16") + text.encode("utf-16")[2:]
    assert parse_xmp(utf16).get(NS_XMP, "CreateDate") == "2010-09-27T14:35:33+02:00"


def test_the_container_directory_of_a_motion_photo_is_a_sequence_of_structures() -> None:
    packet = f"""<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF
      xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
      <rdf:Description rdf:about="" xmlns:Container="{NS_GCONTAINER}"
          xmlns:Item="{NS_GCONTAINER_ITEM}"
          xmlns:GCamera="http://ns.google.com/photos/1.0/camera/" GCamera:MotionPhoto="1">
        <Container:Directory><rdf:Seq>
          <rdf:li rdf:parseType="Resource">
            <Container:Item Item:Mime="image/jpeg" Item:Semantic="Primary" Item:Padding="0"/>
          </rdf:li>
          <rdf:li rdf:parseType="Resource">
            <Container:Item Item:Mime="video/mp4" Item:Semantic="MotionPhoto"
                Item:Length="123456"/>
          </rdf:li>
        </rdf:Seq></Container:Directory>
      </rdf:Description></rdf:RDF></x:xmpmeta>""".encode()
    properties = parse_xmp(packet)
    assert properties.get("http://ns.google.com/photos/1.0/camera/", "MotionPhoto") == "1"
    items = properties.items(NS_GCONTAINER, "Directory")
    assert [item.get((NS_GCONTAINER_ITEM, "Semantic")) for item in items] == [
        "Primary",
        "MotionPhoto",
    ]
    assert items[1][(NS_GCONTAINER_ITEM, "Length")] == "123456"
    assert items[1][(NS_GCONTAINER_ITEM, "Mime")] == "video/mp4"


@pytest.mark.parametrize(
    "hostile",
    [
        b'<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><x:xmpmeta '
        b'xmlns:x="adobe:ns:meta/">&b;</x:xmpmeta>',
        b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x:xmpmeta '
        b'xmlns:x="adobe:ns:meta/">&e;</x:xmpmeta>',
        b"<x:xmpmeta><unclosed></x:xmpmeta>",
        b"\xff\xfe\x00garbage",
        b"",
    ],
)
def test_entities_dtds_and_broken_xml_give_no_properties_and_no_error(hostile: bytes) -> None:
    assert parse_xmp(hostile) is EMPTY


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2010-09-27T14:35:33+02:00", datetime(2010, 9, 27, 14, 35, 33, tzinfo=PLUS_TWO)),
        ("2022-01-10T15:15:44.31", datetime(2022, 1, 10, 15, 15, 44, 310000)),
        ("2023-11-15T12:30:00Z", datetime(2023, 11, 15, 12, 30, tzinfo=UTC)),
        ("2023-11-15T12:30", datetime(2023, 11, 15, 12, 30)),
        (
            "2023-11-15T12:30:00-0430",
            datetime(2023, 11, 15, 12, 30, tzinfo=timezone(-timedelta(hours=4, minutes=30))),
        ),
        ("2023-11-15T12:30:00+25:00", datetime(2023, 11, 15, 12, 30)),
        ("2023-11-15", None),
        ("2023", None),
        ("2023-02-30T10:00:00", None),
        ("not a date", None),
        (None, None),
    ],
)
def test_xmp_dates(text: str | None, expected: datetime | None) -> None:
    parsed = parse_xmp_date(text)
    assert parsed == expected
    if expected is not None and parsed is not None:
        assert parsed.utcoffset() == expected.utcoffset()


NS_DC = "http://purl.org/dc/elements/1.1/"
CREATE_DATE = "2010-09-27T14:35:33+02:00"


def described(body: str, *descriptions: str) -> bytes:
    """A bare packet (no ``<?xpacket?>`` wrapper) of one ``rdf:Description`` with
    ``body`` as its content (then any further ``descriptions``, whole), the prefixes
    ``xmp``, ``exif``, ``dc``, ``Container`` and ``Item`` declared on the ``rdf:RDF``."""
    return (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
        f'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:xmp="{NS_XMP}"'
        f' xmlns:exif="{NS_EXIF}" xmlns:dc="{NS_DC}" xmlns:Container="{NS_GCONTAINER}"'
        f' xmlns:Item="{NS_GCONTAINER_ITEM}">'
        f'<rdf:Description rdf:about="">{body}</rdf:Description>'
        + "".join(descriptions)
        + "</rdf:RDF></x:xmpmeta>"
    ).encode()


DATED = described(f"<xmp:CreateDate>{CREATE_DATE}</xmp:CreateDate>")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"], ids=["LE", "BE"])
def test_a_utf16_sidecar_of_either_byte_order_padded_with_nuls_parses(encoding: str) -> None:
    # Its declaration still says UTF-8, as when a text editor saves a sidecar as UTF-16:
    # the bytes' encoding is the byte order mark's, whatever the declaration says.
    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + DATED.decode() + "\n\0\0\0"
    sidecar = "\ufeff".encode(encoding) + text.encode(encoding)
    assert sidecar[:2] == (b"\xff\xfe" if encoding == "utf-16-le" else b"\xfe\xff")
    assert parse_xmp(sidecar).get(NS_XMP, "CreateDate") == CREATE_DATE


def test_a_packet_padded_with_nuls_and_whitespace_parses() -> None:
    padded = b"\n\t " + DATED + b" \r\n" + b"\0" * 16
    assert parse_xmp(padded).get(NS_XMP, "CreateDate") == CREATE_DATE


def test_junk_around_a_packet_is_trimmed_but_a_packet_cut_short_is_not_guessed_at() -> None:
    # Editors leave bytes before and after a packet (ADR 0053): the packet is read, from
    # its start to its close; a packet that lost its close is not well-formed.
    for stray in (b"X" + DATED, DATED + b"X", b"\xff\0junk" + DATED + b"\0</x:xmpmeta"):
        assert parse_xmp(stray).get(NS_XMP, "CreateDate") == CREATE_DATE
        utf16 = b"\xff\xfe" + stray.decode("latin-1").encode("utf-16-le")
        assert parse_xmp(utf16).get(NS_XMP, "CreateDate") == CREATE_DATE
    assert parse_xmp(DATED[:-1]) is EMPTY
    assert parse_xmp(b"X" + DATED[:-1] + b"X") is EMPTY


def test_a_dtd_is_refused_even_one_without_entities() -> None:
    assert parse_xmp(b"<!DOCTYPE x:xmpmeta>" + DATED) is EMPTY
    assert parse_xmp(b"<!DOCTYPE x:xmpmeta [<!ELEMENT x:xmpmeta ANY>]>" + DATED) is EMPTY


def test_an_array_of_text_is_read_in_order_with_an_empty_item_as_empty_text() -> None:
    properties = parse_xmp(
        described(
            "<dc:subject><rdf:Bag><rdf:li> harbour </rdf:li><rdf:li/>"
            "<rdf:li>dawn</rdf:li></rdf:Bag></dc:subject>",
            # The first value wins where one repeats, arrays too.
            '<rdf:Description rdf:about=""><dc:subject><rdf:Bag><rdf:li>later</rdf:li>'
            "</rdf:Bag></dc:subject></rdf:Description>",
        )
    )
    assert properties.arrays == {(NS_DC, "subject"): ("harbour", "", "dawn")}
    assert properties.get(NS_DC, "subject") is None
    assert properties.structures == {}
    assert properties


def test_a_language_alternative_is_an_array_of_its_texts_and_xml_lang_no_field() -> None:
    # xml:lang qualifies a value (XMP's language alternatives, dc:title and dc:rights):
    # it does not make the value a structure, nor is it a property of its own.
    properties = parse_xmp(
        described(
            '<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Harbour at dawn</rdf:li>'
            '<rdf:li xml:lang="de">Hafen im Morgengrauen</rdf:li></rdf:Alt></dc:title>'
            '<xmp:Label xml:lang="en">Red</xmp:Label>'
        )
    )
    assert properties.arrays == {(NS_DC, "title"): ("Harbour at dawn", "Hafen im Morgengrauen")}
    assert properties.structures == {}
    assert properties.values == {(NS_XMP, "Label"): "Red"}


def test_an_empty_element_is_an_empty_value_and_a_value_is_stripped() -> None:
    properties = parse_xmp(described("<xmp:Label/><xmp:Rating> 5 </xmp:Rating>"))
    assert (properties.get(NS_XMP, "Label"), properties.get(NS_XMP, "Rating")) == ("", "5")


@pytest.mark.parametrize(
    "flash",
    [
        '<exif:Flash rdf:parseType="Resource"><exif:Fired>True</exif:Fired>'
        "<exif:Mode>2</exif:Mode></exif:Flash>",
        "<exif:Flash><rdf:Description><exif:Fired>True</exif:Fired>"
        "<exif:Mode>2</exif:Mode></rdf:Description></exif:Flash>",
        '<exif:Flash><rdf:Description exif:Fired="True" exif:Mode="2"/></exif:Flash>',
        '<exif:Flash exif:Fired="True" exif:Mode="2"/>',
    ],
    ids=["parse-type-resource", "nested-description", "nested-attributes", "attributes"],
)
def test_the_fields_of_a_structure_in_place_are_properties_of_their_own(flash: str) -> None:
    properties = parse_xmp(described(flash + "<exif:Fired>False</exif:Fired>"))
    # The structure's fields come first, so they win over a later value of the same name.
    assert properties.get(NS_EXIF, "Fired") == "True"
    assert properties.get(NS_EXIF, "Mode") == "2"
    assert properties.get(NS_EXIF, "Flash") is None


def test_the_fields_of_an_array_s_structures_are_not_properties_of_the_packet() -> None:
    for item in (
        '<rdf:li><rdf:Description Item:Mime="video/mp4" Item:Length="42"/></rdf:li>',
        '<rdf:li Item:Mime="video/mp4" Item:Length="42"/>',
    ):
        properties = parse_xmp(
            described(f"<Container:Directory><rdf:Seq>{item}</rdf:Seq></Container:Directory>")
        )
        mime, length = (NS_GCONTAINER_ITEM, "Mime"), (NS_GCONTAINER_ITEM, "Length")
        assert properties.items(NS_GCONTAINER, "Directory") == ({mime: "video/mp4", length: "42"},)
        assert properties.get(*mime) is None and properties.arrays == {}


def test_an_element_of_no_namespace_is_passed_over_and_the_next_one_read() -> None:
    properties = parse_xmp(
        described(f"<Junk>1</Junk><xmp:CreateDate>{CREATE_DATE}</xmp:CreateDate>")
    )
    assert properties.values == {(NS_XMP, "CreateDate"): CREATE_DATE}


def test_an_attribute_of_no_namespace_or_of_rdf_s_own_is_no_property() -> None:
    properties = parse_xmp(
        described(
            "",
            '<rdf:Description rdf:about="" rdf:nodeID="n1" junk="1" xmp:Rating="5"/>',
        )
    )
    assert properties.values == {(NS_XMP, "Rating"): "5"}


# --- the order of precedence ------------------------------------------------------------------


def test_exif_wins_over_xmp_and_borrows_its_zone_for_the_same_wall_clock() -> None:
    exif = ExifFields(dates=(ExifDate("2021:04:11 15:47:53", "054", None),))
    xmp = parse_xmp(xmp_packet({(NS_XMP, "CreateDate"): "2021-04-11T15:47:53-05:00"}))
    found = choose_capture_time(exif, xmp)
    assert found is not None and found.source == "exif"
    assert found.at == datetime(
        2021, 4, 11, 15, 47, 53, 54000, tzinfo=timezone(-timedelta(hours=5))
    )
    assert found.at.utcoffset() == -timedelta(hours=5)


def test_exif_keeps_its_own_zone_and_no_zone_is_borrowed_from_another_time() -> None:
    xmp = parse_xmp(xmp_packet({(NS_XMP, "CreateDate"): "2021-04-11T16:00:00+02:00"}))
    naive = choose_capture_time(
        ExifFields(dates=(ExifDate("2021:04:11 15:47:53", None, None),)), xmp
    )
    assert naive is not None and naive.at == datetime(2021, 4, 11, 15, 47, 53)
    assert naive.at.tzinfo is None
    own = choose_capture_time(
        ExifFields(dates=(ExifDate("2021:04:11 16:00:00", None, "+01:00"),)), xmp
    )
    assert own is not None and own.at.utcoffset() == timedelta(hours=1)


def test_xmp_dates_by_meaning_then_iptc_then_the_maker() -> None:
    every = {
        (NS_EXIF, "DateTimeOriginal"): "2001-01-01T01:01:01",
        (NS_PHOTOSHOP, "DateCreated"): "2002-02-02T02:02:02",
        (NS_XMP, "CreateDate"): "2003-03-03T03:03:03",
        (NS_EXIF, "DateTimeDigitized"): "2004-04-04T04:04:04",
    }
    years = []
    for name in list(every):
        found = choose_capture_time(ExifFields(), parse_xmp(xmp_packet(every)))
        assert found is not None and found.source == "xmp"
        years.append(found.at.year)
        del every[name]
    assert years == [2001, 2002, 2003, 2004]
    iptc = datetime(2005, 5, 5, 5, 5, 5, tzinfo=MINUS_FOUR)
    maker = datetime(2006, 6, 6, 6, 6, 6)
    assert choose_capture_time(ExifFields(), EMPTY, iptc=iptc, maker=maker) == (
        choose_capture_time(ExifFields(), EMPTY, iptc=iptc)
    )
    by_iptc = choose_capture_time(ExifFields(), EMPTY, iptc=iptc, maker=maker)
    assert by_iptc is not None and (by_iptc.at, by_iptc.source) == (iptc, "iptc")
    by_maker = choose_capture_time(ExifFields(), EMPTY, maker=maker)
    assert by_maker is not None and (by_maker.at, by_maker.source) == (maker, "maker")
    assert choose_capture_time(ExifFields(), EMPTY) is None


def test_a_broken_exif_date_falls_through_to_xmp() -> None:
    exif = ExifFields(dates=(ExifDate("0000:00:00 00:00:00", None, None),))
    xmp = parse_xmp(xmp_packet({(NS_XMP, "CreateDate"): "2010-04-13T09:37:22+02:00"}))
    found = choose_capture_time(exif, xmp)
    assert found is not None and found.source == "xmp"
    assert found.at == datetime(2010, 4, 13, 9, 37, 22, tzinfo=PLUS_TWO)


def at_1515(offset: timedelta | None) -> datetime:
    """2022-01-10 15:15:44, at ``offset`` from UTC (None: naive, the wall clock)."""
    zone = timezone(offset) if offset is not None else None
    return datetime(2022, 1, 10, 15, 15, 44, tzinfo=zone)


@pytest.mark.parametrize(
    ("date", "time", "expected"),
    [
        (b"20220110", b"151544-0400", datetime(2022, 1, 10, 15, 15, 44, tzinfo=MINUS_FOUR)),
        (b"20220110", b"151544", datetime(2022, 1, 10, 15, 15, 44)),
        (b"20220110", None, None),
        (b"2022011", b"151544", None),
        (b"20221310", b"151544", None),
        (b"\xff\xfe", b"151544", None),
        # Each offset a zone can have: east, minutes, the ends of the range.
        (b"20220110", b"151544+0530", at_1515(timedelta(hours=5, minutes=30))),
        (b"20220110", b"151544+1045", at_1515(timedelta(hours=10, minutes=45))),
        (b"20220110", b"151544+1400", at_1515(timedelta(hours=14))),
        (b"20220110", b"151544-1200", at_1515(-timedelta(hours=12))),
        # An offset that is not one is no zone: the time stays the camera's wall clock.
        (b"20220110", b"151544+1500", at_1515(None)),
        (b"20220110", b"151544+0560", at_1515(None)),
        (b"20220110", b"151544+0575", at_1515(None)),
        (b"20220110", b"151544X0400", at_1515(None)),
        (b"20220110", b"151544 0400", at_1515(None)),
        (b"20220110", b"151544+a400", at_1515(None)),
        (b"20220110", b"151544+04000", at_1515(None)),
        # Digits only: int() would take a sign or a space, a date must not.
        (b"2022+1+1", b"151544", None),
        (b"20220110", b"+1+2+3", None),
        (b"20220110", b"15154", None),
    ],
)
def test_iptc_dates(date: bytes | None, time: bytes | None, expected: datetime | None) -> None:
    found = iptc_capture_time(date, time)
    assert found == expected
    if found is not None and expected is not None:
        assert found.utcoffset() == expected.utcoffset()


# --- from files --------------------------------------------------------------------------------


def test_a_jpeg_dated_only_by_its_xmp_packet_gets_that_date_make_and_model(
    tmp_path: Path,
) -> None:
    packet = xmp_packet(
        {
            (NS_XMP, "CreateDate"): "2022-01-10T15:15:44.31-05:00",
            (NS_TIFF, "Make"): "NIKON CORPORATION",
            (NS_TIFF, "Model"): "NIKON D850",
        }
    )
    meta = read_image_metadata(written(tmp_path, jpeg(xmp=packet)))
    assert (meta.captured_at_source, meta.make, meta.model) == (
        "xmp",
        "NIKON CORPORATION",
        "NIKON D850",
    )
    assert meta.captured_at == datetime(
        2022, 1, 10, 15, 15, 44, 310000, tzinfo=timezone(-timedelta(hours=5))
    )


def test_exif_make_and_date_win_over_xmp_in_a_file(tmp_path: Path) -> None:
    packet = xmp_packet(
        {(NS_XMP, "CreateDate"): "2021-06-01T10:00:00+02:00", (NS_TIFF, "Make"): "Editor"}
    )
    exif = exif_bytes(make="Canon", captured_at=datetime(2021, 6, 1, 10, 0, 0))
    meta = read_image_metadata(written(tmp_path, jpeg(exif=exif, xmp=packet)))
    assert (meta.captured_at_source, meta.make, meta.model) == ("exif", "Canon", None)
    assert meta.captured_at == datetime(2021, 6, 1, 10, 0, tzinfo=PLUS_TWO)


def test_png_and_webp_carry_their_xmp_too(tmp_path: Path) -> None:
    packet = xmp_packet({(NS_PHOTOSHOP, "DateCreated"): "2019-07-14T08:09:10"}, as_elements=True)
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", packet.decode())
    picture = Image.new("RGB", (16, 12), (1, 2, 3))
    png, webp = io.BytesIO(), io.BytesIO()
    picture.save(png, "PNG", pnginfo=info)
    picture.save(webp, "WEBP", xmp=packet)
    for name, data in (("a.png", png.getvalue()), ("a.webp", webp.getvalue())):
        meta = read_image_metadata(written(tmp_path, data, name))
        assert (meta.captured_at, meta.captured_at_source) == (
            datetime(2019, 7, 14, 8, 9, 10),
            "xmp",
        ), name


def test_iptc_gives_the_date_and_the_zone_exif_lacks(tmp_path: Path) -> None:
    both = with_segment(
        jpeg(exif=exif_bytes(captured_at=datetime(2022, 1, 10, 15, 15, 44))),
        0xED,
        iptc_app13("20220110", "151544-0400"),
    )
    meta = read_image_metadata(written(tmp_path, both))
    assert meta.captured_at_source == "exif"
    assert meta.captured_at.utcoffset() == timedelta(hours=-4)
    alone = with_segment(jpeg(), 0xED, iptc_app13("20220110", "151544-0400"))
    meta = read_image_metadata(written(tmp_path, alone, "alone.jpg"))
    assert (meta.captured_at, meta.captured_at_source) == (
        datetime(2022, 1, 10, 15, 15, 44, tzinfo=MINUS_FOUR),
        "iptc",
    )


def test_a_reconyx_maker_note_dates_a_trail_camera_photo(tmp_path: Path) -> None:
    taken = datetime(2020, 3, 16, 10, 0, 0)
    exif = exif_bytes(maker_note=reconyx_maker_note(taken))
    assert read_exif(exif).maker_date == "2020:03:16 10:00:00"
    meta = read_image_metadata(written(tmp_path, jpeg(exif=exif)))
    assert (meta.captured_at, meta.captured_at_source) == (taken, "maker")
    other = exif_bytes(maker_note=b"\x02\xf1\x03\x00" + bytes(60))
    assert read_exif(other).maker_date is None


def test_canon_ciff_and_olympus_blocks_date_old_cameras(tmp_path: Path) -> None:
    taken = datetime(2000, 10, 27, 22, 56, 26)
    canon = with_segment(jpeg(), 0xE0, ciff_app0("Canon", "Canon PowerShot A5", taken))
    meta = read_image_metadata(written(tmp_path, canon, "canon.jpg"))
    assert (meta.captured_at, meta.captured_at_source, meta.make, meta.model) == (
        taken,
        "maker",
        "Canon",
        "Canon PowerShot A5",
    )
    assert meta.captured_at.tzinfo is None  # the camera's wall clock, zone unknown
    olympus = with_segment(jpeg(), 0xEC, olympus_app12(taken))
    meta = read_image_metadata(written(tmp_path, olympus, "olympus.jpg"))
    assert (meta.captured_at, meta.captured_at_source) == (taken, "maker")


def test_broken_blocks_leave_the_files_time(tmp_path: Path) -> None:
    broken = jpeg()
    for marker, payload in (
        (0xE0, b"II\x0e\x00\x00\x00HEAPJPGM\xff\xff\xff\xff"),
        (0xEC, b"[picture info]\r\nTimeDate=12\r\n"),  # 1970: an unset clock
        (0xED, b"Photoshop 3.0\0garbage"),
    ):
        broken = with_segment(broken, marker, payload)
    meta = read_image_metadata(written(tmp_path, jpeg(xmp=b"<x:xmpmeta><oops")))
    assert meta.captured_at_source == "file"
    meta = read_image_metadata(written(tmp_path, broken, "broken.jpg"))
    assert meta.captured_at_source == "file"


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        ("+14:00", timedelta(hours=14)),
        ("-12:00", -timedelta(hours=12)),
        ("+05:59", timedelta(hours=5, minutes=59)),
        ("+15:00", None),
        ("+14:01", None),
        ("+05:60", None),
    ],
)
def test_an_exif_offset_is_a_zone_only_within_the_range_of_zones(
    offset: str, expected: timedelta | None
) -> None:
    found = parse_exif_datetime("2021:04:11 15:47:53", None, offset)
    assert found is not None and found.replace(tzinfo=None) == datetime(2021, 4, 11, 15, 47, 53)
    assert found.utcoffset() == expected


def test_a_zone_is_borrowed_from_a_date_of_the_same_second_whatever_its_fraction() -> None:
    naive = datetime(2022, 1, 10, 15, 15, 44, 310000)
    same_second = datetime(2022, 1, 10, 15, 15, 44, 500000, tzinfo=PLUS_TWO)
    next_second = datetime(2022, 1, 10, 15, 15, 45, tzinfo=MINUS_FOUR)
    assert with_zone(naive, [next_second, same_second]).utcoffset() == timedelta(hours=2)
    assert with_zone(naive, [next_second]).tzinfo is None


def test_a_naive_xmp_date_borrows_the_zone_of_a_later_xmp_date_or_of_iptc() -> None:
    naive = {(NS_EXIF, "DateTimeOriginal"): "2010-04-13T09:37:22"}
    later = parse_xmp(xmp_packet({**naive, (NS_XMP, "CreateDate"): "2010-04-13T09:37:22+02:00"}))
    found = choose_capture_time(ExifFields(), later)
    assert found is not None and found.source == "xmp"
    assert found.at.utcoffset() == timedelta(hours=2)

    iptc = datetime(2010, 4, 13, 9, 37, 22, tzinfo=MINUS_FOUR)
    found = choose_capture_time(ExifFields(), parse_xmp(xmp_packet(naive)), iptc=iptc)
    assert found is not None and found.source == "xmp"
    assert found.at.utcoffset() == timedelta(hours=-4)
