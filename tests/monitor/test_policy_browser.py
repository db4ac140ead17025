"""The site's in-browser check with a witness policy (``static/witness.js``), in real
Chromium: a page built with a policy says "verified" only when the checkpoint it fetches
carries the policy's quorum of cosignatures; without a policy nothing changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evidence_helpers import Served, replace_file
from monitor_helpers import cosign_file, policy_text, two_servers
from site_helpers import NOW

from toolpin.publog.cosignature import WitnessSigner
from toolpin.publog.note import Verifier
from toolpin.publog.policy import PolicyError, parse_policy
from toolpin.site.build import build_site, parse_now

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: apt-get install -y chromium (.ci/run does this)")
    from tests.pages import chromium

    with chromium() as browser:
        yield browser


def _verdict(browser: Any, url: str) -> tuple[str, str, list[str]]:
    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url, wait_until="load", timeout=20_000)
        for _ in range(200):
            verdict = page.get_attribute("#verify-status", "class")
            if verdict:
                return verdict, page.text_content("#verify-status") or "", errors
            page.wait_for_timeout(100)
        raise AssertionError("no verdict within 20 s")
    finally:
        context.close()


def test_a_page_built_with_a_policy_refuses_a_checkpoint_without_the_quorum(
    tmp_path: Path, served: Served, browser: Any
) -> None:
    w = two_servers(tmp_path / "log")
    a, b = WitnessSigner.generate("wa.example"), WitnessSigner.generate("wb.example")
    policy = parse_policy(policy_text(w.vkey, {"a": a, "b": b}, "2"))
    vkey = Verifier.from_text(w.vkey)
    with pytest.raises(PolicyError, match="needs 2 of 2"):  # the build refuses it first
        build_site(w.path, vkey, tmp_path / "refused", now=parse_now(NOW), policy=policy)
    bare = (w.path / "checkpoint").read_text()
    cosign_file(w.path / "checkpoint", a, b)
    build_site(w.path, vkey, tmp_path / "site", now=parse_now(NOW), policy=policy)
    served.show(tmp_path / "site")
    files_id = next(sid for sid, index in w.last.items() if index == 1)
    page = f"{served.url}servers/{files_id}.html"
    verdict, text, errors = _verdict(browser, page)
    assert (verdict, errors) == ("ok", []), text
    assert text.endswith("and cosigned by its witness quorum.")

    replace_file(served.folder / "checkpoint", bare.encode())  # the log's signature only
    verdict, text, _ = _verdict(browser, page)
    assert verdict == "bad" and "lacks the witness quorum" in text
    assert "no witness cosigned it" in text

    one = bare + a.cosign(bare[: bare.index("\n\n") + 1].encode(), 1_790_000_000)
    replace_file(served.folder / "checkpoint", one.encode())
    verdict, text, _ = _verdict(browser, page)
    assert verdict == "bad" and "(cosigned by a)" in text

    forged = bare + b.cosign(b"other.example/log\n1\n" + b"A" * 43 + b"=\n", 1)
    replace_file(served.folder / "checkpoint", (one + forged[len(bare) :]).encode())
    verdict, text, _ = _verdict(browser, page)
    assert verdict == "bad" and "the cosignature of b does not verify" in text


def test_without_a_policy_the_page_is_unchanged(
    tmp_path: Path, served: Served, browser: Any
) -> None:
    w = two_servers(tmp_path / "log")
    build_site(w.path, Verifier.from_text(w.vkey), tmp_path / "site", now=parse_now(NOW))
    files_id = next(sid for sid, index in w.last.items() if index == 1)
    html = (tmp_path / "site" / "servers" / f"{files_id}.html").read_text()
    assert "witness.js" not in html and "data-policy" not in html
    served.show(tmp_path / "site")
    verdict, text, errors = _verdict(browser, f"{served.url}servers/{files_id}.html")
    assert (verdict, errors) == ("ok", []) and text.endswith(
        f"signed by {Verifier.from_text(w.vkey).name}."
    )
