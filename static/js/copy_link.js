// "Copy" buttons: put on the clipboard the absolute URL of data-url, or the
// text of the element whose id is data-copy-from (a token, a configuration).
(function () {
  "use strict";
  document.addEventListener("click", (event) => {
    const button = event.target.closest(".copy-link");
    if (!button) return;
    const source = button.dataset.copyFrom && document.getElementById(button.dataset.copyFrom);
    const text = source ? source.textContent : new URL(button.dataset.url, window.location.origin).href;
    button.dataset.copied = text;
    const done = () => {
      const pane = document.querySelector("[data-text-copied]");
      if (pane) button.textContent = pane.dataset.textCopied;
    };
    if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, done);
    else done();
  });
})();
