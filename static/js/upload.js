// The upload page: files and folders dropped or picked are sent one at a
// time (XHR, for its upload progress), each with its own row: a progress
// bar while it is sent, then what the server said (saved, its indexing
// stage, or why it was refused). Configured by the data-* attributes of
// [data-upload-url]; no inline script (the CSP allows none).
(function () {
  "use strict";
  const card = document.querySelector("[data-upload-url]");
  if (!card) return;
  const text = card.dataset;
  const list = card.querySelector(".upload-list");
  const summary = card.querySelector(".upload-summary");
  const zone = card.querySelector(".drop-zone");
  const maxBytes = Number(text.maxBytes);
  const queue = [];
  let sending = false;
  let done = 0;
  let total = 0;

  function row(path) {
    const item = document.createElement("li");
    item.className = "upload-file";
    const head = document.createElement("div");
    head.className = "upload-file-head";
    const chip = document.createElement("span");
    chip.className = "stage-chip stage-waiting";
    chip.textContent = text.textWaiting;
    const name = document.createElement("span");
    name.className = "path";
    name.textContent = path;
    const note = document.createElement("span");
    note.className = "upload-note muted";
    head.append(chip, " ", name, " ", note);
    const bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", path);
    item.append(head, bar);
    list.append(item);
    return { item, chip, note, bar };
  }

  function setStage(view, stage, label) {
    view.chip.className = "stage-chip stage-" + stage;
    view.chip.textContent = label;
  }

  function add(file, path) {
    const view = row(path);
    total += 1;
    if (file.size > maxBytes) {
      setStage(view, "refused", text.textFailed);
      view.note.textContent = text.textTooBig;
      view.bar.remove();
      finishOne();
      return;
    }
    queue.push({ file, path, view });
    next();
  }

  function finishOne() {
    done += 1;
    summary.textContent = text.textSummary.replace("%(done)s", done).replace("%(total)s", total);
    if (done === total && window.htmx) {
      // Their indexing stages, live, in the progress panel below.
      const panel = document.getElementById("progress");
      if (panel) window.htmx.ajax("GET", text.progressUrl, { target: panel, swap: "outerHTML" });
    }
  }

  function next() {
    if (sending || !queue.length) return;
    sending = true;
    const { file, path, view } = queue.shift();
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("path", path);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", text.uploadUrl);
    xhr.setRequestHeader("X-CSRFToken", text.csrf);
    xhr.setRequestHeader("Accept", "application/json");
    setStage(view, "uploading", text.textUploading);
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) view.bar.value = Math.round((100 * event.loaded) / event.total);
    });
    xhr.addEventListener("load", () => {
      let answer = {};
      try {
        answer = JSON.parse(xhr.responseText);
      } catch (e) {
        answer = { ok: false, error: xhr.statusText };
      }
      if (answer.ok) {
        view.bar.value = 100;
        setStage(view, answer.stage || "uploaded", answer.stageLabel || answer.message);
        view.note.textContent = answer.message;
        view.item.dataset.stage = answer.stage || "uploaded";
      } else {
        setStage(view, "refused", text.textFailed);
        view.note.textContent = answer.error || xhr.statusText;
        view.item.dataset.stage = "refused";
        view.bar.remove();
      }
      sending = false;
      finishOne();
      next();
    });
    xhr.addEventListener("error", () => {
      setStage(view, "refused", text.textFailed);
      view.note.textContent = text.textNetwork;
      view.item.dataset.stage = "refused";
      sending = false;
      finishOne();
      next();
    });
    xhr.send(form);
  }

  // A dropped folder: its files, each with its path inside the folder.
  function walk(entry, prefix) {
    if (entry.isFile) {
      entry.file((file) => add(file, prefix + file.name));
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      const read = () =>
        reader.readEntries((entries) => {
          if (!entries.length) return;
          entries.forEach((child) => walk(child, prefix + entry.name + "/"));
          read(); // readEntries answers in batches
        });
      read();
    }
  }

  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    const items = Array.from(event.dataTransfer.items || []);
    const entries = items.map((item) => item.webkitGetAsEntry && item.webkitGetAsEntry()).filter(Boolean);
    if (entries.length) entries.forEach((entry) => walk(entry, ""));
    else Array.from(event.dataTransfer.files).forEach((file) => add(file, file.name));
  });
  card.querySelectorAll("input[type=file]").forEach((input) => {
    input.addEventListener("change", () => {
      Array.from(input.files).forEach((file) => add(file, file.webkitRelativePath || file.name));
      input.value = "";
    });
  });
})();
