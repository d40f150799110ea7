"""What a file says, read without decoding pixels: capture time, camera, size,
orientation, location (``metadata``, with ``exif``, ``xmp``, ``containers``,
``jpegblocks``, ``capturetime``, ``location``), XMP sidecars (``sidecars``), motion
photos' videos (``motionphotos``) and the external tools' failures (``toolfailures``).

May import ``library.files`` (and ``safelight.core``); nothing else of the library.
"""
