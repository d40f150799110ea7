// /account: the password form is sent by this script, as JSON with the session's CSRF
// token; setting a password ends every session of the user, and the answer is this
// browser's new one (its CSRF token kept as a sign-in keeps it).
"use strict";
(function () {
  const form = document.getElementById("password-form");
  if (!form) return;
  const failed = document.getElementById("account-failed");

  function value(id) {
    const input = document.getElementById(id);
    return input ? input.value : "";
  }

  function say(message) {
    failed.textContent = message;
    failed.hidden = false;
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    failed.hidden = true;
    if (value("password-new") !== value("password-again")) {
      say("The two new passwords differ: type the same one twice.");
      return;
    }
    const response = await fetch("/account", {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRF-Token": window.safelight.csrfToken(),
      },
      body: JSON.stringify({ current: value("password-current"), password: value("password-new") }),
      credentials: "same-origin",
    });
    const answer = await window.safelight.answerOf(response, "error");
    if (!response.ok) {
      say(answer.error || answer.message || "the dashboard answered " + response.status);
      return;
    }
    window.safelight.keepCsrfToken(answer.csrf);
    window.location.replace(answer.next);
  });
})();
