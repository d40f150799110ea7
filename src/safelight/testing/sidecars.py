"""XMP sidecars as darktable and Lightroom write them, and the photos beside them."""

from __future__ import annotations

import io

from PIL import Image


def sidecar_xml(*, orientation: str | None = None, **dates: str) -> bytes:
    """A sidecar as darktable/Lightroom write one: properties as attributes."""
    prefixes = {"CreateDate": "xmp", "DateTimeOriginal": "exif", "DateCreated": "photoshop"}
    attributes = " ".join(f'{prefixes[name]}:{name}="{value}"' for name, value in dates.items())
    if orientation is not None:
        attributes += f' tiff:Orientation="{orientation}"'
    return (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF'
        ' xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/"'
        ' xmlns:exif="http://ns.adobe.com/exif/1.0/"'
        ' xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"'
        f' xmlns:tiff="http://ns.adobe.com/tiff/1.0/" {attributes}/>'
        "</rdf:RDF></x:xmpmeta>"
    ).encode()


def photo(taken: str, orientation: int, size: tuple[int, int] = (60, 40)) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    exif.get_ifd(0x8769)[0x9003] = taken
    out = io.BytesIO()
    Image.new("RGB", size, (200, 40, 40)).save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()
