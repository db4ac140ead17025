"""The static site of the public log."""
