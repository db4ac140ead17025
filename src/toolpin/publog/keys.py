"""The log's Ed25519 signing key: generate it into a private file, load it for signing.

The signer key text is Go's ``note`` format (``PRIVATE+KEY+<name>+<id>+<base64>``); the key
is named after the log origin. It is only ever read from a file or from the environment
variable :data:`ENV_LOG_KEY`, and :func:`generate_key` refuses to write it into a log
directory (one holding a ``checkpoint`` or ``tile/``), where it would be published.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from toolpin.errors import LogError
from toolpin.publog.note import NoteError, Signer, valid_key_name
from toolpin.util.fs import fsync_dir

ENV_LOG_KEY = "TOOLPIN_LOG_KEY"

__all__ = [
    "ENV_LOG_KEY",
    "generate_key",
    "load_signer",
    "looks_like_log_dir",
    "read_key_text",
    "require_key_name",
    "write_private_key",
]


def looks_like_log_dir(directory: Path) -> bool:
    return (directory / "checkpoint").exists() or (directory / "tile").is_dir()


def require_key_name(name: str, what: str, example: str) -> None:
    """Refuse ``name`` as a key name (``what``: "the origin", "the witness name") unless
    it is non-empty, without spaces or '+'; ``example`` is the advice's schemeless URL."""
    if not valid_key_name(name):
        raise LogError(
            f"{what} must be non-empty, without spaces or '+'",
            advice=f"Use a schemeless URL such as {example}.",
        )


def generate_key(origin: str, path: str | Path) -> str:
    """Write a new signer key for log ``origin`` to ``path`` (mode 0600) and return the
    verifier key text. Refuses to overwrite an existing file or to write into a log dir."""
    require_key_name(origin, "the origin", "example.com/mcp-log")
    signer = Signer.generate(origin)
    write_private_key(path, signer.text)
    return signer.verifier.text


def write_private_key(path: str | Path, text: str) -> None:
    """Write the secret key ``text`` to a new file ``path`` (mode 0600, in a 0700 folder
    if it has to be made). Refuses to overwrite a file or to write inside a log directory."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    existing = next((p for p in (directory, *directory.absolute().parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise LogError(f"{existing} is not a directory")
    if looks_like_log_dir(directory) or any(
        looks_like_log_dir(p) for p in directory.absolute().parents if p.is_dir()
    ):
        raise LogError(
            f"refusing to write a private key inside a log directory ({directory})",
            advice="Keep the key outside anything that gets published.",
        )
    if not directory.is_dir():
        try:  # a new folder for the key: private, like the key itself
            directory.mkdir(mode=0o700, parents=True)
        except OSError as exc:
            raise LogError(f"cannot create {directory}: {exc.strerror or exc}") from None
    if target.exists() or target.is_symlink():
        raise LogError(f"{target} already exists; refusing to overwrite a key")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            if os.name == "posix":
                os.fchmod(handle.fileno(), 0o600)
            handle.write((text + "\n").encode("ascii"))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, target)  # fails if the target appeared meanwhile: never overwrites
        except FileExistsError:
            raise LogError(f"{target} already exists; refusing to overwrite a key") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    fsync_dir(directory)


def load_signer(path: str | Path | None = None, *, env: Mapping[str, str] | None = None) -> Signer:
    """The signer from key file ``path``, else from ``$TOOLPIN_LOG_KEY`` (the key text)."""
    environ = os.environ if env is None else env
    if path is not None:
        text = read_key_text(path)
        source = f"the key file {path}"
    elif environ.get(ENV_LOG_KEY):
        text = environ[ENV_LOG_KEY]
        source = f"${ENV_LOG_KEY}"
    else:
        raise LogError(
            "no log signing key",
            advice=f"Pass --key KEYFILE or set {ENV_LOG_KEY} to the key text.",
        )
    try:
        return Signer.from_text(text)
    except NoteError as exc:
        raise LogError(f"{source} is not a usable signer key: {exc.message}") from None


def read_key_text(path: str | Path) -> str:
    """The text of a private key file (ASCII, at most 64 KiB), for a key parser."""
    from toolpin.util.fs import read_input

    data = read_input(
        path,
        what=f"the key file {path}",
        cap=64 * 1024,
        error=LogError,
        missing=f"the key file {path} does not exist",
    )
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise LogError(f"the key file {path} cannot be read (not ASCII text)") from None
