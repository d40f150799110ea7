"""safelight: the background worker of a self-hosted photo library."""

__version__ = "0.1.0"
