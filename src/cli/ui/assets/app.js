// toolsmith ui: the decisions (sent with the page's CSRF header) and the live updates (the
// daemon's events, as server-sent events). Embedded in the binary; no other script runs.
"use strict";

const csrf = document.querySelector('meta[name="csrf"]')?.content || "";

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-toolsmith-csrf": csrf },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  const answer = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}

function say(text, ok) {
  const outcome = document.getElementById("outcome");
  if (!outcome) return;
  outcome.textContent = text;
  outcome.className = ok === null ? "busy" : ok ? "pass" : "fail";
}

function wireDecisions() {
  const section = document.querySelector("section.decide");
  if (!section) return;
  const id = section.dataset.candidate;
  document.getElementById("approve")?.addEventListener("submit", async (e) => {
    e.preventDefault();
    const form = e.target;
    const grants = [...form.querySelectorAll('input[name="grant"]:checked')].map((i) => i.value);
    const note = form.querySelector('input[name="note"]').value;
    try {
      const landed = await post(`/candidate/${encodeURIComponent(id)}/approve`, { grants, note });
      say(`approved ${landed.name} ${landed.version} as ${landed.tag} (commit ${String(landed.commit).slice(0, 12)}, approved by ${landed.approved_by})`, true);
      section.querySelectorAll("button").forEach((b) => (b.disabled = true));
    } catch (err) {
      say(err.message, false);
    }
  });
  document.getElementById("accept-spec")?.addEventListener("submit", async (e) => {
    e.preventDefault();
    section.querySelectorAll("button").forEach((b) => (b.disabled = true));
    say("accepted; generating…", null);
    try {
      const report = await post(`/candidate/${encodeURIComponent(id)}/accept-spec`, {});
      const c = (report.candidates || [])[0] || {};
      say(`spec accepted: ${c.tool || id} ${c.version || ""} is ${c.state || "generated"}`, c.state !== "failed");
    } catch (err) {
      say(err.message, false);
      section.querySelectorAll("button").forEach((b) => (b.disabled = false));
    }
  });
  document.getElementById("reject-spec")?.addEventListener("submit", async (e) => {
    e.preventDefault();
    const reason = e.target.querySelector('textarea[name="reason"]').value;
    try {
      const report = await post(`/candidate/${encodeURIComponent(id)}/reject-spec`, { reason });
      const c = (report.candidates || [])[0] || {};
      say(`spec rejected: ${c.reason || reason}`, true);
      section.querySelectorAll("button").forEach((b) => (b.disabled = true));
    } catch (err) {
      say(err.message, false);
    }
  });
  document.getElementById("reject")?.addEventListener("submit", async (e) => {
    e.preventDefault();
    const reason = e.target.querySelector('textarea[name="reason"]').value;
    try {
      const done = await post(`/candidate/${encodeURIComponent(id)}/reject`, { reason });
      say(`rejected ${done.rejected.branch}: ${done.reason}`, true);
      section.querySelectorAll("button").forEach((b) => (b.disabled = true));
    } catch (err) {
      say(err.message, false);
    }
  });
}

// A list page is fetched again and its main part replaced when an event may change it; a
// candidate page being read is never replaced under the reader: a banner says it changed.
// A burst of events makes one fetch at a time, and one more after it when events came meanwhile.
let refreshing = false;
let again = false;
async function refreshMain() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    do {
      again = false;
      const response = await fetch(location.pathname, { credentials: "same-origin" });
      if (!response.ok) break;
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = doc.getElementById("main");
      if (fresh) document.getElementById("main").replaceWith(fresh);
    } while (again);
  } finally {
    refreshing = false;
  }
}

function follow() {
  const live = document.getElementById("live");
  const events = new EventSource("/events");
  events.onopen = () => { live.textContent = "live"; live.className = "live on"; };
  events.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
  events.onmessage = (message) => {
    let event;
    try { event = JSON.parse(message.data); } catch { return; }
    if (event.kind === "ui.no-daemon") {
      live.textContent = "no live updates";
      live.title = (event.data && event.data.message) || "the daemon's events cannot be followed";
      live.className = "live off";
      return;
    }
    live.textContent = `live · ${event.kind}`;
    const relevant = /^(candidate\.|tool\.|registry\.|pattern|health|mine)/.test(event.kind);
    if (!relevant) return;
    const onCandidate = document.querySelector("section.decide, .state");
    if (location.pathname.startsWith("/candidate/")) {
      const id = location.pathname.split("/")[2];
      if (event.data && event.data.id === id && onCandidate && !document.getElementById("changed")) {
        const banner = document.createElement("p");
        banner.id = "changed";
        banner.className = "banner";
        banner.textContent = `This candidate changed (${event.kind}): reload to see it.`;
        document.getElementById("main").prepend(banner);
      }
    } else {
      refreshMain();
    }
  };
}

wireDecisions();
follow();
