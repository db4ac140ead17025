// With a witness policy (the site was built with `toolpin log site --policy`): checks, in
// this browser, that the signed checkpoint carries the policy's quorum of witness
// cosignatures (C2SP tlog-cosignature, cosignature/v1, Ed25519 with WebCrypto) before
// verify.js may say the entry is verified. The policy is the page's own data-policy
// attribute; a checkpoint without the quorum makes the check fail.
"use strict";
(function () {
  var script = document.currentScript;
  var text = script ? script.getAttribute("data-policy") : null;
  if (!text || !window.crypto || !crypto.subtle) return;
  var enc = new TextEncoder();

  function fail(message) { throw new Error(message); }
  function bigTime(bytes) { // 8 bytes, big-endian, as a decimal string (no precision loss)
    var value = BigInt(0);
    for (var i = 0; i < 8; i++) value = value * BigInt(256) + BigInt(bytes[i]);
    return value.toString();
  }

  // name -> true when that witness's cosignature over the checkpoint body verifies.
  // ``bytes``: verify.js's b64, hex and concat (one copy of each, in verify.js).
  async function cosigned(policy, note, bytes) {
    var b64 = bytes.b64, hex = bytes.hex, concat = bytes.concat;
    var sep = note.indexOf("\n\n");
    if (sep < 0) fail("the checkpoint is not a signed note");
    var body = note.slice(0, sep + 1);
    var lines = note.slice(sep + 2).split("\n");
    var found = {};
    for (var w = 0; w < policy.witnesses.length; w++) {
      var witness = policy.witnesses[w];
      var key = await crypto.subtle.importKey(
        "raw", b64(witness.publicKey), { name: "Ed25519" }, false, ["verify"]);
      var prefix = "\u2014 " + witness.keyName + " ";
      for (var i = 0; i < lines.length; i++) {
        if (lines[i].indexOf(prefix) !== 0) continue;
        var blob = b64(lines[i].slice(prefix.length));
        if (blob.length < 4 || hex(blob.slice(0, 4)) !== witness.keyId) continue;
        if (blob.length !== 76) fail("a cosignature of " + witness.name + " is malformed");
        var message = concat([
          enc.encode("cosignature/v1\ntime " + bigTime(blob.slice(4, 12)) + "\n"),
          enc.encode(body),
        ]);
        var ok = await crypto.subtle.verify({ name: "Ed25519" }, key, blob.slice(12), message);
        if (!ok) fail("the cosignature of " + witness.name + " does not verify");
        found[witness.name] = true;
      }
    }
    return found;
  }

  function satisfied(policy, name, found) {
    var group = null;
    for (var g = 0; g < policy.groups.length; g++) if (policy.groups[g].name === name) group = policy.groups[g];
    if (group === null) return found[name] === true;
    var count = 0;
    group.members.forEach(function (m) { if (satisfied(policy, m, found)) count++; });
    return count >= group.threshold;
  }

  window.toolpinWitnessed = async function (note, bytes) {
    var policy = JSON.parse(text);
    if (policy.quorum === "none") return;
    var found = await cosigned(policy, note, bytes);
    if (!satisfied(policy, policy.quorum, found)) {
      var names = Object.keys(found);
      fail("the checkpoint lacks the witness quorum of this site's policy (" +
        (names.length ? "cosigned by " + names.join(", ") : "no witness cosigned it") + ")");
    }
  };
})();
