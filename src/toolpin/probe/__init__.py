"""Talking to a live server once: list everything the model would read, call nothing.

* :mod:`~toolpin.probe.conversation` — the one conversation (discover, fall back to
  initialize, collect every listing) over a small transport/channel protocol;
* :mod:`~toolpin.probe.stdio` — its stdio transport (``probe_stdio``);
* :mod:`~toolpin.probe.http` — its Streamable HTTP transport (``probe_http``);
* :mod:`~toolpin.probe.ssrf` — the address guard under the HTTP transport.
"""
