// Synapse console: one page over the public API, same origin, `Authorization: Bearer <user JWT>`.
//
// Rules this file keeps:
// - data from the API is only ever text: textContent and createElement, never innerHTML (the page's
//   Content-Security-Policy turns on Trusted Types, so an HTML sink would throw anyway);
// - the token comes from the sign-in form or the URL fragment (#token=…, removed from the address bar
//   at once), lives in this tab's sessionStorage at most, goes in the Authorization header only and
//   is never logged or put in a URL.
"use strict";

const TOKEN_KEY = "synapse.console.token";
const MIND_KEY = "synapse.console.mind";
const PAGE = 25;

const state = {
  token: null,
  claims: null,
  mind: "default",
  minds: [],
  view: "memories",
  search: null, // the query of the search shown, or null for the list
  feed: null, // the list's paging: {stages, index, cursor, done}
  history: null, // the memory whose history is shown
  busy: false,
  exporting: null, // the export being prepared: {id, since, timer}, or null
};

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- elements (text only)

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = String(value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name in node && typeof value !== "string") node[name] = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

// the day a memory is about, in the mind's timezone (the one its relative dates were read in and the
// chat prompt dates it in)
function day(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  try {
    return date.toLocaleDateString(undefined, { dateStyle: "medium", timeZone: mindTimezone() });
  } catch (err) {
    return date.toLocaleDateString(undefined, { dateStyle: "medium" }); // a zone this browser lacks
  }
}

// A memory's date: when what it says was true (valid_at), else when it was stored (created_at).
function dated(m) {
  const valid = Boolean(m.valid_at);
  const iso = valid ? m.valid_at : m.created_at;
  if (!iso) return null;
  return el("time", {
    class: `when ${valid ? "valid" : "stored"}`,
    datetime: iso,
    title: valid ? `True from ${when(iso)}` : `Stored ${when(iso)} (no date of its own)`,
    text: valid ? `dated ${day(iso)}` : `stored ${day(iso)}`,
  });
}

// ---------------------------------------------------------------- the API

class ApiError extends Error {
  constructor(status, code, message, details, retryAfter) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code || "";
    this.details = Array.isArray(details) ? details : [];
    this.retryAfter = retryAfter;
  }
}

function mindRoute(path) {
  return path === "/memory" || path.startsWith("/memory/") || path.startsWith("/memory?");
}

async function call(method, path, { body, query } = {}) {
  if (tokenExpired(state.claims)) throw new ApiError(401, "unauthorized", "The token has expired.");
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") params.set(k, v);
    const text = params.toString();
    if (text) url += `?${text}`;
  }
  const headers = { Authorization: `Bearer ${state.token}`, Accept: "application/json" };
  if (mindRoute(path) && state.mind) headers["X-Mind-Id"] = state.mind;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
      redirect: "error",
      referrerPolicy: "no-referrer",
    });
  } catch (err) {
    throw new ApiError(0, "network", "The API could not be reached.");
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (err) {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(
      response.status,
      error.code,
      error.message || (data && data.message),
      error.details,
      response.headers.get("Retry-After"),
    );
  }
  return data;
}

function place(loc) {
  // ["body", "tags", 0] -> "tags 1"; ["query", "limit"] -> "limit"
  const parts = (loc || []).filter((p, i) => !(i === 0 && ["body", "query", "path", "header"].includes(p)));
  return parts.map((p) => (typeof p === "number" ? `#${p + 1}` : p)).join(" ") || "the request";
}

function seconds(value, fallback) {
  const n = Number.parseInt(value, 10);
  return Number.isFinite(n) && n >= 0 ? `${n} second${n === 1 ? "" : "s"}` : fallback;
}

// What a person is told, for any failure: [sentence, detail lines]
function explain(err) {
  if (!(err instanceof ApiError)) return ["Something unexpected went wrong in the console. Reload the page and try again.", []];
  const said = err.message ? ` (The API said: “${err.message}”)` : "";
  switch (err.status) {
    case 0:
      return ["Cannot reach the Synapse API — check your connection (or that the server is running) and try again.", []];
    case 400:
      return [`The API could not read that request.${said}`, []];
    case 401:
      return ["Your sign-in has expired — sign in again.", []];
    case 403:
      return [`You are not allowed to do that.${said}`, []];
    case 404:
      return [`Not found — it may have been deleted, or it belongs to another mind.${said}`, []];
    case 409:
      return [`That conflicts with what is already stored.${said}`, []];
    case 413:
      return ["That is too large to send: the API accepts at most 256 KiB.", []];
    case 422:
      return [
        "Some of what was entered is not accepted:",
        err.details.length ? err.details.map((d) => `${place(d.loc)}: ${d.msg}`) : [err.message],
      ];
    case 429:
      return [`Too many requests — wait ${seconds(err.retryAfter, "a moment")} and try again.`, []];
    case 503:
      return [
        `The memory service is unavailable for a moment (its database or Gemini). Try again in ${seconds(err.retryAfter, "a few seconds")}.`,
        [],
      ];
    default:
      if (err.status >= 500) return ["Something went wrong on the server's side. Try again; if it keeps happening, tell whoever runs this Synapse.", []];
      return [`The API answered ${err.status}.${said}`, []];
  }
}

function notify(text, lines = [], ok = false) {
  const notice = $("notice");
  notice.replaceChildren(el("span", { text }));
  if (lines.length) notice.append(el("ul", {}, lines.map((line) => el("li", { text: line }))));
  notice.classList.toggle("ok", ok);
  notice.setAttribute("role", ok ? "status" : "alert");
  notice.hidden = false;
}

function clearNotice() {
  $("notice").hidden = true;
  $("notice").replaceChildren();
}

