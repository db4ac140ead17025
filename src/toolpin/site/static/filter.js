// Narrows the server-rendered list as you type. Without JavaScript the full list and the
// filter pages (changed, not checked) still work.
"use strict";
(function () {
  var box = document.getElementById("filter-box");
  var input = document.getElementById("filter");
  var count = document.getElementById("filter-count");
  var body = document.getElementById("server-rows");
  if (!box || !input || !count || !body) return;
  var rows = Array.prototype.slice.call(body.querySelectorAll("tr"));
  box.hidden = false;
  function apply() {
    var q = input.value.trim().toLowerCase();
    var shown = 0;
    rows.forEach(function (row) {
      var match = !q || (row.getAttribute("data-name") || "").indexOf(q) !== -1;
      row.hidden = !match;
      if (match) shown += 1;
    });
    count.textContent = shown + " of " + rows.length + " shown";
  }
  input.addEventListener("input", apply);
  apply();
})();
