"""A stand-in for initdb (``sitecustomize``'s ``initdb`` point): it writes half a data
folder, as an interrupted initdb leaves one, tells the test its pid, and waits to be
killed. Usage: ``fake_initdb.py DATA_FOLDER FIFO``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

data, fifo = Path(sys.argv[1]), sys.argv[2]
(data / "PG_VERSION").write_text("16\n")
(data / "base").mkdir()
(data / "base" / "half-written").write_bytes(b"\0" * 4096)
fd = os.open(fifo, os.O_WRONLY)
os.write(fd, f"initdb {os.getpid()}\n".encode())
os.close(fd)
while True:
    time.sleep(3600)
