// Command cosigverify is an independent check of a cosigned checkpoint, written from the
// C2SP specifications with Go's reference code only: golang.org/x/mod/sumdb/note opens
// the signed note with the log's key, and crypto/ed25519 checks each witness's
// cosignature/v1 (c2sp.org/tlog-cosignature), which note does not implement. It knows
// nothing of toolpin.
//
// Usage: cosigverify CHECKPOINT_FILE LOG_VKEY [WITNESS_VKEY...]
//
// It prints "ok log <name>" when note.Open accepts the checkpoint with the log key (the
// cosignature lines land in the note's UnverifiedSigs, as lines of unknown keys), then
// "note: <error>" for note.NewVerifier on each witness key (type 0x04 is not a note
// algorithm), then "ok witness <name> <timestamp>" for each witness whose cosignature
// verifies. It exits 1 on the first failure.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", args...)
	os.Exit(1)
}

type witness struct {
	name string
	id   uint32
	key  ed25519.PublicKey
}

func parseWitness(vkey string) witness {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		fail("malformed witness key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 33 || raw[0] != 0x04 {
		fail("not a cosignature/v1 key: %s", parts[0])
	}
	h := sha256.New()
	h.Write([]byte(parts[0] + "\n"))
	h.Write(raw)
	id := binary.BigEndian.Uint32(h.Sum(nil)[:4])
	if hex.EncodeToString(h.Sum(nil)[:4]) != parts[1] {
		fail("witness key id does not match: %s", parts[0])
	}
	return witness{name: parts[0], id: id, key: ed25519.PublicKey(raw[1:])}
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: cosigverify CHECKPOINT_FILE LOG_VKEY [WITNESS_VKEY...]")
	}
	msg, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("read: %v", err)
	}
	logV, err := note.NewVerifier(os.Args[2])
	if err != nil {
		fail("log key: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(logV))
	if err != nil {
		fail("note.Open: %v", err)
	}
	if len(n.Sigs) != 1 || n.Sigs[0].Name != logV.Name() {
		fail("the log's signature was not the verified one")
	}
	fmt.Printf("ok log %s (%d unverified signature lines)\n", logV.Name(), len(n.UnverifiedSigs))
	for _, vkey := range os.Args[3:] {
		if _, err := note.NewVerifier(vkey); err != nil {
			fmt.Printf("note: %v\n", err)
		} else {
			fail("note accepted a cosignature key as a note key")
		}
		w := parseWitness(vkey)
		found := false
		for _, sig := range n.UnverifiedSigs {
			if sig.Name != w.name || sig.Hash != w.id {
				continue
			}
			blob, err := base64.StdEncoding.DecodeString(sig.Base64)
			if err != nil || len(blob) != 4+8+64 {
				fail("malformed cosignature of %s", w.name)
			}
			ts := binary.BigEndian.Uint64(blob[4:12])
			var signed bytes.Buffer
			fmt.Fprintf(&signed, "cosignature/v1\ntime %d\n", ts)
			signed.WriteString(n.Text)
			if !ed25519.Verify(w.key, signed.Bytes(), blob[12:]) {
				fail("cosignature of %s does not verify", w.name)
			}
			fmt.Printf("ok witness %s %d\n", w.name, ts)
			found = true
		}
		if !found {
			fail("no cosignature of %s", w.name)
		}
	}
}