function fail(err) {
  if (err instanceof ApiError && err.status === 401) {
    signOut(explain(err)[0]);
    return;
  }
  const [text, lines] = explain(err);
  notify(text, lines);
}

// Run an action: one at a time for its button, every failure explained.
async function act(button, work) {
  if (button) button.disabled = true;
  try {
    await work();
  } catch (err) {
    fail(err);
  } finally {
    if (button) button.disabled = false;
  }
}

// ---------------------------------------------------------------- the token

function decodeClaims(token) {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    return claims && typeof claims === "object" ? claims : null;
  } catch (err) {
    return null;
  }
}

function tokenExpired(claims) {
  return Boolean(claims && typeof claims.exp === "number" && claims.exp * 1000 <= Date.now());
}

function tokenFromFragment() {
  const hash = window.location.hash;
  if (!hash || hash.length < 2) return null;
  const params = new URLSearchParams(hash.slice(1));
  const token = params.get("token");
  if (token === null) return null;
  // out of the address bar (and of this entry of the history) before anything else happens
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", window.location.pathname + window.location.search + (rest ? `#${rest}` : ""));
  return token.trim();
}

function signOut(message) {
  stopExport();
  resetExportView();
  state.token = null;
  state.claims = null;
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch (err) {
    /* storage may be off */
  }
  $("app").hidden = true;
  $("who").hidden = true;
  clearNotice();
  $("signin").hidden = false;
  const msg = $("signin-message");
  msg.textContent = message || "";
  msg.hidden = !message;
  $("token").value = "";
  $("token").focus();
}

async function signIn(token) {
  token = (token || "").trim();
  const claims = decodeClaims(token);
  if (!claims) {
    signOut(
      token.startsWith("gts_")
        ? "That is an agent's API key. The console needs a user's sign-in: paste a JWT."
        : "That does not look like a JWT (three parts separated by dots). Paste the whole token.",
    );
    return;
  }
  if (tokenExpired(claims)) {
    signOut("Your sign-in has expired — sign in again.");
    return;
  }
  state.token = token;
  state.claims = claims;
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch (err) {
    /* storage may be off: the token then lives in this page only */
  }
  try {
    await loadMinds();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      signOut(explain(err)[0]);
      return;
    }
    if (err instanceof ApiError && err.status === 403) {
      signOut("That token was refused for this console (it needs a user's JWT, not an agent's key).");
      return;
    }
    // the API may be down: still show the console, with the reason
    fail(err);
  }
  $("signin").hidden = true;
  $("signin-message").hidden = true;
  $("app").hidden = false;
  $("who").hidden = false;
  $("user").textContent = typeof claims.sub === "string" ? claims.sub : "";
  show("memories");
}

// ---------------------------------------------------------------- minds and identity

async function loadMinds() {
  const data = await call("GET", "/minds");
  state.minds = data.minds || [];
  let saved = null;
  try {
    saved = sessionStorage.getItem(MIND_KEY);
  } catch (err) {
    saved = null;
  }
  const known = new Set(state.minds.map((m) => m.mind_id));
  state.mind = known.has(state.mind) ? state.mind : known.has(saved) ? saved : "default";
  fillMindSelect($("mind"), state.mind, true);
  fillMindSelect($("key-mind"), state.mind, false);
}

function currentMind() {
  return state.minds.find((m) => m.mind_id === state.mind) || null;
}

function mindTimezone() {
  const mind = currentMind();
  return (mind && mind.timezone) || "UTC";
}

function mindName(id) {
  const mind = state.minds.find((m) => m.mind_id === id);
  return mind ? mind.name : id;
}

// a mind's memories against its quota: "1,234 / 100,000 memories"
function usage(m) {
  const n = (x) => Number(x).toLocaleString("en-US");
  return m.quota ? `${n(m.memories)} / ${n(m.quota.memories)} memories` : `${m.memories}`;
}

function fillMindSelect(select, chosen, counts) {
  select.replaceChildren(
    ...state.minds.map((m) =>
      el("option", {
        value: m.mind_id,
        text: `${m.name}${m.mind_id === "default" ? " · default" : ""}${counts ? ` (${usage(m)})` : ""}`,
        selected: m.mind_id === chosen,
      }),
    ),
  );
  select.value = chosen;
}

async function loadIdentity() {
  const sub = state.claims && state.claims.sub;
  const target = $("identity");
  if (typeof sub !== "string" || !sub) {
    target.textContent = "(the token names no user)";
    return;
  }
  const data = await call("GET", `/memory/identity/${encodeURIComponent(sub)}`);
  target.textContent = data.identity || "No identity line yet in this mind.";
  target.classList.toggle("status", !data.identity);
}

// ---------------------------------------------------------------- views

function show(view) {
  state.view = view;
  for (const tab of document.querySelectorAll(".tab")) {
    if (tab.dataset.view === view || (view === "history" && tab.dataset.view === "memories")) {
      tab.setAttribute("aria-current", "page");
    } else tab.removeAttribute("aria-current");
  }
  for (const name of ["memories", "history", "review", "sessions", "keys", "settings", "providers", "webhooks", "data"]) {
    $(`view-${name}`).hidden = name !== view;
  }
  clearNotice();
  act(null, loadIdentity);
  act(null, loadReviewCount);
  if (view === "memories") act(null, reloadMemories);
  if (view === "review") act(null, loadProposals);
  if (view === "providers") act(null, loadProviders);
  if (view === "sessions") act(null, loadSessions);
  if (view === "keys") act(null, loadKeys);
  if (view === "settings") act(null, loadSettings);
  if (view === "webhooks") act(null, loadWebhooks);
}

// ---------------------------------------------------------------- memories

function filters() {
  const form = $("filters");
  return {
    category: form.category.value,
    tag: form.tag.value.trim(),
    source: form.source.value,
    verified: form.verified.value,
    unverifiedFirst: form.unverified_first.checked,
    superseded: form.superseded.checked,
  };
}

