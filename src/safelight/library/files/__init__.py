"""Originals on disk: which folders may be roots and which are safelight's own
(``roots``: one ``OwnFolder``), opening a root and its files through no link
(``originals``), confinement under a root (``confinement``), the content hash
(``hashing``), which files are photos or videos (``mediatypes``) and what one holds
whatever its name (``sniffing``), what one file may cost (``limits``) and the per-file
failures (``errors``).

The leaf of the library: it imports ``safelight.core`` and nothing else of safelight.
"""
