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
})();
