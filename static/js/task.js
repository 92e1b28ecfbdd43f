// The answer form of the task and training pages: follow-up questions, the minimum time,
// digit shortcuts and no double submit.
(function () {
  var form = document.getElementById("answer-form");
  // A page served again after a busy answer (overloaded.html) resets its backoff.
  try { sessionStorage.removeItem("evalsite-busy"); } catch (e) { /* storage blocked */ }
  var button = document.getElementById("submit-button");
  // The page's sentences in its language (views.py, _script_strings).
  var strings = JSON.parse(document.getElementById("task-strings").textContent);
  // Questions asked only after a given answer to another (SSA: "specific" after "sensible").
  function follow() {
    form.querySelectorAll("fieldset[data-only-if]").forEach(function (fs) {
      var chosen = form.querySelector('input[name="' + fs.dataset.onlyIf + '"]:checked');
      var show = chosen !== null && chosen.value === fs.dataset.onlyValue;
      fs.hidden = !show;
      fs.querySelectorAll("input").forEach(function (i) {
        i.disabled = !show;
        if (!show) { i.checked = false; }
      });
    });
  }
  form.addEventListener("change", follow);
  follow();
  // The server refuses answers sent sooner than the study's minimum time; say so up front.
  var wait = parseFloat(button.dataset.minSeconds || "0");
  if (wait > 0 && !button.disabled) {
    var note = document.getElementById("wait-note");
    var until = Date.now() + wait * 1000;
    button.disabled = true;
    note.hidden = false;
    (function tick() {
      var left = Math.ceil((until - Date.now()) / 1000);
      if (left <= 0) { button.disabled = false; note.hidden = true; return; }
      note.textContent = strings.wait.replace("%(seconds)s", String(left));
      setTimeout(tick, 250);
    })();
  }
  // Keyboard: digit n chooses the n-th answer of the first open question not yet answered
  // (anywhere on the page: EmotionLines' lines sit outside the form), or, once all are
  // answered, of the question that has the focus. Never while typing in a text field.
  function groups() {
    return Array.prototype.filter.call(document.querySelectorAll("fieldset"), function (fs) {
      return fs.offsetParent !== null && fs.querySelector('input[type=radio]:not(:disabled)');
    });
  }
  function current() {
    var open = groups();
    var unanswered = open.filter(function (fs) { return !fs.querySelector("input:checked"); });
    if (unanswered.length) { return unanswered[0]; }
    var focused = document.activeElement && document.activeElement.closest("fieldset");
    return open.indexOf(focused) >= 0 ? focused : null;
  }
  var most = groups().reduce(function (n, fs) {
    return Math.max(n, fs.querySelectorAll('input[type=radio]').length);
  }, 0);
  var hint = document.getElementById("shortcut-hint");
  // The hint only where a keyboard is likely (a mouse or trackpad): not on phones and tablets,
  // where "press 1–5" means nothing. The keys work everywhere.
  var keyboardLikely = !window.matchMedia || window.matchMedia("(pointer: fine)").matches;
  if (hint && most > 1 && keyboardLikely) {
    document.getElementById("shortcut-last").textContent = String(Math.min(most, 9));
    hint.hidden = false;
  }
  document.addEventListener("keydown", function (event) {
    if (!/^[1-9]$/.test(event.key) || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var t = event.target;
    var typing = t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT" ||
      (t.tagName === "INPUT" && ["radio", "checkbox", "button", "submit"].indexOf(t.type) < 0);
    var group = typing ? null : current();
    if (!group) { return; }
    var input = group.querySelectorAll('input[type=radio]')[Number(event.key) - 1];
    if (!input || input.disabled) { return; }
    event.preventDefault();
    input.click();  // fires the change handlers (follow-up questions, EmotionLines' timing)
    input.focus({ preventScroll: true });
    var next = current();
    (next && next !== group ? next : group).scrollIntoView({ block: "nearest" });
  });
  // Prevent an accidental double submit; the server would accept it once anyway.
  form.addEventListener("submit", function () {
    setTimeout(function () { button.disabled = true; }, 0);
  });
})();
