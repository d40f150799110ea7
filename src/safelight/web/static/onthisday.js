// On this day: BlurHash placeholders until each thumbnail loads, a Live Photo's or
// motion photo's video on hover, the preview (left/right to move, Esc to close), and
// the day's next pages of /api/on-this-day as the grid scrolls to its end (or on "Show
// more"). The first page is the server's (#on-this-day-data); each next one is added
// to the grid (DOM nodes, text as text: no markup from the library) and to the preview.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("on-this-day-data").textContent);
  const section = document.getElementById("on-this-day");
  const more = document.getElementById("more");
  const preview = document.getElementById("preview");
  const image = document.getElementById("preview-image");
  const video = document.getElementById("preview-video");
  const caption = document.getElementById("preview-caption");
  const position = document.getElementById("preview-position");

  // Every picture in the preview's order: a burst's (or a similar group's) members in
  // its place, primary first.
  const entries = [];
  const firstEntryOf = new Map();
  function addEntries(page) {
    for (const year of page.years) {
      for (const asset of year.assets) {
        firstEntryOf.set(asset.id, entries.length);
        const group = asset.burst || asset.similar;
        const members = group ? group.members : [];
        if (members.length > 0) {
          members.forEach(function (member, n) {
            const base = n === 0 ? asset : {};
            entries.push(Object.assign({ kind: "photo" }, member, base, {
              burst: { index: n + 1, count: members.length, word: asset.burst ? "burst" : "similar" },
            }));
          });
        } else {
          entries.push(Object.assign({}, asset, { burst: null }));
        }
      }
    }
  }
  addEntries(data);
  let current = -1;

  function paint(tile) {
    const canvas = tile.querySelector("canvas.placeholder");
    if (tile.dataset.blurhash && canvas && window.safelightBlurhash) {
      window.safelightBlurhash.paint(canvas, tile.dataset.blurhash);
    }
    const thumb = tile.querySelector("img.thumb");
    if (!thumb) return;
    const loaded = function () { tile.classList.add("loaded"); };
    if (thumb.complete && thumb.naturalWidth > 0) loaded();
    else thumb.addEventListener("load", loaded, { once: true });
  }

  function hoverVideo(tile) {
    if (!tile.dataset.video) return;
    if (!(tile.classList.contains("kind-live_photo") || tile.classList.contains("kind-motion_photo"))) return;
    const button = tile.querySelector("button.open");
    tile.addEventListener("mouseenter", function () {
      if (tile.querySelector("video.hover")) return;
      const clip = document.createElement("video");
      clip.className = "hover";
      clip.src = tile.dataset.video;
      clip.muted = true;
      clip.loop = true;
      clip.autoplay = true;
      clip.playsInline = true;
      button.appendChild(clip);
      tile.classList.add("playing");
    });
    tile.addEventListener("mouseleave", function () {
      const clip = tile.querySelector("video.hover");
      if (clip) { clip.pause(); clip.remove(); }
      tile.classList.remove("playing");
    });
  }

  function setUp(tile) {
    paint(tile);
    hoverVideo(tile);
  }

  // --- the next pages: the same markup as the template's (on_this_day.html) ---------

  function element(tag, attributes, text) {
    const node = document.createElement(tag);
    for (const name in attributes) {
      if (attributes[name] !== null && attributes[name] !== undefined) node.setAttribute(name, attributes[name]);
    }
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "";
    const whole = Math.round(seconds);
    return Math.floor(whole / 60) + ":" + String(whole % 60).padStart(2, "0");
  }

  function tileOf(asset) {
    const tile = element("li", {
      "class": "tile kind-" + asset.kind + (asset.burst ? " burst" : "") + (asset.similar ? " similar" : ""),
      "data-asset-id": String(asset.id),
      "data-kind": asset.kind,
      "data-blurhash": asset.blurhash || null,
      "data-video": asset.video || null,
      "data-burst-id": asset.burst ? String(asset.burst.id) : null,
      "data-burst-count": asset.burst ? String(asset.burst.count) : null,
      "data-similar-id": asset.similar ? String(asset.similar.id) : null,
      "data-similar-count": asset.similar ? String(asset.similar.count) : null,
    });
    const when = (asset.captured_shown || "") + (asset.date_note ? " (" + asset.date_note + ")" : "");
    const button = element("button", { type: "button", "class": "open", title: asset.file_name + ", " + when });
    button.appendChild(element("canvas", { "class": "placeholder", width: "32", height: "32", "aria-hidden": "true" }));
    if (asset.thumbnail) {
      button.appendChild(element("img", {
        "class": "thumb", src: asset.thumbnail, alt: asset.file_name, loading: "lazy", decoding: "async",
        width: asset.width && asset.height ? String(asset.width) : null,
        height: asset.width && asset.height ? String(asset.height) : null,
      }));
    } else {
      button.appendChild(element("span", { "class": "no-thumb" }, asset.file_name));
    }
    if (asset.kind === "video") button.appendChild(element("span", { "class": "badge video" }, duration(asset.duration_seconds)));
    if (asset.kind === "live_photo" || asset.kind === "motion_photo") button.appendChild(element("span", { "class": "badge live" }, "LIVE"));
    if (asset.burst) button.appendChild(element("span", { "class": "badge burst-count" }, String(asset.burst.count)));
    if (asset.similar) button.appendChild(element("span", { "class": "badge similar-count", title: asset.similar.count + " similar shots" }, String(asset.similar.count)));
    tile.appendChild(button);
    return tile;
  }

  function yearsAgo(years) { return years === 1 ? "1 year ago" : years + " years ago"; }

  function yearSection(year) {
    const found = document.getElementById("year-" + year.year);
    if (found) return found;
    const node = element("section", {
      "class": "year", id: "year-" + year.year, "data-year": String(year.year), "data-years-ago": String(year.years_ago),
    });
    const heading = element("h2", {}, yearsAgo(year.years_ago) + " ");
    // The year's places, most photographed first, as the server wrote them.
    if (year.places_shown) {
      heading.appendChild(element("span", { "class": "places" }, "· " + year.places_shown));
      heading.appendChild(document.createTextNode(" "));
    }
    heading.appendChild(element("span", { "class": "year-number" }, String(year.year)));
    heading.appendChild(document.createTextNode(" "));
    heading.appendChild(element("span", { "class": "count" }));
    node.appendChild(heading);
    // Who is in the year's photos, as the page's first part says it (onthisday.py).
    if (year.people_line) node.appendChild(element("p", { "class": "year-people" }, year.people_line));
    node.appendChild(element("ul", { "class": "grid" }));
    section.insertBefore(node, more);
    return node;
  }

  // A year's count says "+" while the day's next page may go on with it.
  function recount(node, goesOn) {
    const n = node.querySelectorAll("li.tile").length;
    node.querySelector("h2 .count").textContent = goesOn ? n + "+ items" : (n === 1 ? "1 item" : n + " items");
  }

  let next = more ? more.dataset.next : null;
  let loading = null;

  // The day's next page, added to the grid and the preview; a promise of whether any.
  function loadMore() {
    if (!next) return Promise.resolve(false);
    if (loading) return loading;
    const status = document.getElementById("more-status");
    const url = "/api/on-this-day?date=" + encodeURIComponent(section.dataset.date) +
      "&after=" + encodeURIComponent(next) + "&limit=" + encodeURIComponent(section.dataset.limit);
    more.classList.add("loading");
    status.textContent = "Loading…";
    loading = fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("the next page: HTTP " + response.status);
        return response.json();
      })
      .then(function (page) {
        let last = null;
        for (const year of page.years) {
          last = yearSection(year);
          const grid = last.querySelector("ul.grid");
          for (const asset of year.assets) {
            const tile = tileOf(asset);
            grid.appendChild(tile);
            setUp(tile);
          }
        }
        addEntries(page);
        next = page.next;
        document.querySelectorAll("section.year").forEach(function (node) {
          recount(node, Boolean(next) && node === last);
        });
        status.textContent = "";
        if (!next) more.remove();
        return page.count > 0;
      })
      .catch(function (error) {
        status.textContent = "Could not load more: " + error.message;
        return false;
      })
      .finally(function () {
        loading = null;
        if (more) more.classList.remove("loading");
      });
    return loading;
  }

  if (more) {
    document.getElementById("show-more").addEventListener("click", function () { loadMore(); });
    if ("IntersectionObserver" in window) {
      // Some way before the end comes into view, so the next tiles are there in time.
      const observer = new IntersectionObserver(function (seen) {
        if (seen.some(function (entry) { return entry.isIntersecting; })) {
          loadMore().then(function (added) { if (!next) observer.disconnect(); else if (added) recheck(); });
        }
      }, { rootMargin: "0px 0px 800px 0px" });
      // Still in view after a page (a short page, a tall screen): the observer does not
      // fire again by itself, so look once more.
      const recheck = function () { observer.unobserve(more); observer.observe(more); };
      observer.observe(more);
    }
  }

  function stopVideo() {
    video.pause();
    video.removeAttribute("src");
    video.removeAttribute("poster");
    video.load();
    video.hidden = true;
  }

  function step(by) {
    if (by > 0 && current === entries.length - 1 && next) {
      const from = current;
      loadMore().then(function () { if (current === from) show(from + 1); });
      return;
    }
    show(current + by);
  }

  function show(index) {
    if (entries.length === 0) return;
    current = (index + entries.length) % entries.length;
    const entry = entries[current];
    stopVideo();
    preview.dataset.assetId = String(entry.id);
    preview.dataset.kind = entry.kind || "photo";
    if (entry.kind === "video" && entry.video) {
      image.hidden = true;
      if (entry.preview) video.poster = entry.preview;
      video.src = entry.video;
      video.controls = true;
      video.hidden = false;
      video.play().catch(function () {});
    } else {
      image.src = entry.preview || entry.thumbnail || "";
      image.alt = entry.file_name || "";
      image.hidden = false;
    }
    // The server's words for the time: local, to the second, its offset when known.
    let words = (entry.file_name || "") + " · " + (entry.captured_shown || "");
    if (entry.place_shown) words += " · " + entry.place_shown;
    if (entry.date_note) words += " · " + entry.date_note;
    if (entry.kind === "live_photo" || entry.kind === "motion_photo") words += " · LIVE: tap to play";
    if (entry.read_note) words += " · " + entry.read_note;
    caption.textContent = words;
    let where = (current + 1) + " of " + entries.length;
    if (entry.burst) where += " · " + entry.burst.word + " " + entry.burst.index + " of " + entry.burst.count;
    position.textContent = where;
    preview.hidden = false;
    document.body.classList.add("previewing");
  }

  function playLive() {
    const entry = entries[current];
    if (!entry || !(entry.kind === "live_photo" || entry.kind === "motion_photo") || !entry.video) return;
    video.src = entry.video;
    video.controls = false;
    video.hidden = false;
    image.hidden = true;
    video.play().catch(function () {});
    video.onended = function () { video.hidden = true; image.hidden = false; };
  }

  function close() {
    stopVideo();
    preview.hidden = true;
    current = -1;
    delete preview.dataset.assetId;
    document.body.classList.remove("previewing");
  }

  document.addEventListener("click", function (event) {
    const open = event.target.closest("li.tile button.open");
    if (open) {
      const id = Number(open.closest("li.tile").dataset.assetId);
      if (firstEntryOf.has(id)) show(firstEntryOf.get(id));
      return;
    }
    if (event.target === preview) close();
  });
  image.addEventListener("click", playLive);
  image.addEventListener("mouseenter", playLive);
  document.getElementById("preview-prev").addEventListener("click", function () { step(-1); });
  document.getElementById("preview-next").addEventListener("click", function () { step(1); });
  document.getElementById("preview-close").addEventListener("click", close);
  document.addEventListener("keydown", function (event) {
    if (preview.hidden) return;
    if (event.key === "ArrowLeft") { step(-1); event.preventDefault(); }
    else if (event.key === "ArrowRight") { step(1); event.preventDefault(); }
    else if (event.key === "Escape") { close(); event.preventDefault(); }
  });
  const input = document.getElementById("day-input");
  if (input) input.addEventListener("change", function () {
    if (input.value) input.form.submit();
  });

  document.querySelectorAll("li.tile").forEach(setUp);
})();
