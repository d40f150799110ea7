"""A descriptor's stored form: 128 little-endian float32, 512 bytes, and back."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from safelight.library.faces.descriptors import STORED_BYTES, pack, unpack


def test_a_descriptor_is_stored_as_128_little_endian_float32() -> None:
    values = [i / 128 - 0.5 for i in range(128)]
    stored = pack(values)
    assert len(stored) == STORED_BYTES == 512
    assert stored == struct.pack("<128f", *values)
    back = unpack([stored, stored])
    assert back.shape == (2, 128) and back.dtype == np.float32
    assert back[1].tolist() == pytest.approx(values)


def test_a_descriptor_of_another_length_is_refused() -> None:
    with pytest.raises(ValueError, match="128 values"):
        pack([0.0] * 127)
    with pytest.raises(ValueError, match="512 bytes, not 508"):
        unpack([bytes(508)])
    assert unpack([]).shape == (0, 128)
