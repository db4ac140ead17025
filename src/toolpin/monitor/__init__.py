"""``toolpin log monitor``: follow a published log, prove every step, report what matters.

Public API (see ``docs/monitor.md``)::

    from toolpin.monitor import Watch, monitor

    result = monitor(url, verifier, state_path=p, watch=Watch(servers=frozenset({"x"})),
                     emit=print)
    result.exit_code   # 0 nothing to report, 1 reported entries, 3 an inconsistency

Modules: :mod:`.follow` (one pass), :mod:`.state` (the state file), :mod:`.source` (a URL
or a folder behind the evidence fetcher), :mod:`.report` (text lines and the Atom feed).
Imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolpin.monitor.follow import PassResult, Watch, default_state, monitor

_EXPORTS = {
    "PassResult": "toolpin.monitor.follow",
    "Watch": "toolpin.monitor.follow",
    "default_state": "toolpin.monitor.follow",
    "monitor": "toolpin.monitor.follow",
}

__all__ = ["PassResult", "Watch", "default_state", "monitor"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolpin.monitor' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
