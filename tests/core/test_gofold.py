"""core/gofold.py against Go's own ``unicode`` package, over every code point.

Go's ``encoding/json`` matches member names to struct fields with
``unicode.ToUpper(unicode.ToLower(r))`` per rune (Go 1.21 and newer) or with
``bytes.EqualFold``, i.e. ``unicode.SimpleFold`` orbits (Go 1.20 and older). A small Go
program prints both for every rune that either changes; the Python folds must agree
wherever both Unicode versions know the character.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

from toolpin.core.gofold import fold_keys, same_field

_PROGRAM = r"""
package main

import (
	"bufio"
	"fmt"
	"os"
	"unicode"
)

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		folded := unicode.ToUpper(unicode.ToLower(r))
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < least {
				least = f
			}
		}
		if folded != r || least != r {
			graphic := 0
			if unicode.IsGraphic(r) {
				graphic = 1
			}
			fmt.Fprintf(out, "%d %d %d %d\n", r, folded, least, graphic)
		}
	}
}
"""


def _go_table(tmp: Path) -> list[tuple[int, int, int, bool]]:
    go = shutil.which("go")
    if go is None:
        if os.environ.get("TOOLPIN_REQUIRE_GO"):
            pytest.fail("Go is required here (TOOLPIN_REQUIRE_GO) but `go` is not on PATH")
        pytest.skip("Go is not installed")
    source = tmp / "fold.go"
    source.write_text(_PROGRAM)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "off"}
    run = subprocess.run(
        [go, "run", str(source)], capture_output=True, text=True, env=env, timeout=600
    )
    assert run.returncode == 0, run.stderr
    rows = []
    for line in run.stdout.splitlines():
        r, folded, least, graphic = (int(x) for x in line.split())
        rows.append((r, folded, least, graphic == 1))
    return rows


def _known(code: int) -> bool:
    return unicodedata.category(chr(code)) != "Cn"


def test_folds_agree_with_go(tmp_path: Path) -> None:
    rows = _go_table(tmp_path)
    assert len(rows) > 1400  # the table is real: Unicode has well over a thousand cased runes
    changed = {r for r, _, _, _ in rows}
    go121: dict[int, int] = {}
    least: dict[int, int] = {}
    for r, folded, low, graphic in rows:
        if graphic and _known(r) and _known(folded) and _known(low):
            go121[r] = folded
            least[r] = low
    # Go 1.21+: one rune to one rune, exactly.
    mismatches = [hex(r) for r, f in go121.items() if fold_keys(chr(r))[0] != fold_keys(chr(f))[0]]
    mismatches += [hex(r) for r in go121 if len(fold_keys(chr(r))[0]) != 1]
    assert mismatches == []
    # Go 1.20 and older: the orbits are the classes of the orbit key.
    by_key: dict[str, set[int]] = {}
    for r, low in least.items():
        by_key.setdefault(fold_keys(chr(r))[1], set()).add(low)
        by_key.setdefault(fold_keys(chr(low))[1], set()).add(low)
    assert [k for k, lows in by_key.items() if len(lows) != 1] == []
    # A rune Go leaves alone is left alone here too (where both know it).
    for code in range(0x80, 0x3000):
        char = chr(code)
        if code in changed or not _known(code) or not char.isprintable():
            continue
        if fold_keys(char)[0] != char:  # Python knows a mapping Go lacks
            assert unicodedata.category(char) in ("Lu", "Ll", "Lt"), hex(code)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("name", "Name", True),
        ("name", "NAME", True),
        ("kind", "\u212aind", True),  # the Kelvin sign folds with k
        ("inputSchema", "inputſchema", True),  # long s folds with s
        ("title", "t\u0131tle", True),  # dotless i: ToUpper(ToLower) is I (Go 1.21+)
        ("strasse", "straße", False),  # no Go version folds ß to ss
        ("straße", "STRASSE", False),
        ("\u00df", "\u1e9e", True),  # ß and capital sharp s
        ("id", "ld", False),
        ("mm", "Mm", True),
    ],
)
def test_same_field(a: str, b: str, same: bool) -> None:
    assert same_field(a, b) is same
    assert same_field(b, a) is same
