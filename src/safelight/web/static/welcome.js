// The one-time link safelight serve prints carries its token after '#', which no browser
// sends to a server and no log records (ADR 0045). Take it out of the address bar and the
// history, send it, and go on to On this day signed in; the form does the same with a
// token given by hand.
"use strict";
(function () {
  const form = document.getElementById("welcome-form");
  if (!form) return;
  const failed = document.getElementById("welcome-failed");
  const status = document.getElementById("welcome-status");

  function say(message) {
    failed.textContent = message;
    failed.hidden = false;
  }

  async function send(token) {
    status.textContent = "Signing you in…";
    const response = await fetch("/welcome", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ token: token }),
      credentials: "same-origin",
    });
    const answer = await window.safelight.answerOf(response, "error");
    if (response.ok) {
      window.safelight.keepCsrfToken(answer.csrf);
      window.location.replace(answer.next);
      return;
    }
    status.textContent = "This one-time link signs you in as the dashboard's admin.";
    if (response.status === 410) {
      // Used: the server's page says so, with the way to sign in.
      window.location.replace("/welcome");
      return;
    }
    say(answer.error || answer.message || "the dashboard answered " + response.status);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    send(document.getElementById("welcome-token").value.trim());
  });

  const match = /^#token=(.+)$/.exec(window.location.hash);
  if (!match) return;
  history.replaceState(null, "", window.location.pathname + window.location.search);
  send(decodeURIComponent(match[1]));
})();
