"""The command line: the product's front door (``safelight run``, ``worker``, ``status`` ...).

Commands are thin: they parse, build the settings, open the database, call the engine
or a read-only query, and print. Every error a user can cause leaves as one line and a
documented exit code (``failures``).
"""
