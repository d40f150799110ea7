// What every page shares: the buttons that act (data-action: the API URL to POST to),
// sent with the session's CSRF token, and the one-line answer in #flash.
"use strict";
(function () {
  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  function flash(message, ok) {
    const box = document.getElementById("flash");
    if (!box) return;
    box.textContent = message;
    box.dataset.ok = ok ? "true" : "false";
    box.hidden = false;
  }

  async function act(url) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "X-CSRF-Token": csrfToken(), Accept: "application/json" },
      credentials: "same-origin",
    });
    let answer = {};
    try {
      answer = await response.json();
    } catch (error) {
      answer = { message: "the dashboard answered " + response.status };
    }
    flash(answer.message || answer.error || "done", response.ok);
    document.dispatchEvent(new CustomEvent("safelight:acted", { detail: answer }));
    return response.ok;
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    event.preventDefault();
    button.disabled = true;
    act(button.dataset.action).then(function (ok) {
      button.disabled = false;
      // A page that does not refresh itself shows the item as it is now.
      if (ok && document.body.dataset.page !== "queue") window.setTimeout(function () {
        window.location.reload();
      }, 600);
    });
  });

  window.safelight = { act: act, flash: flash, csrfToken: csrfToken };
})();
