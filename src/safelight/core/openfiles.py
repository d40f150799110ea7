"""The process's limit on open files (``RLIMIT_NOFILE``), raised once at start.

Linux starts a process with a soft limit of 1,024 descriptors whatever its hard limit
(systemd's services: 1,024 of 524,288). A long-running command (``worker``, ``run``,
``serve``) holds database connections, decode pipes, a photo's files and its clients'
sockets at once: a few hundred idle connections from any local user once took the
rest, and a crawl "succeeded" with hundreds of "Too many open files" errors (issue
#27). The soft limit is raised to the hard one, which only root may raise further; the
servers cap their own connections well below it (``docs/security.md``).
"""

from __future__ import annotations

import logging
import resource

__all__ = ["raise_open_files_limit"]

_log = logging.getLogger(__name__)


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft limit on open files to the hard one; return (before, after), and
    log them once at debug level. A limit the kernel refuses stays as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        _log.debug("open files limit: %s (already the hard limit)", _shown(soft))
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        # macOS refuses RLIM_INFINITY here; a sandbox may refuse any change.
        _log.debug("open files limit: %s, could not raise it to %s: %s", soft, _shown(hard), exc)
        return soft, soft
    _log.debug("open files limit: raised from %s to the hard limit, %s", soft, _shown(hard))
    return soft, hard


def _shown(limit: int) -> str:
    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)
