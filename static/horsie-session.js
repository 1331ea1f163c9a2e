/*
 * Horsie session page: the transcript, live.
 *
 * The page arrives with the newest entries rendered by the server. From then on the
 * transcript changes only through the session's websocket, so every watcher of the session
 * sees the same log. The socket is opened with ?after=<last seq shown>; on a drop it
 * reconnects with backoff from the last seq shown, so nothing is missed or shown twice.
 *
 * Entries of plain-text kinds are built from <template>s the server rendered with the same
 * partial as everything else, and filled with textContent only. Kinds with markdown are
 * fetched from the server already rendered and sanitised: no model or user text is ever
 * turned into HTML here. The state panel (tasks, timers, questions) is built the same way
 * from each `state` event.
 *
 * While a compaction runs, a `compacting` start event shows "Compacting… N s", counted up
 * from its `since`; the end event hides it. A failed turn's banner is part of the meter's
 * partial (swapped out of band), so it comes and goes with every meter refresh.
 *
 * Compaction moves the cut: when a boundary arrives, entries before its first kept seq are
 * marked as no longer in the model's context, and older boundaries lose their edit form.
 * Forms that branch or edit (summary, fork, rewind, handoff) post with fetch; an error comes
 * back as a partial shown in place, a new session as an HX-Redirect the page follows. The
 * context view is a server-rendered partial, fetched when shown and after every change.
 *
 * Reply text streams as deltas that carry their stream's id and their offset in its text.
 * On (re)connect the server sends the text in flight as one delta at offset 0, which overlaps
 * what the bubble already shows: only text past what is shown is appended, so a reconnect
 * neither doubles nor cuts the reply.
 */
