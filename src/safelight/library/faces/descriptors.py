"""A face's descriptor as it is stored: 128 little-endian float32, 512 bytes (the
``faces.descriptor`` column checks the length), and back."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DIMENSIONS = 128
STORED_BYTES = DIMENSIONS * 4
_STORED = np.dtype("<f4")

Vectors = npt.NDArray[np.float32]
"""Descriptors, one a row: shape (n, 128)."""


def pack(vector: Sequence[float] | npt.NDArray[np.floating]) -> bytes:
    values = np.asarray(vector, dtype=_STORED)
    if values.shape != (DIMENSIONS,):
        raise ValueError(f"a descriptor has {DIMENSIONS} values, not {values.shape}")
    return values.tobytes()


def unpack(stored: Sequence[bytes]) -> Vectors:
    """Stored descriptors as one (n, 128) array of native float32."""
    if not stored:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    for one in stored:
        if len(one) != STORED_BYTES:
            raise ValueError(f"a stored descriptor is {STORED_BYTES} bytes, not {len(one)}")
    joined = np.frombuffer(b"".join(stored), dtype=_STORED).reshape(len(stored), DIMENSIONS)
    return joined.astype(np.float32)
