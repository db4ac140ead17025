// Checks, in this browser, that the server's latest entry is in the log, and that the log
// only grew since:
// 1. the entry's inclusion proof (proof/<index>.tlog-proof, issued once against the
//    checkpoint current when the entry was first published): its checkpoint's Ed25519
//    signature against the key printed on the page (WebCrypto), and the RFC 9162
//    inclusion proof of the entry (from its entry bundle) to that checkpoint's root;
// 2. the current checkpoint's signature, and that it is consistent with the proof's:
//    both roots computed from the same tiles (C2SP tlog-tiles), so the older tree is a
//    prefix of the current one;
// 3. the entry names this server and the surface digest shown on the page.
// Only same-origin requests; no inline script; the page works without it.
"use strict";
(function () {
  var section = document.getElementById("verify");
  var status = document.getElementById("verify-status");
  var keyEl = document.getElementById("log-vkey");
  if (!section || !status || !keyEl || !window.crypto || !crypto.subtle) return;
  var root = section.getAttribute("data-root") || "/";
  var index = Number(section.getAttribute("data-index"));
  var serverId = section.getAttribute("data-id");
  var surface = section.getAttribute("data-surface");
  var enc = new TextEncoder();
  var WIDTH = 256;

  function say(ok, text) {
    status.textContent = text;
    status.className = ok ? "ok" : "bad";
  }
  function fail(text) { throw new Error(text); }
  function b64(text) {
    var bin = atob(text);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function concat(parts) {
    var length = 0;
    parts.forEach(function (p) { length += p.length; });
    var out = new Uint8Array(length);
    var at = 0;
    parts.forEach(function (p) { out.set(p, at); at += p.length; });
    return out;
  }
  function sha256(parts) {
    return crypto.subtle.digest("SHA-256", concat(parts)).then(function (d) {
      return new Uint8Array(d);
    });
  }
  function hex(bytes) {
    return Array.prototype.map.call(bytes, function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }
  function equal(a, b) {
    if (a.length !== b.length) return false;
    for (var i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  function fetchBytes(rel) {
    return fetch(root + rel, { cache: "no-cache", credentials: "omit", redirect: "error" })
      .then(function (r) {
        if (!r.ok) fail(rel + " could not be read (HTTP " + r.status + ")");
        return r.arrayBuffer();
      })
      .then(function (b) { return new Uint8Array(b); });
  }
  function formatIndex(n) {
    var groups = [("00" + (n % 1000)).slice(-3)];
    n = Math.floor(n / 1000);
    while (n > 0) {
      groups.unshift("x" + ("00" + (n % 1000)).slice(-3));
      n = Math.floor(n / 1000);
    }
    return groups.join("/");
  }
  function suffix(width) { return width === WIDTH ? "" : ".p/" + width; }
  function pow2(k) { return Math.pow(2, k); }

  async function run() {
    var vkey = keyEl.textContent.trim();
    var first = vkey.indexOf("+");
    var second = vkey.indexOf("+", first + 1);
    if (first < 1 || second < 0) fail("the key on this page is malformed");
    var parts = [vkey.slice(0, first), vkey.slice(first + 1, second), vkey.slice(second + 1)];
    var name = parts[0];
    var typed = b64(parts[2]);
    if (typed.length !== 33 || typed[0] !== 1) fail("the key on this page is not an Ed25519 key");
    var keyId = (await sha256([enc.encode(name), new Uint8Array([0x0a]), typed])).slice(0, 4);
    if (hex(keyId) !== parts[1]) fail("the key on this page has a wrong key id");
    var key = await crypto.subtle.importKey("raw", typed.slice(1), { name: "Ed25519" }, false, ["verify"]);

    async function openNote(note, what) {
      var sep = note.indexOf("\n\n");
      if (sep < 0) fail(what + " is not a signed note");
      var body = note.slice(0, sep + 1);
      var signed = false;
      var lines = note.slice(sep + 2).split("\n");
      for (var i = 0; i < lines.length && !signed; i++) {
        var prefix = "\u2014 " + name + " ";
        if (lines[i].indexOf(prefix) !== 0) continue;
        var sig = b64(lines[i].slice(prefix.length));
        if (sig.length !== 68 || !equal(sig.slice(0, 4), keyId)) continue;
        signed = await crypto.subtle.verify({ name: "Ed25519" }, key, sig.slice(4), enc.encode(body));
      }
      if (!signed) fail(what + " is not signed by the key on this page");
      var head = body.split("\n");
      if (head[0] !== name) fail(what + " is for another log");
      if (!/^(0|[1-9][0-9]{0,15})$/.test(head[1])) fail(what + "'s size is malformed");
      var treeRoot = b64(head[2]);
      if (treeRoot.length !== 32) fail(what + "'s root is malformed");
      return { size: Number(head[1]), root: treeRoot };
    }
    var utf8 = new TextDecoder("utf-8", { fatal: true });
    var note = utf8.decode(await fetchBytes("checkpoint"));
    var current = await openNote(note, "the checkpoint");
    var size = current.size;
    var rootHash = current.root;
    if (!(index >= 0 && index < size)) fail("the entry is beyond the checkpoint");

    var proofText = utf8.decode(await fetchBytes("proof/" + index + ".tlog-proof"));
    var cut = proofText.indexOf("\n\n");
    if (cut < 0) fail("the proof is malformed");
    var proofLines = proofText.slice(0, cut).split("\n");
    if (proofLines[0] !== "c2sp.org/tlog-proof@v1") fail("the proof is not a tlog-proof");
    var at = 1;
    while (at < proofLines.length && proofLines[at].indexOf("extra ") === 0) at++;
    if (proofLines[at] !== "index " + index) fail("the proof is for another entry");
    var path = proofLines.slice(at + 1).map(function (line) {
      var h = b64(line);
      if (h.length !== 32) fail("a proof hash is malformed");
      return h;
    });
    if (path.length > 63) fail("the proof is too long");
    var proven = await openNote(proofText.slice(cut + 2), "the proof's checkpoint");
    if (!(index < proven.size)) fail("the entry is beyond the proof's checkpoint");
    if (proven.size > size) fail("the proof's checkpoint is newer than the current one");

    var bundleIndex = Math.floor(index / WIDTH);
    var bundleWidth = bundleIndex < Math.floor(size / WIDTH) ? WIDTH : size % WIDTH;
    var bundle = await fetchBytes("tile/entries/" + formatIndex(bundleIndex) + suffix(bundleWidth));
    var at = 0;
    var entry = null;
    for (var n = 0; n <= index % WIDTH; n++) {
      if (at + 2 > bundle.length) fail("the entry bundle is truncated");
      var length = (bundle[at] << 8) | bundle[at + 1];
      if (at + 2 + length > bundle.length) fail("the entry bundle is truncated");
      if (n === index % WIDTH) entry = bundle.slice(at + 2, at + 2 + length);
      at += 2 + length;
    }
    var record = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(entry));
    if (!record.server || record.server.id !== serverId) fail("the entry is not this server's");
    if (!record.digests || record.digests.surface !== surface) fail("the entry's digest is not the one on this page");
    var leaf = await sha256([new Uint8Array([0]), entry]);

    var tiles = {};
    function tile(level, number, width) {
      var rel = "tile/" + level + "/" + formatIndex(number) + suffix(width);
      if (!tiles[rel]) tiles[rel] = fetchBytes(rel).then(function (data) {
        if (data.length !== 32 * width) fail(rel + " has the wrong length");
        return data;
      });
      return tiles[rel];
    }
    async function node(level, number) {
      var tileLevel = Math.floor(level / 8);
      var height = level % 8;
      var first = number * pow2(height);
      var tileNumber = Math.floor(first / WIDTH);
      var offset = first % WIDTH;
      var count = Math.floor(size / pow2(8 * tileLevel));
      var width = tileNumber < Math.floor(count / WIDTH) ? WIDTH : count % WIDTH;
      if (offset + pow2(height) > width) fail("a subtree is outside the tree");
      var data = await tile(tileLevel, tileNumber, width);
      var hashes = [];
      for (var k = 0; k < pow2(height); k++) hashes.push(data.slice((offset + k) * 32, (offset + k + 1) * 32));
      while (hashes.length > 1) {
        var up = [];
        for (var j = 0; j < hashes.length; j += 2) up.push(await sha256([new Uint8Array([1]), hashes[j], hashes[j + 1]]));
        hashes = up;
      }
      return hashes[0];
    }
    async function subtree(start, end) {
      var count = end - start;
      var level = Math.log2(count);
      var perfect = Number.isInteger(level) && start % count === 0;
      if (perfect) return node(level, start / count);
      var k = 1;
      while (k * 2 < count) k *= 2;
      var left = await subtree(start, start + k);
      var right = await subtree(start + k, end);
      return sha256([new Uint8Array([1]), left, right]);
    }
    // RFC 9162 section 2.1.3.2: the root the inclusion proof leads to.
    var fn = index;
    var sn = proven.size - 1;
    var r = leaf;
    for (var p = 0; p < path.length; p++) {
      if (sn === 0) fail("the inclusion proof is too long");
      if (fn % 2 === 1 || fn === sn) {
        r = await sha256([new Uint8Array([1]), path[p], r]);
        while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      } else {
        r = await sha256([new Uint8Array([1]), r, path[p]]);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    if (sn !== 0 || !equal(r, proven.root)) fail("the inclusion proof does not lead to its checkpoint's root");
    if (!equal(await subtree(0, size), rootHash)) fail("the tiles do not lead to the checkpoint's root");
    if (!equal(await subtree(0, proven.size), proven.root)) {
      fail("checkpoint " + proven.size + " is not consistent with the current checkpoint " + size);
    }
    var witnessed = document.querySelector("script[data-policy]"); // built with a policy
    if (witnessed && !window.toolpinWitnessed) fail("the witness check did not load");
    if (witnessed) { // witness.js: the current checkpoint
      await window.toolpinWitnessed(note, { b64: b64, hex: hex, concat: concat });
    }
    var by = ", signed by " + name + (witnessed ? " and cosigned by its witness quorum." : ".");
    if (proven.size === size) {
      say(true, "Entry " + index + " verified against checkpoint " + size + " (the current one)" + by);
    } else {
      say(true, "Entry " + index + " verified against checkpoint " + proven.size +
        ", consistent with the current checkpoint " + size + by);
    }
  }
  status.textContent = "Checking entry " + index + " against the signed checkpoint…";
  run().catch(function (error) {
    say(false, "Entry " + index + " does not verify: " + (error && error.message ? error.message : "error"));
  });
})();
