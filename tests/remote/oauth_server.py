"""An OAuth-protected SDK ``MCPServer``: the SDK's own authorization server support
(protected-resource metadata, authorization-server metadata, dynamic client registration,
PKCE-checked code exchange, refresh), with an in-memory provider that approves every
authorization request at once (the person in the browser always says yes)."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


@dataclass
class Provider:
    """An in-memory authorization server; ``expires_in`` sets the access token lifetime."""

    expires_in: int = 3600
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    registrations: int = 0
    refreshes: int = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.registrations += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: Any, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        token = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access[token] = AccessToken(
            token=token,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.expires_in,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=token,
            expires_in=self.expires_in,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: Any, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: Any, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refreshes += 1
        self.refresh.pop(refresh_token.token, None)
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)


def protected_server(base: str, provider: Provider) -> MCPServer:
    """An MCPServer at ``base + /mcp`` that needs a bearer token from ``provider``."""
    app = MCPServer(
        "oauth-protected",
        instructions="Sign in first.",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
            ),
            required_scopes=["mcp"],
        ),
    )

    @app.tool()
    def secret_sum(a: int, b: int) -> int:
        """Add two integers, for signed-in users."""
        return a + b

    return app
