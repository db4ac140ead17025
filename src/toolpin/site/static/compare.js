// Compares any two versions of a server in this browser, from the definitions the log
// holds for each (its blobs, same origin). Which definitions differ is decided as toolpin
// decides it: by their hashes. The text of each changed one is diffed for reading (the
// description word by word, the definition line by line); labels and schema classes come
// only from toolpin's own diffs, which are linked, never from this script. Every string
// from a server is shown as text (no HTML is ever parsed) with the characters toolpin
// makes visible written as \u{hex}. Without JavaScript the page lists every version and
// links toolpin's diffs.
"use strict";
(function () {
  var section = document.getElementById("pick");
  var from = document.getElementById("from");
  var to = document.getElementById("to");
  var pair = document.getElementById("pair");
  if (!section || !from || !to || !pair || !window.fetch) return;
  var root = section.getAttribute("data-root") || "/";
  var explained = (section.getAttribute("data-pairs") || "").split(" ").filter(Boolean);
  var kinds = (section.getAttribute("data-kinds") || "").split(" ").filter(Boolean).map(
    function (item) {
      var parts = item.split(":");
      return { member: parts[0], key: parts[1], plural: parts.slice(2).join(":").replace(/_/g, " ") };
    }
  );
  var unsafe = (section.getAttribute("data-unsafe") || "").split(" ").filter(Boolean).map(
    function (item) {
      var parts = item.split("-");
      return [parseInt(parts[0], 16), parseInt(parts[parts.length - 1], 16)];
    }
  );
  var MAX_TOKENS = 4000;
  var MAX_EDITS = 1500;
  var blobs = {};

  // ---- text as toolpin shows it -------------------------------------------------------

  function isUnsafe(code, multiline) {
    if (code === 0x09 || code === 0x0d) return true;
    if (code === 0x0a) return !multiline;
    for (var i = 0; i < unsafe.length; i++) {
      if (code >= unsafe[i][0] && code <= unsafe[i][1]) return true;
    }
    return false;
  }

  function visible(text, multiline) {
    var out = "";
    for (var i = 0; i < text.length; i++) {
      var code = text.codePointAt(i);
      if (code > 0xffff) i++;
      out += isUnsafe(code, multiline) ? "\\u{" + code.toString(16) + "}" : String.fromCodePoint(code);
    }
    return out;
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // ---- a shortest edit script (Myers) -------------------------------------------------

  function diff(a, b) {
    var n = a.length, m = b.length, max = n + m, off = max + 1;
    var v = new Int32Array(2 * max + 3);
    var trace = [];
    for (var d = 0; d <= Math.min(max, MAX_EDITS); d++) {
      trace.push(v.slice());
      for (var k = -d; k <= d; k += 2) {
        var x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])
          ? v[off + k + 1]
          : v[off + k - 1] + 1;
        var y = x - k;
        while (x < n && y < m && a[x] === b[y]) { x++; y++; }
        v[off + k] = x;
        if (x >= n && y >= m) return backtrack(trace, a, b, off);
      }
    }
    return null; // too different to diff here
  }

  function backtrack(trace, a, b, off) {
    var x = a.length, y = b.length, out = [];
    for (var d = trace.length - 1; d >= 0; d--) {
      var v = trace[d], k = x - y;
      var prevK = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? k + 1 : k - 1;
      var prevX = v[off + prevK], prevY = prevX - prevK;
      while (x > prevX && y > prevY) { out.push(["same", a[x - 1]]); x--; y--; }
      if (d > 0) {
        if (x === prevX) out.push(["add", b[y - 1]]);
        else out.push(["del", a[x - 1]]);
      }
      x = prevX; y = prevY;
    }
    return out.reverse();
  }

  function words(text) {
    return text.match(/\s+|[\p{L}\p{N}\p{M}_]+|[^\p{L}\p{N}\p{M}_\s]/gu) || [];
  }

  function wordDiff(old, now) {
    var a = words(old), b = words(now);
    if (a.length > MAX_TOKENS || b.length > MAX_TOKENS) return null;
    var ops = diff(a, b);
    if (ops === null) return null;
    var p = el("p", "words");
    p.tabIndex = 0;
    var tags = { same: "span", del: "del", add: "ins" };
    var run = null, kind = null;
    ops.forEach(function (op) {
      if (op[0] !== kind) {
        if (run !== null) p.appendChild(el(tags[kind], "", visible(run, true)));
        run = ""; kind = op[0];
      }
      run += op[1];
    });
    if (run !== null) p.appendChild(el(tags[kind], "", visible(run, true)));
    return p;
  }

  function lineDiff(old, now) {
    var a = old === null ? [] : old.split("\n"), b = now === null ? [] : now.split("\n");
    var pre = el("pre", "diff");
    pre.tabIndex = 0;
    var ops = a.length + b.length > 2 * MAX_TOKENS ? null : diff(a, b);
    if (ops === null) {
      ops = a.map(function (t) { return ["del", t]; }).concat(b.map(function (t) { return ["add", t]; }));
    }
    var marks = { same: " ", del: "-", add: "+" };
    var styles = { same: "ctx", del: "del", add: "add" };
    ops.forEach(function (op) {
      pre.appendChild(el("span", styles[op[0]], marks[op[0]] + visible(op[1], false)));
      pre.appendChild(document.createTextNode("\n"));
    });
    return pre;
  }

  // ---- the two versions ---------------------------------------------------------------

  function load(option) {
    var path = option.getAttribute("data-blob");
    if (!path) return Promise.reject(new Error("entry " + option.value + " carries no definitions"));
    if (!blobs[path]) {
      blobs[path] = fetch(root + path, { credentials: "omit" }).then(function (response) {
        if (!response.ok) throw new Error(path + ": HTTP " + response.status);
        return response.json();
      });
    }
    return blobs[path];
  }

  function byKey(doc, kind) {
    var listing = doc[kind.member];
    if (!listing || !Array.isArray(listing.items)) return null;
    var out = {};
    listing.items.forEach(function (item) { out[String(item[kind.key])] = item; });
    return out;
  }

  function pretty(value) {
    return JSON.stringify(value, null, 2);
  }

  function item(status, kindName, key, old, now) {
    var box = el("div", "item " + status);
    var h = el("h4");
    h.appendChild(el("span", "status", status));
    h.appendChild(document.createTextNode(" "));
    h.appendChild(el("code", "", visible(key, false)));
    h.appendChild(document.createTextNode(" (" + kindName + ")"));
    box.appendChild(h);
    if (status === "changed") {
      var a = old.definition || {}, b = now.definition || {};
      var da = typeof a.description === "string" ? a.description : "";
      var db = typeof b.description === "string" ? b.description : "";
      if (da !== db) {
        var w = wordDiff(da, db);
        if (w) box.appendChild(w);
      }
      var details = el("details");
      details.appendChild(el("summary", "", "Definition diff"));
      details.appendChild(lineDiff(pretty(a), pretty(b)));
      box.appendChild(details);
    }
    return box;
  }

  function show(a, b, docA, docB) {
    pair.textContent = "";
    var ia = Number(a.value), ib = Number(b.value);
    pair.appendChild(el("h3", "", "Entry " + ia + " → entry " + ib));
    var link = null, key = ia + "-" + ib;
    var options = Array.prototype.slice.call(from.options).map(function (o) { return Number(o.value); });
    if (options.indexOf(ib) === options.indexOf(ia) + 1) {
      link = [section.getAttribute("data-page") + "#entry-" + ib, "toolpin's diff of this change, with its labels"];
    } else if (explained.indexOf(key) !== -1) {
      link = [section.getAttribute("data-diffs") + key, "toolpin's diff of these two versions, with its labels (below)"];
    }
    var note = el("p", "note");
    if (link) {
      var anchor = el("a", "", link[1]);
      anchor.href = link[0];
      note.appendChild(anchor);
    } else {
      note.textContent = "toolpin has not explained this pair: no labels are shown for it.";
    }
    pair.appendChild(note);
    var boxes = [], counts = { changed: 0, added: 0, removed: 0, same: 0 }, skipped = [];
    kinds.forEach(function (kind) {
      var old = byKey(docA, kind), now = byKey(docB, kind);
      if (old === null && now === null) return;
      if (old === null || now === null) {
        skipped.push(kind.plural + " (only " + (now === null ? "in the first" : "in the second") + ")");
        return;
      }
      var keys = Object.keys(now).filter(function (k) { return !(k in old); }).sort();
      keys.forEach(function (k) { counts.added++; boxes.push(item("added", kind.plural, k, null, now[k])); });
      Object.keys(old).filter(function (k) { return !(k in now); }).sort().forEach(function (k) {
        counts.removed++; boxes.push(item("removed", kind.plural, k, old[k], null));
      });
      Object.keys(now).filter(function (k) { return k in old; }).sort().forEach(function (k) {
        if (old[k].hash === now[k].hash) { counts.same++; return; }
        counts.changed++; boxes.push(item("changed", kind.plural, k, old[k], now[k]));
      });
    });
    pair.appendChild(el("p", "summary", counts.changed + " changed, " + counts.added + " added, " +
      counts.removed + " removed, " + counts.same + " unchanged (by their hashes)."));
    skipped.forEach(function (text) { pair.appendChild(el("p", "note", "not compared: " + text)); });
    var sa = docA.server || {}, sb = docB.server || {};
    if (sa.name !== sb.name && sa.name !== undefined && sb.name !== undefined) {
      pair.appendChild(el("p", "note", "server name changed: " + visible(String(sa.name), false) +
        " → " + visible(String(sb.name), false)));
    }
    boxes.forEach(function (box) { pair.appendChild(box); });
    var xa = docA.instructions, xb = docB.instructions;
    if (xa && xb && xa.hash !== xb.hash) {
      var box = el("div", "item changed");
      var h = el("h4");
      h.appendChild(el("span", "status", "changed"));
      h.appendChild(document.createTextNode(" server instructions"));
      box.appendChild(h);
      box.appendChild(lineDiff(xa.text === null ? null : String(xa.text), xb.text === null ? null : String(xb.text)));
      pair.appendChild(box);
    }
    pair.setAttribute("data-shown", key);
  }

  function update() {
    var a = from.options[from.selectedIndex], b = to.options[to.selectedIndex];
    if (!a || !b) return;
    if (a.value === b.value) {
      pair.textContent = "";
      pair.appendChild(el("p", "note", "Pick two different versions."));
      pair.setAttribute("data-shown", a.value + "-" + b.value);
      return;
    }
    Promise.all([load(a), load(b)]).then(function (docs) {
      if (from.options[from.selectedIndex] === a && to.options[to.selectedIndex] === b) {
        show(a, b, docs[0], docs[1]);
      }
    }, function (error) {
      pair.textContent = "";
      pair.appendChild(el("p", "note", "The definitions could not be read: " + error.message));
      pair.setAttribute("data-shown", "error");
    });
  }

  section.hidden = false;
  from.addEventListener("change", update);
  to.addEventListener("change", update);
  update();
})();
