// The space page polls for notes changed elsewhere (an agent, a teammate); while a note is
// open for editing, it waits, so the refresh never replaces what is being typed.
document.body.addEventListener("htmx:beforeRequest", (event) => {
  if (event.detail.elt.id === "notes-poll" && document.querySelector("#note-list .editing")) {
    event.preventDefault();
  }
});
