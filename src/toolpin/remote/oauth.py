"""OAuth for ``toolpin run --url``: the MCP authorization flow, driven by the MCP Python
SDK's client auth support (:class:`mcp.client.auth.OAuthClientProvider`).

The SDK does the protocol: protected-resource metadata (RFC 9728), authorization-server
discovery (RFC 8414 / OpenID), dynamic client registration (RFC 7591), the authorization
code grant with PKCE (S256), RFC 8707 resource indicators, issuer checks, refresh. toolpin
adds what a proxy on a user's machine needs:

* **the browser step**: a one-shot HTTP listener on ``127.0.0.1`` receives the redirect;
  the authorization URL is opened with the system browser (``TOOLPIN_BROWSER``, when set,
  is the command used instead: it gets the URL as its last argument) and printed on
  stderr for headless machines. Only an ``https`` URL (``http`` for loopback) is opened;
* **tokens** under ``TOOLPIN_HOME/oauth/<key>.json`` (directory 0700, file 0600, written
  atomically), with their expiry so that a later run refreshes instead of asking again.
  Tokens are never logged and never part of a pin, a lock or an error; the key is a hash
  of the server's origin and path;
* **an address guard** on every request of the flow (:func:`flow_policy`): ``https`` only
  (``http`` for loopback), never link-local, the cloud metadata address, multicast or
  unspecified addresses, and private or loopback addresses only when the MCP server
  itself is on one (a public server cannot point toolpin at your local network).

Imports ``mcp`` (and pydantic) only when a server asks for authorization.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import parse_qs, urlsplit

import httpx2

from toolpin.core.wire import identity_url
from toolpin.errors import ToolpinError
from toolpin.probe.ssrf import AddressPolicy, GuardError, address_class, check_url
from toolpin.remote.target import RemoteTarget, is_loopback_host
from toolpin.remote.wire import TransportFault, new_client
from toolpin.util.fs import atomic_write, ensure_private_dir, toolpin_home
from toolpin.util.net import read_capped

BROWSER_TIMEOUT: Final = 300.0
"""Seconds the browser step may take (a person is logging in)."""
MAX_FLOW_BODY: Final = 1 << 20
CALLBACK_PATH: Final = "/callback"


class AuthError(ToolpinError):
    """The authorization flow failed (fixed text: never a token, never server text)."""


def token_path(url: str) -> Path:
    """Where the tokens of the server at ``url`` are kept."""
    key = hashlib.sha256(identity_url(url).encode()).hexdigest()[:16]
    return toolpin_home() / "oauth" / f"{key}.json"


def flow_policy(server_url: str) -> AddressPolicy:
    """The addresses the OAuth flow of a server may reach (see the module docs)."""
    host = urlsplit(server_url).hostname or ""
    local = is_loopback_host(host)
    if not local:
        import ipaddress

        try:
            local = address_class(ipaddress.ip_address(host.strip("[]"))) is not None
        except ValueError:
            local = False
    return AddressPolicy(allow_private=local)


def check_flow_url(url: str) -> None:
    """``https`` (``http`` only for loopback) and the guard's form rules; else AuthError."""
    try:
        parsed = check_url(url)
    except GuardError as exc:
        raise AuthError(f"the authorization flow names an unusable URL ({exc.message})") from None
    if parsed.scheme != "https" and not is_loopback_host(parsed.host):
        raise AuthError("the authorization flow names a plain-http URL on another machine")


