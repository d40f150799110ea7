"""The library domain's media layer: pure functions over original files, no database.

- ``paths``: confinement of paths under a storage root, proxy locations, atomic writes.
- ``hashing``: the content hash that tracks a file across moves and renames.
- ``mediatypes``: which files are photos or videos, and which names a crawl ignores.
- ``metadata`` (with ``exif``): capture time, camera, size, orientation, burst and Live
  Photo identifiers, read without decoding pixels.
- ``images``: thumbnail, preview and BlurHash of a photo, from one decode.
- ``video``: ffprobe/ffmpeg proxies of a video, killable as a process group.
- ``samplegen``: generated libraries for tests and ``safelight demo``.

Every failure that belongs to one file is a ``MediaError`` (see ``errors``) carrying a
short human reason, so a crawl records it against that file and moves on. This package
imports nothing heavy: import the module you need.
"""
