// The impact report's filters (inlined; see impact.html). Without this script the filters
// stay hidden and every listed flip is shown; with it, a row is shown when its verdicts are
// those chosen and its codes, decision or causes contain the text typed.
(function () {
  "use strict";
  var table = document.getElementById("flips");
  var controls = document.getElementById("filters");
  if (!table || !controls) {
    return;
  }
  var text = document.getElementById("filter");
  var before = document.getElementById("before-filter");
  var after = document.getElementById("after-filter");
  var shown = document.getElementById("shown-count");
  var none = document.getElementById("no-match");
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  // What the text filter reads of each row, once: its codes, its decision and its causes.
  var keys = rows.map(function (row) {
    return [row.getAttribute("data-codes"), row.cells[2].textContent,
            row.cells[5].textContent].join("\n").toLowerCase();
  });

  function counted(number) {
    return String(number).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  function apply() {
    var wanted = text.value.trim().toLowerCase();
    var count = 0;
    rows.forEach(function (row, at) {
      var show = (before.value === "" || row.getAttribute("data-before") === before.value) &&
                 (after.value === "" || row.getAttribute("data-after") === after.value) &&
                 (wanted === "" || keys[at].indexOf(wanted) !== -1);
      row.hidden = !show;
      if (show) {
        count += 1;
      }
    });
    shown.textContent = "Showing " + counted(count) + " of " + counted(rows.length) +
                        " listed flips.";
    none.hidden = count !== 0;
  }

  text.addEventListener("input", apply);
  before.addEventListener("change", apply);
  after.addEventListener("change", apply);
  controls.hidden = false;
  apply();
}());
