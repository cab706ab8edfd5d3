// The ask box: Enter asks (Shift+Enter starts a new line), the answer streams
// in as server-sent events read from a fetch (so Stop can abort it), and the
// page follows the conversation's URL. Without this script the form posts
// and the server answers whole.
(function () {
  "use strict";

  const form = document.querySelector("form.ask-form");
  if (!form || !window.fetch || !window.AbortController || !window.TextDecoder) return;
  const turns = document.getElementById("turns");
  const textarea = form.querySelector("textarea[name=q]");
  const askButton = form.querySelector("button[type=submit]");
  const stopButton = form.querySelector("button.stop");
  const conversationInput = form.querySelector("input[name=conversation]");
  let controller = null;
  let turn = null;

  textarea.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (textarea.value.trim()) form.requestSubmit();
    }
  });

  stopButton.addEventListener("click", () => {
    if (controller) controller.abort();
  });

  function busy(on) {
    askButton.disabled = on;
    stopButton.hidden = !on;
    form.setAttribute("aria-busy", on ? "true" : "false");
  }

  function note(text) {
    if (!turn) return;
    const p = document.createElement("p");
    p.className = "muted stopped";
    p.textContent = text;
    turn.querySelector("section.answer").append(p);
    turn.classList.remove("streaming");
  }

  function handle(name, data) {
    if (name === "context") {
      turns.insertAdjacentHTML("beforeend", data.html);
      turn = turns.lastElementChild;
      textarea.value = "";
    } else if (name === "cards" && turn) {
      turn.querySelector(".turn-cards").insertAdjacentHTML("beforeend", data.html);
    } else if (name === "text" && turn) {
      const pending = turn.querySelector(".pending");
      if (!pending) return;
      pending.insertAdjacentHTML("beforebegin", data.html);
      pending.textContent = data.pending;
    } else if (name === "done") {
      if (turn) {
        turn.insertAdjacentHTML("afterend", data.html);
        const finished = turn.nextElementSibling;
        turn.remove();
        turn = finished;
      }
      if (conversationInput) conversationInput.value = data.conversation;
      if (window.location.pathname !== data.url) window.history.pushState({}, "", data.url);
    } else if (name === "problem") {
      if (turn) turn.classList.remove("streaming");
      turns.insertAdjacentHTML("beforeend", data.html);
    }
  }

  // One "event: …\ndata: …" block at a time, as the bytes arrive.
  async function read(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (data) handle(name, JSON.parse(data));
      }
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (controller || !textarea.value.trim()) return;
    controller = new AbortController();
    turn = null;
    busy(true);
    try {
      const response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { Accept: "text/event-stream" },
        credentials: "same-origin",
        signal: controller.signal,
      });
      if (!response.ok || !(response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
        // Invalid input: let the server render the form with its errors.
        controller = null;
        form.submit();
        return;
      }
      await read(response);
    } catch (error) {
      if (error.name === "AbortError") note(form.dataset.textStopped);
      else note(form.dataset.textFailed);
    } finally {
      controller = null;
      busy(false);
    }
  });
})();