class FileTokenStorage:
    """The SDK's ``TokenStorage`` protocol over one private JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # an unreadable token file means: authorize again
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        ensure_private_dir(self.path.parent)
        atomic_write(self.path, json.dumps(data, indent=1).encode(), mode=0o600)

    def expiry(self) -> float | None:
        value = self._read().get("expiresAt")
        return float(value) if isinstance(value, int | float) else None

    def access_token(self) -> str | None:
        tokens = self._read().get("tokens")
        token = tokens.get("access_token") if isinstance(tokens, dict) else None
        return token if isinstance(token, str) and token else None

    def redirect_port(self) -> int | None:
        client = self._read().get("client")
        uris = client.get("redirect_uris") if isinstance(client, dict) else None
        if isinstance(uris, list) and uris and isinstance(uris[0], str):
            parts = urlsplit(uris[0])
            if parts.hostname == "127.0.0.1" and parts.port:
                return parts.port
        return None

    def forget_client(self) -> None:
        data = self._read()
        data.pop("client", None)
        self._write(data)

    def _stored(self, member: str, model: Any) -> Any:
        """The stored ``member`` as a ``model`` (a pydantic class), or ``None`` when it is
        absent or not valid (the flow then starts again)."""
        value = self._read().get(member)
        if not isinstance(value, dict):
            return None
        try:
            return model.model_validate(value)
        except ValueError:
            return None

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        return self._stored("tokens", OAuthToken)

    async def set_tokens(self, tokens: Any) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        expires_in = tokens.expires_in
        data["expiresAt"] = time.time() + expires_in if expires_in else None
        self._write(data)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        return self._stored("client", OAuthClientInformationFull)

    async def set_client_info(self, client_info: Any) -> None:
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)


class _Callback:
    """A one-shot loopback listener for the authorization redirect."""

    def __init__(self, port: int | None) -> None:
        self.result: dict[str, str] | None = None
        self.done = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != CALLBACK_PATH:
                    self.send_error(404)
                    return
                query = {k: v[0] for k, v in parse_qs(parts.query).items() if v}
                owner.result = query
                owner.done.set()
                body = (
                    b"<!doctype html><meta charset=utf-8><title>toolpin</title>"
                    b"<p>toolpin received the authorization. You can close this window.</p>"
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the query holds the authorization code: never logged

        try:
            self.server = HTTPServer(("127.0.0.1", port or 0), Handler)
        except OSError:
            if port is None:
                raise
            self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            self.server.timeout = 0.5
            self.server.handle_request()

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    def close(self) -> None:
        self.done.set()
        self.server.server_close()


def open_browser(url: str, log: Callable[[str], None]) -> None:
    """Open ``url`` for the person: ``TOOLPIN_BROWSER`` or the system's opener. The
    browser never inherits the proxy's stdout (it carries the MCP messages)."""
    check_flow_url(url)
    log(f"toolpin: to authorize this server, open in a browser:\n  {url}")
    command = os.environ.get("TOOLPIN_BROWSER")
    argv: list[str] | None = None
    if command:
        argv = [*shlex.split(command), url]
    elif sys.platform == "darwin":
        argv = ["open", url]
    elif os.name == "nt":  # pragma: no cover - Windows
        os.startfile(url)  # type: ignore[attr-defined,unused-ignore]
        return
    elif shutil.which("xdg-open"):
        argv = ["xdg-open", url]
    if argv is None:
        return
    try:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        log("toolpin: could not start a browser; open the URL above by hand")


