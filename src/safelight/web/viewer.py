"""Who is looking: the signed-in user a request is read and acted for (issue #28).

The sign-in middleware puts one :class:`Viewer` in the request's scope before any route
that needs it runs; a route that finds none answers 401 (a path the middleware let
through unsigned that should not have been). A user sees the storage configs whose
owner is their name and what belongs to them (assets, proxies, work items), and acts
only on those; an admin sees and acts on every config, and on work of no config.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection

SCOPE_KEY = "safelight.viewer"


@dataclass(frozen=True, slots=True)
class Viewer:
    user_id: int
    name: str
    """A config owner's name (``library/catalogue/owners.py``)."""
    is_admin: bool

    @property
    def owner(self) -> str | None:
        """The owner whose configs this viewer sees; None: every owner (an admin). The
        reads take it as their ``owner`` filter."""
        return None if self.is_admin else self.name

    def may_see(self, owner: str | None) -> bool:
        """Whether this viewer sees, and may act on, a config of ``owner`` (None: work
        that belongs to no config, an admin's alone)."""
        return self.is_admin or (owner is not None and owner == self.name)


def not_signed_in() -> HTTPException:
    """The 401 of a request with no user behind it, or whose user is gone."""
    return HTTPException(401, "sign in to see this")


def viewer_of(conn: HTTPConnection) -> Viewer:
    found = conn.scope.get(SCOPE_KEY)
    if not isinstance(found, Viewer):
        raise not_signed_in()
    return found
