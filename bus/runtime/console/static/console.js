// Coupler console: refresh the live parts of the page in place, post the buttons' actions.
"use strict";
(function () {
  const notice = document.getElementById("notice");
  function say(text, bad) {
    notice.textContent = text;
    notice.className = bad ? "error" : "ok";
  }
  async function refresh() {
    if (document.hidden) return;
    try {
      const response = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) return;
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      doc.querySelectorAll("[data-live]").forEach(function (fresh) {
        const old = document.getElementById(fresh.id);
        if (old && old.innerHTML !== fresh.innerHTML) old.innerHTML = fresh.innerHTML;
      });
    } catch (err) {
      say("cannot reach the daemon: " + err, true);
    }
  }
  document.addEventListener("click", async function (event) {
    const button = event.target.closest("button[data-post]");
    if (!button) return;
    if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) return;
    let body = button.dataset.body ? JSON.parse(button.dataset.body) : {};
    if (button.dataset.bodyFrom) body.body = document.getElementById(button.dataset.bodyFrom).value;
    button.disabled = true;
    try {
      const response = await fetch(button.dataset.post, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      const result = await response.json();
      if (!response.ok) { say(result.error || response.statusText, true); return; }
      say(describe(result), false);
      if (button.dataset.then) { location.href = button.dataset.then + "?done=" + encodeURIComponent(describe(result)); return; }
      await refresh();
    } finally {
      button.disabled = false;
    }
  });
  function describe(result) {
    if ("paused" in result) return "adapter " + result.adapter + (result.paused ? " paused" : " resumed");
    if ("message_id" in result) return "replayed as message " + result.message_id + (result.mapped ? " through mapping " + result.mapped : "");
    if ("purged" in result) return "purged " + result.purged + " dead letter(s)";
    return "done";
  }
  const done = new URLSearchParams(location.search).get("done");
  if (done) say(done, false);
  setInterval(refresh, 1500);
})();
