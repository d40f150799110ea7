"""Pixels to proxies: the thumbnail, preview and BlurHash of a photo (``images``), RAW
files (``raw``), videos through ffmpeg (``video``), decoded in a process pool
(``decoding``); how far a cut JPEG's scans reach (``jpegscans``); what a decoder says,
to the log (``heard``).

May import ``library.files`` and ``library.media``; nothing else of the library.
"""
