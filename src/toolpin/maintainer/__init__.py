"""For a server's own maintainer: a baseline of its definitions kept in its repository.

* :mod:`~toolpin.maintainer.baseline` — ``toolpin snapshot`` (start the server from the
  working tree with the lock's probe, write the baseline) and ``snapshot --check``
  (compare the live server with the committed baseline);
* :mod:`~toolpin.maintainer.github` — the one pull-request comment the Action keeps up
  to date (found by a hidden marker, edited in place).
"""
