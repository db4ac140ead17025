"""The pure core: hashing, the snapshot model, schema diff, labels and rendering.

Nothing in this package performs I/O or imports from toolpin's I/O layers.
"""
