"""Admin policy files that allow only the approved MCP servers, each behind the proxy.

From an approved server list (``mcpServers`` or VS Code's ``servers``), build the files
each product reads from a managed location:

* ``claude-code``: ``managed-mcp.json`` (the servers) and ``managed-settings.json``
  (``allowManagedMcpServersOnly``, the allow list of wrapped commands and URLs, and the
  original commands denied so they cannot run unwrapped);
* ``copilot`` (GitHub Copilot, also read by VS Code): ``managed-settings.json`` with the
  same allow and deny lists;
* ``codex``: ``requirements.toml`` (each server's exact command identity) and
  ``config.toml`` (the servers, environment forwarded by name with ``env_vars``);
* ``cursor``: ``cursor-dashboard.txt``, text to paste into the team dashboard.

Every approved local server is normalised (an existing toolpin or mcp-pin wrapper is
removed) and wrapped as ``<launcher> run --name <n> --lock <ABS> --only-locked -- <cmd>``;
a remote server as ``<launcher> run --name <n> --lock <ABS> --only-locked --url <URL>``
(its URL is denied where the product has a deny list, so it cannot be used unwrapped).
Environment *values* are never written: entries forward variables by name, and a literal
value in the approved list becomes a note.

With a public log (:class:`LogPolicy`: ``--log URL --vkey ABS [--require-public]
[--accept-public-after DAYS]``), every wrapped entry carries those options too, so each
server's first pin, block and lock proof is checked against the log, with the same
policy, on every machine (the key file is named by an absolute path, as the lock is, or
given as the key text itself).
Output is deterministic, so the files can be reviewed and diffed.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolpin.clients.documents import Entry, JsonDocument
from toolpin.clients.wrap import proxy_args, recognise_wrap
from toolpin.errors import ConfigError, InputError
from toolpin.util.fs import atomic_write

Product = Literal["claude-code", "copilot", "codex", "cursor"]
PRODUCTS: tuple[Product, ...] = ("claude-code", "copilot", "codex", "cursor")

_ENV_REF = re.compile(
    r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_KEY_TEXT = re.compile(r"[^+\s]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*")
"""A note verifier key (``<name>+<key hash>+<base64 key>``), given as the text itself."""

COMMON_NOTES = {
    "remote": "Remote servers run behind the proxy too (toolpin run --url); a header whose "
    "value is a ${VAR} reference is forwarded as --header 'K: ${env:VAR}', any other header "
    "is not written.",
    "variable": "A command that uses ${VAR} or $VAR is only as fixed as that variable.",
}


@dataclass(frozen=True)
class ApprovedServer:
    """One server of the approved list, with any proxy wrapper removed."""

    name: str
    kind: Literal["stdio", "remote"]
    argv: tuple[str, ...] = ()
    url: str | None = None
    transport: str = "http"
    env: tuple[tuple[str, str], ...] = ()
    """(name, what to write): ``${VAR}`` references only; values never."""
    literal_env: tuple[str, ...] = ()
    """Names whose approved value was a literal (not written)."""
    had_headers: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    """Remote headers forwarded by variable name only (``K``, ``${env:VAR}``)."""


@dataclass(frozen=True)
class PolicyFile:
    name: str
    content: bytes


@dataclass(frozen=True)
class PolicyOutput:
    product: Product
    files: tuple[PolicyFile, ...]
    server_count: int
    notes: tuple[str, ...]


@dataclass(frozen=True)
class LogPolicy:
    """The public log every wrapped entry consults, and its policy."""

    url: str
    vkey: str
    """An absolute path of the verifier key file on every machine, or the key text."""
    require_public: bool = False
    accept_after: int | None = None

    def args(self) -> list[str]:
        """The ``toolpin run`` options that name it."""
        out = ["--log", self.url, "--vkey", self.vkey]
        if self.require_public:
            out.append("--require-public")
        if self.accept_after is not None:
            out += ["--accept-public-after", str(self.accept_after)]
        return out


def log_policy(
    url: str | None,
    vkey: str | None,
    *,
    require_public: bool = False,
    accept_after: int | None = None,
) -> LogPolicy | None:
    """The :class:`LogPolicy` of the options given (``None``: no log); an
    :class:`InputError` for half a setting, a relative key path or a URL that is not
    http(s), or a policy without a log."""
    if url is None and vkey is None:
        if require_public or accept_after is not None:
            raise InputError(
                "--require-public and --accept-public-after need a log: give --log URL --vkey ABS"
            )
        return None
    if url is None or vkey is None:
        raise InputError("--log and --vkey go together (the log's URL and its verifier key)")
    if not url.startswith(("https://", "http://")):
        raise InputError("--log must be an https:// or http:// URL")
    key_text = _KEY_TEXT.fullmatch(vkey) is not None
    if not key_text and not (posixpath.isabs(vkey) or re.match(r"^([A-Za-z]:[\\/]|\\\\)", vkey)):
        raise InputError(
            f"--vkey must be an absolute path or the key text, not {vkey!r}",
            advice="A policy runs servers from folders you do not know; name the key file "
            "where it is deployed, e.g. /etc/toolpin/log.vkey.",
        )
    if accept_after is not None and not 1 <= accept_after <= 3650:
        raise InputError("--accept-public-after is a whole number of days (1 to 3650)")
    return LogPolicy(url, vkey, require_public, accept_after)


def check_lock_path(lock: str) -> str:
    """``lock`` when it is absolute (POSIX or Windows form); else :class:`InputError`."""
    if posixpath.isabs(lock) or re.match(r"^([A-Za-z]:[\\/]|\\\\)", lock):
        return lock
    raise InputError(
        f"--lock must be an absolute path, not {lock!r}",
        advice="A policy runs servers from folders you do not know; "
        "name the lock where it is deployed, e.g. /etc/toolpin/toolpin.lock.",
    )


def read_approved(text: str) -> tuple[list[ApprovedServer], list[str]]:
    """The servers of an approved config (JSON with comments) and notes on skipped ones."""
    doc = JsonDocument(text, "auto")
    servers: list[ApprovedServer] = []
    notes: list[str] = []
    for entry in doc.entries():
        if entry.scope is not None:
            continue
        if entry.kind == "unusable":
            notes.append(f"{_show(entry.name)}: skipped ({entry.reason})")
            continue
        env, literal = _env_by_name(entry)
        if entry.kind == "remote":
            value = entry.value if isinstance(entry.value, dict) else {}
            if not entry.url:
                notes.append(f"{_show(entry.name)}: skipped (a remote server without a URL)")
                continue
            transport = "sse" if value.get("type") == "sse" else "http"
            raw = value.get("headers")
            headers: list[tuple[str, str]] = []
            literal_header = False
            if isinstance(raw, dict):
                for key, header in raw.items():
                    match = _ENV_REF.fullmatch(header) if isinstance(header, str) else None
                    if match:
                        headers.append(
                            (str(key), "${env:" + (match.group(1) or match.group(2)) + "}")
                        )
                    else:
                        literal_header = True
            servers.append(
                ApprovedServer(
                    entry.name,
                    "remote",
                    url=entry.url,
                    transport=transport,
                    had_headers=literal_header or (bool(raw) and not isinstance(raw, dict)),
                    headers=tuple(headers),
                )
            )
            continue
        argv = entry.argv
        form = recognise_wrap(argv)
        if form is not None:
            start = form.inner_start
            if start is None or start >= len(argv):
                notes.append(
                    f"{_show(entry.name)}: skipped (wrapped in a form toolpin does not read)"
                )
                continue
            argv = argv[start:]
        servers.append(
            ApprovedServer(entry.name, "stdio", tuple(argv), env=env, literal_env=literal)
        )
    if not servers:
        raise ConfigError("the approved config lists no servers (mcpServers or servers)")
    return servers, notes


def _env_by_name(entry: Entry) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    env: list[tuple[str, str]] = []
    literal: list[str] = []
    for key, value in entry.env:
        match = _ENV_REF.fullmatch(value)
        if match:
            env.append((key, "${" + (match.group(1) or match.group(2)) + "}"))
        else:
            env.append((key, "${" + key + "}"))
            literal.append(key)
    return tuple(env), tuple(literal)


def _show(name: str) -> str:
    return json.dumps(name, ensure_ascii=True)


def wrapped_argv(
    server: ApprovedServer, launcher: Sequence[str], lock: str, log: LogPolicy | None = None
) -> list[str]:
    """The full command line a policy approves for ``server`` (with ``log``'s options)."""
    flags = proxy_args(server.name, lock, only_locked=True)[:-1]  # no "--"
    if log is not None:
        flags += log.args()
    if server.kind == "remote":
        assert server.url is not None
        remote = ["--url", server.url]
        if server.transport == "sse":
            remote += ["--transport", "sse"]
        for key, value in server.headers:
            remote += ["--header", f"{key}: {value}"]
        return [*launcher, *flags, *remote]
    return [*launcher, *flags, "--", *server.argv]


def build(
    product: Product,
    servers: Sequence[ApprovedServer],
    *,
    lock: str,
    launcher: Sequence[str],
    notes: Sequence[str] = (),
    log: LogPolicy | None = None,
) -> PolicyOutput:
    """The files of one product (deterministic bytes); ``log``: the public log every
    wrapped entry consults."""
    check_lock_path(lock)
    builder = {
        "claude-code": _claude_code,
        "copilot": _copilot,
        "codex": _codex,
        "cursor": _cursor,
    }[product]
    files = builder(servers, list(launcher), lock, log)
    all_notes = list(notes)
    for s in servers:
        all_notes.extend(
            f"{_show(s.name)}: {key} has a literal value in the approved config; it is not "
            f"written here. Set {key} in each user's environment (the entry forwards it)."
            for key in s.literal_env
        )
        if s.had_headers and product != "cursor":
            all_notes.append(
                f"{_show(s.name)}: its headers are not written (they often hold tokens); "
                "give them as ${VAR} references to have them forwarded."
            )
    if any(s.kind == "remote" for s in servers):
        all_notes.append(COMMON_NOTES["remote"])
    if any("$" in arg for s in servers for arg in s.argv):
        all_notes.append(COMMON_NOTES["variable"])
    return PolicyOutput(product, tuple(files), len(servers), tuple(all_notes))


def _json(value: object) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _allow_deny(
    servers: Sequence[ApprovedServer], launcher: list[str], lock: str, log: LogPolicy | None
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    allowed: list[dict[str, object]] = []
    denied: list[dict[str, object]] = []
    for s in servers:
        allowed.append({"serverCommand": wrapped_argv(s, launcher, lock, log)})
        if s.kind == "remote":
            denied.append({"serverUrl": s.url})
        else:
            denied.append({"serverCommand": list(s.argv)})
    return allowed, denied


def _claude_code(
    servers: Sequence[ApprovedServer], launcher: list[str], lock: str, log: LogPolicy | None
) -> list[PolicyFile]:
    mcp: dict[str, object] = {}
    for s in servers:
        argv = wrapped_argv(s, launcher, lock, log)
        entry: dict[str, object] = {"type": "stdio", "command": argv[0], "args": argv[1:]}
        if s.env:
            entry["env"] = dict(s.env)
        mcp[s.name] = entry
    allowed, denied = _allow_deny(servers, launcher, lock, log)
    settings = {
        "allowManagedMcpServersOnly": True,
        "allowedMcpServers": allowed,
        "deniedMcpServers": denied,
    }
    return [
        PolicyFile("managed-mcp.json", _json({"mcpServers": mcp})),
        PolicyFile("managed-settings.json", _json(settings)),
    ]


def _copilot(
    servers: Sequence[ApprovedServer], launcher: list[str], lock: str, log: LogPolicy | None
) -> list[PolicyFile]:
    allowed, denied = _allow_deny(servers, launcher, lock, log)
    return [
        PolicyFile(
            "managed-settings.json",
            _json({"allowedMcpServers": allowed, "deniedMcpServers": denied}),
        )
    ]


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _toml_str(value: str) -> str:
    # A JSON string is a valid TOML basic string for every character JSON escapes.
    return json.dumps(value, ensure_ascii=False)


def _codex(
    servers: Sequence[ApprovedServer], launcher: list[str], lock: str, log: LogPolicy | None
) -> list[PolicyFile]:
    head = (
        "# Written by toolpin policy codex. Only these MCP servers may run, "
        "each exactly as listed.\n"
    )
    req: list[str] = [head]
    cfg: list[str] = [
        head.replace(
            "Only these MCP servers may run, each exactly as listed.",
            "The approved MCP servers, each behind the toolpin proxy.",
        )
    ]
    for s in servers:
        key = _toml_key(s.name)
        argv = wrapped_argv(s, launcher, lock, log)
        matches = ",\n".join(f'  {{ match = "exact", value = {_toml_str(a)} }}' for a in argv[1:])
        req.append(
            f"\n[mcp_servers.{key}.identity.command]\nexecutable = {_toml_str(argv[0])}\n"
            f"args = [\n{matches},\n]\n"
        )
        args = ", ".join(_toml_str(a) for a in argv[1:])
        lines = [f"\n[mcp_servers.{key}]", f"command = {_toml_str(argv[0])}", f"args = [{args}]"]
        if s.env:
            names = ", ".join(_toml_str(k) for k, _ in s.env)
            lines.append(f"env_vars = [{names}]")
        cfg.append("\n".join(lines) + "\n")
    return [
        PolicyFile("requirements.toml", "".join(req).encode("utf-8")),
        PolicyFile("config.toml", "".join(cfg).encode("utf-8")),
    ]


def _cursor(
    servers: Sequence[ApprovedServer], launcher: list[str], lock: str, log: LogPolicy | None
) -> list[PolicyFile]:
    flags = ["run", "--name", "*", "--lock", lock, "--only-locked", *(log.args() if log else [])]
    wildcard = " ".join([*launcher, *flags, "--", "*"])
    lines = [
        "toolpin policy for Cursor (Team Settings > MCP Configuration, Enterprise plan).",
        "",
        "Paste this one command entry into the allow list:",
        "",
        f"  *{wildcard}",
        *(
            [
                "",
                "and, for the remote servers (toolpin run --url):",
                "",
                "  *" + " ".join([*launcher, *flags, "--url", "*"]),
            ]
            if any(s.kind == "remote" for s in servers)
            else []
        ),
        "",
        "With --only-locked the lock is the approved catalog: the proxy refuses any server",
        f"that {lock} does not list, whatever its name.",
        "",
        "Or, instead, one exact entry per approved server:",
        "",
    ]
    lines.extend("  *" + " ".join(wrapped_argv(s, launcher, lock, log)) for s in servers)
    lines += [
        "",
        'Also turn off "User MCP extensions", so extensions cannot add servers beside the list.',
        "How Cursor matches a command on Windows (npx.cmd, uvx.exe) is not documented: test it.",
    ]
    return [PolicyFile("cursor-dashboard.txt", ("\n".join(lines) + "\n").encode("utf-8"))]


DEPLOY = {
    "claude-code": "Deploy both files to /Library/Application Support/ClaudeCode/ (macOS), "
    "/etc/claude-code/ (Linux, WSL) or C:\\Program Files\\ClaudeCode\\ (Windows); "
    "managed-settings.json can also go through MDM or server-managed settings. "
    "managed-mcp.json is readable by every user: it holds no secret values.",
    "copilot": "Deploy managed-settings.json to /Library/Application Support/GitHubCopilot/ "
    "(macOS), %ProgramFiles%\\GitHubCopilot\\ (Windows) or /etc/github-copilot/ (Linux, "
    "root-owned), or as copilot/managed-settings.json in the enterprise .github-private "
    "repository. The Copilot cloud agent is not covered, and VS Code Agent Host sessions do "
    "not enforce the list. Copilot blocks a command holding an unresolved variable.",
    "codex": "Deploy requirements.toml to /etc/codex/requirements.toml or "
    "%ProgramData%\\OpenAI\\Codex\\requirements.toml (or through the Admin Console, or MDM "
    "keys requirements_toml_base64 / config_toml_base64 of com.openai.codex); config.toml "
    "is the matching server list for users.",
    "cursor": "Paste cursor-dashboard.txt's entry into Cursor's team dashboard.",
}


def write(output: PolicyOutput, out_dir: Path) -> Path:
    """Write one product's files under ``out_dir/<product>/`` (atomically, one by one)."""
    target = out_dir / output.product
    try:
        target.mkdir(parents=True, exist_ok=True)
        for f in output.files:
            atomic_write(target / f.name, f.content)
    except OSError as exc:
        raise ConfigError(f"cannot write to {target} ({exc.strerror or exc})") from None
    return target
