/* evalsite live chat page: one websocket, state frames from the server, an outbox of
   messages kept until the server acknowledges them (resent after a reconnect or a reload:
   the server stores each client_id once). docs/chat.md describes the frames. */
(function () {
  "use strict";
  var app = document.getElementById("chat-app");
  if (!app) { return; }
  var $ = function (id) { return document.getElementById(id); };
  var outboxKey = "evalsite-outbox-" + app.dataset.seatKey;
  var outbox = JSON.parse(sessionStorage.getItem(outboxKey) || "[]");
  var socket = null, state = null, heartbeat = null, beatSeconds = 0;
  var retryDelay = 500, closedForGood = false;
  var waitedAt = 0, waitedBase = 0, waitTimer = null;
  var signals = { situation: fresh(), message: fresh() };

  function fresh() { return { started: 0, keystrokes: 0, pastes: 0, pasted_chars: 0 }; }
  function newId() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    return Date.now().toString(36) + Math.random().toString(36).slice(2);
  }
  function saveOutbox() { sessionStorage.setItem(outboxKey, JSON.stringify(outbox)); }
  function show(id, visible) { $(id).hidden = !visible; }
  function setConnection(text) { $("connection").textContent = text; }
  function error(text) { $("chat-error").textContent = text; show("chat-error", !!text); }

  function track(kind, textarea) {
    textarea.addEventListener("keydown", function () {
      var s = signals[kind];
      if (!s.started) { s.started = Date.now(); }
      s.keystrokes += 1;
    });
    textarea.addEventListener("paste", function (event) {
      var s = signals[kind];
      var text = (event.clipboardData && event.clipboardData.getData("text")) || "";
      if (!s.started) { s.started = Date.now(); }
      s.pastes += 1;
      s.pasted_chars += text.length;
    });
  }
  // The signals of a text are kept until the server stores it: a refused text, written
  // again, still carries its pastes.
  function taken(kind) {
    var s = signals[kind];
    return { typing_ms: s.started ? Math.max(0, Date.now() - s.started) : 0,
             keystrokes: s.keystrokes, pastes: s.pastes, pasted_chars: s.pasted_chars };
  }

  function send(frame) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(frame));
      return true;
    }
    return false;
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + app.dataset.wsPath);
    socket.onopen = function () {
      retryDelay = 500;
      setConnection("Connected");
      startHeartbeat(beatSeconds || Number(app.dataset.heartbeat) || 10);
      outbox.forEach(function (frame) { send(frame); });
    };
    socket.onmessage = function (event) { receive(JSON.parse(event.data)); };
    socket.onclose = function (event) {
      clearInterval(heartbeat);
      if (closedForGood || event.code === 4403 || event.code === 4409) {
        setConnection("Disconnected");
        return;
      }
      setConnection("Connection lost; reconnecting…");
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 5000);
    };
  }

  function receive(frame) {
    if (frame.type === "state") { render(frame); return; }
    if (frame.type === "ack") {
      if (frame.client_id) {
        outbox = outbox.filter(function (f) { return f.client_id !== frame.client_id; });
        saveOutbox();
        signals.message = fresh();
      }
      error("");
      return;
    }
    if (frame.type === "error") {
      // A server error is transient: the message stays in the outbox and goes again on the
      // next connection. Any other refusal is final: the text comes back to the box.
      if (frame.client_id && frame.code !== "server_error") {
        var refused = outbox.filter(function (f) { return f.client_id === frame.client_id; });
        outbox = outbox.filter(function (f) { return f.client_id !== frame.client_id; });
        saveOutbox();
        if (refused.length && !$("message-text").value) { $("message-text").value = refused[0].text; }
        if (state) { renderChat(state); }
      }
      error(frame.message);
      if (frame.code === "replaced" || frame.code === "not_allowed" || frame.code === "not_found") {
        closedForGood = frame.code === "replaced";
      }
    }
  }

  function startHeartbeat(seconds) {
    clearInterval(heartbeat);
    beatSeconds = seconds;
    heartbeat = setInterval(function () { send({ type: "ping" }); }, seconds * 1000);
  }

  function render(s) {
    if (s.heartbeat_s !== beatSeconds) { startHeartbeat(s.heartbeat_s); }
    if (state && state.stage === "situation" && s.stage !== "situation") {
      signals.situation = fresh();
    }
    state = s;
    var stage = s.stage;
    show("stage-situation", stage === "situation");
    show("stage-waiting", stage === "waiting");
    show("stage-chat", stage === "chatting");
    var ended = ["done", "partner_left", "released", "failed", "left"].indexOf(stage) >= 0;
    show("stage-end", ended);
    clearInterval(waitTimer);
    if (stage === "situation") { renderSituation(s); }
    if (stage === "waiting") { renderWaiting(s); }
    if (stage === "chatting") { renderChat(s); }
    if (ended) {
      $("end-heading").textContent = stage === "done" ? "Thank you!" : "The chat has ended";
      $("end-message").textContent = s.message;
      show("finish-link", stage !== "left");
      closedForGood = true;
      if (socket) { socket.close(1000); }
    }
  }

  function renderSituation(s) {
    var box = $("emotion-choices");
    if (box.dataset.filled !== "1") {
      s.offered.forEach(function (emotion) {
        var label = document.createElement("label");
        label.className = "choice";
        var input = document.createElement("input");
        input.type = "radio"; input.name = "emotion"; input.value = emotion;
        label.appendChild(input);
        var span = document.createElement("span");
        span.textContent = emotion;
        label.appendChild(span);
        box.appendChild(label);
      });
      box.dataset.filled = "1";
      var lim = s.limits;
      $("situation-help").textContent = "1 to " + lim.situation_max_sentences + " sentences, " +
        (lim.situation_min_words > 0
          ? "between " + lim.situation_min_words + " and " + lim.situation_max_words + " words"
          : "at most " + lim.situation_max_words + " words") +
        ". Please write it yourself: do not paste text.";
    }
  }

  function renderWaiting(s) {
    waitedBase = s.waited_s || 0;
    waitedAt = Date.now();
    $("wait-limit").textContent = "If no one arrives within " +
      Math.round(s.lobby_timeout_s / 60 * 10) / 10 + " minutes, you will be released and paid for your time.";
    var tick = function () {
      var seconds = Math.floor(waitedBase + (Date.now() - waitedAt) / 1000);
      $("waited").textContent = Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
    };
    tick();
    waitTimer = setInterval(tick, 1000);
  }

  function renderChat(s) {
    var ed = s.protocol === "empathetic_chat";
    if (ed) {
      $("chat-heading").textContent = "Conversation " + s.round + " of " + s.rounds +
        ": you are the " + (s.role === "speaker" ? "Speaker" : "Listener");
      $("role-help").textContent = s.role === "speaker"
        ? "Start the conversation about your situation below; your partner does not see it."
        : "Your partner will talk about something that happened to them. Listen and respond " +
          "with empathy; you do not know their situation.";
      show("my-situation", !!s.situation);
      if (s.situation) {
        $("my-situation").textContent = "Your situation (" + s.situation.emotion + "): " + s.situation.text;
      }
    } else {
      $("chat-heading").textContent = "Chat with the chatbot (turn " + s.turns + " of at least " + s.min_turns + ")";
      $("role-help").textContent = "Talk about anything you like. After each reply of the " +
        "chatbot, say whether it makes sense and whether it is specific.";
    }
    var list = $("transcript");
    list.innerHTML = "";
    s.utterances.forEach(function (u) {
      var li = document.createElement("li");
      li.className = "turn " + (u.mine ? "listener" : "speaker");
      li.dataset.index = u.index;
      li.dataset.role = u.role;
      var who = document.createElement("span");
      who.className = "who";
      who.textContent = (u.mine ? "You" : (ed ? "Partner" : "Chatbot")) + ": ";
      li.appendChild(who);
      li.appendChild(document.createTextNode(u.text));
      list.appendChild(li);
    });
    var pendingText = outbox.some(function (f) { return f.type === "message"; });
    $("send-button").disabled = !s.your_turn || pendingText;
    $("message-text").disabled = !s.your_turn;
    $("turn-note").textContent = s.your_turn ? "Your message" :
      (ed ? "Please wait for your partner's message." : (s.pending ? "Please wait for the chatbot's reply." : "Label the reply first."));
    show("end-button", !!s.can_end);
    $("end-button").textContent = ed ? "End this conversation" : "End the chat";
    if (!ed) {
      show("typing", !!s.pending);
      show("bot-failed", !!s.failed);
      var labelForm = $("label-form");
      var needs = s.needs_label;
      if (needs !== null && needs !== undefined) {
        if (labelForm.dataset.index !== String(needs)) {
          labelForm.reset();
          show("q-specific", false);
        }
        labelForm.dataset.index = String(needs);
        $("sensible-question").textContent = s.questions.sensible;
        $("specific-question").textContent = s.questions.specific;
        show("label-form", true);
      } else {
        show("label-form", false);
        labelForm.dataset.index = "";
      }
    }
  }

  $("situation-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var chosen = document.querySelector('input[name="emotion"]:checked');
    send({ type: "situation", emotion: chosen ? chosen.value : "", text: $("situation-text").value,
           signals: taken("situation") });
  });
  $("message-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var text = $("message-text").value;
    if (!text.trim() || !state) { return; }
    var frame = { type: "message", client_id: newId(), text: text, dialogue: state.dialogue,
                  signals: taken("message") };
    outbox.push(frame);
    saveOutbox();
    send(frame);
    $("message-text").value = "";
    $("send-button").disabled = true;
  });
  $("end-button").addEventListener("click", function () {
    if (state) { send({ type: "end", dialogue: state.dialogue }); }
  });
  $("retry-button").addEventListener("click", function () { send({ type: "retry" }); });
  $("label-form").addEventListener("change", function () {
    var sensible = document.querySelector('input[name="sensible"]:checked');
    var yes = sensible !== null && sensible.value === "yes";
    show("q-specific", yes);
    if (!yes) { document.querySelectorAll('input[name="specific"]').forEach(function (i) { i.checked = false; }); }
  });
  $("label-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var sensible = document.querySelector('input[name="sensible"]:checked');
    var specific = document.querySelector('input[name="specific"]:checked');
    var frame = { type: "label", index: parseInt($("label-form").dataset.index, 10),
                  sensible: sensible ? sensible.value : null };
    if (specific) { frame.specific = specific.value; }
    send(frame);
  });
  track("situation", $("situation-text"));
  track("message", $("message-text"));
  $("situation-text").addEventListener("input", function () {
    var words = $("situation-text").value.trim().split(/\s+/).filter(Boolean).length;
    $("situation-count").textContent = words + " words";
  });
  connect();
})();
