"""Filesystem helpers shared by every I/O layer: where toolpin keeps its state,
the one bounded reader of every file a command takes, atomic writes and cross-process locks.

Atomic write = a temporary file in the same directory, written, flushed and fsynced,
then ``os.replace`` over the target and an fsync of the directory, so a reader sees
either the old file or the new one, never a mixture, even after SIGKILL or power loss.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from toolpin.errors import InputError, StoreError
from toolpin.util.home import ENV_HOME

MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The default cap of :func:`read_input` (the canonical parser's document limit)."""

PIPE_TIMEOUT = 10.0
"""Seconds :func:`read_input` waits on a pipe with nothing arriving before it gives up."""
ENV_PIPE_TIMEOUT = "TOOLPIN_PIPE_TIMEOUT"


def toolpin_home() -> Path:
    """The per-user state directory: ``$TOOLPIN_HOME`` or the platform's user data dir."""
    override = os.environ.get(ENV_HOME)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("toolpin", appauthor=False))


ENV_CACHE = "TOOLPIN_CACHE"


def toolpin_cache() -> Path:
    """The per-user cache directory (what may be deleted at any time: the crawl's package
    caches, the site's build cache, the lookup server's log mirrors).

    ``$TOOLPIN_CACHE``; else ``$TOOLPIN_HOME/cache`` when ``$TOOLPIN_HOME`` is set (so one
    variable keeps a test or a sandbox in one folder); else the platform's user cache dir
    (``~/.cache/toolpin`` on Linux, ``$XDG_CACHE_HOME/toolpin`` when that is set).
    """
    override = os.environ.get(ENV_CACHE)
    if override:
        return Path(override).expanduser()
    home = os.environ.get(ENV_HOME)
    if home:
        return Path(home).expanduser() / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir("toolpin", appauthor=False))


def _size_text(cap: int) -> str:
    if cap % (1024 * 1024) == 0:
        return f"{cap // (1024 * 1024)} MiB"
    return f"{cap} bytes"


def _pipe_timeout() -> float:
    try:
        value = float(os.environ.get(ENV_PIPE_TIMEOUT, ""))
    except ValueError:
        return PIPE_TIMEOUT
    return value if 0 < value <= 3600 else PIPE_TIMEOUT


def read_input(
    name: str | os.PathLike[str],
    *,
    what: str = "",
    cap: int = MAX_INPUT_BYTES,
    error: type[Exception] = InputError,
    missing: str | None = None,
) -> bytes:
    """The bytes of a file a command was given, bounded: at most ``cap`` bytes, then parse.

    ``-`` is standard input. A regular file is read up to ``cap + 1`` bytes (one more
    than allowed, to tell "exactly the cap" from "larger"); a pipe or FIFO
    (``--listing <(cmd)``) is read with the same cap, and gives up with a clear error when
    nothing arrives for :data:`PIPE_TIMEOUT` seconds (a FIFO nobody writes to). Anything
    else (a directory, ``/dev/zero``, a socket) is refused. Every failure raises
    ``error`` (default :class:`InputError`, exit 2) with a one-line message naming the
    file as ``what`` (or its path); ``missing`` overrides the message for a missing file.
    """
    import stat

    label = what or str(name)

    def fail(reason: str) -> Exception:
        return error(f"cannot read {label}: {reason}")

    if str(name) == "-":
        fd, owned = 0, False
    else:
        try:
            fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
        except FileNotFoundError:
            raise (error(missing) if missing else fail("no such file")) from None
        except IsADirectoryError:
            raise fail("it is a directory") from None
        except OSError as exc:
            raise fail(exc.strerror or type(exc).__name__) from None
        owned = True
    try:
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            raise fail(exc.strerror or type(exc).__name__) from None
        if stat.S_ISREG(mode):
            data = _read_regular(fd, cap, fail)
        elif stat.S_ISFIFO(mode) or (not owned and not stat.S_ISDIR(mode)):
            data = _read_pipe(fd, cap, fail)
        elif stat.S_ISDIR(mode):
            raise fail("it is a directory")
        else:
            raise fail("not a regular file (a device or socket); give a file, a pipe or -")
    finally:
        if owned:
            os.close(fd)
    if len(data) > cap:
        raise fail(f"larger than {_size_text(cap)}")
    return data


