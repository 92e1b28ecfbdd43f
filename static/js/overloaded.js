// The busy page (templates/overloaded.html, evalsite/overload.py): resend or reload after
// Retry-After; a static file, as every script is, for the CSP's script-src 'self'.
(function () {
  // Wait Retry-After seconds, longer after each busy answer in a row (up to 16×), with
  // jitter so that a crowd does not come back all at once. The task page resets the count.
  var box = document.getElementById("overloaded");
  var tries = 0;
  try {  // storage can be blocked in a provider's iframe: then no backoff, only jitter
    tries = parseInt(sessionStorage.getItem("evalsite-busy") || "0", 10) || 0;
    sessionStorage.setItem("evalsite-busy", String(tries + 1));
  } catch (e) { tries = 0; }
  var base = parseFloat(box.dataset.seconds) * Math.pow(2, Math.min(tries, 4));
  var until = Date.now() + 1000 * base * (1 + Math.random() * 0.5);
  var when = document.getElementById("retry-when");
  (function tick() {
    var left = Math.ceil((until - Date.now()) / 1000);
    if (left > 0) {
      when.textContent = "in " + left + " second" + (left === 1 ? "" : "s");
      setTimeout(tick, 500);
      return;
    }
    when.textContent = "now";
    var form = document.getElementById("resend-form");
    if (form) { form.submit(); } else { window.location.reload(); }
  })();
})();
