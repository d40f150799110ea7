"""The settings a crawl uses (``CrawlSettings``): a slice of ``Settings``, made in one
place (``CrawlSettings.of``), so a step can use only what the crawl was given and a
test can make a crawl's settings without a whole ``Settings`` (ADR 0047)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from safelight.library.render.images import ProxySpec
from safelight.settings import Settings


@dataclass(frozen=True, slots=True)
class CrawlSettings:
    proxies: Path
    """The proxy root: proxies are written under it, and the walk never enters it."""
    home: Path
    """Safelight's home: the walk never enters it, nor its embedded database's data folder
    (``files.roots.own_folders``)."""
    follow_links_inside_root: bool
    """A file link whose target resolves inside the root is a file at the link's path."""
    max_concurrent_files: int
    """How many files a crawl hashes, decodes and writes at once."""
    proxy_spec: ProxySpec
    """Sizes and qualities of a photo's (and a video poster's) proxies."""
    failed_retry_first: timedelta = timedelta(days=1)
    """How long a file that failed once waits, unchanged, before a crawl reads it again;
    doubled with each crawl it fails (``library.walk.failures``)."""
    failed_retry_longest: timedelta = timedelta(days=30)
    finds_faces: bool = False
    """Whether a crawl queues its config's faces at its end (``SAFELIGHT_FACES=1``,
    ADR 0067)."""

    @classmethod
    def of(cls, settings: Settings) -> CrawlSettings:
        return cls(
            proxies=settings.proxies,
            home=settings.home,
            follow_links_inside_root=settings.follow_links_inside_root,
            max_concurrent_files=settings.max_concurrent_files,
            proxy_spec=settings.proxy_spec(),
            failed_retry_first=timedelta(days=settings.failed_file_retry_days),
            failed_retry_longest=timedelta(days=settings.failed_file_retry_max_days),
            finds_faces=settings.faces,
        )