function stages(f) {
  const base = { category: f.category, tag: f.tag, source: f.source };
  if (f.superseded) base.include = "superseded";
  if (f.verified) return [{ ...base, verified: f.verified }];
  // unverified first: every unverified memory, then the verified ones, each paged by the API
  if (f.unverifiedFirst) return [{ ...base, verified: "false" }, { ...base, verified: "true" }];
  return [base];
}

async function reloadMemories() {
  $("memories").replaceChildren();
  $("more").hidden = true;
  $("list-status").textContent = "Loading…";
  if (state.search) return runSearch(state.search);
  state.feed = { stages: stages(filters()), index: 0, cursor: null, done: false, count: 0 };
  await loadPage();
}

async function loadPage() {
  const feed = state.feed;
  let added = 0;
  // a page is PAGE memories, across stages (all unverified, then the verified ones) when it must
  while (!feed.done && added < PAGE) {
    const query = { ...feed.stages[feed.index], limit: PAGE - added, cursor: feed.cursor };
    const data = await call("GET", "/memory", { query });
    if (feed !== state.feed) return; // a newer list replaced this one
    for (const memory of data.memories || []) $("memories").append(memoryCard(memory));
    added += (data.memories || []).length;
    if (data.next_cursor) feed.cursor = data.next_cursor;
    else {
      feed.index += 1;
      feed.cursor = null;
      feed.done = feed.index >= feed.stages.length;
    }
    if (data.next_cursor) break;
  }
  feed.count += added;
  $("more").hidden = feed.done;
  $("list-status").textContent =
    feed.count === 0
      ? "No memories match."
      : `${feed.count} memor${feed.count === 1 ? "y" : "ies"} shown${feed.done ? "" : " — more below"}.`;
}

async function runSearch(q) {
  const f = filters();
  state.feed = null;
  const data = await call("GET", "/memory/search", { query: { q, tag: f.tag, limit: 50 } });
  if (state.search !== q) return;
  // the search route takes q and tag; the other filters apply to its results here
  let found = (data.memories || []).filter(
    (m) =>
      (!f.category || m.category === f.category) &&
      (!f.source || m.source === f.source) &&
      (!f.verified || String(m.verified) === f.verified),
  );
  if (f.unverifiedFirst) found = [...found.filter((m) => !m.verified), ...found.filter((m) => m.verified)];
  $("memories").replaceChildren(...found.map(memoryCard));
  $("more").hidden = true;
  $("list-status").textContent = found.length
    ? `${found.length} result${found.length === 1 ? "" : "s"} for “${q}”, best first.`
    : `Nothing found for “${q}”.`;
}

function tagList(tags) {
  return el("ul", { class: "tags", hidden: !(tags && tags.length) }, (tags || []).map((t) => el("li", { text: `#${t}` })));
}

function sourceBadge(m) {
  if (m.verified) return el("span", { class: "badge verified", text: "✓ verified" });
  return el("span", {
    class: "badge unverified",
    text: m.source === "agent" ? "unverified · written by an agent" : "unverified",
    title: "Not checked by you yet: verify it if it is right",
  });
}

function memoryCard(m) {
  const card = el("li", {
    class: `memory${m.verified ? "" : " unverified"}${m.superseded_by ? " superseded" : ""}`,
    dataset: { id: m.id, key: m.key, category: m.category },
  });
  const head = el(
    "div",
    { class: "head" },
    el("span", { class: "badge", text: m.category }),
    el("span", { class: "key-name", text: m.key }),
    el("span", { class: `badge p-${m.priority}`, text: m.priority }),
    el("span", { class: "badge", text: m.source }),
    sourceBadge(m),
    m.superseded_by
      ? el("span", { class: "badge superseded", text: "superseded", title: `Replaced by memory ${m.superseded_by}` })
      : null,
  );
  const meta = [`v${m.version || 1}`, `updated ${when(m.updated_at)}`];
  if (m.expires_at) meta.push(`expires ${when(m.expires_at)}`);
  if (typeof m.score === "number") meta.push(`score ${m.score.toFixed(3)}`);
  if (typeof m.confidence === "number") meta.push(`confidence ${m.confidence}`);
  const actions = el("div", { class: "actions" });
  if (m.superseded_by) {
    actions.append(
      el("button", {
        type: "button",
        class: "restore-superseded",
        text: "Restore",
        title: "Make it live again (hidden from recall while superseded)",
        onclick: (e) =>
          act(e.currentTarget, async () => {
            const memory = await call("POST", `/memory/${encodeURIComponent(m.id)}/restore`, {
              body: { version: m.version },
            });
            replaceCard(card, memory);
            notify(`Restored “${memory.key}”: it is live again.`, [], true);
          }),
      }),
    );
  } else if (!m.verified) {
    actions.append(
      el("button", {
        type: "button",
        class: "verify",
        text: "Verify",
        onclick: (e) => act(e.currentTarget, () => verify(m, card)),
      }),
    );
  }
  actions.append(
    el("button", { type: "button", class: "quiet edit-btn", text: "Edit", onclick: () => openEdit(m, card) }),
    el("button", { type: "button", class: "quiet history-btn", text: "History", onclick: () => openHistory(m) }),
    el("button", { type: "button", class: "quiet delete-btn", text: "Delete", onclick: () => askDelete(m, card) }),
  );
  card.append(
    head,
    el("p", { class: "content", dir: "auto", text: m.content }),
    tagList(m.tags),
    el("p", { class: "meta" }, dated(m), m.valid_at || m.created_at ? " · " : null, meta.join(" · ")),
    actions,
  );
  return card;
}

function replaceCard(card, memory) {
  const fresh = memoryCard(memory);
  card.replaceWith(fresh);
  return fresh;
}

