// The parent side of the preview: opening a card re-targets the preview by
// postMessage (no reload for the same file) and shows what it found.
(function () {
  "use strict";

  const frame = document.getElementById("preview-frame");
  const empty = document.getElementById("preview-empty");
  if (!frame) return;
  const origin = window.location.origin;
  let frameSource = null; // source id of the document in the frame
  let frameReady = false;
  let pending = null; // a locate waiting for the frame to be ready
  let counter = 0;
  const cardsByRequest = new Map();

  // Translated words come from the page (data-text-*).
  const texts = frame.closest(".preview-pane").dataset;
  const STATUS_TEXT = { exact: texts.textExact, fuzzy: texts.textFuzzy, not_found: texts.textNotFound };

  function send(request) {
    frame.contentWindow.postMessage({ type: "mnote:locate", requestId: request.requestId, locator: request.locator }, origin);
  }

  // On a narrow screen the preview is a full-screen sheet over the results,
  // closed by its Back button, Escape or the browser's back.
  const pane = frame.closest(".preview-pane");
  const narrow = window.matchMedia("(max-width: 900px)");
  const back = document.getElementById("sheet-back");
  function openSheet() {
    if (!narrow.matches || pane.classList.contains("sheet-open")) return;
    pane.classList.add("sheet-open");
    document.body.classList.add("sheet-shown");
    history.pushState({ mnoteSheet: true }, "");
    if (back) back.focus();
  }
  function closeSheet(fromHistory) {
    if (!pane.classList.contains("sheet-open")) return;
    pane.classList.remove("sheet-open");
    document.body.classList.remove("sheet-shown");
    if (!fromHistory && history.state && history.state.mnoteSheet) history.back();
    const active = document.querySelector(".source-card.active");
    if (active) active.scrollIntoView({ block: "nearest" });
  }
  if (back) back.addEventListener("click", () => closeSheet(false));
  window.addEventListener("popstate", () => closeSheet(true));
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") closeSheet(false); });

  function open(card) {
    const locator = JSON.parse(card.dataset.locator);
    const requestId = `locate-${++counter}`;
    cardsByRequest.set(requestId, card);
    document.querySelectorAll(".source-card.active").forEach((c) => c.classList.remove("active"));
    card.classList.add("active");
    const status = card.querySelector(".located");
    if (status) status.textContent = "…";
    const request = { requestId, locator };
    frame.hidden = false;
    if (empty) empty.hidden = true;
    openSheet();
    if (frameReady && frameSource === locator.sourceId) {
      send(request);
    } else {
      // Another document: load it in the same frame, locate once it says ready.
      pending = request;
      frameReady = false;
      frameSource = locator.sourceId;
      frame.src = card.dataset.previewUrl;
    }
  }

  window.addEventListener("message", (event) => {
    if (event.origin !== origin || event.source !== frame.contentWindow) return;
    const message = event.data || {};
    if (message.type === "mnote:ready") {
      frameReady = true;
      frameSource = message.sourceId;
      if (pending && pending.locator.sourceId === message.sourceId) send(pending);
      pending = null;
    } else if (message.type === "mnote:located") {
      const card = cardsByRequest.get(message.requestId);
      if (!card) return;
      const status = card.querySelector(".located");
      if (status) {
        status.textContent = STATUS_TEXT[message.status] || message.status;
        status.dataset.status = message.status;
        status.title = `score ${message.score}`;
      }
      card.dataset.locatedStatus = message.status;
    }
  });

  document.addEventListener("click", (event) => {
    if (event.target.closest(".copy-link")) return; // copy_link.js
    const badge = event.target.closest("a.badge-link");
    const card = badge ? document.getElementById(badge.getAttribute("href").slice(1)) : event.target.closest(".source-card[data-locator]");
    if (!card) return;
    if (event.target.closest("a") && !event.target.closest(".open-card, .badge-link")) return; // other links keep working
    event.preventDefault();
    if (badge) card.scrollIntoView({ block: "nearest", behavior: "smooth" });
    open(card);
  });
})();
