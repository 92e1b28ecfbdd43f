// The launch wizard's items step: poll the models' generation progress; reload when done.
(function () {
  "use strict";
  var box = document.getElementById("pending");
  if (!box) { return; }
  function tick() {
    fetch(box.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (!d || !d.pending) { return; }
        box.querySelector("progress").value = Math.round(d.progress * 100);
        if (d.done || d.failed.length) { window.location.reload(); return; }
        setTimeout(tick, 1000);
      })
      .catch(function () { setTimeout(tick, 3000); });
  }
  if (document.getElementById("finish-items").disabled && box.dataset.failed === "0") { tick(); }
})();
