// A person's page: rename (or clear the name), merge into another person of the same
// config, and split the chosen faces off to a new person. Each is sent as JSON with the
// session's CSRF token (app.js keeps it); the answer is said in #flash, and the page
// then shows the person as they are (a merge goes to the person merged into).
"use strict";
(function () {
  const section = document.getElementById("person");
  if (!section) return;
  const personId = section.dataset.personId;
  const safelight = window.safelight;

  async function send(path, body) {
    if (!safelight.csrfToken()) {
      safelight.flash("sign in again to act", false);
      return null;
    }
    const response = await fetch("/api/people/" + personId + "/" + path, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRF-Token": safelight.csrfToken(),
      },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    const answer = await safelight.answerOf(response, "error");
    safelight.flash(answer.message || answer.error || "done", response.ok);
    return response.ok ? answer : null;
  }

  function then(answer, where) {
    if (answer) window.setTimeout(function () { window.location.assign(where); }, 600);
  }

  const rename = document.getElementById("rename-form");
  if (rename) rename.addEventListener("submit", async function (event) {
    event.preventDefault();
    const name = document.getElementById("rename-input").value;
    then(await send("name", { name: name }), window.location.pathname);
  });

  const clear = document.getElementById("rename-clear");
  if (clear) clear.addEventListener("click", async function () {
    then(await send("name", { name: null }), window.location.pathname);
  });

  const merge = document.getElementById("merge-form");
  if (merge) merge.addEventListener("submit", async function (event) {
    event.preventDefault();
    const into = Number(document.getElementById("merge-into").value);
    then(await send("merge", { into: into }), "/people/" + into);
  });

  const split = document.getElementById("split-form");
  const chosen = function () {
    return [...document.querySelectorAll("input.face-choice:checked")].map(function (box) {
      return Number(box.value);
    });
  };
  document.addEventListener("change", function (event) {
    if (!event.target.matches("input.face-choice")) return;
    const n = chosen().length;
    document.getElementById("split-submit").disabled = n === 0;
    document.getElementById("split-chosen").textContent =
      n === 0 ? "choose faces below that are someone else" : (n === 1 ? "1 face chosen" : n + " faces chosen");
  });
  if (split) split.addEventListener("submit", async function (event) {
    event.preventDefault();
    const answer = await send("split", { faces: chosen() });
    if (answer) then(answer, "/people/" + answer.person.id);
  });
})();
