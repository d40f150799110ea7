"""The library domain: storage configs, their originals, and the assets and proxies made
from them, as sub-packages with one-way arrows (ADR 0046; ``tests/unit/test_layering.py``
enforces them). Lower never imports higher:

- ``files``: originals on disk, confinement under a root, roots and safelight's own
  folders, the content hash, media types. The leaf.
- ``media`` (on files): what a file says: metadata, EXIF, XMP, sidecars, motion photos.
- ``render`` (on files, media): pixels to proxies: images, RAW, video, the decode pool.
- ``grouping`` (on files, media, render): bursts, Live Photos, stacks.
- ``catalogue`` (on files, media): the database, one module and one ``.sql`` per table
  group; the only part of the library that holds SQL.
- ``proxystore`` (on files, catalogue): the proxy root's layout, publishing, deletes,
  marker, legacy names, sweep and purge; file code only.
- ``walk`` (on all of them): the crawl's walk, matching and decisions.

The library imports ``safelight.core`` (clock, named-SQL loader, side-effect journal)
and never the engine (``safelight.work``): handlers join the two. Every failure that
belongs to one file is a ``MediaError`` (``files.errors``) carrying a short human
reason, so a crawl records it against that file and moves on. No package here imports
anything heavy: import the module you need.
"""
