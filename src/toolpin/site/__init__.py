"""The static site of the public log (``toolpin log site``).

Modules: :mod:`.render` (the jinja2 environment every page uses), :mod:`.model` (the
verified log read into per-server histories), :mod:`.changes` (what a change looks like on a
page: labels, word diffs, schema findings, reusing :mod:`toolpin.core.drift`), :mod:`.badge`
(SVG and shields.io endpoint badges from one function), :mod:`.feeds` (Atom and JSON Feed),
:mod:`.api` (the static ``api/v1``), :mod:`.output` (incremental, atomic writes) and
:mod:`.build` (the composition: pages, proofs, the log served beside them, ``_headers``).
"""
