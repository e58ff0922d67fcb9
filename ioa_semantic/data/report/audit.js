// The audit report's filters (inlined; see audit.html). Without this script the filters stay
// hidden and every listed row is shown; with it, a row is shown when its status is the one
// chosen and its codes, source or id contain the text typed.
(function () {
  "use strict";
  var table = document.getElementById("findings");
  var controls = document.getElementById("filters");
  if (!table || !controls) {
    return;
  }
  var text = document.getElementById("filter");
  var status = document.getElementById("status-filter");
  var shown = document.getElementById("shown-count");
  var none = document.getElementById("no-match");
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  // What the text filter reads of each row, once: its codes, its source and its id.
  var keys = rows.map(function (row) {
    return [row.getAttribute("data-codes"), row.cells[1].textContent,
            row.cells[3].textContent].join("\n").toLowerCase();
  });

  function counted(number) {
    return String(number).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  function apply() {
    var wanted = text.value.trim().toLowerCase();
    var only = status.value;
    var count = 0;
    rows.forEach(function (row, at) {
      var show = (only === "" || row.getAttribute("data-status") === only) &&
                 (wanted === "" || keys[at].indexOf(wanted) !== -1);
      row.hidden = !show;
      if (show) {
        count += 1;
      }
    });
    shown.textContent = "Showing " + counted(count) + " of " + counted(rows.length) +
                        " listed registrations.";
    none.hidden = count !== 0;
  }

  text.addEventListener("input", apply);
  status.addEventListener("change", apply);
  controls.hidden = false;
  apply();
}());
