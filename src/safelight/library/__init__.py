"""The library domain: storage configs, their originals, and the assets and proxies made
from them. Two kinds of module live here side by side.

Database code, on PostgreSQL through a connection or pool the caller passes (writes on
the caller's fenced transaction), every query a named block of ``queries.sql`` or
``configs.sql``:

- ``configs``: storage configs, the folders of originals that scope work.
- ``assets``: the asset and proxy repository, and the owner of ``queries.sql``.
- ``purge``: one soft-deleted asset's proxy files, then its rows.
- ``legacynames``, ``proxyroot``: a few queries (the legacy-named proxies of a config
  and their repointing; the database's identity) beside file code that needs none.

Pure code, over files and values, with no database:

- ``paths``, ``proxytree``, ``originals``, ``roots``: confinement under a root, proxy
  locations, atomic writes, deletes through no link, which folders may be roots.
- ``hashing``: the content hash that tracks a file across moves and renames.
- ``mediatypes``: which files are photos or videos, and which names a crawl ignores.
- ``metadata`` (with ``exif`` and ``containers``): capture time, camera, size,
  orientation (one rule for every format, ADR 0029), burst and Live Photo
  identifiers, read without decoding pixels.
- ``images``, ``decoding``, ``video``, ``limits``: proxies of a photo or video, decoded
  in a process pool or by ffmpeg, within what one file may cost the machine.
- ``crawl``, ``decisions``, ``sweep``, ``bursts``, ``livephotos``: the walk and index of
  a crawl, what it does with each file (unchanged, touched, moved, duplicate, new), the
  orphan proxy files, burst and Live Photo grouping.
- ``motionphotos``: where an Android motion photo keeps its video (XMP, ``mpvd`` box,
  Samsung's trailer), verified before it is believed.

The library imports ``safelight.core`` (clock, named-SQL loader, side-effect journal)
and never the engine (``safelight.work``): handlers join the two. Every failure that
belongs to one file is a ``MediaError`` (see ``errors``) carrying a short human reason,
so a crawl records it against that file and moves on. This package imports nothing
heavy: import the module you need.
"""
