"""Where toolpin's per-user directory is on a typical Linux or BSD machine, found with
``os`` alone: the replayed ``check`` looks for its records there at start, where importing
:mod:`platformdirs` (and the :mod:`pathlib` and :mod:`tempfile` it brings) would cost more
than the replay itself.

:func:`toolpin.util.fs.toolpin_home` stays the authority. This gives its answer in the
plain case (a test compares the two) and no answer where ``platformdirs`` has rules of its
own (another system, an XDG variable, an unusual ``$HOME``): a caller then asks
``toolpin_home()``. A wrong answer could only make a replay miss: the records found here
are trusted only in a directory that is this user's alone
(:func:`toolpin.util.private.private_dir`), as they are in the real one.
"""

from __future__ import annotations

import os
import sys

ENV_HOME = "TOOLPIN_HOME"


def known_home() -> str | None:
    """``$TOOLPIN_HOME``, else ``~/.local/share/toolpin`` for a user with an absolute
    ``$HOME`` and no ``$XDG_DATA_HOME`` on Linux and the BSDs; None wherever
    :mod:`platformdirs` has rules of its own (another system, an XDG variable, a
    relative or missing ``$HOME``)."""
    override = os.environ.get(ENV_HOME)
    if override:
        return os.path.expanduser(override)
    if sys.platform in ("win32", "cygwin", "darwin", "ios", "android"):
        return None
    env = os.environ
    if env.get("XDG_DATA_HOME") or env.get("ANDROID_DATA") or env.get("ANDROID_ROOT"):
        return None
    home = env.get("HOME", "")
    if not home.startswith("/"):
        return None
    return os.path.join(home.rstrip("/") or "/", ".local", "share", "toolpin")
