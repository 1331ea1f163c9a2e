/* The session page, live. The server renders everything: htmx's `ws` extension swaps the UI socket's
 * `hx-swap-oob` fragments in; forms are `hx-post`. Left here: deltas appended by offset, countdowns,
 * local times, scroll anchoring, the seq to catch up from on (re)connect, the composer's keys. */
(function () {
  "use strict";
  const byId = (id) => document.getElementById(id), page = byId("session-page");
  if (!page) return;
  const [transcript, entries, bubble, live, form, textarea, contextView] =
    ["transcript", "entries", "streaming", "live", "composer", "composer-text", "context-view"].map(byId);
  let opened = false, stick = true;
  // Every (re)connect asks for the entries after the last one shown: no gap, no duplicate.
  const lastSeq = () => Number(entries.querySelector(":scope > article:last-of-type")?.dataset.seq) || 0;
  htmx.createWebSocket = (url) => new WebSocket(`${url}?after=${lastSeq()}`);
  const setLive = (state, label) => { live.dataset.live = state; live.querySelector(".live-label").textContent = label || state; };
  page.addEventListener("htmx:wsConnecting", () => setLive(opened ? "reconnecting" : "connecting"));
  page.addEventListener("htmx:wsOpen", () => { opened = true; setLive("open", "live"); });
  page.addEventListener("htmx:wsClose", (event) => {
    const code = event.detail.event.code;
    if (code === 4404 || code === 4401) return setLive(code === 4404 ? "gone" : "logged out");
    setLive("reconnecting"); // the extension itself retries only 1006 and 1011-1013
    if (![1006, 1011, 1012, 1013].includes(code)) setTimeout(event.detail.socketWrapper.reconnect, 1000);
  });
  // A delta carries its stream's id and offset: only text past what is shown is appended,
  // so the text in flight, sent again at offset 0 on reconnect, is neither doubled nor cut.
  function showDelta(delta) { // while "Compacting…" shows, the text is the summary being written
    const box = byId("compacting").hidden ? bubble : byId("compacting"), body = box.querySelector(".body"), data = box.dataset;
    if (delta.stream === data.ended) return;
    if (delta.stream !== data.stream) {
      body.textContent = "";
      Object.assign(data, { stream: delta.stream, shown: "0" });
    }
    const end = delta.offset + delta.text.length;
    if (end <= Number(data.shown)) return;
    body.append(delta.text.slice(Math.max(0, Number(data.shown) - delta.offset)));
    data.shown = String(end);
    box.hidden = false;
  }
  function streamEnded() { // in the frame that brings the reply's entry, which takes its place
    const ended = byId("stream-ended");
    if (ended.dataset.stream !== bubble.dataset.stream && !ended.dataset.all) return;
    Object.assign(bubble.dataset, { ended: bubble.dataset.stream || ended.dataset.stream, stream: "", shown: "0" });
    bubble.hidden = true;
    bubble.querySelector(".body").textContent = "";
  }
  const nearBottom = () => transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 120;
  const anchor = () => { if (stick) transcript.scrollTop = transcript.scrollHeight; };
  page.addEventListener("htmx:wsBeforeMessage", (event) => {
    stick = nearBottom();
    if (event.detail.message[0] !== "{") return; // HTML: swapped by htmx
    event.preventDefault();
    const data = JSON.parse(event.detail.message);
    if (data.type === "delta") showDelta(data);
    anchor();
  });
  page.addEventListener("htmx:wsAfterMessage", (event) => {
    streamEnded(), markCut(), localTimes(), anchor();
    if (!contextView.hidden && event.detail.message.includes('id="context-meter"')) loadContext();
  });
  function markCut() { // a new boundary moves the cut: older entries leave the model's context
    const { cut, latest } = byId("view-note").dataset;
    for (const entry of entries.querySelectorAll(":scope > .entry")) {
      entry.classList.toggle("out-of-context", +entry.dataset.seq < +cut);
      if (entry.matches(".entry-boundary")) entry.classList.toggle("superseded", +entry.dataset.seq < +latest);
    }
  }
  document.body.addEventListener("htmx:oobBeforeSwap", (event) => { // keep a memory choice not applied yet
    const pending = [...byId("memory-panel").querySelectorAll("option")].some((o) => o.selected !== o.defaultSelected);
    if (event.detail.target.id === "memory-panel" && pending) event.preventDefault();
  });
  page.addEventListener("htmx:beforeSwap", (event) => { // 409: a newer summary, a settled question
    if (event.detail.xhr.status === 409) Object.assign(event.detail, { shouldSwap: true, isError: false });
  });
  page.addEventListener("htmx:afterRequest", (event) => {
    const sent = event.detail.elt, question = sent.closest?.(".question");
    if (event.detail.xhr.status !== 200 || !(sent instanceof HTMLFormElement)) return; // 400, 409, 413: refused
    if (sent.matches(".inline-form") && sent.closest("details")) sent.closest("details").open = false;
    question?.classList.add("answered");
    for (const input of question?.querySelectorAll('input[name="text"]') || []) input.value = "";
  });
  const tabs = [...page.querySelectorAll('[role="tab"][data-view]')];
  const loadContext = () => htmx.ajax("GET", byId("tab-context").dataset.url, { target: contextView, swap: "innerHTML" });
  for (const tab of tabs) tab.addEventListener("click", () => {
    for (const other of tabs) other.setAttribute("aria-selected", String(other === tab));
    transcript.hidden = tab.dataset.view !== "transcript";
    contextView.hidden = tab.dataset.view !== "context";
    if (!contextView.hidden) loadContext();
  });
  // Countdowns (timers, "Compacting… N s") and times in the viewer's own zone.
  const pad = (n) => String(n).padStart(2, "0");
  const clock = (s) => (s >= 86400 ? `${Math.floor(s / 86400)}d ` : "") +
    (s >= 3600 ? `${Math.floor(s % 86400 / 3600)}:${pad(Math.floor(s % 3600 / 60))}` : Math.floor(s / 60)) + `:${pad(s % 60)}`;
  function tick() {
    for (const timer of document.querySelectorAll("#timer-list .timer")) {
      const left = Math.ceil((Date.parse(timer.dataset.due) - Date.now()) / 1000);
      timer.querySelector(".timer-countdown").textContent = left > 0 ? `in ${clock(left)}` : "due";
      timer.classList.toggle("due", left <= 0);
    }
    const compacting = byId("compacting"), since = Date.parse(compacting.dataset.since);
    if (!compacting.hidden && since) compacting.querySelector("[data-field=elapsed]").textContent = Math.max(0, Math.floor((Date.now() - since) / 1000));
  }
  function localTimes() {
    for (const time of document.querySelectorAll("time[data-local]")) {
      const when = new Date(time.dateTime), style = time.dataset.local === "time" ? {} : { dateStyle: "medium" };
      if (Number.isNaN(when.getTime())) continue;
      time.textContent = when.toLocaleString([], { ...style, timeStyle: "short" });
      time.title = when.toLocaleString([], { dateStyle: "full", timeStyle: "long" });
      time.removeAttribute("data-local");
    }
  }
  document.body.addEventListener("htmx:afterSettle", localTimes);
  // The composer: Enter sends, Shift+Enter breaks the line; the server lists the slash
  // commands a bare "/name" starts, and the arrows, Tab and Enter pick one.
  let picked = -1, sentText = null;
  const options = () => [...document.querySelectorAll("#composer-complete [role=option]")];
  function pick(index) {
    picked = index;
    options().forEach((item, i) => item.setAttribute("aria-selected", String(i === picked)));
    textarea.setAttribute("aria-activedescendant", picked >= 0 ? `complete-${picked}` : "");
    textarea.setAttribute("aria-expanded", String(options().length > 0));
  }
  function choose(name) {
    const list = byId("composer-complete");
    if (name) textarea.value = `/${name} `;
    list.hidden = true, list.replaceChildren(), pick(-1), textarea.focus();
  }
  textarea.addEventListener("htmx:afterSwap", () => pick(-1));
  form.addEventListener("mousedown", (event) => {
    const item = event.target.closest("#composer-complete [role=option]");
    if (item) { event.preventDefault(); choose(item.dataset.name); }
  });
  textarea.addEventListener("keydown", (event) => {
    const items = options(), key = event.key;
    if (items.length && (key === "ArrowDown" || key === "ArrowUp")) {
      event.preventDefault();
      return pick((picked + (key === "ArrowDown" ? 1 : items.length - 1)) % items.length);
    }
    if (items.length && key === "Escape") return choose(null);
    if (items.length && (key === "Tab" || (key === "Enter" && picked >= 0))) {
      event.preventDefault();
      return choose(items[Math.max(picked, 0)].dataset.name);
    }
    if (key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("htmx:beforeRequest", (event) => { if (event.detail.elt === form) sentText = textarea.value; });
  form.addEventListener("horsie:sent", () => { if (textarea.value === sentText) textarea.value = ""; textarea.focus(); });
  transcript.scrollTop = transcript.scrollHeight;
  localTimes(), tick(), setInterval(tick, 1000);
})();
