"""The row of a new asset: a hashed original's stat and what its metadata says."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePosixPath

from safelight.library.catalogue.assets import NewAsset
from safelight.library.files.hashing import HashedFile
from safelight.library.media.metadata import ImageMetadata, VideoMetadata, file_time
from safelight.library.walk.walker import WalkedFile


def capture_times(captured_at: datetime) -> tuple[datetime, datetime]:
    """``(instant, wall clock)``: a naive time is the camera's wall clock, zone unknown,
    and is stored as that wall clock read as UTC (the schema's rule)."""
    if captured_at.tzinfo is None:
        return captured_at.replace(tzinfo=UTC), captured_at
    return captured_at, captured_at.replace(tzinfo=None)


def new_asset(
    walked: WalkedFile, hashed: HashedFile, meta: ImageMetadata | VideoMetadata
) -> NewAsset:
    """The row of a new asset from its hashed version's stat and its metadata."""
    instant, local = capture_times(meta.captured_at)
    common = {
        "file_path": walked.path,
        "file_name": PurePosixPath(walked.path).name,
        "content_hash": hashed.content_hash,
        "size_bytes": hashed.size,
        "modified_at": file_time(hashed.mtime_ns),
        "modified_ns": hashed.mtime_ns,
        "captured_at": instant,
        "captured_local": local,
        "captured_at_source": meta.captured_at_source,
        "camera_make": meta.make,
        "camera_model": meta.model,
        "width": meta.width,
        "height": meta.height,
        "content_identifier": meta.content_identifier,
        "latitude": meta.location.latitude if meta.location else None,
        "longitude": meta.location.longitude if meta.location else None,
        "altitude_m": meta.location.altitude_m if meta.location else None,
    }
    if isinstance(meta, ImageMetadata):
        return NewAsset(
            media_type="image",
            orientation=meta.orientation,
            maker_burst_id=meta.burst_id,
            sequence_number=meta.sequence_number,
            misnamed=meta.misnamed,
            cut_short=meta.cut_short,
            **common,  # type: ignore[arg-type]
        )
    return NewAsset(
        media_type="video",
        duration_seconds=meta.duration_seconds,
        **common,  # type: ignore[arg-type]
    )
