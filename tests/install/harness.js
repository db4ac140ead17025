// Runs site/static/install.js under node on cases read from stdin (a JSON array) and
// prints one JSON result per case: {"ok": value} or {"error": message}.
"use strict";
const path = require("path");
const api = require(path.resolve(process.argv[2]));
let data = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { data += chunk; });
process.stdin.on("end", () => {
  const results = JSON.parse(data).map((c) => {
    try {
      if (c.op === "generate") return { ok: api.generate(c.input) };
      if (c.op === "split") return { ok: api.shSplit(c.input) };
      if (c.op === "name") return { ok: api.defaultName(c.input) };
      if (c.op === "join") return { ok: api.shJoin(c.input) };
      return { error: "unknown op" };
    } catch (exc) {
      if (exc instanceof api.InputError) return { error: exc.message };
      throw exc;
    }
  });
  process.stdout.write(JSON.stringify(results));
});
