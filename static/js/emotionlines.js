// The EmotionLines worker page (annotation/protocols/emotionlines/task.html): a static file,
// as every script is, so that the pages' CSP allows scripts from this site only.
// Runs once the whole page is there: the submit button comes after this template.
document.addEventListener("DOMContentLoaded", function () {
  // One line at a time: a line's choices open when the line before it is answered, and an
  // answer given sooner than the study's minimum after the line opened is refused here
  // (the server checks the times again and refuses too).
  var box = document.getElementById("el-lines");
  if (!box || box.dataset.preview) { return; }
  var minMs = parseFloat(box.dataset.minSeconds || "0") * 1000;
  var lines = Array.prototype.slice.call(box.querySelectorAll(".el-line"));
  var wait = document.getElementById("el-wait");
  var timingInput = document.getElementById("el-timing");
  var button = document.getElementById("submit-button");
  var timing = lines.map(function () { return [0, 0]; });
  var current = 0;
  // The sentence, in the page's language: task-strings (views.py, script_strings).
  var tooFast = JSON.parse(document.getElementById("task-strings").textContent).too_fast;

  function open(i) {
    current = i;
    lines.forEach(function (fs, k) {
      fs.classList.toggle("el-current", k === i);
      fs.classList.toggle("el-later", k > i);
      fs.querySelectorAll("input").forEach(function (input) { input.disabled = k > i; });
    });
    var done = i >= lines.length;
    if (!done) { timing[i][0] = performance.now(); }
    timingInput.value = done ? JSON.stringify(timing.map(function (t) {
      return [Math.round(t[0]), Math.round(t[1])];
    })) : "";
    if (button) { button.disabled = !done; }
  }

  box.addEventListener("change", function (event) {
    var input = event.target;
    var fs = input.closest(".el-line");
    var i = parseInt(fs.dataset.index, 10);
    if (i !== current) { return; }  // changing an earlier answer is allowed at any time
    var waited = performance.now() - timing[i][0];
    if (waited < minMs) {
      input.checked = false;
      // Said beside the line, in view: at the top of a long dialogue it was off-screen.
      if (wait.parentNode !== fs) { fs.appendChild(wait); }
      wait.textContent = tooFast.replace("%(seconds)s", String(minMs / 1000))
        .replace("%(line)s", String(i + 1)).replace("%(waited)s", (waited / 1000).toFixed(1));
      wait.hidden = false;
      wait.scrollIntoView({ block: "nearest" });
      return;
    }
    wait.hidden = true;
    timing[i][1] = performance.now();
    open(i + 1);
  });
  open(0);
});
