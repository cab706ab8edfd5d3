// The preview's context panel starts folded; whether this user last left it
// open is remembered in the browser, keyed by their account.
(function () {
  "use strict";
  const panel = document.getElementById("context-panel");
  const details = panel && panel.querySelector("details");
  if (!details) return;
  const key = panel.dataset.foldKey;
  try {
    if (localStorage.getItem(key) === "open") details.open = true;
  } catch (e) { /* storage refused: stay folded */ }
  details.addEventListener("toggle", () => {
    try {
      localStorage.setItem(key, details.open ? "open" : "folded");
    } catch (e) { /* nothing to remember with */ }
  });
})();