async function verify(m, card) {
  const memory = await call("POST", `/memory/${encodeURIComponent(m.id)}/verify`);
  replaceCard(card, memory);
  notify(`Verified “${memory.key}”.`, [], true);
}

// datetime-local wants local time without a zone; the API wants UTC with a Z
function toLocalInput(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function fromLocalInput(value) {
  if (!value) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function parseTags(text) {
  return text
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
}

function openEdit(m, card) {
  if (card.querySelector("form.edit")) return;
  const content = el("textarea", { name: "content", rows: 4, maxlength: 8000, required: true, dir: "auto" });
  content.value = m.content;
  const tags = el("input", { name: "tags", autocomplete: "off", placeholder: "comma, separated" });
  tags.value = (m.tags || []).join(", ");
  const priority = el(
    "select",
    { name: "priority" },
    ["low", "normal", "high", "critical"].map((p) => el("option", { value: p, text: p, selected: p === m.priority })),
  );
  priority.value = m.priority;
  const expires = el("input", { name: "expires_at", type: "datetime-local" });
  expires.value = toLocalInput(m.expires_at);
  const form = el(
    "form",
    { class: "edit", "aria-label": `Edit ${m.key}` },
    el("label", {}, "Content", content),
    el(
      "div",
      { class: "row" },
      el("label", {}, "Tags", tags),
      el("label", {}, "Priority", priority),
      el("label", {}, "Expires (empty: never)", expires),
    ),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "submit", class: "save", text: "Save" }),
      el("button", { type: "button", class: "quiet", text: "Cancel", onclick: () => form.remove() }),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const patch = {};
    if (content.value !== m.content) patch.content = content.value;
    const newTags = parseTags(tags.value);
    if (newTags.join("\u0000") !== (m.tags || []).join("\u0000")) patch.tags = newTags;
    if (priority.value !== m.priority) patch.priority = priority.value;
    const newExpiry = fromLocalInput(expires.value);
    if (toLocalInput(newExpiry) !== toLocalInput(m.expires_at)) patch.expires_at = newExpiry;
    if (Object.keys(patch).length === 0) {
      form.remove();
      return;
    }
    act(form.querySelector("button.save"), async () => {
      const memory = await call("PUT", `/memory/${encodeURIComponent(m.id)}`, { body: patch });
      replaceCard(card, memory);
      notify(`Saved “${memory.key}” (version ${memory.version}).`, [], true);
    });
  });
  card.querySelector(".actions").after(form);
  content.focus();
}

function askDelete(m, card) {
  if (card.querySelector(".confirm")) return;
  const box = el(
    "div",
    { class: "confirm", role: "alertdialog", "aria-label": `Delete ${m.key}?` },
    el("p", { text: `Delete “${m.key}” and its whole history? This cannot be undone.` }),
    el(
      "div",
      { class: "actions" },
      el("button", {
        type: "button",
        class: "danger confirm-delete",
        text: "Delete for good",
        onclick: (e) =>
          act(e.currentTarget, async () => {
            await call("DELETE", `/memory/${encodeURIComponent(m.id)}`);
            card.remove();
            notify(`Deleted “${m.key}”.`, [], true);
          }),
      }),
      el("button", { type: "button", class: "quiet", text: "Keep it", onclick: () => box.remove() }),
    ),
  );
  card.append(box);
}

// ---------------------------------------------------------------- history

function openHistory(m) {
  state.history = m;
  show("history");
  $("history-title").textContent = `History of “${m.key}”`;
  act(null, loadHistory);
}

async function loadHistory() {
  const m = state.history;
  $("timeline").replaceChildren();
  $("history-current").textContent = "Loading…";
  const data = await call("GET", `/memory/${encodeURIComponent(m.id)}/history`);
  const versions = data.versions || [];
  $("history-current").textContent = `${versions.length} version${versions.length === 1 ? "" : "s"}, newest first.`;
  $("timeline").replaceChildren(...versions.map((v, i) => versionItem(m, v, i === 0)));
}

function versionItem(m, v, current) {
  const body = el(
    "div",
    { class: "body" },
    el(
      "div",
      { class: "head" },
      el("strong", { text: `Version ${v.version}` }),
      el("span", { class: "badge", text: v.change }),
      el("span", { class: `badge p-${v.priority}`, text: v.priority }),
      el("span", { class: "badge", text: `by ${v.source}` }),
      sourceBadge(v),
      current ? el("span", { class: "badge verified", text: "current" }) : null,
    ),
    el("p", { class: "content", dir: "auto", text: v.content }),
    tagList(v.tags),
    el("p", {
      class: "meta",
      text: [
        when(v.updated_at),
        v.valid_at ? `dated ${day(v.valid_at)}` : null,
        v.expires_at ? `expires ${when(v.expires_at)}` : null,
      ].filter(Boolean).join(" · "),
    }),
  );
  if (!current) {
    body.append(
      el(
        "div",
        { class: "actions" },
        el("button", {
          type: "button",
          class: "restore",
          text: `Restore version ${v.version}`,
          onclick: (e) =>
            act(e.currentTarget, async () => {
              const memory = await call("POST", `/memory/${encodeURIComponent(m.id)}/restore`, {
                body: { version: v.version },
              });
              state.history = memory;
              await loadHistory();
              notify(`Restored version ${v.version} as version ${memory.version}.`, [], true);
            }),
        }),
      ),
    );
  }
  return el("li", { class: `version${current ? " current" : ""}`, dataset: { version: v.version } }, body);
}

// ---------------------------------------------------------------- review

async function loadReviewCount() {
  const data = await call("GET", "/memory/proposals", { query: { limit: 100 } });
  const n = (data.proposals || []).length;
  const badge = $("review-count");
  badge.textContent = data.next_cursor ? "100+" : String(n);
  badge.hidden = n === 0;
  badge.setAttribute("aria-label", `${badge.textContent} pending`);
}

