// On this day: BlurHash placeholders until each thumbnail loads, a Live Photo's or
// motion photo's video on hover, and the preview (left/right to move, Esc to close),
// read from the page's own copy of /api/on-this-day (#on-this-day-data).
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("on-this-day-data").textContent);
  const preview = document.getElementById("preview");
  const image = document.getElementById("preview-image");
  const video = document.getElementById("preview-video");
  const caption = document.getElementById("preview-caption");
  const position = document.getElementById("preview-position");

  // Every picture in the preview's order: a burst's members in its place, primary first.
  const entries = [];
  const firstEntryOf = new Map();
  for (const year of data.years) {
    for (const asset of year.assets) {
      firstEntryOf.set(asset.id, entries.length);
      const members = asset.burst ? asset.burst.members : [];
      if (members.length > 0) {
        members.forEach(function (member, n) {
          const base = n === 0 ? asset : {};
          entries.push(Object.assign({ kind: "photo" }, member, base, {
            burst: { index: n + 1, count: members.length },
          }));
        });
      } else {
        entries.push(Object.assign({}, asset, { burst: null }));
      }
    }
  }
  let current = -1;

  function paintPlaceholders() {
    document.querySelectorAll("li.tile").forEach(function (tile) {
      const canvas = tile.querySelector("canvas.placeholder");
      if (tile.dataset.blurhash && canvas && window.safelightBlurhash) {
        window.safelightBlurhash.paint(canvas, tile.dataset.blurhash);
      }
      const thumb = tile.querySelector("img.thumb");
      if (!thumb) return;
      const loaded = function () { tile.classList.add("loaded"); };
      if (thumb.complete && thumb.naturalWidth > 0) loaded();
      else thumb.addEventListener("load", loaded, { once: true });
    });
  }

  function hoverVideos() {
    document.querySelectorAll("li.kind-live_photo[data-video], li.kind-motion_photo[data-video]")
      .forEach(function (tile) {
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
      });
  }

  function stopVideo() {
    video.pause();
    video.removeAttribute("src");
    video.removeAttribute("poster");
    video.load();
    video.hidden = true;
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
    let words = (entry.file_name || "") + " · " + (entry.captured_local || "").replace("T", " ");
    if (entry.kind === "live_photo" || entry.kind === "motion_photo") words += " · LIVE: tap to play";
    caption.textContent = words;
    let where = (current + 1) + " of " + entries.length;
    if (entry.burst) where += " · burst " + entry.burst.index + " of " + entry.burst.count;
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
  document.getElementById("preview-prev").addEventListener("click", function () { show(current - 1); });
  document.getElementById("preview-next").addEventListener("click", function () { show(current + 1); });
  document.getElementById("preview-close").addEventListener("click", close);
  document.addEventListener("keydown", function (event) {
    if (preview.hidden) return;
    if (event.key === "ArrowLeft") { show(current - 1); event.preventDefault(); }
    else if (event.key === "ArrowRight") { show(current + 1); event.preventDefault(); }
    else if (event.key === "Escape") { close(); event.preventDefault(); }
  });
  const input = document.getElementById("day-input");
  if (input) input.addEventListener("change", function () {
    if (input.value) input.form.submit();
  });

  paintPlaceholders();
  hoverVideos();
})();
