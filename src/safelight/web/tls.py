"""The dashboard's HTTPS: its certificate and key, read once at start (ADR 0042).

uvicorn serves TLS with the context made here (``WebServer``), so a certificate that
cannot be used is one :class:`~safelight.settings.SettingsError` before the server
listens, never a traceback from inside it; and a key that asks for a passphrase fails
at once instead of waiting on a prompt no one sees.
"""

from __future__ import annotations

import os
import ssl
import stat
from pathlib import Path

from safelight.settings import ENV_PREFIX, Settings, SettingsError

__all__ = ["key_readable_by_others", "server_context"]

_FILES = (
    f"web_tls_cert and web_tls_key ({ENV_PREFIX}WEB_TLS_CERT and {ENV_PREFIX}WEB_TLS_KEY, "
    "--tls-cert and --tls-key)"
)


class _Encrypted(Exception):
    """The key asked for its passphrase."""


def _ask_passphrase() -> str:
    raise _Encrypted


def _readable(setting: str, path: Path) -> None:
    what = f"{setting} ({ENV_PREFIX}{setting.upper()}) {path}"
    if not path.exists():
        raise SettingsError(f"{what} does not exist")
    if not path.is_file():
        raise SettingsError(f"{what} is not a file")
    if not os.access(path, os.R_OK):
        raise SettingsError(f"{what} cannot be read by this user")


def server_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context of the settings' certificate and key; None without them. Raises
    :class:`SettingsError` saying what is wrong with them (nothing of their content)."""
    cert, key = settings.web_tls_cert, settings.web_tls_key
    if cert is None or key is None:
        return None
    _readable("web_tls_cert", cert)
    _readable("web_tls_key", key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key, password=_ask_passphrase)
    except _Encrypted:
        raise SettingsError(
            f"web_tls_key ({ENV_PREFIX}WEB_TLS_KEY) {key} is encrypted: give the key without "
            "a passphrase, readable only by the user safelight runs as"
        ) from None
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise SettingsError(
                f"web_tls_key ({ENV_PREFIX}WEB_TLS_KEY) {key} is not the key of the "
                f"certificate {cert}"
            ) from None
        raise SettingsError(
            f"{_FILES} must be a PEM certificate (or a chain, the server's first) and its "
            f"private key: {cert} and {key} are not"
        ) from None
    except OSError as error:
        raise SettingsError(
            f"{_FILES} cannot be read: {error.strerror or type(error).__name__}"
        ) from None
    return context


def key_readable_by_others(settings: Settings) -> bool:
    """Whether every user of this machine may read the TLS key (a group may: Debian's
    ``ssl-cert`` is one)."""
    key = settings.web_tls_key
    if key is None:
        return False
    try:
        return bool(key.stat().st_mode & stat.S_IROTH)
    except OSError:
        return False
