// The sign-in form, posted by script so the answer can carry the session's CSRF token
// (ADR 0041): the one place it is ever given. It is kept in this origin's localStorage,
// which a page of another port or host cannot read; the pages' buttons send it with
// each action (app.js). Without this script the form still signs in (a 303), and the
// pages' buttons then say to sign in again to act.
"use strict";
(function () {
  const form = document.getElementById("login-form");
  const failed = document.getElementById("login-failed");
  const submit = document.getElementById("login-submit");
  if (!form || !failed || !submit) return;

  function say(text) {
    failed.textContent = text;
    failed.hidden = false;
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    submit.disabled = true;
    try {
      const response = await fetch("/login", {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      const answer = await window.safelight.answerOf(response, "error");
      if (response.ok && answer.csrf) {
        window.safelight.keepCsrfToken(answer.csrf);
        window.location.assign(answer.next || "/");
        return;
      }
      say(answer.error || "the dashboard answered " + response.status);
    } catch (error) {
      say("the dashboard did not answer: try again");
    } finally {
      submit.disabled = false;
    }
  });
})();
