"""``crawl`` (scoped): bring a config's assets in line with the files under its root."""

from safelight.handlers.crawl.run import CRAWL

__all__ = ["CRAWL"]
