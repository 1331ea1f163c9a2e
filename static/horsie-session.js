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
 * turned into HTML here.
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
  let lastSeq = Number(page.dataset.lastSeq) || 0;
  let socket = null;
  let retries = 0;
  let pinger = null;

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

  function fromTemplate(entry) {
    const template = document.querySelector(`template[data-kind="${entry.kind}"]`);
    if (!template) return null;
    const element = template.content.firstElementChild.cloneNode(true);
    const data = entry.data || {};
    element.dataset.seq = entry.seq;
    element.dataset.error = data.is_error ? "true" : "";
    element.classList.toggle("out-of-context", !entry.in_context);
    fill(element, "seq", entry.seq);
    fill(element, "author", entry.author || "someone");
    fill(element, "content", entry.content);
    fill(element, "name", data.name);
    fill(element, "code", data.code);
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
    if (element.classList.contains("pending")) rendered(element, entry.seq);
    if (entry.kind === "assistant") refreshMeter();
  }

  function appendDelta(text) {
    keepingScroll(() => {
      if (streaming.hidden) {
        streamBody.textContent = "";
        streaming.hidden = false;
      }
      streamBody.append(document.createTextNode(text));
    });
  }

  function endStream() {
    streaming.hidden = true;
    streamBody.textContent = "";
  }

  function showStatus(status) {
    badge.textContent = status;
    badge.className = "badge status-" + status;
    page.dataset.status = status;
    if (status !== "running") {
      endStream();
      refreshMeter();
    }
  }

  function refreshMeter() {
    document.body.dispatchEvent(new CustomEvent("horsie:refresh"));
  }

  // --- the websocket --------------------------------------------------------------------

  function setLive(state) {
    live.dataset.live = state;
    live.querySelector(".live-label").textContent = state === "open" ? "live" : state;
  }

  function onMessage(message) {
    let event;
    try { event = JSON.parse(message.data); } catch { return; }
    if (event.type === "entry") showEntry(event.entry);
    else if (event.type === "delta") appendDelta(event.text);
    else if (event.type === "status") showStatus(event.status);
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
    endStream(); // deltas missed while away are not replayed; the entry will be
    if (event.code === 4404) {
      setLive("gone");
      return;
    }
    const delay = Math.min(10000, 500 * 2 ** retries) * (0.5 + Math.random() / 2);
    retries += 1;
    setLive("reconnecting");
    setTimeout(connect, delay);
  }

  // --- the composer ---------------------------------------------------------------------

  let sentText = null;

  textarea.addEventListener("keydown", (event) => {
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
  connect();
})();
