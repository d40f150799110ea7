"""XMP: finding a packet in a file's bytes, and reading its properties safely.

XMP is RDF/XML that cameras, phones and editors write into a file (JPEG APP1, PNG
``iTXt``, TIFF tag 700, WebP/HEIF/MP4 boxes) or beside it (a ``.xmp`` sidecar). It is
text anyone can write, so it is parsed with ``defusedxml``: no DTD, no entity expansion
(the "billion laughs"), no external entity that could read a file or the network. A
packet is bounded (``XMP_MAX_BYTES``) before it is parsed.

What callers get is ``XmpProperties``: every simple property of every
``rdf:Description`` (as an attribute or an element), by namespace URI and local name;
the items of arrays (``rdf:Seq``/``rdf:Bag``/``rdf:Alt``) as text; and arrays of
structures, such as Google's ``Container:Directory`` (motion photos), as one mapping of
fields per item. Nothing here knows what a property means: ``metadata`` reads the dates
and the camera from it, a motion-photo reader its video offsets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import AnyStr
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

XMP_MAX_BYTES = 4 << 20
"""Largest packet read, in bytes. A camera's packet is a few KiB (JPEG caps a standard
packet at 64 KiB); editors' sidecars with a develop history reach a few hundred."""

# Namespaces safelight reads (the URIs are the names; prefixes are the writer's choice).
NS_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
NS_XMP = "http://ns.adobe.com/xap/1.0/"
NS_EXIF = "http://ns.adobe.com/exif/1.0/"
NS_EXIF_EX = "http://cipa.jp/exif/1.0/"
NS_TIFF = "http://ns.adobe.com/tiff/1.0/"
NS_PHOTOSHOP = "http://ns.adobe.com/photoshop/1.0/"
NS_GCAMERA = "http://ns.google.com/photos/1.0/camera/"
NS_GCONTAINER = "http://ns.google.com/photos/1.0/container/"
NS_GCONTAINER_ITEM = "http://ns.google.com/photos/1.0/container/item/"

_RDF_RDF = f"{{{NS_RDF}}}RDF"
_RDF_DESCRIPTION = f"{{{NS_RDF}}}Description"
_RDF_LI = f"{{{NS_RDF}}}li"
_RDF_ARRAYS = frozenset({f"{{{NS_RDF}}}Seq", f"{{{NS_RDF}}}Bag", f"{{{NS_RDF}}}Alt"})
# Attributes that are not properties: RDF's own, and xml:lang, which qualifies a value
# (the items of a language alternative such as dc:title) without making it a structure.
_NOT_PROPERTIES = frozenset(
    {
        f"{{{NS_RDF}}}about",
        f"{{{NS_RDF}}}parseType",
        "about",
        "{http://www.w3.org/XML/1998/namespace}lang",
    }
)
_STARTS = (b"<x:xmpmeta", b"<x:xapmeta", b"<?xpacket begin")
# Where a packet (or a sidecar's document) starts and its outermost element closes: the
# bytes outside are junk some writers leave (PNG iTXt with trailing NULs, garbage or a
# second, partial packet; a JPEG APP1 with bytes before the wrapper).
_PACKET_STARTS = (b"<?xml", *_STARTS, b"<rdf:RDF")
_PACKET_CLOSES = (b"</x:xmpmeta>", b"</x:xapmeta>", b"</rdf:RDF>")
_TRAILER = b"<?xpacket end"
_XMP_DATE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"(Z|[+-]\d{2}:?\d{2})?"
)

Name = tuple[str, str]
"""(namespace URI, local name)."""


@dataclass(frozen=True, slots=True)
class XmpProperties:
    """The properties of one XMP packet (the first value wins where one repeats)."""

    values: Mapping[Name, str] = field(default_factory=dict)
    """Simple properties: ``values[(NS_XMP, "CreateDate")]``."""
    arrays: Mapping[Name, tuple[str, ...]] = field(default_factory=dict)
    """Arrays of text (``dc:subject``, ``dc:title``'s languages), items in order."""
    structures: Mapping[Name, tuple[Mapping[Name, str], ...]] = field(default_factory=dict)
    """Arrays of structures, one mapping of simple fields per item, in order; for
    ``Container:Directory`` each item's fields are those of its ``Container:Item``
    (``(NS_GCONTAINER_ITEM, "Mime")``, ``"Semantic"``, ``"Length"``, ``"Padding"``)."""

    def get(self, namespace: str, name: str) -> str | None:
        return self.values.get((namespace, name))

    def items(self, namespace: str, name: str) -> tuple[Mapping[Name, str], ...]:
        return self.structures.get((namespace, name), ())

    def __bool__(self) -> bool:
        return bool(self.values or self.arrays or self.structures)


EMPTY = XmpProperties()


def find_xmp_packet(data: bytes) -> bytes | None:
    """The first XMP packet in ``data`` (a file's bytes, or a block of them), or None.

    From ``<x:xmpmeta`` (or the older ``<x:xapmeta``, or the ``<?xpacket begin``
    wrapper) to its end; None when there is none, or it has no end within
    ``XMP_MAX_BYTES`` (a packet cut short is not guessed at).
    """
    found = [(at, start) for start in _STARTS if (at := data.find(start)) >= 0]
    if not found:
        return None
    at, start = min(found)
    window = data[at : at + XMP_MAX_BYTES]
    if start == b"<?xpacket begin":
        end = window.find(b"<?xpacket end")
        close = window.find(b"?>", end) if end >= 0 else -1
        return window[: close + 2] if close >= 0 else None
    closing = b"</" + start[1:] + b">"
    end = window.find(closing)
    return window[: end + len(closing)] if end >= 0 else None


