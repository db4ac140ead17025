"""``toolpin lookup``: a read-only MCP server over the public log and the local pin store.

Every answer is closed vocabulary (:mod:`toolpin.lookup.vocab`): names reduced to a safe
character set, dates, counts, hashes, ids and fixed label keys. No text a server wrote
(descriptions, titles, instructions, changed definitions) ever leaves it, because a tool's
output goes straight to the model.

Modules: ``vocab`` (the alphabet and the text rendering), ``history`` (a server's
observations in a verified log), ``source`` (where the log comes from: a directory, or a
URL mirrored under the SSRF guard, each verified like ``toolpin log verify``),
``reviews`` (pending reviews of the local pin store), ``tools`` (the five tools: schemas
and answers) and ``server`` (the MCP SDK server, stdio and Streamable HTTP). The proxy
never imports this package.
"""
