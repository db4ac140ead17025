"""A ``toolpin check`` answered from this machine's record of verified results, at the
cost of start-up.

After a full check finds an export unchanged, :mod:`toolpin.offline.check` remembers the
verdict under a key over the exact bytes of both files (its docstring says why that is
sound). The command line then also stores what it printed for that verdict, once per
output form (text, coloured text, JSON), beside the verdict. A later plain ``check`` of
the very same bytes in the same form replays that output without importing the checker:
this module reads both files, hashes them, and looks the key up; it imports nothing but
``os`` and ``sys`` (and the SHA-256 function) on that path.

Anything unusual returns None and the normal path runs, with its own messages: standard
input, a file that is not a regular file or is over the input limit, no record, a record
that does not read back, a verdict record that is not the very one the output was printed
for (each output record holds the SHA-256 of its verdict record's bytes), or a record
directory that is not this user's alone.
"""

from __future__ import annotations

import os
import stat
import sys

from toolpin.util.home import known_home
from toolpin.util.private import private_dir

TYPE_CHECKING = False  # typing is not imported on the start path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

CACHE_FORMAT = 1
_MAX_INPUT = 64 * 1024 * 1024  # toolpin.util.fs.MAX_INPUT_BYTES
_MAGIC = b"toolpin-check-output 1\n"
OUTPUT_FORMS = ("text", "color", "json")


_BUILTIN_UP_TO = 256 * 1024
"""Below this many bytes to hash, the interpreter's own SHA-256 is the cheaper one: it
loads in about 0.5 ms where OpenSSL's library takes about 4 ms, and hashes at about
140 MB/s where OpenSSL reaches about 800 MB/s here (they break even near 0.5 MB)."""


def sha256_function(size: int = _BUILTIN_UP_TO) -> Callable[[bytes], Any]:
    """SHA-256 for about ``size`` bytes, without importing :mod:`hashlib` (which sets up
    every algorithm). Both sources compute the same function: the choice is only speed."""
    if size < _BUILTIN_UP_TO and "_hashlib" not in sys.modules:
        name = "_sha2" if sys.version_info >= (3, 12) else "_sha256"
        try:
            builtin: Callable[[bytes], Any] = __import__(name).sha256
        except (ImportError, AttributeError):  # pragma: no cover - built without it
            pass
        else:
            return builtin
    try:
        from _hashlib import openssl_sha256

        return openssl_sha256
    except ImportError:  # pragma: no cover - a Python built without OpenSSL
        from hashlib import sha256

        return sha256


def result_key(raws: Sequence[bytes], lock_digest: bytes, entry_name: str | None) -> str:
    """The record key of a check: toolpin's version, the entry asked for, and the SHA-256
    of the exact lock bytes and of each listing file's bytes."""
    from toolpin import __version__

    sha256 = sha256_function(len(lock_digest) + sum(map(len, raws)))
    digest = sha256(f"toolpin-check {CACHE_FORMAT} {__version__}\n".encode())
    digest.update(f"{entry_name!r}\n".encode())
    digest.update(lock_digest)
    for data in raws:
        digest.update(sha256(data).digest())
    return str(digest.hexdigest())


def cache_dir() -> str:
    """``$TOOLPIN_HOME/cache/check`` (toolpin's per-user state directory)."""
    home = known_home()
    if home is None:
        from toolpin.util.fs import toolpin_home

        home = str(toolpin_home())
    return os.path.join(home, "cache", "check")


def output_path(directory: str, key: str, form: str) -> str:
    """Where the printed output of one verified result is kept, per output form."""
    return os.path.join(directory, f"{key}.{form}.out")


def _read_regular(path: str) -> bytes | None:
    """A regular file's bytes (at most the input limit), or None for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_INPUT:
            return None
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, max(info.st_size - total, 0) + 1)
            if not chunk:
                break
            total += len(chunk)
            if total > _MAX_INPUT:
                return None
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def encode_output(verdict: bytes, stdout: str, stderr: str) -> bytes:
    """A record of what one check printed, tied to the exact bytes of its verdict record."""
    out = stdout.encode("utf-8", "surrogatepass")
    err = stderr.encode("utf-8", "surrogatepass")
    tie = sha256_function(len(verdict))(verdict).hexdigest()
    return _MAGIC + f"{tie}\n{len(err)}\n".encode() + err + out


def _decode_output(record: bytes, verdict: bytes) -> tuple[str, str] | None:
    if not record.startswith(_MAGIC):
        return None
    rest = record[len(_MAGIC) :]
    # the verdict record must still be the very one this output was printed for
    if rest[:65] != sha256_function(len(verdict))(verdict).hexdigest().encode() + b"\n":
        return None
    rest = rest[65:]
    end = rest.find(b"\n")
    size = rest[:end]
    if end < 1 or not size.isdigit():
        return None
    count = int(size)
    body = rest[end + 1 :]
    if count > len(body):
        return None
    try:
        err = body[:count].decode("utf-8", "surrogatepass")
        out = body[count:].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return out, err


def remember_output(key: str, form: str, stdout: str, stderr: str) -> None:
    """Keep what a check printed for a remembered verified result (best effort)."""
    from toolpin.errors import StoreError
    from toolpin.util.fs import atomic_write

    try:
        directory = cache_dir()
        if form not in OUTPUT_FORMS or not private_dir(directory):
            return
        verdict = _read_regular(os.path.join(directory, f"{key}.json"))
        if verdict is None:
            return  # only beside a verdict that is still remembered
        from pathlib import Path

        record = Path(output_path(directory, key, form))
        atomic_write(record, encode_output(verdict, stdout, stderr), mode=0o600)
    except (OSError, StoreError):
        return


def replay(listings: Sequence[str], lock: str, entry: str | None, form: str) -> int | None:
    """Print the remembered output of this exact check and return its exit code (0), or
    None when there is nothing to replay (the caller runs the check)."""
    raws = []
    for path in listings:
        if path == "-":
            return None
        data = _read_regular(path)
        if data is None:
            return None
        raws.append(data)
    lock_data = _read_regular(lock)
    if lock_data is None:
        return None
    try:
        directory = cache_dir()
    except Exception:
        return None
    if not private_dir(directory):
        return None
    total = len(lock_data) + sum(map(len, raws))
    key = result_key(raws, sha256_function(total)(lock_data).digest(), entry)
    record = _read_regular(output_path(directory, key, form))
    verdict = _read_regular(os.path.join(directory, f"{key}.json"))
    decoded = None if record is None or verdict is None else _decode_output(record, verdict)
    if decoded is None:
        return None
    out, err = decoded
    sys.stdout.write(out)
    sys.stdout.flush()
    if err:
        sys.stderr.write(err)
    return 0