async function loadProposals() {
  $("proposals").replaceChildren();
  $("review-status").textContent = "Loading…";
  const data = await call("GET", "/memory/proposals", { query: { limit: 100 } });
  const proposals = data.proposals || [];
  const current = new Map();
  for (const id of new Set(proposals.map((p) => p.memory_id))) {
    try {
      current.set(id, await call("GET", `/memory/${encodeURIComponent(id)}`));
    } catch (err) {
      if (err.status !== 404) throw err;
      current.set(id, null); // gone since: the proposal can only be declined
    }
  }
  $("review-status").textContent = proposals.length
    ? `${proposals.length} proposal${proposals.length === 1 ? "" : "s"} waiting, newest first.`
    : "Nothing waits for you.";
  $("proposals").replaceChildren(...proposals.map((p) => proposalItem(p, current.get(p.memory_id))));
}

// the words of `before` and `after`, each marked kept, removed or added (a longest common subsequence
// of their words; Thai, written without spaces, falls back to characters)
function wordDiff(before, after) {
  const split = (s) => (/\s/.test(s) ? s.match(/\s+|[^\s]+/g) || [] : Array.from(s));
  const a = split(before);
  const b = split(after);
  if (a.length * b.length > 250000) return [["del", before], ["ins", after]];
  const dp = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    }
  }
  const out = [];
  const push = (op, text) => {
    if (out.length && out[out.length - 1][0] === op) out[out.length - 1][1] += text;
    else out.push([op, text]);
  };
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push("same", a[i]);
      i++;
      j++;
    } else if (dp[i + 1][j] >= dp[i][j + 1]) push("del", a[i++]);
    else push("ins", b[j++]);
  }
  while (i < a.length) push("del", a[i++]);
  while (j < b.length) push("ins", b[j++]);
  return out;
}

function diffView(before, after) {
  return el(
    "p",
    { class: "content diff", dir: "auto" },
    wordDiff(before, after).map(([op, text]) =>
      op === "same" ? text : el(op === "del" ? "del" : "ins", { text }),
    ),
  );
}

function proposalItem(p, memory) {
  const item = el("li", { class: "proposal", dataset: { proposalId: p.proposal_id, kind: p.kind } });
  const by = p.session_id ? `an ingest of session ${p.session_id}` : p.key_id ? "an agent's key" : "an agent";
  const what = { update: "wants to change", delete: "wants to delete", supersede: "wants to replace" }[p.kind];
  item.append(
    el(
      "div",
      { class: "head" },
      el("span", { class: "badge", text: p.kind }),
      el("span", { class: "key-name", text: memory ? `${memory.category}/${memory.key}` : p.memory_id }),
      el("span", { class: "meta", text: `${by} ${what} it · ${when(p.created_at)}` }),
    ),
  );
  const now = el(
    "div",
    { class: "side now" },
    el("h3", { text: memory ? `Now (version ${memory.version}, verified)` : "Now: deleted meanwhile" }),
    memory ? el("p", { class: "content", dir: "auto", text: memory.content }) : null,
    memory ? tagList(memory.tags) : null,
  );
  const proposed = p.proposed;
  const next = el(
    "div",
    { class: "side next" },
    el("h3", {
      text:
        p.kind === "delete"
          ? "Proposed: delete it"
          : p.kind === "supersede"
            ? `Proposed: replace it with ${p.category}/${p.key}`
            : "Proposed",
    }),
  );
  if (proposed) {
    next.append(memory ? diffView(memory.content, proposed.content) : el("p", { class: "content", dir: "auto", text: proposed.content }));
    next.append(tagList(proposed.tags));
    const changes = [];
    if (memory && proposed.priority !== memory.priority) changes.push(`priority ${memory.priority} → ${proposed.priority}`);
    if (memory && JSON.stringify(proposed.tags || []) !== JSON.stringify(memory.tags || [])) changes.push("tags change");
    if (changes.length) next.append(el("p", { class: "meta", text: changes.join(" · ") }));
  }
  item.append(el("div", { class: "sides" }, now, next));
  const stale = memory && memory.version !== p.base_version;
  if (stale) {
    item.append(el("p", { class: "meta warn", text: `The memory changed since (it was version ${p.base_version}): this can only be declined.` }));
  }
  const decide = (verb, body) =>
    act(null, async () => {
      await call("POST", `/memory/proposals/${encodeURIComponent(p.proposal_id)}/${verb}`, { body });
      notify(verb === "accept" ? "Accepted: the memory is changed, and yours (verified)." : "Declined: the memory stays as it was.", [], true);
      await loadProposals();
      await loadReviewCount();
    });
  const actions = el("div", { class: "actions" });
  if (memory && !stale) {
    actions.append(el("button", { type: "button", class: "accept", text: "Accept", onclick: () => decide("accept") }));
    if (proposed) {
      actions.append(
        el("button", {
          type: "button",
          class: "quiet edit-accept",
          text: "Edit and accept",
          onclick: () => {
            if (item.querySelector("form.edit")) return;
            const form = el(
              "form",
              { class: "edit" },
              el("label", { text: "Content" }, el("textarea", { name: "content", rows: 3, maxlength: 8000, required: true, dir: "auto" })),
              el("div", { class: "actions" }, el("button", { type: "submit", class: "save", text: "Accept with these words" })),
            );
            form.content.value = proposed.content;
            form.addEventListener("submit", (event) => {
              event.preventDefault();
              decide("accept", { content: form.content.value });
            });
            item.append(form);
          },
        }),
      );
    }
  }
  actions.append(el("button", { type: "button", class: "quiet decline", text: "Decline", onclick: () => decide("decline") }));
  item.append(actions);
  return item;
}

