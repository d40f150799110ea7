"""Test tooling beside the product: the fake clock (``fakeclock``), generated photo
libraries (``samplegen``) and the EXIF writer of their photos (``exif``), and what the
tests share (ADR 0051): the one scripted store (``workstore``) and fake executor
(``executor``), row factories (``rows``: ``add_config``) and builders.

Production code never imports this package; the one exception is ``safelight demo``,
which imports ``samplegen`` inside the command to generate its demo library (ADR 0019).
tests/unit/test_layering.py checks both.
"""
