"""The one exception family toolpin raises on purpose.

Every error a user can cause derives from :class:`ToolpinError`. The command line
catches it once, prints ``toolpin: <message>`` (one line, plus optional advice) and
exits with :attr:`ToolpinError.exit_code`. Anything else escaping is a bug.

Tree::

    ToolpinError                 exit 2 unless stated
    ├── InputError               unusable input: unreadable file, invalid JSON, bad shape
    │   ├── JSONError            not strict JSON (repeated member name, NaN, bad UTF-8, ...)
    │   ├── ListingError         JSON, but not a usable MCP listing
    │   └── LockfileError        a lock that cannot be read or does not match its own hashes
    ├── StoreError               the local pin store is unreadable or corrupt (fail closed)
    │   └── StoreWriteError      the store was read but refused a write (read-only, full, ...)
    │       └── AuditChainBroken the audit log's chain is broken: nothing extends it
    ├── ConfigError              an MCP client config that cannot be read or edited
    ├── PackageError             a package spec that cannot be pinned or resolved
    ├── ProbeError               a server that could not be started or listed
    └── LogError                 the public log is unusable (bad key, bad tile, ...)
"""

from __future__ import annotations


class ToolpinError(Exception):
    """Base of every error toolpin raises on purpose.

    ``message`` is one line, safe to print: it never contains text a server sent.
    ``advice`` is an optional second line telling the user what to do.
    """

    exit_code: int = 2

    def __init__(self, message: str, *, advice: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.advice = advice

    def diagnostics(self) -> str:
        """The message and advice as printed by the command line."""
        if self.advice:
            return f"{self.message}\n{self.advice}"
        return self.message


class InputError(ToolpinError):
    """Input that cannot be used: the command stops with exit code 2."""


class JSONError(InputError):
    """Bytes that are not strict JSON (I-JSON plus JavaScript number semantics)."""


class ListingError(InputError):
    """Valid JSON that is not a usable MCP listing or export."""


class LockfileError(InputError):
    """A lockfile that cannot be read, has an unknown format or fails its own hashes."""


class StoreError(ToolpinError):
    """The local pin store cannot be read or written; toolpin fails closed."""


class StoreWriteError(StoreError):
    """The store could be read but refused a write: a read-only file system, a folder
    without write permission, a full disk, or an audit log whose chain is broken (toolpin
    will not extend it). What was read stays valid, so a change detected against the pin
    is still reported as a change; only recording it failed."""


class AuditChainBroken(StoreWriteError):
    """The audit log's hash chain does not verify (a hand-edited or damaged line), so
    toolpin refuses every write that would extend it until ``toolpin verify --repair``."""


class ConfigError(ToolpinError):
    """An MCP client configuration that cannot be read or safely edited."""


class PackageError(ToolpinError):
    """A package spec that cannot be pinned, or a registry that cannot resolve it."""


class ProbeError(ToolpinError):
    """A server that could not be started, or did not list its definitions."""


class LogError(ToolpinError):
    """The public log or one of its keys is unusable."""
