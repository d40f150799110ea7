// The queue page, live: every few seconds it reads /api/status (the page's own data)
// and redraws the counts, the running items with their lease left, and the failures,
// without reloading the page.
"use strict";
(function () {
  const section = document.getElementById("queue");
  const seconds = Number(section.dataset.refreshSeconds || "2");
  const canAct = document.body.dataset.access === "signed-in";

  function cell(text, className) {
    const td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text === null || text === undefined ? "" : String(text);
    return td;
  }

  function when(text) {
    return text ? String(text).replace("T", " ").replace(/\.\d+/, "") : "";
  }

  function link(id) {
    const td = document.createElement("td");
    const a = document.createElement("a");
    a.href = "/items/" + id;
    a.textContent = String(id);
    td.appendChild(a);
    return td;
  }

  function button(label, url) {
    const td = document.createElement("td");
    if (canAct) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.action = url;
      b.textContent = window.safelight.actionLabel(label);
      td.appendChild(b);
    }
    return td;
  }

  function empty(columns, text) {
    const tr = document.createElement("tr");
    tr.className = "empty";
    const td = cell(text);
    td.colSpan = columns;
    tr.appendChild(td);
    return tr;
  }

  function drawCounts(status) {
    const body = document.querySelector("#counts tbody");
    const byKind = new Map();
    for (const row of status.counts) {
      if (!byKind.has(row.kind)) byKind.set(row.kind, {});
      byKind.get(row.kind)[row.status] = Number(row.count);
    }
    const rows = [];
    for (const kind of Array.from(byKind.keys()).sort()) {
      const tr = document.createElement("tr");
      tr.dataset.kind = kind;
      tr.appendChild(cell(kind));
      for (const s of status.statuses) {
        const td = cell(byKind.get(kind)[s] || 0);
        td.dataset.status = s;
        tr.appendChild(td);
      }
      rows.push(tr);
    }
    body.replaceChildren(...(rows.length ? rows : [empty(status.statuses.length + 1, "the queue is empty")]));
    document.querySelectorAll("#totals th[data-status]").forEach(function (th) {
      th.textContent = String(status.totals[th.dataset.status] || 0);
    });
  }

  function drawRunning(status) {
    const rows = status.running.map(function (r) {
      const tr = document.createElement("tr");
      tr.dataset.itemId = String(r.id);
      tr.dataset.status = "running";
      if (r.held) tr.dataset.held = "true";
      if (r.storage_config_id) tr.dataset.configId = r.storage_config_id;
      tr.appendChild(link(r.id));
      tr.appendChild(cell(r.kind));
      tr.appendChild(cell(r.root_path ? r.root_path + " (" + r.owner + ")" : ""));
      tr.appendChild(cell(r.worker_id));
      tr.appendChild(cell(r.attempt));
      // Held: claimed beside its Worker's last outcome, not started yet (ADR 0069).
      tr.appendChild(cell(r.held ? "not yet: held" : when(r.started_at)));
      const lease = cell(r.lease_expired ? "expired" : Math.round(r.lease_seconds_left) + " s", "lease");
      lease.dataset.leaseSecondsLeft = String(r.lease_seconds_left);
      tr.appendChild(lease);
      tr.appendChild(r.cancel_requested ? cell("cancel requested") : button("cancel", "/api/items/" + r.id + "/cancel"));
      return tr;
    });
    document.querySelector("#running tbody").replaceChildren(...(rows.length ? rows : [empty(8, "nothing is running")]));
  }

  function drawFailures(status) {
    const rows = status.failures.map(function (r) {
      const tr = document.createElement("tr");
      tr.dataset.itemId = String(r.id);
      tr.dataset.status = "failed";
      tr.appendChild(link(r.id));
      tr.appendChild(cell(r.kind));
      tr.appendChild(cell(r.storage_config_id));
      tr.appendChild(cell(when(r.finished_at)));
      tr.appendChild(cell(r.error, "error-text"));
      tr.appendChild(button("retry", "/api/items/" + r.id + "/retry"));
      return tr;
    });
    document.querySelector("#failures tbody").replaceChildren(...(rows.length ? rows : [empty(6, "no failures")]));
  }

  // Queued items and no Worker to run them: say so, and how to start one.
  function drawNoWorker(status) {
    const note = document.getElementById("no-worker");
    note.textContent = status.no_worker || "";
    note.hidden = !status.no_worker;
  }

  async function refresh() {
    try {
      const response = await fetch("/api/status", { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(String(response.status));
      const status = await response.json();
      drawCounts(status);
      drawRunning(status);
      drawFailures(status);
      drawNoWorker(status);
      document.getElementById("status-time").textContent = when(status.now);
      section.dataset.refreshed = String(Number(section.dataset.refreshed || "0") + 1);
      document.getElementById("live-status").classList.remove("stale");
    } catch (error) {
      document.getElementById("live-status").classList.add("stale");
    }
  }

  document.addEventListener("safelight:acted", refresh);
  window.setInterval(refresh, seconds * 1000);
})();