(function () {
  "use strict";

  const page = document.getElementById("session-page");
  if (!page) return;

  const transcript = document.getElementById("transcript");
  const entries = document.getElementById("entries");
  const streaming = document.getElementById("streaming");
  const streamBody = streaming.querySelector(".body");
  const badge = document.getElementById("status-badge");
  const live = document.getElementById("live");
  const form = document.getElementById("composer");
  const textarea = document.getElementById("composer-text");
  const entryUrl = page.dataset.entryUrl; // ends in /0/: the seq goes there
  const panel = document.getElementById("state-panel");
  const contextView = document.getElementById("context-view");
  const tabs = [...page.querySelectorAll('[role="tab"][data-view]')];
  let lastSeq = Number(page.dataset.lastSeq) || 0;
  let cut = Number(page.dataset.cut) || 1; // the latest boundary's first kept seq
  let latestBoundary = Number(page.dataset.latestBoundary) || 0;
  let view = "transcript";
  let stateSeq = Number(panel.dataset.stateSeq) || 0;
  let socket = null;
  let retries = 0;
  let pinger = null;
  // The stream the bubble shows, and how much of its text; `ended`: a stream whose reply
  // entry has arrived, so a late delta of it cannot bring the bubble back.
  const stream = { id: null, shown: 0, ended: null };

  // --- the transcript -------------------------------------------------------------------

  function nearBottom() {
    return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 120;
  }

  function keepingScroll(change) {
    const stick = nearBottom();
    change();
    if (stick) transcript.scrollTop = transcript.scrollHeight;
  }

  function insertBySeq(element, seq) {
    let before = null;
    for (const other of entries.querySelectorAll(":scope > .entry")) {
      if (Number(other.dataset.seq) > seq) { before = other; break; }
    }
    entries.insertBefore(element, before);
  }

  function fill(element, field, value) {
    for (const slot of element.querySelectorAll(`[data-field="${field}"]`)) {
      slot.textContent = value == null ? "" : String(value);
    }
  }

  // Whether an entry lies before the cut, and whether a boundary is no longer the latest.
  function mark(element) {
    const seq = Number(element.dataset.seq);
    element.classList.toggle("out-of-context", seq < cut);
    if (element.classList.contains("entry-boundary")) {
      element.classList.toggle("superseded", seq < latestBoundary);
    }
  }

  function moveCut(boundary) {
    if (boundary.seq < latestBoundary) return;
    latestBoundary = boundary.seq;
    cut = Number((boundary.data || {}).first_kept_seq) || cut;
    for (const element of entries.querySelectorAll(":scope > .entry")) mark(element);
    document.getElementById("view-note").textContent =
      `Entries before #${cut} are no longer sent to the model.`;
  }

  function fromTemplate(entry) {
    const data = entry.data || {};
    if (entry.kind === "notice" && data.code === "handoff") return null; // markdown: fetched
    const template = document.querySelector(`template[data-kind="${entry.kind}"]`);
    if (!template) return null;
    const element = template.content.firstElementChild.cloneNode(true);
    element.dataset.seq = entry.seq;
    element.dataset.error = data.is_error ? "true" : "";
    mark(element);
    for (const input of element.querySelectorAll('input[name="seq"]')) input.value = entry.seq;
    fill(element, "seq", entry.seq);
    fill(element, "author", entry.author || "someone");
    fill(element, "content", entry.content);
    fill(element, "name", data.name);
    fill(element, "code", data.code);
    fill(element, "asked", data.asked);
    return element;
  }

  function placeholder(entry) {
    const element = document.createElement("article");
    element.className = "entry pending entry-" + entry.kind;
    element.dataset.seq = entry.seq;
    const body = document.createElement("div");
    body.className = "body plain";
    body.textContent = entry.content || "";
    element.append(body);
    mark(element);
    return element;
  }

  async function rendered(element, seq) {
    try {
      const response = await fetch(entryUrl.replace(/\/0\/$/, `/${seq}/`), {
        headers: { "HX-Request": "true" },
        credentials: "same-origin",
      });
      if (!response.ok) return;
      const holder = document.createElement("template");
      holder.innerHTML = await response.text();
      const fresh = holder.content.firstElementChild;
      if (fresh) mark(fresh); // the cut may have moved while it was on its way
      keepingScroll(() => element.replaceWith(holder.content));
    } catch (error) {
      console.warn("Horsie: could not render entry", seq, error);
    }
  }

  function showEntry(entry) {
    if (entry.seq <= lastSeq || entries.querySelector(`[data-seq="${entry.seq}"]`)) return;
    lastSeq = entry.seq;
    if (entry.kind === "assistant") endStream();
    const element = fromTemplate(entry) || placeholder(entry);
    keepingScroll(() => insertBySeq(element, entry.seq));
    if (entry.kind === "boundary") moveCut(entry);
    if (element.classList.contains("pending")) rendered(element, entry.seq);
    // A reply, a boundary or a notice can move the meter, raise the failure banner or clear it.
    if (["assistant", "boundary", "notice"].includes(entry.kind)) refreshMeter();
  }

  function showDelta(event) {
    const text = String(event.text || "");
    if (typeof event.offset !== "number" || !event.stream) {
      appendText(text); // an older server: plain deltas, appended as they come
      return;
    }
    if (event.stream === stream.ended) return;
    if (event.stream !== stream.id) {
      clearStream();
      stream.id = event.stream;
    }
    const end = event.offset + text.length;
    if (end <= stream.shown) return; // all of it is shown already
    // Past what is shown: append the new tail. A gap (offset beyond what is shown) cannot
    // come from the server's ordering; if it ever did, showing the text beats hiding it.
    appendText(text.slice(Math.max(0, stream.shown - event.offset)));
    stream.shown = end;
  }

  function appendText(text) {
    if (!text) return;
    keepingScroll(() => {
      streaming.hidden = false;
      streamBody.append(document.createTextNode(text));
    });
  }

  function clearStream() {
    streaming.hidden = true;
    streamBody.textContent = "";
    stream.id = null;
    stream.shown = 0;
  }

  function endStream() {
    if (stream.id) stream.ended = stream.id;
    clearStream();
  }

  function showStatus(status) {
    badge.textContent = status;
    badge.className = "badge status-" + status;
    page.dataset.status = status;
    if (status !== "running") {
      endStream();
      if (status === "idle") compacting.hidden = true; // an end event missed while away
      refreshMeter();
    }
  }

  function refreshMeter() {
    document.body.dispatchEvent(new CustomEvent("horsie:refresh"));
    if (view === "context") loadContext();
  }

  // --- compaction in progress: "Compacting… 12 s", counted from when it started -----------

  const compacting = document.getElementById("compacting");

  function showCompacting(event) {
    compacting.hidden = event.phase !== "start";
    compacting.dataset.since = event.phase === "start" ? event.since || new Date().toISOString() : "";
    tickCompacting();
    if (event.phase === "end") refreshMeter();
  }

  function tickCompacting() {
    const since = Date.parse(compacting.dataset.since);
    if (compacting.hidden || Number.isNaN(since)) return;
    fill(compacting, "elapsed", Math.max(0, Math.floor((Date.now() - since) / 1000)));
  }

  // --- the context view -----------------------------------------------------------------

  function showView(name) {
    view = name;
    for (const tab of tabs) tab.setAttribute("aria-selected", String(tab.dataset.view === name));
    transcript.hidden = name !== "transcript";
    contextView.hidden = name !== "context";
    if (name === "context") loadContext();
  }

  async function loadContext() {
    const url = document.getElementById("tab-context").dataset.url;
    try {
      const response = await fetch(url, {
        headers: { "HX-Request": "true" },
        credentials: "same-origin",
      });
      if (!response.ok) {
        contextView.textContent = `The context could not be loaded (the server said ${response.status}).`;
        return;
      }
      const holder = document.createElement("template");
      holder.innerHTML = await response.text();
      contextView.replaceChildren(holder.content);
    } catch (error) {
      contextView.textContent = "The context could not be loaded: the server could not be reached.";
    }
  }

  for (const tab of tabs) tab.addEventListener("click", () => showView(tab.dataset.view));

  // --- forms that edit a summary or start a new session ---------------------------------

  async function submitInline(form, submitter) {
    const shown = (message) => { form.querySelector(".form-error").textContent = message; };
    form.classList.add("sending");
    try {
      const response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form, submitter),
        headers: { "HX-Request": "true" },
        credentials: "same-origin",
      });
      const target = response.headers.get("HX-Redirect");
      if (target) {
        window.location.assign(target);
        return;
      }
      if ([200, 400, 409, 413].includes(response.status)) {
        const holder = document.createElement("template");
        holder.innerHTML = await response.text();
        form.querySelector(".form-error").replaceWith(holder.content);
        const details = form.closest("details");
        if (response.ok && details) details.open = false; // done: what it made arrives live
      } else {
        shown(`Not done: the server said ${response.status}.`);
      }
    } catch (error) {
      shown("Not done: the server could not be reached.");
    } finally {
      form.classList.remove("sending");
    }
  }

  page.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-inline]");
    if (!form) return;
    event.preventDefault();
    if (!form.classList.contains("sending")) submitInline(form, event.submitter);
  });

  // --- the memory panel: a refresh never throws away a choice not applied yet -------------

  function memoryChoicePending() {
    const panel = document.getElementById("memory-panel");
    return !!panel && [...panel.querySelectorAll("option")].some((o) => o.selected !== o.defaultSelected);
  }

  document.body.addEventListener("htmx:oobBeforeSwap", (event) => {
    if (event.detail.target.id === "memory-panel" && memoryChoicePending()) event.preventDefault();
  });

  // --- the state panel ------------------------------------------------------------------

  const lists = {
    tasks: document.getElementById("task-list"),
    timers: document.getElementById("timer-list"),
    questions: document.getElementById("question-list"),
  };
  const TASK_STATUS = { pending: "pending", in_progress: "in progress", done: "done" };
  const answered = new Set(); // questions answered from this page, not yet settled

  function fromStateTemplate(name) {
    const template = document.querySelector(`template[data-state="${name}"]`);
    return template.content.firstElementChild.cloneNode(true);
  }

  function taskElement(task) {
    const element = fromStateTemplate("task");
    element.dataset.status = task.status;
    fill(element, "text", task.text);
    fill(element, "status", `(${TASK_STATUS[task.status] || task.status})`);
    return element;
  }

  function timerElement(timer) {
    const element = fromStateTemplate("timer");
    element.dataset.key = timer.id;
    element.dataset.due = timer.due_at;
    fill(element, "message", timer.message);
    const clock = element.querySelector(".timer-countdown");
    clock.setAttribute("datetime", timer.due_at);
    tick(element);
    return element;
  }

  function questionElement(question) {
    const element = fromStateTemplate("question");
    element.dataset.key = question.id;
    fill(element, "question", question.question);
    for (const input of element.querySelectorAll('input[name="question"]')) {
      input.value = question.id;
    }
    const options = element.querySelector(".answer-options");
    const blank = options.querySelector(".option");
    for (const option of question.options || []) {
      const button = blank.cloneNode(true);
      button.value = option;
      button.textContent = option;
      options.append(button);
    }
    blank.remove();
    if (!(question.options || []).length) options.remove();
    return element;
  }

  // Keyed items (timers, questions) that are still there are kept as they are, so a half
  // typed answer or a focused input survives every state event.
  function reconcile(list, items, build) {
    const wanted = new Set(items.map((item) => item.id));
    const kept = new Map();
    for (const element of [...list.children]) {
      if (wanted.has(element.dataset.key)) kept.set(element.dataset.key, element);
      else element.remove();
    }
    let cursor = list.firstElementChild;
    for (const item of items) {
      const element = kept.get(item.id);
      if (element && element === cursor) {
        cursor = cursor.nextElementSibling;
        continue;
      }
      list.insertBefore(element || build(item), cursor);
    }
  }

  function showCount(name, items) {
    panel.querySelector(`[data-count="${name}"]`).textContent = String(items.length);
    panel.querySelector(`[data-empty="${name}"]`).hidden = items.length > 0;
  }

  function showState(state) {
    if (!state || typeof state !== "object" || (state.seq || 0) < stateSeq) return;
    stateSeq = state.seq || 0;
    const tasks = state.tasks || [];
    const timers = state.timers || [];
    const questions = state.questions || [];
    lists.tasks.replaceChildren(...tasks.map(taskElement));
    reconcile(lists.timers, timers, timerElement);
    reconcile(lists.questions, questions, questionElement);
    for (const id of [...answered]) {
      if (!questions.some((question) => question.id === id)) answered.delete(id);
    }
    for (const element of lists.questions.children) {
      element.classList.toggle("answered", answered.has(element.dataset.key));
    }
    showCount("tasks", tasks);
    showCount("timers", timers);
    showCount("questions", questions);
    document.getElementById("pending-compact").hidden = !state.pending_compact;
  }

  function clock(seconds) {
    const days = Math.floor(seconds / 86400);
    const hours = Math.floor((seconds % 86400) / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    const pad = (n) => String(n).padStart(2, "0");
    const rest = `${pad(minutes)}:${pad(seconds % 60)}`;
    if (days) return `in ${days}d ${hours}:${rest}`;
    return hours ? `in ${hours}:${rest}` : `in ${minutes}:${pad(seconds % 60)}`;
  }

  function tick(element) {
    const due = Date.parse(element.dataset.due);
    const countdown = element.querySelector(".timer-countdown");
    if (Number.isNaN(due)) return;
    const left = Math.ceil((due - Date.now()) / 1000);
    countdown.textContent = left > 0 ? clock(left) : "due";
    countdown.title = "Fires at " + new Date(due).toLocaleString();
    element.classList.toggle("due", left <= 0);
  }

  function tickAll() {
    for (const element of lists.timers.children) tick(element);
  }

  // --- answering questions --------------------------------------------------------------

  async function answer(form, submitter) {
    const question = form.closest(".question");
    const body = new FormData(form, submitter);
    question.classList.add("sending");
    try {
      const response = await fetch(form.action, {
        method: "POST",
        body,
        headers: { "HX-Request": "true" },
        credentials: "same-origin",
      });
      if ([200, 400, 409, 413].includes(response.status)) {
        const holder = document.createElement("template");
        holder.innerHTML = await response.text();
        question.querySelector(".answer-error").replaceWith(holder.content);
      } else {
        answerError(question, `The answer was not sent (the server said ${response.status}).`);
      }
      // Settled already when the state event came first: then the question is gone.
      if (response.ok && question.isConnected) {
        answered.add(question.dataset.key);
        question.classList.add("answered");
        for (const input of question.querySelectorAll('input[name="text"]')) input.value = "";
      }
    } catch (error) {
      answerError(question, "The answer was not sent: the server could not be reached.");
    } finally {
      question.classList.remove("sending");
    }
  }

  function answerError(question, message) {
    question.querySelector(".answer-error").textContent = message;
  }

  panel.addEventListener("submit", (event) => {
    const form = event.target.closest("form.answer");
    if (!form) return;
    event.preventDefault();
    if (form.closest(".question").classList.contains("sending")) return;
    answer(form, event.submitter);
  });

  // --- the websocket --------------------------------------------------------------------

  function setLive(state) {
    live.dataset.live = state;
    live.querySelector(".live-label").textContent = state === "open" ? "live" : state;
  }

  function onMessage(message) {
    let event;
    try { event = JSON.parse(message.data); } catch { return; }
    if (event.type === "entry") showEntry(event.entry);
    else if (event.type === "delta") showDelta(event);
    else if (event.type === "status") showStatus(event.status);
    else if (event.type === "state") showState(event.state);
    else if (event.type === "compacting") showCompacting(event);
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}${page.dataset.wsPath}?after=${lastSeq}`);
    setLive(retries ? "reconnecting" : "connecting");
    socket.addEventListener("open", () => {
      retries = 0;
      setLive("open");
      pinger = setInterval(() => socket.send('{"type": "ping"}'), 25000);
    });
    socket.addEventListener("message", onMessage);
    socket.addEventListener("close", onClose);
  }

  function onClose(event) {
    clearInterval(pinger);
    // The bubble stays: on reconnect the text in flight arrives at offset 0 and only what
    // is new is appended; if the reply ended meanwhile, its entry or the status clears it.
    // Refused for good: not found or not yours (4404), or no longer logged in (4401).
    if (event.code === 4404 || event.code === 4401) {
      setLive(event.code === 4404 ? "gone" : "logged out");
      return;
    }
    const delay = Math.min(10000, 500 * 2 ** retries) * (0.5 + Math.random() / 2);
    retries += 1;
    setLive("reconnecting");
    setTimeout(connect, delay);
  }

  // --- the composer ---------------------------------------------------------------------

  let sentText = null;

  // Slash-command completion: the session's commands (built-in and the team's), fetched
  // once, listed under the composer while the text is a bare "/name".
  const complete = document.getElementById("composer-complete");
  let commands = null;
  let picked = -1;
  async function completions() {
    if (commands === null) {
      commands = [];
      const response = await fetch(form.dataset.commandsUrl, { credentials: "same-origin" });
      if (response.ok) commands = await response.json();
    }
    return commands;
  }
  function showCompletions(list) {
    complete.replaceChildren(...list.map((command, i) => {
      const item = document.createElement("li");
      item.setAttribute("role", "option");
      item.id = `complete-${i}`;
      item.dataset.name = command.name;
      item.setAttribute("aria-selected", String(i === picked));
      const usage = document.createElement("code");
      usage.textContent = command.usage;
      item.append(usage, ` ${command.description}`);
      return item;
    }));
    complete.hidden = list.length === 0;
    textarea.setAttribute("aria-expanded", String(!complete.hidden));
    textarea.setAttribute("aria-activedescendant", picked >= 0 ? `complete-${picked}` : "");
  }
  async function updateCompletions() {
    const match = /^\/(\S*)$/.exec(textarea.value);
    if (!match) { picked = -1; showCompletions([]); return; }
    const all = await completions();
    const list = all.filter((c) => c.name.startsWith(match[1]));
    picked = Math.min(picked, list.length - 1);
    showCompletions(list);
  }
  function choose(name) {
    textarea.value = `/${name} `;
    picked = -1;
    showCompletions([]);
    textarea.focus();
  }
  textarea.addEventListener("input", updateCompletions);
  complete.addEventListener("mousedown", (event) => {
    const item = event.target.closest("li[data-name]");
    if (item) { event.preventDefault(); choose(item.dataset.name); }
  });
  textarea.addEventListener("keydown", (event) => {
    const items = complete.hidden ? [] : [...complete.children];
    if (items.length && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      picked = (picked + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      items.forEach((item, i) => item.setAttribute("aria-selected", String(i === picked)));
      textarea.setAttribute("aria-activedescendant", `complete-${picked}`);
      return;
    }
    if (items.length && event.key === "Escape") { picked = -1; showCompletions([]); return; }
    if (items.length && (event.key === "Tab" || (event.key === "Enter" && picked >= 0))) {
      event.preventDefault();
      choose(items[Math.max(picked, 0)].dataset.name);
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("htmx:beforeRequest", () => { sentText = textarea.value; });
  form.addEventListener("horsie:sent", () => {
    // Keep whatever was typed while the message was on its way.
    if (textarea.value === sentText) textarea.value = "";
    textarea.focus();
  });

  transcript.scrollTop = transcript.scrollHeight;
  tickAll();
  setInterval(() => { tickAll(); tickCompacting(); }, 1000);
  connect();
})();
