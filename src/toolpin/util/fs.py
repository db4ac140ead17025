"""Filesystem helpers shared by every I/O layer: where toolpin keeps its state,
atomic writes and cross-process locks.

Atomic write = a temporary file in the same directory, written, flushed and fsynced,
then ``os.replace`` over the target and an fsync of the directory, so a reader sees
either the old file or the new one, never a mixture, even after SIGKILL or power loss.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from toolpin.errors import StoreError

ENV_HOME = "TOOLPIN_HOME"


def toolpin_home() -> Path:
    """The per-user state directory: ``$TOOLPIN_HOME`` or the platform's user data dir."""
    override = os.environ.get(ENV_HOME)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("toolpin", appauthor=False))


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it 0700 on POSIX."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
    return path


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (temp file + fsync + rename).

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
            handle.write(data)
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
