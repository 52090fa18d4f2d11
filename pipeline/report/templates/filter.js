// The removal-reasons filter: hide the rows of the reasons table whose text does not contain every word typed.
(function () {
  var input = document.getElementById("reason-filter");
  if (!input) return;
  var rows = Array.prototype.slice.call(document.querySelectorAll("#" + input.dataset.table + " tbody tr"));
  var count = document.getElementById("reason-filter-count");
  function apply() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var match = words.every(function (w) { return text.indexOf(w) !== -1; });
      row.hidden = !match;
      if (match) shown += 1;
    });
    count.textContent = shown + " of " + rows.length + " reasons shown";
  }
  input.addEventListener("input", apply);
  apply();
})();

// A link to a folded section (the table of contents, a #hash in the address) unfolds it.
(function () {
  function unfold() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    var fold = target && target.querySelector("details.fold");
    if (fold) fold.open = true;
  }
  window.addEventListener("hashchange", unfold);
  unfold();
})();
