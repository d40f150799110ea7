"""Groups of assets, as pure functions of their metadata: bursts (``bursts``), Live
Photo pairs (``livephotos``), RAW+JPEG stacks (``stacks``), other files of one capture
(``copies``: formats and near-copies, told apart by ``fingerprints`` of thumbnails),
similar shots of one scene and time (``similar``, ADR 0066).

May import ``library.files``, ``library.media`` and ``library.render`` (a burst's
primary is its sharpest shot); nothing else of the library. ``catalogue.groups`` writes
what it finds.
"""
