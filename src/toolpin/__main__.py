"""``python -m toolpin``."""

from toolpin.cli import main

if __name__ == "__main__":
    main()
