"""A scripted browser for the OAuth tests (``TOOLPIN_BROWSER``): it opens the
authorization URL, follows the authorization server's redirect to toolpin's loopback
callback, and records each URL it was given in ``argv[1]``."""

from __future__ import annotations

import sys

import httpx2


def main() -> None:
    record, url = sys.argv[1], sys.argv[2]
    with open(record, "a", encoding="utf-8") as handle:
        handle.write(url + "\n")
    with httpx2.Client(follow_redirects=False, trust_env=False, timeout=10) as client:
        answer = client.get(url)
        location = answer.headers["location"]
        client.get(location)  # the loopback redirect: toolpin gets the code


if __name__ == "__main__":
    main()
