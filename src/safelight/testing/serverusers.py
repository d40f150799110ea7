"""Removing the OS users of embedded servers whose homes are gone (as root).

As root, each home's embedded server runs as a system user of that home alone (ADR
0037), made at its first start; safelight never removes one, as the home's data folder
belongs to it. Tests and scripts make homes by the dozen in temporary folders: this
removes the users of those that are gone again, so that a machine running the suite as
root does not gather hundreds of them (useradd's system uids end at 999).
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

from safelight.db.embedded import SERVER_USER_COMMENT, is_server_user, server_user_name


def home_of(entry: pwd.struct_passwd) -> Path | None:
    """The home a server user's comment names, if it is one of safelight's and names one."""
    head = f"{SERVER_USER_COMMENT} of "
    if not is_server_user(entry.pw_name) or not entry.pw_gecos.startswith(head):
        return None
    home = Path(entry.pw_gecos.removeprefix(head))
    # The name must be the one that home gives: the comment is not trusted alone.
    return home if home.is_absolute() and server_user_name(home) == entry.pw_name else None


def remove_users_of_gone_homes(under: Path) -> list[str]:
    """Delete (``userdel``) each server user whose home lay under ``under`` and no longer
    exists; the names deleted. Not root: nothing to do. A user that a process still runs
    as is left (userdel refuses), as is every user whose home still exists."""
    if os.geteuid() != 0:
        return []
    base = Path(os.path.realpath(under))
    removed = []
    for entry in pwd.getpwall():
        home = home_of(entry)
        if home is None or not home.is_relative_to(base) or os.path.lexists(home):
            continue
        done = subprocess.run(
            ["userdel", entry.pw_name], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            removed.append(entry.pw_name)
    return removed
