"""The pure core of toolpin: hashing, parsed definitions, schema diff, labels, rendering.

Nothing under this package does I/O or imports another toolpin layer.
"""
