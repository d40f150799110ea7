"""Which scans a JPEG's data begins: whether a file cut short still reaches the scan that
gives each of its components' coefficients their full precision (ADR 0052).

A baseline JPEG is one scan, top to bottom, so what a cut loses is its last rows (which
``images`` measures). A progressive one is many scans over the whole picture, each
adding detail to every row: cut in an early scan, every row is there but blurred to 8 x 8
blocks, which no row count would see. Such a file is read as far as it goes only once
every component has begun its final scans, every coefficient from DC to 63 at full
precision (successive approximation ``Al`` 0): the cut then lies in the scans that
refine what every row already has. A sequential JPEG with a scan per component is held
to the same rule (each component's scan must have begun).

Only markers are read: the entropy-coded data between them is skipped byte by byte
(``FF 00`` is a stuffed byte, ``FF D0``-``FF D7`` restart markers).
"""

from __future__ import annotations

_SOF_PROGRESSIVE = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
_SOF = frozenset({0xC0, 0xC1, 0xC3, 0xC5, 0xC7, 0xC9, 0xCB, 0xCD}) | _SOF_PROGRESSIVE
_SOS = 0xDA
_EOI = 0xD9
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM and the restart markers
_COEFFICIENTS = frozenset(range(64))
_MAX_SCANS = 1000


def final_scans_begun(data: bytes) -> bool:
    """Whether every component of the JPEG in ``data`` has begun a full-precision scan of
    each of its 64 coefficients; False when its frame or scan headers cannot be read."""
    components: list[int] | None = None
    covered: dict[int, set[int]] = {}
    position = 2  # after SOI
    scans = 0
    while position + 4 <= len(data) and scans < _MAX_SCANS:
        if data[position] != 0xFF:
            return False
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker == _EOI:
            break
        if marker in _STANDALONE:
            position += 2
            continue
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        segment = data[position + 4 : position + 2 + length]
        if length < 2 or len(segment) < length - 2:
            break  # a header cut short: what came before it is what there is
        if marker in _SOF and len(segment) >= 6:
            count = segment[5]
            components = [segment[6 + 3 * i] for i in range(count) if 6 + 3 * i < len(segment)]
        elif marker == _SOS and components is not None:
            scans += 1
            _cover(segment, covered)
        position += 2 + length
        if marker == _SOS:
            position = _after_entropy_data(data, position)
    if not components:
        return False
    return all(covered.get(component, set()) >= _COEFFICIENTS for component in components)


def _cover(segment: bytes, covered: dict[int, set[int]]) -> None:
    """Record the coefficients a scan header says its scan gives full precision."""
    count = segment[0] if segment else 0
    tail = 1 + 2 * count
    if len(segment) < tail + 3:
        return
    start, end, approximation = segment[tail], segment[tail + 1], segment[tail + 2]
    if approximation & 0x0F != 0:  # Al > 0: not yet the coefficients' last bits
        return
    for index in range(count):
        covered.setdefault(segment[1 + 2 * index], set()).update(range(start, min(end, 63) + 1))


def _after_entropy_data(data: bytes, position: int) -> int:
    """The position of the first marker after a scan's entropy-coded data (or the end)."""
    while True:
        position = data.find(b"\xff", position)
        if position < 0 or position + 1 >= len(data):
            return len(data)
        following = data[position + 1]
        if following == 0x00 or 0xD0 <= following <= 0xD7 or following == 0xFF:
            position += 1 if following == 0xFF else 2
            continue
        return position
