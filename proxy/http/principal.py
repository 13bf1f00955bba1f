"""A request's Principal (proxy/tenancy/identity.py), resolved once at the edge and kept
in the ASGI scope: the telemetry middleware, the data plane, the forwarder, the control
routes and the pipeline all read this one (the scope is the one object they share per
request, as Starlette's `request.state` rides in it)."""

from __future__ import annotations

from starlette.types import Scope

from proxy.errors import ProxyError
from proxy.http.head import head_headers
from proxy.tenancy.identity import Identity, Principal

PRINCIPAL_KEY = "ragtrim.principal"


class EdgeIdentity:
    """`of(scope)`: the request's Principal, resolved on the first call only."""

    def __init__(self, identity: Identity):
        self.identity = identity

    def of(self, scope: Scope) -> Principal:
        found = scope.get(PRINCIPAL_KEY)
        if isinstance(found, Principal):
            return found
        try:
            principal = self.identity.resolve(head_headers(scope))
        except ProxyError as exc:  # a duplicated Authorization header
            principal = self.identity.refused(exc)
        scope[PRINCIPAL_KEY] = principal
        return principal

    def vouches(self, scope: Scope) -> bool:
        """Whether the client may steer ragtrim's telemetry (continue its trace): any
        client without api_keys, else one with a valid key."""
        return self.of(scope).valid
