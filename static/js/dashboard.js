// Live parts of the dashboard: the campaign's progress and its jobs' progress bars.
// Plain polling: it survives reloads (the jobs live in the database) and needs no socket.
(function () {
  "use strict";
  function poll(url, every, apply) {
    function tick() {
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) { if (data && apply(data) !== false) { setTimeout(tick, every); } })
        .catch(function () { setTimeout(tick, every * 2); });
    }
    tick();
  }
  var header = document.querySelector("[data-progress-url]");
  if (header) {
    poll(header.dataset.progressUrl, 5000, function (d) {
      header.querySelector("[data-field=bar]").value = d.percent;
      ["done", "needed", "percent", "judgments", "workers_active", "spent", "eta"].forEach(function (k) {
        var el = header.querySelector("[data-field=" + k + "]");
        if (el) { el.textContent = d[k]; }
      });
      var stale = document.getElementById("stale");
      if (stale) { stale.hidden = d.report_judgments === d.judgments; }
    });
  }
  // The leaderboard of a live campaign: reload when a newer report snapshot is ready (its
  // figures are files of that snapshot); stop once the campaign is no longer live.
  var board = document.querySelector("[data-leaderboard-url]");
  if (board && board.dataset.live === "1") {
    poll(board.dataset.leaderboardUrl, 10000, function (d) {
      if (String(d.snapshot === null ? "" : d.snapshot) !== board.dataset.snapshot) {
        window.location.reload();
        return false;
      }
      var stale = document.getElementById("stale");
      if (stale) { stale.hidden = !d.stale; }
      var building = board.querySelector("[data-field=building]");
      if (building) { building.hidden = !d.building; }
      var checked = board.querySelector("[data-field=checked]");
      if (checked) { checked.textContent = d.checked_at.replace("T", " ").slice(0, 19); }
      return d.live;
    });
  }
  document.querySelectorAll("[data-job-url]").forEach(function (row) {
    if (row.dataset.finished === "1") { return; }
    poll(row.dataset.jobUrl, 1000, function (job) {
      row.querySelector("progress").value = Math.round(job.progress * 100);
      row.querySelector("[data-field=message]").textContent = job.error || job.message;
      row.querySelector("[data-field=status]").textContent = job.status;
      if (job.status === "done" || job.status === "failed") {
        // Reload once so the new report, figures and download links appear.
        setTimeout(function () { window.location.reload(); }, 300);
        return false;
      }
    });
  });
  // A table wider than the screen scrolls inside its box: make that box reachable and
  // scrollable from the keyboard, and name it (WCAG 2.1.1; axe's scrollable-region-focusable).
  // Only the boxes that do scroll get a tab stop.
  document.querySelectorAll(".scroll").forEach(function (box) {
    if (box.scrollWidth <= box.clientWidth && box.scrollHeight <= box.clientHeight) { return; }
    if (box.hasAttribute("tabindex")) { return; }
    var table = box.querySelector("table");
    var named = box.previousElementSibling;
    box.tabIndex = 0;
    box.setAttribute("role", "region");
    var heading = named && /^H[1-6]$/.test(named.tagName) ? named.textContent.trim() : "";
    box.setAttribute("aria-label", heading ||
      (table && (table.dataset.table || table.id)) || "Scrollable table");
  });
})();
