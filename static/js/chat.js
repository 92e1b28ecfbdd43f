/* evalsite live chat page: one websocket, state frames from the server, an outbox of
   messages kept until the server acknowledges them (resent after a reconnect or a reload:
   the server stores each client_id once). docs/chat.md describes the frames. */
(function () {
  "use strict";
  var app = document.getElementById("chat-app");
  if (!app) { return; }
  var $ = function (id) { return document.getElementById(id); };
  // The page's sentences in the study's language (chat_views.chat_strings): t("key", {n: 1})
  // fills the %(n)s placeholders.
  var S = JSON.parse($("chat-strings").textContent);
  function t(key, args) {
    return S[key].replace(/%\((\w+)\)s/g, function (m, name) {
      return args && args[name] !== undefined ? String(args[name]) : m;
    });
  }
  function feeling(emotion) { return (S.emotions && S.emotions[emotion]) || emotion; }
  var outboxKey = "evalsite-outbox-" + app.dataset.seatKey;
  var outbox = JSON.parse(sessionStorage.getItem(outboxKey) || "[]");
  var socket = null, state = null, heartbeat = null, beatSeconds = 0;
  var retryDelay = 500, closedForGood = false, retryTimer = null, chatEnded = false;
  var waitedAt = 0, waitedBase = 0, waitTimer = null;
  var signals = { situation: fresh(), message: fresh() };
  var endedByMe = null, refocus = false, baseTitle = document.title;

  function fresh() { return { started: 0, keystrokes: 0, pastes: 0, pasted_chars: 0 }; }
  function newId() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    return Date.now().toString(36) + Math.random().toString(36).slice(2);
  }
  function saveOutbox() { sessionStorage.setItem(outboxKey, JSON.stringify(outbox)); }
  function show(id, visible) { $(id).hidden = !visible; }
  function setConnection(text) { $("connection").textContent = text; }
  function error(text) { $("chat-error").textContent = text; show("chat-error", !!text); }
  // Notices are announced (role=status) and scrolled to, but never take the focus.
  function notice(text) {
    $("chat-notice").textContent = text;
    if (text) { $("chat-notice").scrollIntoView({ block: "nearest" }); }
  }
  function reveal(el) { el.scrollIntoView({ block: "nearest" }); }
  function fieldError(id, field, text) {
    $(id).textContent = text || "";
    show(id, !!text);
    if (field) { field.setAttribute("aria-invalid", text ? "true" : "false"); }
  }
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) { document.title = baseTitle; }
  });

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
      setConnection(t("connected"));
      startHeartbeat(beatSeconds || Number(app.dataset.heartbeat) || 10);
      outbox.forEach(function (frame) { send(frame); });
    };
    socket.onmessage = function (event) { receive(JSON.parse(event.data)); };
    socket.onclose = function (event) {
      clearInterval(heartbeat);
      if (chatEnded) { setConnection(""); return; }  // the end, not a lost connection
      if (closedForGood || event.code === 4403 || event.code === 4409 || event.code === 4000) {
        setConnection(t("disconnected"));
        return;
      }
      setConnection(t("reconnecting"));
      // At most 2 s apart: the partner is told we left after half a heartbeat away (5 s).
      retryTimer = setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 2000);
    };
  }
  // The network is back: reconnect now rather than at the next try.
  window.addEventListener("online", function () {
    if (closedForGood || !retryTimer || (socket && socket.readyState <= WebSocket.OPEN)) { return; }
    clearTimeout(retryTimer);
    retryTimer = null;
    connect();
  });
  // The page going away for good (a closed tab, a navigation) closes its socket with 4000: the
  // partner is told after half a heartbeat. A connection lost otherwise (the network) is
  // given the study's reconnect grace to come back. A page kept in the back-forward cache
  // reconnects when shown again.
  window.addEventListener("pagehide", function () {
    if (socket && socket.readyState <= WebSocket.OPEN) { socket.close(4000, "page closed"); }
  });
  window.addEventListener("pageshow", function (event) {
    if (event.persisted && !closedForGood) { connect(); }
  });
  // Leaving mid-conversation (or in the lobby, or with a message not yet stored) ends the
  // chat for the partner too: the browser asks first.
  window.addEventListener("beforeunload", function (event) {
    var busy = state && ["situation", "waiting", "chatting", "rating"].indexOf(state.stage) >= 0 &&
      (state.stage !== "situation" || $("situation-text").value.trim() !== "");
    if (!busy && !outbox.length) { return; }
    event.preventDefault();
    event.returnValue = "";
    return "";
  });

  // A streamed bot reply's text so far: shown while the bot writes, never labelled; the stored
  // turn arrives as state when the reply is complete, and replaces it. A partial counts only
  // for a turn not yet in the transcript (without a broker it may come before the state that
  // says the bot is writing).
  var partial = null;
  function lastIndex(s) {
    return s && s.utterances && s.utterances.length ? s.utterances[s.utterances.length - 1].index : -1;
  }
  function showPartial() {
    var box = $("bot-partial");
    if (!box) { return; }
    var live = !!partial && !!state && state.stage === "chatting" && partial.index > lastIndex(state);
    box.hidden = !live;
    if (live) {
      box.lastChild.textContent = partial.text;
      box.dataset.index = partial.index;
    }
  }

  // An arena's streamed replies, one per side ("a", "b"), shown in their panes likewise.
  var sidePartials = {};
  function showSidePartials(s) {
    (s && s.sides ? s.sides : []).forEach(function (side) {
      var p = sidePartials[side.side], box = $("partial-" + side.side);
      var last = side.utterances.length ? side.utterances[side.utterances.length - 1].index : -1;
      var live = !!p && s.stage === "chatting" && p.index > last;
      box.hidden = !live;
      if (live) { box.lastChild.textContent = p.text; }
    });
  }

  function receive(frame) {
    if (frame.type === "state") { render(frame); return; }
    if (frame.type === "partial" && (frame.side || app.dataset.chat === "side_by_side")) {
      // An arena's partial goes to its side's pane; one that names no side has no place
      // (never in the single-bot box below the panes).
      if (!frame.side) { return; }
      var known = sidePartials[frame.side];
      if (!known || frame.index !== known.index || frame.seq > known.seq) {
        sidePartials[frame.side] = frame;
        showSidePartials(state);
      }
      return;
    }
    if (frame.type === "partial") {
      var newer = !partial || frame.index !== partial.index || frame.seq > partial.seq;
      if (newer && state && state.stage === "chatting" && frame.index > lastIndex(state)) {
        partial = frame;
        showPartial();
      }
      return;
    }
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
      var reasons = [];
      if (state && state.stage === "situation" && frame.fields) {
        // The server's exact reasons (too few words, a feeling not offered…), at each field.
        fieldError("emotion-error", $("emotion-fieldset"), frame.fields.emotion);
        fieldError("situation-error", $("situation-text"), frame.fields.situation);
        reasons = [frame.fields.emotion, frame.fields.situation].filter(Boolean);
      }
      if (state && state.stage === "rating") { reasons = ratingErrors(frame.fields || {}); }
      if (state && state.chat === "side_by_side" && frame.fields) {
        fieldError("vote-error", $("vote-fieldset"), frame.fields.winner || frame.fields.reason);
      }
      error([frame.message].concat(reasons).join(" "));
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
      fieldError("emotion-error", $("emotion-fieldset"), "");
      fieldError("situation-error", $("situation-text"), "");
    }
    var before = state;
    state = s;
    if (before) { tellChange(before, s); }
    var stage = s.stage;
    show("stage-situation", stage === "situation");
    show("stage-waiting", stage === "waiting");
    show("stage-chat", stage === "chatting");
    show("stage-rating", stage === "rating");
    var ended = ["done", "partner_left", "released", "failed", "left"].indexOf(stage) >= 0;
    show("stage-end", ended);
    clearInterval(waitTimer);
    if (stage === "situation") { renderSituation(s); }
    if (stage === "waiting") { renderWaiting(s); }
    if (stage === "chatting") { renderChat(s, before); }
    if (stage === "rating") { renderRating(s); }
    if (ended) {
      $("end-heading").textContent = stage === "done" ? t("thank_you") : t("chat_ended");
      $("end-message").textContent = s.message;
      show("finish-link", true);
      show("arena-reveal", !!s.revealed);
      if (s.revealed) { $("arena-reveal").textContent = t("revealed", s.revealed); }
      closedForGood = chatEnded = true;
      if (socket) { socket.close(1000); }
    }
  }

  // What changed without the worker doing it: a partner arrived, a conversation ended.
  function tellChange(before, s) {
    if (before.stage === "waiting" && s.stage === "chatting") {
      notice(t("partner_arrived"));
      if (document.hidden) { document.title = t("partner_arrived_title") + " · " + baseTitle; }
      return;
    }
    if (before.stage !== "chatting" || before.chat !== "pair") { return; }
    var nextRound = s.stage === "chatting" && s.dialogue !== before.dialogue;
    if (!nextRound && s.stage !== "done") { return; }
    var n = before.utterances.length, round = { round: before.round };
    var why = endedByMe === before.dialogue ? t("you_ended", round) :
      (n + 1 >= before.max_utterances
        ? t("reached", { round: before.round, most: before.max_utterances })
        : t("partner_ended", round));
    notice(nextRound ? why + " " + t("next_round", {
      round: s.round, role: t(s.role === "speaker" ? "speaker" : "listener") }) : why);
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
        span.textContent = feeling(emotion);
        label.appendChild(span);
        box.appendChild(label);
      });
      box.dataset.filled = "1";
      var lim = s.limits;
      $("situation-help").textContent = t(
        lim.situation_min_words > 0 ? "situation_help_range" : "situation_help_most",
        { sentences: lim.situation_max_sentences, least: lim.situation_min_words,
          most: lim.situation_max_words });
    }
  }

  function renderWaiting(s) {
    waitedBase = s.waited_s || 0;
    waitedAt = Date.now();
    $("wait-limit").textContent = t("wait_limit",
      { minutes: Math.round(s.lobby_timeout_s / 60 * 10) / 10 });
    var tick = function () {
      var seconds = Math.floor(waitedBase + (Date.now() - waitedAt) / 1000);
      $("waited").textContent = Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
    };
    tick();
    waitTimer = setInterval(tick, 1000);
  }

  function renderChat(s, before) {
    if (s.chat === "side_by_side") { renderArena(s, before); return; }
    var ed = s.chat === "pair";
    var seen = before && before.stage === "chatting" && before.dialogue === s.dialogue
      ? before.utterances.length : -1;
    if (ed) {
      $("chat-heading").textContent = t("pair_heading", { round: s.round, rounds: s.rounds,
        role: t(s.role === "speaker" ? "speaker" : "listener") });
      $("role-help").textContent = t(s.role === "speaker" ? "role_speaker" : "role_listener");
      show("my-situation", !!s.situation);
      if (s.situation) {
        $("my-situation").textContent = t("my_situation",
          { emotion: feeling(s.situation.emotion), text: s.situation.text });
      }
    } else {
      $("chat-heading").textContent = t("bot_heading", { turns: s.turns, least: s.min_turns });
      $("role-help").textContent = t("bot_help");
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
      who.textContent = t(u.mine ? "you" : (ed ? "partner" : "chatbot")) + ": ";
      li.appendChild(who);
      li.appendChild(document.createTextNode(u.text));
      list.appendChild(li);
    });
    var n = s.utterances.length;
    $("message-count").textContent = ed
      ? t(n < s.min_utterances ? "pair_count_early" : "pair_count_ready",
        { n: n, least: s.min_utterances, most: s.max_utterances })
      : t(s.turns < s.min_turns ? "bot_count_early" : "bot_count_ready",
        { turns: s.turns, least: s.min_turns, most: s.max_turns });
    var pendingText = outbox.some(function (f) { return f.type === "message"; });
    $("send-button").disabled = !s.your_turn || pendingText;
    var box = $("message-text");
    if (!s.your_turn && document.activeElement === box) { refocus = true; }
    box.disabled = !s.your_turn;

    $("turn-note").textContent = t(s.your_turn ? "your_message" :
      (ed ? "wait_partner" : (s.pending ? "wait_bot" : "label_first")));
    show("end-button", !!s.can_end);
    $("end-button").textContent = t(ed ? "end_pair" : "end_bot");
    if (!ed) {
      if (partial && (s.failed || partial.index <= lastIndex(s))) { partial = null; }
      showPartial();
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
        var opened = labelForm.hidden;
        show("label-form", true);
        if (opened) { reveal(labelForm); }
      } else {
        show("label-form", false);
        labelForm.dataset.index = "";
      }
    }
    // New turns in view (the composer sits below them), unless a label question just did.
    if (n > seen && $("label-form").hidden) { reveal($("message-form")); }
    // The box lost the focus only because it was disabled (or a saved label form hid):
    // give it back when it opens, unless the worker has since moved elsewhere.
    if (s.your_turn && refocus) {
      refocus = false;
      var at = document.activeElement;
      if (!at || at === document.body || at.closest("[hidden]")) { box.focus({ preventScroll: true }); }
    }
  }

  // The arena: both panes, the vote after each exchange (or once at the end), the composer.
  function renderArena(s, before) {
    $("chat-heading").textContent = t("arena_heading", { turns: s.turns, most: s.max_turns });
    $("role-help").textContent = t("arena_help");
    s.sides.forEach(function (side) {
      var list = $("pane-" + side.side);
      list.innerHTML = "";
      side.utterances.forEach(function (u) {
        var li = document.createElement("li");
        li.className = "turn " + (u.mine ? "listener" : "speaker");
        li.dataset.index = u.index;
        if (u.mine) {
          var who = document.createElement("span");
          who.className = "who";
          who.textContent = t("you") + ": ";
          li.appendChild(who);
        }
        li.appendChild(document.createTextNode(u.text));
        list.appendChild(li);
      });
      show("typing-" + side.side, side.pending);
    });
    showSidePartials(s);
    var voteForm = $("vote-form");
    var asking = s.needs_vote !== null && s.needs_vote !== undefined;
    var turn = asking ? s.needs_vote : (s.can_vote_end ? s.turns : null);
    if (turn !== null && voteForm.dataset.turn !== String(turn)) {
      voteForm.reset();
      fieldError("vote-error", $("vote-fieldset"), "");
      var box = $("vote-choices");
      if (box.dataset.filled !== "1") {
        s.choices.forEach(function (c) {
          var label = document.createElement("label");
          label.className = "choice";
          var input = document.createElement("input");
          input.type = "radio"; input.name = "winner"; input.value = c[0];
          label.appendChild(input);
          var span = document.createElement("span");
          span.textContent = c[1];
          label.appendChild(span);
          box.appendChild(label);
        });
        box.dataset.filled = "1";
      }
      $("vote-question").textContent = s.question;
      show("vote-reason-box", !!s.reason);
    }
    voteForm.dataset.turn = turn === null ? "" : String(turn);
    $("vote-submit").textContent = t(asking ? "vote" : "vote_end");
    var opened = voteForm.hidden && turn !== null;
    show("vote-form", turn !== null);
    if (opened) { reveal(voteForm); }
    var pendingText = outbox.some(function (f) { return f.type === "message"; });
    $("send-button").disabled = !s.your_turn || pendingText;
    var box2 = $("message-text");
    if (!s.your_turn && document.activeElement === box2) { refocus = true; }
    box2.disabled = !s.your_turn;
    // A vote that is the only thing left to do takes the focus the disabled box lost (a
    // keyboard would otherwise start from nowhere), unless the worker has since moved.
    if (opened && !s.your_turn) {
      var lost = document.activeElement;
      if (!lost || lost === document.body || lost.disabled || lost.closest("[hidden]")) {
        var first = voteForm.querySelector('input[name="winner"]');
        if (first) { first.focus({ preventScroll: true }); }
      }
    }
    $("turn-note").textContent = t(s.your_turn ? "your_message" : (s.pending ? "wait_both" :
      (asking ? "vote_first" : "arena_last")));
    $("message-count").textContent = t("arena_count", { turns: s.turns, least: s.min_turns,
      most: s.max_turns });
    show("end-button", !!s.can_end);
    $("end-button").textContent = t("end_arena");
    if (s.your_turn && refocus) {
      refocus = false;
      var at = document.activeElement;
      if (!at || at === document.body || at.closest("[hidden]")) { box2.focus({ preventScroll: true }); }
    }
  }
  if ($("vote-form")) {
    $("vote-form").addEventListener("submit", function (event) {
      event.preventDefault();
      var chosen = document.querySelector('input[name="winner"]:checked');
      var frame = { type: "vote", turn: parseInt($("vote-form").dataset.turn, 10),
                    winner: chosen ? chosen.value : "" };
      if (state && state.reason) { frame.reason = $("vote-reason").value; }
      refocus = true;
      send(frame);
    });
  }

  // The closing questions (interactive SSA with end ratings): one radio group 1–5 each, so
  // arrow keys move within a question and Tab between them, as with the labels.
  function renderRating(s) {
    var box = $("rating-questions");
    if (box.dataset.filled === "1") { return; }
    var r = s.end_ratings;
    r.questions.forEach(function (q) {
      var set = document.createElement("fieldset");
      set.id = "rate-" + q.key;
      var legend = document.createElement("legend");
      legend.textContent = q.text;
      set.appendChild(legend);
      var err = document.createElement("p");
      err.className = "field-error"; err.id = "rate-error-" + q.key; err.hidden = true;
      set.appendChild(err);
      set.setAttribute("aria-describedby", err.id);
      var choices = document.createElement("div");
      choices.className = "choices";
      for (var n = r.scale[0]; n <= r.scale[1]; n++) {
        var label = document.createElement("label");
        label.className = "choice";
        var input = document.createElement("input");
        input.type = "radio"; input.name = "rate-" + q.key; input.value = String(n);
        label.appendChild(input);
        var span = document.createElement("span");
        span.textContent = String(n);
        label.appendChild(span);
        choices.appendChild(label);
      }
      set.appendChild(choices);
      box.appendChild(set);
    });
    box.dataset.filled = "1";
    show("rating-comment-box", !!r.comment);
    reveal($("stage-rating"));
    $("rating-heading").focus({ preventScroll: true });
  }
  function ratingErrors(fields) {
    var reasons = [];
    (state.end_ratings ? state.end_ratings.questions : []).forEach(function (q) {
      fieldError("rate-error-" + q.key, $("rate-" + q.key), fields[q.key]);
      if (fields[q.key]) { reasons.push(q.text + " " + fields[q.key]); }
    });
    if (fields.comment) { reasons.push(fields.comment); }
    return reasons;
  }
  // An answered question's refusal is no longer true: clear it.
  $("rating-form").addEventListener("change", function (event) {
    var key = event.target.name && event.target.name.indexOf("rate-") === 0
      ? event.target.name.slice(5) : "";
    if (key) { fieldError("rate-error-" + key, $("rate-" + key), ""); }
  });
  $("rating-form").addEventListener("submit", function (event) {
    event.preventDefault();
    if (!state || !state.end_ratings) { return; }
    var ratings = {};
    state.end_ratings.questions.forEach(function (q) {
      var chosen = document.querySelector('input[name="rate-' + q.key + '"]:checked');
      if (chosen) { ratings[q.key] = parseInt(chosen.value, 10); }
    });
    send({ type: "rating", ratings: ratings, comment: $("rating-comment").value });
  });

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
    notice("");
  });
  // Enter sends, Shift+Enter starts a new line; the Enter that sends is no keystroke of the
  // text (this listener comes before track()'s).
  $("message-text").addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) { return; }
    event.preventDefault();
    event.stopImmediatePropagation();
    $("send-button").click();  // does nothing while sending is not allowed
  });
  $("end-button").addEventListener("click", function () {
    if (state) {
      endedByMe = state.dialogue;
      send({ type: "end", dialogue: state.dialogue });
    }
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
    refocus = true;  // the form hides once saved: the focus goes back to the message box
    send(frame);
  });
  track("situation", $("situation-text"));
  track("message", $("message-text"));
  $("situation-text").addEventListener("input", function () {
    var words = $("situation-text").value.trim().split(/\s+/).filter(Boolean).length;
    $("situation-count").textContent = t(words === 1 ? "words_one" : "words_other", { n: words });
  });
  connect();
})();