def parse_xmp(packet: bytes | str) -> XmpProperties:
    """The properties of a packet (or a sidecar's whole text); ``EMPTY`` when it is not
    well-formed XML, is too large, or tries a DTD or an entity (never an exception)."""
    if len(packet) > XMP_MAX_BYTES:
        return EMPTY
    if isinstance(packet, bytes) and packet[:2] in (b"\xff\xfe", b"\xfe\xff"):
        # A UTF-16 sidecar (Lightroom on Windows writes them): decoded here, so that
        # the padding below is stripped by character, not by byte.
        try:
            packet = packet.decode("utf-16")
        except UnicodeDecodeError:
            return EMPTY
    # Padding after the packet (or NULs after a sidecar) is not XML; strip it, and any
    # junk around the packet itself.
    packet = (
        _packet_only(packet.strip(b" \t\r\n\0"))
        if isinstance(packet, bytes)
        else _packet_only(packet.strip(" \t\r\n\0\ufeff"))
    )
    if isinstance(packet, str) and packet.startswith("<?xml"):
        packet = packet[packet.find("?>") + 2 :]  # its encoding was the bytes', now gone
    try:
        root = fromstring(packet, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except (ParseError, DefusedXmlException, ValueError, UnicodeError):
        return EMPTY
    values: dict[Name, str] = {}
    arrays: dict[Name, tuple[str, ...]] = {}
    structures: dict[Name, tuple[Mapping[Name, str], ...]] = {}
    # The top-level Descriptions only: one nested in a structure is that structure's.
    descriptions = [d for rdf in root.iter(_RDF_RDF) for d in rdf if d.tag == _RDF_DESCRIPTION]
    for description in descriptions:
        for attribute, value in _attributes(description):
            values.setdefault(attribute, value)
        for child in description:
            name = _name(child.tag)
            if name is None:
                continue
            array = next((c for c in child if c.tag in _RDF_ARRAYS), None)
            if array is not None:
                items = [li for li in array if li.tag == _RDF_LI]
                if any(len(li) or any(_attributes(li)) for li in items):
                    structures.setdefault(name, tuple(_fields(li) for li in items))
                else:
                    arrays.setdefault(name, tuple((li.text or "").strip() for li in items))
            elif len(child) == 0 and not any(_attributes(child)):
                values.setdefault(name, (child.text or "").strip())
            else:
                # A structure in place (rdf:parseType="Resource" or a nested
                # Description): its fields are properties of their own namespaces.
                for field_name, value in _fields(child).items():
                    values.setdefault(field_name, value)
    return XmpProperties(values, arrays, structures)


def _packet_only(packet: AnyStr) -> AnyStr:
    """``packet`` without what is not the packet: from its first start (an XML
    declaration, the ``<?xpacket begin`` wrapper, ``<x:xmpmeta>`` or a bare
    ``<rdf:RDF>``) to its first close (``</x:xmpmeta>``, else ``</rdf:RDF>``), with the
    ``<?xpacket end?>`` trailer when one follows. A packet with no close is left as it
    is (and then parses or not on its own): a packet cut short is not guessed at."""

    def marker(raw: bytes) -> AnyStr:
        return raw.decode() if isinstance(packet, str) else raw

    found = [at for start in _PACKET_STARTS if (at := packet.find(marker(start))) >= 0]
    # A declaration before the packet (a DTD, an entity) is kept, for the parser to
    # refuse: what tries one is refused whole, never trimmed into something that parses.
    if found and marker(b"<!") not in packet[: min(found)]:
        packet = packet[min(found) :]
    for closing in _PACKET_CLOSES:
        at = packet.find(marker(closing))
        if at < 0:
            continue
        end = at + len(closing)
        after = packet[end:].lstrip(marker(b" \t\r\n\0"))
        if after.startswith(marker(_TRAILER)):
            close = after.find(marker(b"?>"))
            if close >= 0:
                return packet[: len(packet) - len(after) + close + 2]
        return packet[:end]
    return packet


def _fields(element: Element) -> dict[Name, str]:
    """The simple fields anywhere below an array item or a structure."""
    fields: dict[Name, str] = {}
    for node in element.iter():
        for attribute, value in _attributes(node):
            fields.setdefault(attribute, value)
        if node is not element and len(node) == 0:
            name = _name(node.tag)
            if name is not None and node.text is not None and node.text.strip():
                fields.setdefault(name, node.text.strip())
    return fields


def _attributes(element: Element) -> Iterator[tuple[Name, str]]:
    for key, value in element.attrib.items():
        if key in _NOT_PROPERTIES:
            continue
        name = _name(key)
        if name is not None and name[0] != NS_RDF:
            yield name, value.strip()


def _name(tag: object) -> Name | None:
    if not isinstance(tag, str) or not tag.startswith("{"):
        return None
    namespace, _, local = tag[1:].partition("}")
    return namespace, local


def parse_xmp_date(text: str | None) -> datetime | None:
    """An XMP date (ISO 8601 as XMP writes it) to the minute or finer: aware when it
    has a zone (``Z`` or ``+hh:mm``), naive otherwise. A bare date or year (no time of
    day) is None: a capture time of midnight would be invented, not read."""
    if text is None:
        return None
    match = _XMP_DATE.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        stamp = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
        )
    except ValueError:
        return None
    if year in ("0000", "1904", "1970") and stamp.month == 1 and stamp.day == 1:
        return None  # an unset date some writers put
    if zone is None:
        return stamp
    if zone == "Z":
        return stamp.replace(tzinfo=UTC)
    sign, hours, minutes = zone[0], int(zone[1:3]), int(zone[-2:])
    delta = timedelta(hours=hours, minutes=minutes)
    if delta > timedelta(hours=14) or minutes >= 60:
        return stamp
    return stamp.replace(tzinfo=timezone(-delta if sign == "-" else delta))
