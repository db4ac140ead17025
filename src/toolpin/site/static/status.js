// Shows, in every page's footer, the log's current checkpoint as the site publishes it
// (api/v1/log.json: a small file that changes with every checkpoint, so the page's own
// bytes never name it). Display only: the server pages' verify.js checks the signature.
// Only same-origin requests; no inline script; the page works without it.
"use strict";
(function () {
  var status = document.getElementById("log-status");
  if (!status || !window.fetch) return;
  var root = status.getAttribute("data-root") || "/";
  fetch(root + "api/v1/log.json", { cache: "no-cache", credentials: "omit", redirect: "error" })
    .then(function (r) { return r.ok ? r.json() : null; })
    .then(function (log) {
      var cp = log && log.checkpoint;
      if (!cp || typeof cp.size !== "number" || !(cp.size >= 0)) return;
      var text = " (now of " + cp.size + (cp.size === 1 ? " entry" : " entries");
      if (typeof log.lastEntryTime === "string" && /^\d{4}-\d{2}-\d{2}T/.test(log.lastEntryTime)) {
        text += ", the last at " + log.lastEntryTime.slice(0, 16).replace("T", " ") + " UTC";
      }
      status.textContent = text + ")";
    })
    .catch(function () {});
})();
