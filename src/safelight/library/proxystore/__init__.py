"""The proxy root's files: its layout and names (``layout``), publishing a proxy
(``publishing``), deletes and reads through no link (``proxytree``), the marker naming
its database (``proxyroot``), its modes (``proxymodes``), legacy names (``legacynames``),
the orphan sweep's scan (``sweep``) and one asset's purge (``purge``). File code only:
the rows that name the files are the catalogue's.

May import ``library.files`` and ``library.catalogue``; nothing else of the library.
"""