async function consolidate() {
  const out = await call("POST", `/minds/${encodeURIComponent(state.mind)}/consolidate`);
  notify(
    `Consolidated “${mindName(state.mind)}”: ${out.consolidated} old memor${out.consolidated === 1 ? "y" : "ies"} summarized, ${out.merged} duplicate${out.merged === 1 ? "" : "s"} merged.`,
    [],
    true,
  );
  if (state.view === "memories") await reloadMemories();
}

// ---------------------------------------------------------------- providers

async function loadProviders() {
  const data = await call("GET", "/providers");
  const providers = data.providers || [];
  $("providers").replaceChildren(
    ...(providers.length
      ? providers.map((p) =>
          el(
            "li",
            { class: "key provider", dataset: { provider: p.provider } },
            el("div", { class: "head" }, el("strong", { text: p.provider }), el("code", { class: "hint", text: p.hint })),
            el("p", { class: "meta", text: `set ${when(p.updated_at)}` }),
            el(
              "div",
              { class: "actions" },
              el("button", {
                type: "button",
                class: "quiet remove-provider",
                text: "Remove",
                onclick: (e) =>
                  act(e.currentTarget, async () => {
                    await call("DELETE", `/providers/${encodeURIComponent(p.provider)}`);
                    notify(`Removed your ${p.provider} key: the service's own is used again.`, [], true);
                    await loadProviders();
                  }),
              }),
            ),
          ),
        )
      : [el("li", { class: "status", text: "No key of your own: the service's Gemini key (or the offline rules) is used." })]),
  );
}

async function saveProvider(form) {
  const saved = await call("PUT", "/providers/gemini", { body: { api_key: form.api_key.value.trim() } });
  form.reset();
  notify(`Saved your Gemini key (${saved.hint}).`, [], true);
  await loadProviders();
}

// ---------------------------------------------------------------- sessions

async function loadSessions() {
  $("sessions").replaceChildren(el("li", { class: "status", text: "Loading…" }));
  let data;
  try {
    data = await call("GET", "/me/export");
  } catch (err) {
    // past what one answer carries (~5 MB): the list cannot be had here, the export file has it all
    if (!(err instanceof ApiError && err.status === 413)) throw err;
    $("sessions").replaceChildren(
      el(
        "li",
        { class: "status too-large" },
        el("p", {
          text:
            "Your account is too large to list its sessions here: everything stored for you is more than " +
            "one answer of the API can carry. Export everything (in Your data) to get every session, " +
            "with its messages and summaries, in one file.",
        }),
        el("button", { type: "button", class: "quiet to-data", text: "Go to Your data", onclick: () => show("data") }),
      ),
    );
    return;
  }
  const summaries = data.summaries || [];
  const sessions = data.sessions || [];
  if (!sessions.length) {
    $("sessions").replaceChildren(el("li", { class: "status", text: "No sessions yet." }));
    return;
  }
  // a session is a (mind, session id) pair: one name may be used in several minds
  $("sessions").replaceChildren(
    ...sessions.map((s) => {
      const own = summaries.filter((c) => c.session_id === s.session_id && c.mind_id === s.mind_id);
      return el(
        "li",
        { class: "session", dataset: { session: s.session_id, mind: s.mind_id } },
        el(
          "div",
          { class: "head" },
          el("span", { class: "key-name", text: s.session_id }),
          el("span", { class: "badge mind", text: `mind: ${mindName(s.mind_id)}` }),
          el("span", { class: "badge", text: `${s.msg_count} messages` }),
          el("span", { class: "badge", text: `${own.length} summar${own.length === 1 ? "y" : "ies"}` }),
        ),
        own.length
          ? el("ol", { class: "summaries" }, own.map((c) => summaryItem(c)))
          : el("p", { class: "meta", text: "No summary yet (one is written every 15 messages)." }),
      );
    }),
  );
}

function summaryItem(c) {
  return el(
    "li",
    {},
    el("p", { class: "content", dir: "auto", text: c.summary }),
    el("p", { class: "meta", text: `${c.chunk_id} · ${c.msg_count} messages · ${when(c.created_at)}` }),
  );
}

async function lookupSummaries(sessionId) {
  const data = await call("GET", `/memory/summaries/${encodeURIComponent(sessionId)}`);
  const chunks = data.summaries || [];
  $("session-summaries").replaceChildren(
    ...(chunks.length
      ? chunks.map(summaryItem)
      : [el("li", { class: "status", text: `No summaries of “${sessionId}” in this mind.` })]),
  );
}

// ---------------------------------------------------------------- webhooks

const LAST_DELIVERIES = 5;

async function loadWebhooks() {
  const data = await call("GET", "/webhooks");
  const hooks = data.webhooks || [];
  if (!hooks.length) {
    $("webhooks").replaceChildren(el("li", { class: "status", text: "No webhooks yet." }));
    return;
  }
  const logs = await Promise.all(
    hooks.map((h) =>
      call("GET", `/webhooks/${encodeURIComponent(h.webhook_id)}/deliveries`, {
        query: { limit: LAST_DELIVERIES },
      }),
    ),
  );
  $("webhooks").replaceChildren(...hooks.map((h, i) => webhookItem(h, logs[i].deliveries || [])));
}

