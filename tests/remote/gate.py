"""An ASGI gate in front of an SDK server's Streamable HTTP app, for the lock's probe
tests: it records the headers of every request, may demand a bearer token and a team
header (401 otherwise), and may refuse the 2026-07-28 era (so the probe falls back to the
``initialize`` handshake)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Scope = dict[str, Any]


@dataclass
class Gate:
    app: Any
    token: str | None = None
    team: str | None = None
    legacy_only: bool = False
    seen: list[dict[str, str]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        headers[":method"] = scope["method"]
        self.seen.append(headers)
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            await _answer(send, 401, {"error": "unauthorized"})
            return
        if self.team is not None and headers.get("x-team") != self.team:
            await _answer(send, 401, {"error": "no team"})
            return
        if self.legacy_only and headers.get("mcp-protocol-version") == "2026-07-28":
            await _answer(send, 400, {"error": "this server speaks the handshake era only"})
            return
        await self.app(scope, receive, send)

    def methods(self) -> list[str]:
        """The ``Mcp-Method`` of every request that carried one."""
        return [h["mcp-method"] for h in self.seen if "mcp-method" in h]


async def _answer(send: Any, status: int, body: dict[str, str]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(data)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
