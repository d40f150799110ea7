"""What a remake of a config's proxies remakes of one asset (ADR 0059): pure, given
the asset's rows and what is on disk at the paths they name.

An asset's proxies are made in sets, each from one decode: a photo's thumbnail,
preview and BlurHash together (``IMAGE_SET``); a motion photo's web video from its
embedded video (``MOTION_SET``); a video's poster proxies and web video from one run of
ffmpeg's probe (``VIDEO_SET``). A set is remade whole or not at all, so an asset never
shows a thumbnail and a preview made with different settings.

- ``missing``: a set is remade when one of its proxies has no row, or its row names a
  file that is not there, is empty, or cannot be read (a link, not a regular file).
- ``all``: every set whose rows were made before the remake was asked for; a row made
  since is this remake's own (an earlier attempt of it), so a retried remake goes on
  where it stopped instead of starting again.
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from safelight.library.catalogue.proxies import AssetProxies
from safelight.library.proxystore.proxytree import UnsafeProxyPath

IMAGE_SET = ("thumbnail", "full_preview", "blurhash")
MOTION_SET = ("web_video",)
VIDEO_SET = (*IMAGE_SET, "web_video")


class Mode(enum.StrEnum):
    MISSING = "missing"
    ALL = "all"


@dataclass(frozen=True, slots=True)
class Missing:
    """A proxy an asset should have and does not (its type, and why)."""

    proxy_type: str
    reason: str


FileState = Callable[[str], os.stat_result | None]
"""The ``lstat`` of a path relative to the proxy root, None if it is missing; raises
(``OSError``, ``UnsafeProxyPath``) when it cannot be looked at safely."""


def sets_of(asset: AssetProxies) -> tuple[tuple[str, ...], ...]:
    """The sets of proxies the asset should have."""
    if asset.media_type == "video":
        return (VIDEO_SET,)
    if asset.motion_photo:
        return (IMAGE_SET, MOTION_SET)
    return (IMAGE_SET,)


def missing_of(asset: AssetProxies, state: FileState) -> list[Missing]:
    """The asset's proxies that are missing: no row, or a row whose file is not there,
    is empty or cannot be read."""
    found = []
    for proxy_set in sets_of(asset):
        for proxy_type in proxy_set:
            reason = _why_missing(asset, proxy_type, state)
            if reason is not None:
                found.append(Missing(proxy_type, reason))
    return found


def _why_missing(asset: AssetProxies, proxy_type: str, state: FileState) -> str | None:
    row = asset.rows.get(proxy_type)
    if row is None:
        return "no row"
    path = row[0]
    if path is None:
        return None  # a BlurHash: its value is in the row
    try:
        st = state(path)
    except OSError as error:
        return f"file cannot be read: {error.strerror or error}"
    except UnsafeProxyPath as error:
        return f"file cannot be read: {error.reason}"
    if st is None:
        return "file missing"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size == 0:
        return "file empty"
    return None


def sets_to_remake(
    asset: AssetProxies, mode: Mode, missing: list[Missing], asked_at: datetime
) -> list[tuple[str, ...]]:
    """The sets of the asset's proxies to remake in ``mode``: in ``missing`` mode those
    with a missing proxy, in ``all`` mode those with a row made before ``asked_at`` or a
    missing one."""
    lacking = {m.proxy_type for m in missing}

    def made_before(proxy_set: tuple[str, ...]) -> bool:
        return any(asset.rows[t][1] < asked_at for t in proxy_set if t in asset.rows)

    return [
        proxy_set
        for proxy_set in sets_of(asset)
        if lacking.intersection(proxy_set) or (mode is Mode.ALL and made_before(proxy_set))
    ]
