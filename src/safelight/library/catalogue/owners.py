"""What an owner name may be: the user a storage config belongs to (``--user``).

An owner name is shown wherever a config is (the CLI's tables, logs, the dashboard) and
scopes a per-user Worker's work, so it is a short, plain, visible name: not blank, at
most ``MAX_OWNER_NAME_LENGTH`` characters, no character a terminal would act on or hide
(``terminal.is_unsafe``: controls, bidi overrides, zero-width spaces...), and no
leading or trailing space, which would make two names that read the same. Checked
where a name enters: the CLI's ``--user`` options and ``StorageConfigs.add``.
"""

from __future__ import annotations

from safelight.terminal import is_unsafe, printable

MAX_OWNER_NAME_LENGTH = 64
"""Far beyond any OS user name (32 on Linux), short enough for a table's column."""


def owner_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an owner name (a sentence for the user), or None."""
    if not name.strip():
        return "an owner name must not be blank"
    if len(name) > MAX_OWNER_NAME_LENGTH:
        return f"an owner name has at most {MAX_OWNER_NAME_LENGTH} characters ({len(name)} given)"
    unsafe = sorted({char for char in name if is_unsafe(char)})
    if unsafe:
        shown = ", ".join(printable(char) for char in unsafe)
        return f"an owner name must not hold control or format characters ({shown})"
    if name != name.strip():
        return "an owner name must not begin or end with a space"
    return None
