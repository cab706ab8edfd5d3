// "Copy link" buttons: put the absolute URL of data-url on the clipboard.
(function () {
  "use strict";
  document.addEventListener("click", (event) => {
    const button = event.target.closest(".copy-link");
    if (!button) return;
    const url = new URL(button.dataset.url, window.location.origin).href;
    button.dataset.copied = url;
    const done = () => {
      const pane = document.querySelector("[data-text-copied]");
      if (pane) button.textContent = pane.dataset.textCopied;
    };
    if (navigator.clipboard) navigator.clipboard.writeText(url).then(done, done);
    else done();
  });
})();
