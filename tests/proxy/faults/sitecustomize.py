"""Fault injection for the proxy's store tests (on ``PYTHONPATH`` only in those tests).

``TOOLPIN_TEST_FAULT=<PinStore method>:<exception>`` makes that method of
``toolpin.pins.store.PinStore`` raise that exception, as a damaged or read-only store
would. Exceptions: ``EACCES``, ``EROFS`` (``OSError``), ``ValueError``, ``RuntimeError``.
"""

import errno
import os

_spec = os.environ.get("TOOLPIN_TEST_FAULT")
if _spec:
    _method, _kind = _spec.split(":")

    def _fault(*_args: object, **_kwargs: object) -> object:
        if _kind == "EACCES":
            raise PermissionError(errno.EACCES, "Permission denied", "/store/pins")
        if _kind == "EROFS":
            raise OSError(errno.EROFS, "Read-only file system", "/store/pins")
        if _kind == "ValueError":
            raise ValueError("invalid literal for int() with base 10: 'x'")
        raise RuntimeError("injected fault")

    from toolpin.pins import store as _store

    setattr(_store.PinStore, _method, _fault)