function webhookItem(h, deliveries) {
  const all = (h.events || []).length >= 9;
  return el(
    "li",
    { class: "key webhook", dataset: { webhookId: h.webhook_id } },
    el(
      "div",
      { class: "head" },
      el("code", { class: "webhook-url", text: h.url }),
      h.disabled_at ? el("span", { class: "badge danger-badge", text: `disabled ${when(h.disabled_at)}` }) : null,
      el("span", { class: "badge", text: `mind: ${h.mind_id ? mindName(h.mind_id) : "every mind"}` }),
      el("span", { class: "badge", text: all ? "every event" : h.events.join(", ") }),
    ),
    el("p", { class: "meta", text: `created ${when(h.created_at)}` }),
    deliveries.length
      ? el(
          "table",
          { class: "deliveries", "aria-label": "Latest deliveries" },
          el(
            "thead",
            {},
            el("tr", {}, ...["When", "Event", "Attempt", "Answer"].map((t) => el("th", { text: t }))),
          ),
          el(
            "tbody",
            {},
            ...deliveries.map((d) =>
              el(
                "tr",
                { class: d.error ? "failed" : "ok" },
                el("td", { text: when(d.at) }),
                el("td", { text: d.type }),
                el("td", { text: String(d.attempt) }),
                el("td", { text: d.error ? d.error : `HTTP ${d.status_code}` }),
              ),
            ),
          ),
        )
      : el("p", { class: "status", text: "No deliveries yet." }),
  );
}

// ---------------------------------------------------------------- keys

async function loadKeys() {
  const data = await call("GET", "/keys");
  const keys = data.keys || [];
  $("keys").replaceChildren(
    ...(keys.length ? keys.map(keyItem) : [el("li", { class: "status", text: "No API keys yet." })]),
  );
}

function keyItem(k) {
  const item = el(
    "li",
    { class: "key", dataset: { keyId: k.key_id, name: k.name } },
    el(
      "div",
      { class: "head" },
      el("strong", { class: "key-title", text: k.name }),
      el("code", { text: k.hint }),
      ...k.scopes.map((s) => el("span", { class: "badge", text: s })),
      el("span", { class: "badge", text: `mind: ${mindName(k.mind_id || "default")}` }),
    ),
    el("p", { class: "meta", text: `created ${when(k.created_at)}` }),
  );
  const actions = el(
    "div",
    { class: "actions" },
    el("button", {
      type: "button",
      class: "quiet revoke",
      text: "Revoke",
      onclick: () => {
        if (item.querySelector(".confirm")) return;
        const box = el(
          "div",
          { class: "confirm", role: "alertdialog", "aria-label": `Revoke ${k.name}?` },
          el("p", { text: `Revoke “${k.name}”? Agents using it are refused from then on (within a minute).` }),
          el(
            "div",
            { class: "actions" },
            el("button", {
              type: "button",
              class: "danger confirm-revoke",
              text: "Revoke the key",
              onclick: (e) =>
                act(e.currentTarget, async () => {
                  await call("DELETE", `/keys/${encodeURIComponent(k.key_id)}`);
                  notify(`Revoked “${k.name}”.`, [], true);
                  await loadKeys();
                }),
            }),
            el("button", { type: "button", class: "quiet", text: "Keep it", onclick: () => box.remove() }),
          ),
        );
        item.append(box);
      },
    }),
  );
  item.append(actions);
  return item;
}

async function createKey(form) {
  const scopes = [...form.querySelectorAll("input[name=scope]:checked")].map((i) => i.value);
  if (!scopes.length) {
    notify("Choose at least one scope for the key.");
    return;
  }
  const created = await call("POST", "/keys", {
    body: { name: form.name.value.trim(), scopes, mind_id: form.mind_id.value || "default" },
  });
  $("new-key-value").textContent = created.key;
  $("new-key").hidden = false;
  form.reset();
  fillMindSelect($("key-mind"), state.mind, false);
  clearNotice();
  await loadKeys();
}

// ---------------------------------------------------------------- your data: export everything

const EXPORT_POLL_MS = 1000;
const EXPORT_PATIENCE_MS = 5 * 60 * 1000; // then stop asking (the export goes on; asking again resumes it)

