// Command tlogverify is an independent check of a log toolpin wrote, with Go's reference
// code only: golang.org/x/mod/sumdb/note (signed notes) and golang.org/x/mod/sumdb/tlog
// (RFC 6962 tree hashes, tiles and proofs). It knows nothing of toolpin.
//
// Usage: tlogverify LOGDIR VKEY [PROOF_FILE...]
//
// It opens LOGDIR/checkpoint with VKEY, reads every entry bundle (C2SP tlog-tiles:
// tile/entries/N[.p/W], 2-byte big-endian length before each entry), recomputes the tree
// hash from the entries, reads the hash tiles through tlog.TileHashReader (which checks
// them against the signed root) with Go's tile paths mapped to C2SP's (tile/8/L/N ->
// tile/L/N), proves every entry's inclusion from the tiles, and checks each PROOF_FILE:
// a C2SP tlog-proof (inclusion, against the entry read from the log) or a toolpin
// consistency proof (both checkpoints opened with VKEY, tlog.CheckTree).
// It prints one "ok ..." line per check and exits 1 on the first failure.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", args...)
	os.Exit(1)
}

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

func openCheckpoint(msg []byte, verifier note.Verifier) checkpoint {
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		fail("checkpoint signature: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		fail("checkpoint body has %d lines", len(lines))
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		fail("checkpoint size %q", lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		fail("checkpoint root %q", lines[2])
	}
	var root tlog.Hash
	copy(root[:], raw)
	if lines[0] != verifier.Name() {
		fail("checkpoint origin %q is not the key's name %q", lines[0], verifier.Name())
	}
	return checkpoint{lines[0], size, root}
}

// c2spIndex is the C2SP tile index: 3-digit groups, all but the last x-prefixed.
func c2spIndex(n int64) string {
	groups := []string{fmt.Sprintf("%03d", n%1000)}
	for n /= 1000; n > 0; n /= 1000 {
		groups = append([]string{fmt.Sprintf("x%03d", n%1000)}, groups...)
	}
	return strings.Join(groups, "/")
}

func readEntries(dir string, size int64) [][]byte {
	var entries [][]byte
	for start := int64(0); start < size; start += 1 << height {
		width := size - start
		if width > 1<<height {
			width = 1 << height
		}
		rel := "tile/entries/" + c2spIndex(start>>height)
		if width < 1<<height {
			rel += fmt.Sprintf(".p/%d", width)
		}
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			fail("entry bundle %s: %v", rel, err)
		}
		for len(data) > 0 {
			if len(data) < 2 {
				fail("entry bundle %s is truncated", rel)
			}
			n := int(binary.BigEndian.Uint16(data))
			if len(data) < 2+n {
				fail("entry bundle %s is truncated", rel)
			}
			entries = append(entries, data[2:2+n])
			data = data[2+n:]
		}
	}
	if int64(len(entries)) != size {
		fail("the bundles hold %d entries, the checkpoint says %d", len(entries), size)
	}
	return entries
}

// tileReader serves Go's tiles from the C2SP layout: tile/8/L/N[.p/W] -> tile/L/N[.p/W].
type tileReader struct{ dir string }

func (r tileReader) Height() int { return height }

func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		goPath := t.Path()
		prefix := fmt.Sprintf("tile/%d/", height)
		if !strings.HasPrefix(goPath, prefix) {
			return nil, fmt.Errorf("unexpected tile path %s", goPath)
		}
		data, err := os.ReadFile(filepath.Join(r.dir, "tile", strings.TrimPrefix(goPath, prefix)))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (r tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

func checkProofFile(path string, verifier note.Verifier, entries [][]byte) {
	text, err := os.ReadFile(path)
	if err != nil {
		fail("proof %s: %v", path, err)
	}
	head, signed, found := bytes.Cut(text, []byte("\n\n"))
	if !found {
		fail("proof %s has no checkpoint", path)
	}
	lines := strings.Split(string(head), "\n")
	var hashes []tlog.Hash
	decode := func(lines []string) {
		for _, line := range lines {
			raw, err := base64.StdEncoding.DecodeString(line)
			if err != nil || len(raw) != tlog.HashSize {
				fail("proof %s: bad hash %q", path, line)
			}
			var h tlog.Hash
			copy(h[:], raw)
			hashes = append(hashes, h)
		}
	}
	switch lines[0] {
	case "c2sp.org/tlog-proof@v1":
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "index ") {
			fail("proof %s has no index line", path)
		}
		index, err := strconv.ParseInt(strings.TrimPrefix(lines[1], "index "), 10, 64)
		if err != nil || index < 0 || index >= int64(len(entries)) {
			fail("proof %s: bad index", path)
		}
		decode(lines[2:])
		cp := openCheckpoint(signed, verifier)
		err = tlog.CheckRecord(hashes, cp.size, cp.root, index, tlog.RecordHash(entries[index]))
		if err != nil {
			fail("inclusion proof %s: %v", path, err)
		}
		fmt.Printf("ok inclusion proof of entry %d at size %d\n", index, cp.size)
	case "toolpin/tlog-consistency-proof@v1":
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "old ") {
			fail("proof %s has no old checkpoint", path)
		}
		oldNote, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(lines[1], "old "))
		if err != nil {
			fail("proof %s: bad old checkpoint", path)
		}
		decode(lines[2:])
		old := openCheckpoint(oldNote, verifier)
		cp := openCheckpoint(signed, verifier)
		if err := tlog.CheckTree(hashes, cp.size, cp.root, old.size, old.root); err != nil {
			fail("consistency proof %s: %v", path, err)
		}
		fmt.Printf("ok consistency proof from size %d to %d\n", old.size, cp.size)
	default:
		fail("proof %s: unknown kind %q", path, lines[0])
	}
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: tlogverify LOGDIR VKEY [PROOF_FILE...]")
		os.Exit(2)
	}
	dir, vkey := os.Args[1], os.Args[2]
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		fail("verifier key: %v", err)
	}
	msg, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		fail("checkpoint: %v", err)
	}
	cp := openCheckpoint(msg, verifier)
	fmt.Printf("ok checkpoint signed by %s: size %d\n", verifier.Name(), cp.size)

	entries := readEntries(dir, cp.size)
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, entry := range entries {
		hashes, err := tlog.StoredHashes(int64(i), entry, reader)
		if err != nil {
			fail("stored hashes of entry %d: %v", i, err)
		}
		stored = append(stored, hashes...)
	}
	root, err := tlog.TreeHash(cp.size, reader)
	if err != nil || root != cp.root {
		fail("the entries' tree hash %v is not the checkpoint's root %v", root, cp.root)
	}
	fmt.Printf("ok tree hash of %d entries matches the root\n", cp.size)

	tiles := tlog.TileHashReader(tlog.Tree{N: cp.size, Hash: cp.root}, tileReader{dir})
	for i, entry := range entries {
		proof, err := tlog.ProveRecord(cp.size, int64(i), tiles)
		if err != nil {
			fail("inclusion proof of entry %d from the tiles: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, cp.size, cp.root, int64(i), tlog.RecordHash(entry)); err != nil {
			fail("entry %d: %v", i, err)
		}
	}
	fmt.Printf("ok every entry is proven from the hash tiles\n")

	for _, path := range os.Args[3:] {
		checkProofFile(path, verifier, entries)
	}
}
