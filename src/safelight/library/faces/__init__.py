"""The people in photos (opt-in, ``SAFELIGHT_FACES=1``; ADR 0067, docs/faces.md): the
faces in a photo's preview proxy and their 128-D descriptors (``finding``, with the
models of ``models``), the descriptors' stored form (``descriptors``), and how faces are
grouped into people (``grouping``, pure).

May import ``library.files`` (a preview that cannot be read is a ``MediaError``);
nothing else of the library. ``catalogue.faces`` writes what it finds. dlib is imported
only where a face is looked for, never by importing this package: the kind is opt-in, and
a Worker without it must not load dlib.
"""
