// The URL safelight serve prints carries the token after '#', which no browser sends
// to a server and no log records: fill the form from it, drop it from the address bar
// and the history, and sign in.
"use strict";
(function () {
  const match = /^#token=(.+)$/.exec(window.location.hash);
  if (!match) return;
  history.replaceState(null, "", window.location.pathname + window.location.search);
  const input = document.getElementById("login-token");
  const form = document.getElementById("login-form");
  if (!input || !form) return;
  input.value = decodeURIComponent(match[1]);
  form.submit();
})();
