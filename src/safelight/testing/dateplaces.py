"""Writers of the places other than EXIF where cameras and editors put a capture time:
an XMP packet, IPTC, a Reconyx maker note, Canon's CIFF heap and Olympus's APP12, so
the tests build the files safelight must date (the readers are ``library.media.xmp``,
``library.media.capturetime``, ``library.media.exif`` and ``library.media.jpegblocks``)."""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from xml.sax.saxutils import quoteattr

from safelight.library.media.xmp import NS_EXIF, NS_PHOTOSHOP, NS_TIFF, NS_XMP

_PREFIXES = {NS_XMP: "xmp", NS_EXIF: "exif", NS_PHOTOSHOP: "photoshop", NS_TIFF: "tiff"}


def xmp_packet(properties: dict[tuple[str, str], str], *, as_elements: bool = False) -> bytes:
    """An XMP packet (with its ``<?xpacket?>`` wrapper) of simple properties, written as
    attributes of one ``rdf:Description`` or, ``as_elements``, as its child elements
    (writers use both)."""
    namespaces = {ns for ns, _ in properties}
    prefixes = {ns: _PREFIXES.get(ns, f"ns{i}") for i, ns in enumerate(sorted(namespaces))}
    declarations = "".join(f" xmlns:{prefixes[ns]}={quoteattr(ns)}" for ns in sorted(namespaces))
    if as_elements:
        body = "".join(
            f"<{prefixes[ns]}:{name}>{value}</{prefixes[ns]}:{name}>"
            for (ns, name), value in properties.items()
        )
        description = f'<rdf:Description rdf:about=""{declarations}>{body}</rdf:Description>'
    else:
        attributes = "".join(
            f" {prefixes[ns]}:{name}={quoteattr(value)}" for (ns, name), value in properties.items()
        )
        description = f'<rdf:Description rdf:about=""{declarations}{attributes}/>'
    return (
        '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>'
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        f"{description}</rdf:RDF></x:xmpmeta>" + " " * 200 + '<?xpacket end="w"?>'
    ).encode()


def reconyx_maker_note(captured_at: datetime) -> bytes:
    """A Reconyx HyperFire maker note (version 0xf101, firmware 3) with its date."""
    words = [0xF101, 3, 3, 0, 0x2011, 0x0110, 0x0054, 0, 0, 0, 8]
    words += [
        captured_at.second,
        captured_at.minute,
        captured_at.hour,
        captured_at.month,
        captured_at.day,
        captured_at.year,
    ]
    return struct.pack(f"<{len(words)}H", *words) + bytes(64)


def ciff_app0(make: str, model: str, captured_at: datetime, kind: bytes = b"HEAPJPGM") -> bytes:
    """An APP0 payload of Canon's CIFF heap (``HEAPJPGM``; ``HEAPCCDR``: a CRW file's
    start): a CameraObject subheap with MakeModel, and TimeStamp (the wall clock as
    seconds since 1970) in the root."""
    make_model = make.encode() + b"\0" + model.encode() + b"\0"
    sub = (
        make_model
        + struct.pack("<H", 1)
        + struct.pack("<HII", 0x080A, len(make_model), 0)
        + struct.pack("<I", len(make_model))  # where the subheap's directory starts
    )
    seconds = int(captured_at.replace(tzinfo=UTC).timestamp())
    stamp = struct.pack("<III", seconds, 0, 0)
    heap = stamp + sub
    directory = len(heap)
    heap += struct.pack("<H", 2)
    heap += struct.pack("<HII", 0x180E, len(stamp), 0)
    heap += struct.pack("<HII", 0x2807, len(sub), len(stamp))
    heap += struct.pack("<I", directory)
    return b"II" + struct.pack("<I", 14) + kind + heap


def olympus_app12(captured_at: datetime) -> bytes:
    """An APP12 payload of Olympus's "picture info" text with its TimeDate."""
    seconds = int(captured_at.replace(tzinfo=UTC).timestamp())
    return b"OLYMPUS OPTICAL CO.,LTD.\0[picture info]\r\nTimeDate=%d\r\n" % seconds


def iptc_app13(date: str, time: str) -> bytes:
    """An APP13 Photoshop block with IPTC DateCreated (``CCYYMMDD``) and TimeCreated
    (``HHMMSS±HHMM``)."""
    records = b"".join(
        b"\x1c\x02" + bytes([number]) + struct.pack(">H", len(value)) + value
        for number, value in ((55, date.encode()), (60, time.encode()))
    )
    if len(records) % 2:
        records += b"\0"
    resource = b"8BIM" + struct.pack(">H", 0x0404) + b"\0\0" + struct.pack(">I", len(records))
    return b"Photoshop 3.0\0" + resource + records


def with_segment(jpeg: bytes, marker: int, payload: bytes) -> bytes:
    """``jpeg`` with an APPn segment (``marker`` 0xE0-0xEF) inserted after SOI."""
    segment = bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload
    return jpeg[:2] + segment + jpeg[2:]


def exif_with_gps(
    latitude: float,
    longitude: float,
    altitude: float | None = None,
    *,
    captured_at: datetime | None = None,
    **exif: object,
) -> bytes:
    """An EXIF block (``Image.save(exif=...)``) with a GPS IFD: latitude and longitude as
    degrees, minutes, seconds rationals with their N/S and E/W Refs; the altitude (in
    centimetres) with its Ref, 1 below sea level; ``exif``'s IFD0 tags; and with
    ``captured_at`` the capture time (``testing.exif.exif_bytes``: OffsetTime only when
    it is aware)."""
    from PIL import Image  # Pillow is a runtime dependency; kept local to the writer

    from safelight.library.media import exif as tags
    from safelight.testing.exif import exif_bytes

    block = Image.Exif()
    if captured_at is not None:
        block.load(exif_bytes(captured_at=captured_at))
    for tag, value in exif.items():
        block[{"make": tags.TAG_MAKE, "model": tags.TAG_MODEL}[tag]] = value
    gps = block.get_ifd(tags.TAG_GPS_IFD)

    def dms(value: float) -> tuple[float, float, float]:
        value = abs(value)
        degrees = int(value)
        minutes = int((value - degrees) * 60)
        seconds = round(((value - degrees) * 60 - minutes) * 60, 4)
        return (float(degrees), float(minutes), seconds)

    gps[tags.GPS_LATITUDE_REF] = "S" if latitude < 0 else "N"
    gps[tags.GPS_LATITUDE] = dms(latitude)
    gps[tags.GPS_LONGITUDE_REF] = "W" if longitude < 0 else "E"
    gps[tags.GPS_LONGITUDE] = dms(longitude)
    if altitude is not None:
        gps[tags.GPS_ALTITUDE_REF] = b"\x01" if altitude < 0 else b"\x00"
        gps[tags.GPS_ALTITUDE] = round(abs(altitude), 2)
    return block.tobytes()
