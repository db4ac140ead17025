"""The site's in-browser check with a witness policy (``static/witness.js``), in real
Chromium: a page built with a policy says "verified" only when the checkpoint it fetches
carries the policy's quorum of cosignatures; without a policy nothing changes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from site_helpers import NOW, serve

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "monitor"))

from monitor_helpers import cosign_file, policy_text, two_servers

from toolpin.publog.cosignature import WitnessSigner
from toolpin.publog.note import Verifier
from toolpin.publog.policy import PolicyError, parse_policy
from toolpin.site.build import build_site, parse_now


@pytest.fixture
def site_url(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder served on 127.0.0.1 (a test builds its site there)."""
    folder = tmp_path / "www"
    folder.mkdir()
    server, url = serve(folder)
    yield folder, url
    server.shutdown()
    server.server_close()


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
    tmp_path: Path, site_url: tuple[Path, str], browser: Any
) -> None:
    www, url = site_url
    w = two_servers(tmp_path / "log")
    a, b = WitnessSigner.generate("wa.example"), WitnessSigner.generate("wb.example")
    policy = parse_policy(policy_text(w.vkey, {"a": a, "b": b}, "2"))
    vkey = Verifier.from_text(w.vkey)
    with pytest.raises(PolicyError, match="needs 2 of 2"):  # the build refuses it first
        build_site(w.path, vkey, tmp_path / "refused", now=parse_now(NOW), policy=policy)
    bare = (w.path / "checkpoint").read_text()
    cosign_file(w.path / "checkpoint", a, b)
    build_site(w.path, vkey, www / "site", base_url="/site/", now=parse_now(NOW), policy=policy)
    files_id = next(sid for sid, index in w.last.items() if index == 1)
    page = f"{url}site/servers/{files_id}.html"
    checkpoint = www / "site" / "checkpoint"
    verdict, text, errors = _verdict(browser, page)
    assert (verdict, errors) == ("ok", []), text
    assert text.endswith("and cosigned by its witness quorum.")

    checkpoint.write_text(bare)  # the log's signature only
    verdict, text, _ = _verdict(browser, page)
    assert verdict == "bad" and "lacks the witness quorum" in text
    assert "no witness cosigned it" in text

    one = bare + a.cosign(bare[: bare.index("\n\n") + 1].encode(), 1_790_000_000)
    checkpoint.write_text(one)
    verdict, text, _ = _verdict(browser, page)
    assert verdict == "bad" and "(cosigned by a)" in text

    forged = bare + b.cosign(b"other.example/log\n1\n" + b"A" * 43 + b"=\n", 1)
    checkpoint.write_text(one + forged[len(bare) :])
    verdict, text, _ = _verdict(browser, page)
    assert verdict == "bad" and "the cosignature of b does not verify" in text


def test_without_a_policy_the_page_is_unchanged(
    tmp_path: Path, site_url: tuple[Path, str], browser: Any
) -> None:
    www, url = site_url
    w = two_servers(tmp_path / "log")
    build_site(
        w.path, Verifier.from_text(w.vkey), www / "site", base_url="/site/", now=parse_now(NOW)
    )
    files_id = next(sid for sid, index in w.last.items() if index == 1)
    html = (www / "site" / "servers" / f"{files_id}.html").read_text()
    assert "witness.js" not in html and "data-policy" not in html
    verdict, text, errors = _verdict(browser, f"{url}site/servers/{files_id}.html")
    assert (verdict, errors) == ("ok", []) and text.endswith(
        f"signed by {Verifier.from_text(w.vkey).name}."
    )
