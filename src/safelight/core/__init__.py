"""Tools that the engine (``work``), the library and the rest share, and that import
nothing of safelight outside this package: the clock (``clock``), the loader of named
SQL blocks (``sql``) and the side-effect journal (``journal``).

Being a leaf lets ``library`` and ``work`` stand side by side, neither importing the
other (tests/unit/test_layering.py checks it).
"""