// 1234567 -> "1.2 MB" (decimal units, as file managers say them)
function fileSize(n) {
  const units = ["KB", "MB", "GB", "TB"];
  if (!(n >= 1000)) return `${n} byte${n === 1 ? "" : "s"}`;
  let value = n;
  let unit = "bytes";
  for (const next of units) {
    if (value < 1000) break;
    value /= 1000;
    unit = next;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${unit}`;
}

function exportStatus(...children) {
  $("export-status").replaceChildren(...children);
}

function resetExportView() {
  $("export-start").disabled = false;
  $("export-start").removeAttribute("aria-busy");
  exportStatus();
}

function stopExport() {
  if (state.exporting && state.exporting.timer) clearTimeout(state.exporting.timer);
  state.exporting = null;
}

// POST /me/exports, then GET /me/exports/{id} every second until it is ready or failed. One at a time:
// while one is prepared the button is off, and a click that gets through anyway does nothing (the
// server would answer the same export too).
async function startExport() {
  if (state.exporting) return;
  const button = $("export-start");
  state.exporting = { id: null, since: Date.now(), timer: null };
  const mine = state.exporting;
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  exportStatus(el("p", { class: "export-pending", text: "Preparing your export…" }));
  try {
    const started = await call("POST", "/me/exports");
    if (state.exporting !== mine) return; // signed out meanwhile
    mine.id = started.export_id;
    await pollExport(mine);
  } catch (err) {
    if (state.exporting === mine) {
      stopExport();
      resetExportView();
    }
    fail(err);
  }
}

async function pollExport(mine) {
  const job = await call("GET", `/me/exports/${encodeURIComponent(mine.id)}`);
  if (state.exporting !== mine) return;
  const waited = Date.now() - mine.since;
  if (job.status === "pending") {
    if (waited >= EXPORT_PATIENCE_MS) {
      stopExport();
      resetExportView();
      exportStatus(
        el("p", {
          class: "export-slow",
          text:
            `Your export is still being prepared after ${Math.round(waited / 60000)} minutes (a large account takes longer). ` +
            "Press Export everything again to keep waiting for it: the same export goes on, nothing starts twice.",
        }),
      );
      return;
    }
    $("export-start").disabled = true; // (still one export at a time, whatever happened to the button)
    exportStatus(
      el("p", { class: "export-pending", text: `Preparing your export… (${Math.round(waited / 1000)} s)` }),
    );
    mine.timer = setTimeout(() => {
      pollExport(mine).catch((err) => {
        if (state.exporting !== mine) return;
        stopExport();
        resetExportView();
        fail(err);
      });
    }, EXPORT_POLL_MS);
    return;
  }
  stopExport();
  resetExportView();
  if (job.status === "ready" && safeDownload(job.url)) exportReady(mine.id, job);
  else exportFailed();
}

// the presigned URL is followed as a plain link: http(s) only (never javascript: or data:)
function safeDownload(url) {
  try {
    return ["https:", "http:"].includes(new URL(url).protocol);
  } catch (err) {
    return false;
  }
}

function exportReady(id, job) {
  const records = Number(job.records || 0);
  exportStatus(
    el(
      "div",
      { class: "export-ready" },
      el("p", { text: "Your export is ready." }),
      // a plain link: the URL is signed by itself, no Authorization header goes with it
      el("a", {
        class: "download",
        href: job.url,
        download: `synapse-export-${id}.jsonl`,
        rel: "noopener noreferrer",
        text: "Download your export",
      }),
      el(
        "p",
        { class: "meta" },
        el("span", { class: "export-size", title: `${Number(job.bytes).toLocaleString("en-US")} bytes`, text: fileSize(Number(job.bytes)) }),
        " · ",
        el("span", { class: "export-records", text: `${records.toLocaleString("en-US")} record${records === 1 ? "" : "s"}` }),
        " · ",
        el(
          "span",
          { class: "export-expires" },
          "the link works until ",
          el("time", { datetime: job.expires_at, text: when(job.expires_at) }),
          " (after that, export again)",
        ),
      ),
    ),
  );
}

function exportFailed() {
  exportStatus(
    el(
      "div",
      { class: "export-failed" },
      el("p", { text: "Your export could not be prepared. Nothing of yours was changed: try again." }),
      el("button", { type: "button", class: "export-retry", text: "Try again", onclick: () => startExport() }),
    ),
  );
}

// ---------------------------------------------------------------- the mind's settings

function fillTimezones() {
  const list = $("timezones");
  if (list.childElementCount || typeof Intl.supportedValuesOf !== "function") return;
  list.replaceChildren(...Intl.supportedValuesOf("timeZone").map((zone) => el("option", { value: zone })));
}

function renderSettings() {
  const mind = currentMind();
  if (!mind) return;
  const kind = mind.mind_id === "default" ? "the default mind" : mind.mind_id;
  $("settings-current").textContent = `“${mind.name}” (${kind}) · timezone ${mind.timezone || "UTC"}`;
  $("settings-timezone").value = mind.timezone || "UTC";
  $("settings-review").checked = mind.review_agent_changes !== false;
}

async function loadSettings() {
  fillTimezones();
  await loadMinds();
  renderSettings();
}

async function saveSettings(form) {
  const body = { timezone: form.timezone.value.trim(), review_agent_changes: form.review_agent_changes.checked };
  const saved = await call("PATCH", `/minds/${encodeURIComponent(state.mind)}`, { body });
  await loadMinds();
  renderSettings();
  notify(`Saved. “${saved.name}” now reads its dates in ${saved.timezone}.`, [], true);
}

// ---------------------------------------------------------------- wiring

function wire() {
  $("signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("token").value);
  });
  $("signout").addEventListener("click", () => signOut("Signed out."));
  $("mind").addEventListener("change", (event) => {
    state.mind = event.currentTarget.value;
    try {
      sessionStorage.setItem(MIND_KEY, state.mind);
    } catch (err) {
      /* ignore */
    }
    fillMindSelect($("key-mind"), state.mind, false);
    show(state.view === "history" ? "memories" : state.view);
  });
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => show(tab.dataset.view));
  }
  $("filters").addEventListener("change", () => act(null, reloadMemories));
  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    act(null, reloadMemories);
  });
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const q = $("q").value.trim();
    state.search = q || null;
    $("search-clear").hidden = !state.search;
    clearNotice();
    act(event.submitter, reloadMemories);
  });
  $("search-clear").addEventListener("click", () => {
    $("q").value = "";
    state.search = null;
    $("search-clear").hidden = true;
    act(null, reloadMemories);
  });
  $("more").addEventListener("click", (event) => act(event.currentTarget, loadPage));
  $("history-back").addEventListener("click", () => show("memories"));
  $("summaries-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(event.submitter, () => lookupSummaries($("session-id").value.trim()));
  });
  $("consolidate").addEventListener("click", (event) => act(event.currentTarget, consolidate));
  $("export-start").addEventListener("click", () => startExport());
  $("provider-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(event.submitter, () => saveProvider(event.currentTarget));
  });
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(event.submitter, () => createKey(event.currentTarget));
  });
  $("settings-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(event.submitter, () => saveSettings(event.currentTarget));
  });
  $("new-key-copy").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText($("new-key-value").textContent);
      notify("Copied the key.", [], true);
    } catch (err) {
      notify("The browser did not allow copying: select the key and copy it by hand.");
    }
  });
  $("new-key-done").addEventListener("click", () => {
    $("new-key-value").textContent = "";
    $("new-key").hidden = true;
  });
}

function start() {
  wire();
  const fromFragment = tokenFromFragment();
  let saved = null;
  try {
    saved = sessionStorage.getItem(TOKEN_KEY);
  } catch (err) {
    saved = null;
  }
  const token = fromFragment || saved;
  if (token) signIn(token);
  else signOut("");
}

start();
