"""The proxy specs tests make proxies with: the settings' defaults, or those with a change."""

from __future__ import annotations

import dataclasses
from typing import Any

from safelight.library.render.images import ProxySpec
from safelight.library.render.video import VideoProxySpec
from safelight.settings import Settings

DEFAULT_SPEC = Settings().proxy_spec()
VIDEO_SPEC = VideoProxySpec(image=DEFAULT_SPEC)


def proxy_spec(**changes: Any) -> ProxySpec:
    """The default spec with ``changes`` (validated as a ``ProxySpec``)."""
    return dataclasses.replace(DEFAULT_SPEC, **changes)


def video_spec(**changes: Any) -> VideoProxySpec:
    """The default video spec with ``changes`` (validated as a ``VideoProxySpec``)."""
    return dataclasses.replace(VIDEO_SPEC, **changes)