def _read_regular(fd: int, cap: int, fail: Callable[[str], Exception]) -> bytes:
    chunks: list[bytes] = []
    left = cap + 1
    while left > 0:
        try:
            chunk = os.read(fd, min(left, 1 << 24))
        except OSError as exc:
            raise fail(exc.strerror or type(exc).__name__) from None
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_pipe(fd: int, cap: int, fail: Callable[[str], Exception]) -> bytes:
    import select
    import time

    timeout = _pipe_timeout()
    chunks: list[bytes] = []
    total = 0
    deadline = time.monotonic() + timeout
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while total <= cap:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise fail(f"nothing arrived within {timeout:g} s (a pipe nobody writes to?)")
        if not poller.poll(int(remaining * 1000) + 1):
            continue
        try:
            chunk = os.read(fd, min(cap + 1 - total, 1 << 20))
        except BlockingIOError:
            continue
        except OSError as exc:
            raise fail(exc.strerror or type(exc).__name__) from None
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        deadline = time.monotonic() + timeout
    return b"".join(chunks)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it 0700 on POSIX."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
    return path


def atomic_write(
    path: Path, data: bytes | Iterable[bytes], *, mode: int = 0o644, sync: bool = True
) -> None:
    """Replace ``path`` with ``data`` atomically (temp file + fsync + rename).

    ``data``: the bytes, or an iterable of the pieces to write in order (written as they
    come: a large file need not be in memory whole).

    On any failure the target is untouched and no temporary file is left behind. With
    ``sync=False`` the fsyncs are skipped: a reader still sees the old file or the new one,
    never a mixture, but a power loss may lose the write (for output that can be rebuilt,
    such as the static site, written by the hundred thousand).
    """
    import tempfile

    directory = path.parent
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            if os.name == "posix":
                os.fchmod(handle.fileno(), mode)
            handle.writelines((data,) if isinstance(data, bytes) else data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if sync:
        fsync_dir(directory)


def write_private_json(path: Path, value: object) -> None:
    """Replace ``path`` atomically with ``value`` as sorted, indented JSON, mode 0600 (a
    state file); ``StoreError`` when it cannot be written."""
    import json

    data = json.dumps(value, sort_keys=True, indent=1).encode("utf-8") + b"\n"
    try:
        atomic_write(path, data, mode=0o600)
    except OSError as exc:
        raise StoreError(f"{path} cannot be written ({exc.strerror})") from None


def fsync_dir(directory: Path) -> None:
    """fsync a directory so a rename inside it survives a crash (no-op where unsupported)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(lock_path: Path, *, timeout: float = 10.0) -> Iterator[None]:
    """Hold a cross-process lock on ``lock_path`` (created 0600 if missing).

    On POSIX this is ``fcntl.flock`` directly: the same lock ``filelock`` takes, so the
    two interoperate, without the ~80 ms ``filelock`` spends importing ``asyncio`` (which
    would land on the proxy's first-pin path). Elsewhere it is ``filelock``. Raises
    :class:`StoreError` when the lock cannot be taken within ``timeout`` seconds.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        with _filelock(lock_path, timeout):
            yield
        return
    import time

    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _timed_out(lock_path, timeout) from None
                time.sleep(0.005)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _timed_out(lock_path: Path, timeout: float) -> StoreError:
    return StoreError(
        f"timed out after {timeout:g}s waiting for the lock {lock_path}",
        advice="Another toolpin process holds it; try again.",
    )


@contextlib.contextmanager
def _filelock(lock_path: Path, timeout: float) -> Iterator[None]:  # pragma: no cover
    import filelock

    lock = filelock.FileLock(str(lock_path), timeout=timeout, mode=0o600)
    try:
        with lock:
            yield
    except filelock.Timeout:
        raise _timed_out(lock_path, timeout) from None
