// What every page shares: the buttons that act (data-action: the API URL to POST to),
// sent with the session's CSRF token, and the one-line answer in #flash.
//
// The CSRF token was handed to the sign-in page's script (login.js) and kept in this
// origin's localStorage (ADR 0041): no page carries it. A page without it (signed in by
// a plain form, or the token dropped) offers "sign in again to act" instead.
"use strict";
(function () {
  const KEY = "safelight.csrf";

  function csrfToken() {
    try {
      return window.localStorage.getItem(KEY) || "";
    } catch (error) {
      return "";
    }
  }

  function keepCsrfToken(token) {
    window.localStorage.setItem(KEY, token);
  }

  function canAct() {
    return document.body.dataset.access === "signed-in" && csrfToken() !== "";
  }

  // A button's label: what it does, or how to be able to.
  function actionLabel(label) {
    return csrfToken() ? label : "sign in again to act";
  }

  function signInAgain() {
    const here = window.location.pathname + window.location.search;
    window.location.assign("/login?next=" + encodeURIComponent(here));
  }

  function flash(message, ok) {
    const box = document.getElementById("flash");
    if (!box) return;
    box.textContent = message;
    box.dataset.ok = ok ? "true" : "false";
    box.hidden = false;
  }

  // The JSON a response carries; when it carries none (a proxy's error page, say), one
  // whose `key` says what the dashboard answered. The pages' scripts use it too.
  async function answerOf(response, key) {
    try {
      return await response.json();
    } catch (error) {
      return { [key]: "the dashboard answered " + response.status };
    }
  }

  async function act(url) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "X-CSRF-Token": csrfToken(), Accept: "application/json" },
      credentials: "same-origin",
    });
    const answer = await answerOf(response, "message");
    flash(answer.message || answer.error || "done", response.ok);
    document.dispatchEvent(new CustomEvent("safelight:acted", { detail: answer }));
    return response.ok;
  }

  document.querySelectorAll("button[data-action]").forEach(function (button) {
    button.textContent = actionLabel(button.textContent);
  });

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    event.preventDefault();
    if (!csrfToken()) {
      signInAgain();
      return;
    }
    button.disabled = true;
    act(button.dataset.action).then(function (ok) {
      button.disabled = false;
      // A page that does not refresh itself shows the item as it is now.
      if (ok && document.body.dataset.page !== "queue") window.setTimeout(function () {
        window.location.reload();
      }, 600);
    });
  });

  // Signing out ends the session on the server; its token is of no use any more.
  const signOut = document.getElementById("sign-out");
  if (signOut) signOut.addEventListener("submit", function () {
    window.localStorage.removeItem(KEY);
  });

  window.safelight = {
    act: act,
    flash: flash,
    csrfToken: csrfToken,
    keepCsrfToken: keepCsrfToken,
    canAct: canAct,
    actionLabel: actionLabel,
    answerOf: answerOf,
  };
})();
