"""``proxy_remake``: make a config's proxies again, the missing ones or all (ADR 0059)."""

from safelight.handlers.proxy_remake.run import PROXY_REMAKE, RemakePayload, dedup_key

__all__ = ["PROXY_REMAKE", "RemakePayload", "dedup_key"]