class OAuthSession:
    """The Authorization header of one remote server, obtained and refreshed with the SDK.

    :meth:`authorization` is the header to send (``None`` before any authorization);
    :meth:`authorize` runs the flow after a 401 (or a 403 ``insufficient_scope``).
    """

    def __init__(self, target: RemoteTarget, *, log: Callable[[str], None]) -> None:
        self.target = target
        self._log = log
        self.storage = FileTokenStorage(token_path(target.url))
        self._lock = threading.Lock()
        self._client = new_client(flow_policy(target.url))
        self.waiting_on_person = threading.Event()
        self._header: str | None = None
        token = self.storage.access_token()
        if token is not None:
            self._header = f"Bearer {token}"
        self._refreshed_at = 0.0

    def authorization(self) -> str | None:
        """The header value to send now (refreshed first when the stored one expired)."""
        expiry = self.storage.expiry()
        if self._header is not None and expiry is not None and time.time() > expiry - 5:
            with self._lock:
                if time.monotonic() - self._refreshed_at > 5:
                    self._refreshed_at = time.monotonic()
                    with contextlib.suppress(AuthError, TransportFault):
                        self._drive(None)  # on failure the server's 401 starts the full flow
        return self._header

    def authorize(self, challenge: httpx2.Response) -> None:
        """Run the flow for a 401/403 answer; raises TransportFault when it fails."""
        with self._lock:
            try:
                self._drive(challenge)
            except AuthError as exc:
                raise TransportFault(f"authorization failed: {exc.message}") from None

    def _drive(self, challenge: httpx2.Response | None) -> None:
        import anyio

        anyio.run(self._flow, challenge)

    async def _flow(self, challenge: httpx2.Response | None) -> None:
        from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthTokenError
        from mcp.client.auth.exceptions import OAuthRegistrationError
        from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

        callback = _Callback(self.storage.redirect_port())
        if self.storage.redirect_port() not in (None, callback.port):
            self.storage.forget_client()  # registered for a port we cannot listen on now
        try:
            metadata = OAuthClientMetadata.model_validate(
                {
                    "client_name": "toolpin",
                    "redirect_uris": [callback.redirect_uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": "none",
                }
            )

            async def redirect(url: str) -> None:
                self.waiting_on_person.set()
                open_browser(url, self._log)

            async def wait_for_code() -> AuthorizationCodeResult:
                import anyio

                try:
                    got = await anyio.to_thread.run_sync(callback.done.wait, BROWSER_TIMEOUT)
                finally:
                    self.waiting_on_person.clear()
                if not got or callback.result is None:
                    raise AuthError("nobody completed the browser step in time")
                result = callback.result
                if "error" in result or "code" not in result:
                    raise AuthError("the authorization server refused the authorization")
                return AuthorizationCodeResult(
                    code=result["code"], state=result.get("state"), iss=result.get("iss")
                )

            provider = OAuthClientProvider(
                server_url=self.target.url.split("?", 1)[0],
                client_metadata=metadata,
                storage=self.storage,
                redirect_handler=redirect,
                callback_handler=wait_for_code,
            )
            expiry = self.storage.expiry()
            # The SDK reads 0 as "no expiry"; a stored 0 means long expired.
            provider.context.token_expiry_time = None if expiry is None else max(expiry, 1.0)
            rejected = challenge.request.headers.get("authorization") if challenge else None
            original = httpx2.Request("POST", self.target.url)
            if challenge is not None and "mcp-protocol-version" in challenge.request.headers:
                original.headers["MCP-Protocol-Version"] = challenge.request.headers[
                    "mcp-protocol-version"
                ]
            flow = provider.async_auth_flow(original)
            try:
                outgoing = await flow.__anext__()
                while True:
                    if outgoing is original:
                        header = outgoing.headers.get("authorization")
                        if header is not None and (challenge is None or header != rejected):
                            self._header = header
                            return
                        if challenge is None:
                            return  # nothing stored: the server's 401 starts the flow
                        response, challenge = challenge, None
                    else:
                        response = self._send(outgoing)
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            except (OAuthFlowError, OAuthTokenError, OAuthRegistrationError) as exc:
                raise AuthError(type(exc).__name__) from None
            except ValueError:
                raise AuthError("the authorization server's metadata is unusable") from None
            finally:
                await flow.aclose()
        finally:
            callback.close()

    def _send(
        self, request: httpx2.Request, what: str = "the authorization server"
    ) -> httpx2.Response:
        """One request of the flow (to ``what``), through the guard, body capped, fully
        read."""
        check_flow_url(str(request.url))
        try:
            response = self._client.send(request, stream=True)
            try:
                body = read_capped(
                    response.iter_bytes(),
                    MAX_FLOW_BODY,
                    lambda: AuthError("an authorization answer is larger than 1 MiB"),
                )
            finally:
                response.close()
        except GuardError as exc:
            raise AuthError(exc.message) from None
        except httpx2.HTTPError as exc:
            raise AuthError(f"cannot reach {what} ({type(exc).__name__})") from None
        dropped = ("content-encoding", "content-length", "transfer-encoding")  # body is decoded
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in dropped]
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)


def stored_authorization(url: str) -> OAuthSession | None:
    """The tokens toolpin stored for the server at ``url``, for a client that never asks a
    person (``toolpin lock``): ``None`` when it holds none. An expired access token is
    refreshed (no browser); :meth:`OAuthSession.authorization` gives the header."""
    if FileTokenStorage(token_path(url)).access_token() is None:
        return None
    return OAuthSession(RemoteTarget(url), log=lambda text: None)


LoginResult = Literal["authorized", "already", "not asked"]


def login(target: RemoteTarget, *, log: Callable[[str], None]) -> LoginResult:
    """``toolpin login``: ask the server once (with the stored token, if any); when it
    answers 401 (or 403 ``insufficient_scope``), run the browser step and store the
    tokens. Raises :class:`AuthError`."""
    from toolpin.core.headers import has_authorization

    if has_authorization(target.headers):
        raise AuthError("the server is given an Authorization header; nothing to authorize")
    session = OAuthSession(target, log=log)
    request = httpx2.Request(
        "POST",
        target.url,
        headers={
            **dict(target.headers),
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **({"Authorization": a} if (a := session.authorization()) else {}),
        },
        content=b'{"jsonrpc":"2.0","id":"toolpin-login","method":"ping"}',
    )
    response = session._send(request, "the server")
    status = response.status_code
    challenge = response.headers.get("www-authenticate", "")
    if status == 401 or (status == 403 and "insufficient_scope" in challenge):
        try:
            session.authorize(response)
        except TransportFault as exc:
            raise AuthError(str(exc)) from None
        return "authorized"
    if 300 <= status < 400:
        raise AuthError(f"the server redirected (HTTP {status}); give the URL it serves at")
    return "already" if session.storage.access_token() else "not asked"
