"""The row of a new asset: a hashed original's stat and what its metadata says."""

from __future__ import annotations

from pathlib import PurePosixPath

from safelight.library.catalogue.assets import NewAsset
from safelight.library.files.hashing import HashedFile
from safelight.library.media.metadata import ImageMetadata, VideoMetadata, file_time
from safelight.library.places.localtimes import LocalisedTimes, localise
from safelight.library.places.located import NOWHERE, Located, locate
from safelight.library.walk.walker import WalkedFile


def capture_times(meta: ImageMetadata | VideoMetadata, located: Located) -> LocalisedTimes:
    """The instant and the wall clock of a capture, by the zone rule (ADR 0065,
    ``places.localtimes``): a naive time is the camera's wall clock, read in the zone of
    the position where it was taken, or as UTC without one (ADR 0064); an instant
    without a local time (a phone video's ``creation_time``) gets the position's local
    time; a time with the file's own offset keeps it."""
    return localise(meta.captured_at, is_instant=meta.captured_is_instant, zone=located.time_zone)


def new_asset(
    walked: WalkedFile, hashed: HashedFile, meta: ImageMetadata | VideoMetadata
) -> NewAsset:
    """The row of a new asset from its hashed version's stat and its metadata, with the
    place and zone of its position. Blocking on a process's first position (the places
    are read then): call it off the event loop."""
    position = meta.location
    located = locate(position.latitude, position.longitude) if position else NOWHERE
    times = capture_times(meta, located)
    place = located.place
    common = {
        "file_path": walked.path,
        "file_name": PurePosixPath(walked.path).name,
        "content_hash": hashed.content_hash,
        "size_bytes": hashed.size,
        "modified_at": file_time(hashed.mtime_ns),
        "modified_ns": hashed.mtime_ns,
        "captured_at": times.instant,
        "captured_local": times.local,
        "zone_source": times.zone_source,
        "time_zone": located.time_zone,
        "place_city": place.city if place else None,
        "place_region": place.region if place else None,
        "place_country": place.country if place else None,
        "place_country_code": place.country_code if place else None,
        "places_checked": position is not None,
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
