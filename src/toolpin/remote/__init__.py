"""Remote MCP servers: the HTTP transports, OAuth, the gateway and their start-up.

The check itself is the stdio proxy's (:mod:`toolpin.proxy`); this package only supplies
the server side of the channel (HTTP in place of a child process).
"""
