// sessiondex web UI: plain DOM, no dependencies. Every piece of session text reaches the page
// through textContent (el() below), never as markup: session text is hostile input.
"use strict";
(() => {
  const view = document.getElementById("view");
  const statusEl = document.getElementById("status");
  const ROLES = ["user", "assistant", "toolResult", "bashExecution", "branchSummary", "branchUser",
    "branchCustomMessage", "compaction", "compactionSummary", "custom", "fabricRun", "fabricPhase",
    "fabricOperation"];
  const OUTCOMES = ["succeeded", "failed", "aborted", "timed_out"];
  // every registered agent (store.agents), as the server wrote them into the page
  const AGENTS = (document.body.dataset.agents || "").split(" ").filter(Boolean);
  // store/names.py TOOL_FAMILIES: a family from the writer's tool name (`kind` in recall)
  const FAMILIES = ["shell", "read", "edit", "write", "search", "mcp", "subagent", "web", "other"];
  const BAD = new Set(["failed", "aborted", "timed_out"]);
  const REASONS = {
    stale_session: "a session file changed after this generation was built; the indexer will catch up",
    malformed_line: "a line of a session file is not valid JSON (skipped)",
    source_unavailable: "a session file could not be read",
    index_error: "the indexer failed on a session",
    max_entry_chars: "a stored display text was cut (search still covers all of it)",
    max_cold_vocabulary_bytes: "a cold session's vocabulary reached its size limit",
    max_cold_cache_bytes: "a cold session keeps only exact prefixes",
    max_sync_sessions: "an indexing pass reached its session budget",
    max_sync_source_bytes: "an indexing pass reached its byte budget",
    candidate_entry_budget: "the query matched too many entries: narrow it",
    candidate_digest_budget: "the query matched too many cold sessions: narrow it",
    candidate_item_budget: "the query matched too many items: narrow it",
    cold_structural_filter_requires_hydration: "a cold session matched; follow it to check the filter",
    cold_phrase_requires_hydration: "a phrase in a cold session is unproven until followed",
    cold_all_terms_requires_hydration: "all-terms in a cold session is unproven until followed",
    regex_max_haystack_terms: "the regex saw only part of the text",
    regex_max_haystack_bytes: "the regex saw only part of the text",
    invalid_regex: "the regular expression is not valid",
    regex_pattern_too_large: "the regular expression is too large",
    regex_timeout: "the regular expression ran out of time",
  };

  // ------------------------------------------------------------------ small helpers

  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }

  function put(node, ...kids) { // replaceChildren without the null placeholders
    node.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
  }

  class ApiError extends Error {
    constructor(error) { super((error && error.message) || "request failed"); this.code = error && error.code; }
  }

  async function api(op, args) {
    const r = await fetch("/api/" + op, {
      method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json" }, body: JSON.stringify(args || {}),
    });
    let body;
    try { body = await r.json(); } catch (_) { throw new ApiError({ message: r.status + " " + r.statusText }); }
    if (!r.ok) throw new ApiError(body.error);
    return body;
  }

  function when(ms) {
    if (ms === null || ms === undefined) return "";
    const d = new Date(ms);
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }

  function hashParams() {
    const h = location.hash.replace(/^#\/?/, "");
    const [name, query] = h.split("?");
    return { name: name || "search", params: new URLSearchParams(query || "") };
  }

  function go(name, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const next = "#/" + name + (q.toString() ? "?" + q : "");
    if (location.hash === next) route(); else location.hash = next;
  }

  function sessionLink(file, extra) {
    const q = new URLSearchParams({ file, ...extra });
    return "#/session?" + q;
  }

  function errorBox(err) { return el("div", { class: "error" }, String(err.code ? `${err.code}: ${err.message}` : err.message || err)); }

  // Matched terms of the query, for highlighting only (the engine decided what matched).
  function highlighter(q, mode) {
    if (!q) return null;
    let source;
    if (mode === "regex") source = q;
    else {
      const words = mode === "phrase" ? [q.trim()] : q.match(/[\p{L}\p{N}_]+/gu) || [];
      if (!words.length) return null;
      source = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
    }
    try { return new RegExp(source, "giu"); } catch (_) { return null; }
  }

  function marked(text, re) {
    if (!re || !text) return [text];
    const out = [];
    let at = 0;
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) {
      if (!m[0]) continue;
      out.push(text.slice(at, m.index), el("mark", {}, m[0]));
      at = m.index + m[0].length;
    }
    out.push(text.slice(at));
    return out;
  }

  function outcomeBadge(o) {
    const bad = BAD.has(o.outcome) || o.isError;
    if (!o.outcome && !o.isError) return null;
    return el("span", { class: "badge" + (bad ? " bad" : "") }, o.outcome || "error");
  }

  function coverageBox(c, emptyHits) {
    if (!c) return null;
    const counts = `${c.indexedSessions} of ${c.eligibleSessions} sessions indexed` +
      (c.staleSessions ? `, ${c.staleSessions} stale` : "") +
      (c.incompleteSessions ? `, ${c.incompleteSessions} incomplete` : "");
    if (c.complete) {
      return el("div", { class: "coverage complete", "data-coverage": "complete" },
        el("strong", {}, "Coverage: complete. "), counts + ". ",
        emptyHits ? "Nothing in this scope matches: an empty answer here is authoritative." :
          "Every eligible session in scope was searched.");
    }
    const reasons = (c.reasons || []).map((r) => el("li", {}, el("span", { class: "mono" }, r),
      REASONS[r] ? " — " + REASONS[r] : " — see ops/runbook.md §5"));
    return el("div", { class: "coverage incomplete", "data-coverage": "incomplete" },
      el("strong", {}, "Coverage: incomplete. "), counts + ". ",
      emptyHits ? "No hits, but that is not proof that nothing matches." :
        "Some matches may be missing.",
      c.error ? el("div", {}, `${c.error.code}: ${c.error.message}`) : null,
      reasons.length ? el("ul", {}, reasons) : null);
  }

  // ------------------------------------------------------------------ live status

  let current = null; // the view object; may have onGeneration(g)
  let generation = null;

  function setStatus(text, cls) { statusEl.textContent = text; statusEl.className = "status " + (cls || ""); }

  function follow() {
    const es = new EventSource("/api/events");
    es.addEventListener("generation", (ev) => {
      const g = JSON.parse(ev.data).generation;
      const moved = generation !== null && g !== generation;
      generation = g;
      setStatus(g === null ? "nothing indexed yet · live" : `generation ${g} · live`, "live");
      if (moved && current && current.onGeneration) current.onGeneration(g);
    });
    es.onerror = () => setStatus("disconnected (retrying)", "down");
  }

  // ------------------------------------------------------------------ search

  const FILTERS = [
    ["agent", "agent", ["", ...AGENTS]],
    ["project", "project (cwd)", "text"],
    ["role", "role", ["", ...ROLES]],
    ["kind", "tool family", ["", ...FAMILIES]],
    ["provider", "provider (MCP server)", "text"],
    ["tool", "tool", "text"],
    ["ref", "capability ref", "text"],
    ["outcome", "outcome", ["", ...OUTCOMES]],
    ["since", "since (7d, 2026-01-15)", "text"],
    ["until", "until", "text"],
    ["branches", "branches", ["", "active", "all"]],
  ];

  function select(name, options, value, label) {
    return el("select", { name, "aria-label": label || name },
      options.map((o) => el("option", { value: o, selected: o === value }, o || "(any)")));
  }

  function searchView(params) {
    const p = Object.fromEntries(params);
    const form = el("form", { class: "search", role: "search" });
    const q = el("input", { type: "search", name: "q", value: p.q || "", placeholder: "Search sessions…", autofocus: true });
    const filterFields = FILTERS.map(([key, label, kind]) => el("label", {}, label,
      kind === "text" ? el("input", { type: "text", name: key, value: p[key] || "", list: key === "project" ? "projects" : null })
        : select(key, kind, p[key] || "", label)));
    const projects = el("datalist", { id: "projects" });
    knownProjects().then((cwds) => put(projects, cwds.map((c) => el("option", { value: c }))));
    const active = FILTERS.filter(([key]) => p[key]);
    form.append(
      el("div", { class: "row" }, q,
        select("mode", ["literal", "phrase", "regex"], p.mode || "literal", "query mode"),
        select("match", ["any", "all"], p.match || "any", "match"),
        select("scope", ["global", "project", "session"], p.scope || "global", "scope"),
        el("button", { type: "submit" }, "Search")),
      el("div", { class: "chips" }, active.map(([key, label]) => el("span", { class: "chip", "data-chip": key },
        `${label.split(" (")[0]}: ${p[key]}`,
        el("button", { type: "button", title: "remove", onclick: () => { delete p[key]; go("search", p); } }, "×")))),
      el("details", { class: "filters", open: active.length ? true : null }, el("summary", {}, "Filters"),
        el("div", { class: "grid" }, filterFields)));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const data = Object.fromEntries([...new FormData(form)].filter(([, v]) => v !== ""));
      go("search", data);
    });
    const results = el("div", { id: "results" });
    put(view, form, projects, results);
    const hasAny = p.q || active.length;
    if (!hasAny) {
      results.append(el("p", { class: "muted" }, "Type words to search (literal: any or all of them; phrase: in order; regex: a pattern). " +
        "Without words, the filters alone browse the history."));
      return {};
    }
    runSearch(p, results);
    return { onGeneration: () => {} };
  }

  let projectList = null;
  function knownProjects() { // the project filter's suggestions: every cwd the index knows
    if (!projectList) {
      projectList = api("sessions", { scope: "global", limit: 500 })
        .then((r) => [...new Set((r.sessions || []).map((s) => s.cwd).filter(Boolean))].sort())
        .catch(() => { projectList = null; return []; });
    }
    return projectList;
  }

  function recallArgs(p) {
    const args = {};
    if (p.q) args.query = p.q;
    if (p.mode) args.queryMode = p.mode;
    if (p.match && (!p.mode || p.mode === "literal")) args.queryMatch = p.match;
    args.scope = p.scope || "global";
    for (const key of ["agent", "role", "kind", "provider", "tool", "ref", "outcome", "since", "until", "branches"])
      if (p[key]) args[key] = p[key];
    if (p.project) { args.scope = "project"; args.cwd = p.project; }
    return args;
  }

  async function runSearch(p, results) {
    const re = highlighter(p.q, p.mode);
    const list = el("div", { class: "hits" });
    const foot = el("div");
    put(results, el("p", { class: "muted" }, "searching…"));
    let first;
    try { first = await api("recall", recallArgs(p)); } catch (err) { put(results, errorBox(err)); return; }
    if (first.error) { put(results, errorBox(first.error)); return; }
    const summary = el("p", { class: "muted small", id: "summary" });
    put(results, summary, coverageBox(first.coverage, first.hits.length === 0), list, foot);
    let shown = 0;
    const show = (page) => {
      for (const hit of page.hits) list.append(hitCard(hit, re, p));
      shown += page.hits.length;
      summary.textContent = page.total === 0 ? "No hits." : `${shown} of ${page.total} hits`;
      put(foot, );
      if (page.next) {
        foot.append(el("button", { class: "plain", onclick: async (ev) => {
          ev.target.disabled = true;
          try { show(await api("call", page.next)); } catch (err) { put(foot, errorBox(err)); }
        } }, "More results"));
      }
    };
    show(first);
  }

  function hitCard(hit, re, p) {
    if (hit.kind !== "entry") {
      const body = el("div");
      return el("div", { class: "card hit cold" },
        el("div", { class: "meta" }, el("span", { class: "badge" }, "cold session"), hit.sessionId,
          el("span", {}, when(hit.lastTimestamp)), el("span", {}, hit.cwd),
          el("span", {}, `${hit.matchedTerms} matched terms`)),
        el("button", { class: "link", onclick: async () => {
          put(body, el("span", { class: "muted" }, "searching inside…"));
          try {
            const page = await api("call", hit.follow);
            put(body, ...page.hits.map((h) => hitCard(h, re, p)), page.hits.length ? null : el("p", { class: "muted" }, "no entry matches there"));
          } catch (err) { put(body, errorBox(err)); }
        } }, "Search inside this session"), body);
    }
    const args = hit.follow.args;
    const link = sessionLink(args.session, { entry: hit.entryId || "", at: hit.index, branches: args.branches, q: p.q || "", mode: p.mode || "" });
    const bad = BAD.has(hit.outcome) || hit.isError;
    return el("div", { class: "card hit" + (bad ? " failed" : ""), "data-entry": hit.entryId },
      el("div", { class: "meta" },
        el("span", { class: "badge role-" + hit.role }, hit.role || hit.type),
        hit.tool ? el("span", { class: "badge" }, hit.tool) : null, outcomeBadge(hit),
        el("span", {}, hit.sessionId), el("span", {}, "#" + hit.index), el("span", {}, when(hit.timestamp)),
        el("a", { href: link, class: "open" }, "open in session →")),
      el("div", { class: "snippet", title: hit.truncated ? "snippet cut: open the session for all of it" : null }, marked(hit.snippet, re)));
  }

  // ------------------------------------------------------------------ session

  const PAGE = { maxEntries: 20, maxChars: 24000 };
  const LONG = 1500;
  const HEAD = 700;
  const HEAD_LINES = 12;
  const MIN_HIDDEN = 300;

  class Transcript {
    constructor(file) {
      this.file = file;
      this.entries = []; // by index, branches "all"
      this.count = 0;
      this.sourceHash = null;
      this.activeLeaf = null;
    }
    async probe(branches) {
      const r = await api("expand", { session: this.file, branches, entryRange: { first: 0, last: 0 }, maxEntries: 1, maxChars: 256 });
      if (r.error && r.error.code === "index_out_of_bounds") return { entryCount: r.error.entryCount || 0, sourceHash: null };
      if (r.error) throw new ApiError(r.error);
      return r;
    }
    async fetchRange(first, last, onProgress) {
      let page = await api("expand", { session: this.file, branches: "all", entryRange: { first, last }, ...PAGE });
      const fresh = [];
      for (;;) {
        if (page.error) throw new ApiError(page.error);
        for (const e of page.entries) {
          const have = this.entries[e.index];
          if (have && e.textRange.start > 0) have.text += e.text;
          else { this.entries[e.index] = { ...e }; fresh.push(e.index); }
        }
        if (onProgress) onProgress(this.entries.filter(Boolean).length, this.count);
        if (!page.next) break;
        page = await api("call", page.next);
      }
      return fresh;
    }
    async activeLeafId() {
      const a = await this.probe("active");
      if (!a.entryCount) return null;
      const r = await api("expand", { session: this.file, branches: "active", indices: [a.entryCount - 1], maxChars: 256, maxEntries: 1 });
      return r.entries && r.entries[0] ? r.entries[0].entryId : null;
    }
    async load(onProgress) {
      const p = await this.probe("all");
      this.count = p.entryCount;
      this.sourceHash = p.sourceHash;
      if (this.count) await this.fetchRange(0, this.count - 1, onProgress);
      this.activeLeaf = await this.activeLeafId();
      this.index();
    }
    async grow() { // new lines: fetch only the entries past the ones held
      const p = await this.probe("all");
      if (p.sourceHash === this.sourceHash) return null;
      if (p.entryCount < this.count) return "reload";
      const fresh = p.entryCount > this.count ? await this.fetchRange(this.count, p.entryCount - 1) : [];
      if (!fresh.length) return "reload"; // rewritten in place
      this.count = p.entryCount;
      this.sourceHash = p.sourceHash;
      this.activeLeaf = await this.activeLeafId();
      this.index();
      return fresh;
    }
    index() {
      this.byId = new Map();
      this.children = new Map();
      for (const e of this.entries) if (e && e.entryId) this.byId.set(e.entryId, e);
      for (const e of this.entries) {
        // nested children (a Fabric operation under its carrier) are not branches of the tree
        if (!e || e.parentEntryId || !e.parentId || !this.byId.has(e.parentId)) continue;
        if (!this.children.has(e.parentId)) this.children.set(e.parentId, []);
        this.children.get(e.parentId).push(e);
      }
      this.forked = [...this.children.values()].some((c) => c.length > 1);
      this.roots = this.entries.filter((e) => e && e.entryId && !e.parentEntryId && !(e.parentId && this.byId.has(e.parentId)));
    }
    pathTo(leafId) { // root → leaf, following parentId
      const out = [];
      const seen = new Set();
      let e = this.byId.get(leafId);
      while (e && !seen.has(e.entryId)) { seen.add(e.entryId); out.push(e); e = e.parentId ? this.byId.get(e.parentId) : null; }
      return out.reverse();
    }
    deepestUnder(entry) { // the newest leaf below an entry: its last child, again and again
      let e = entry;
      for (;;) { const kids = this.children.get(e.entryId); if (!kids || !kids.length) return e; e = kids[kids.length - 1]; }
    }
    shown(leafId) {
      if (!this.forked) return this.entries.filter(Boolean);
      return this.pathTo(leafId || this.activeLeaf);
    }
  }

  function entryText(e, re, open) {
    const text = e.text || "";
    let cut = Math.min(text.length, HEAD);
    for (let n = 0, at = -1; n < HEAD_LINES; n++) { at = text.indexOf("\n", at + 1); if (at < 0) break; if (n === HEAD_LINES - 1) cut = Math.min(cut, at); }
    const rest = text.length - cut;
    // collapse only what is long: a few more lines or characters are simply shown
    if (rest < MIN_HIDDEN || (text.length <= LONG && text.split("\n").length <= HEAD_LINES + 6))
      return el("div", { class: "text" }, marked(text, re));
    return el("div", {},
      el("div", { class: "text" }, marked(text.slice(0, cut), re)),
      el("details", { class: "long", open: open || null },
        el("summary", {}, `show ${rest} more characters`),
        el("div", { class: "text" }, marked(text.slice(cut), re))));
  }

  function sessionView(params) {
    const file = params.get("file");
    const target = params.get("entry") || null;
    const at = params.has("at") ? Number(params.get("at")) : null;
    const re = highlighter(params.get("q"), params.get("mode"));
    const t = new Transcript(file);
    const head = el("div", {}, el("h2", {}, "Session"), el("div", { class: "meta mono" }, file));
    const banner = el("div");
    const body = el("div", { class: "transcript" }, el("p", { class: "muted" }, "loading…"));
    const tree = el("aside", { class: "tree", hidden: true });
    put(view, head, el("div", { class: "layout" }, el("div", {}, banner, body), tree));
    let shownLeaf = null; // null: the active path
    let fresh = new Set();

    function entryCard(e, path, onPath) {
      const bad = BAD.has(e.outcome) || e.isError;
      const isTarget = (target && e.entryId === target) || (!target && at !== null && e.index === at);
      const card = el("div", { class: `entry role-${e.role || e.type}` + (bad ? " failed" : "") + (isTarget ? " target" : "") + (fresh.has(e.index) ? " new" : ""),
        id: "e" + e.index, "data-index": e.index, "data-entry": e.entryId },
        el("div", { class: "meta" },
          el("span", { class: "badge role-" + (e.role || e.type) }, e.role || e.type),
          e.tool ? el("span", { class: "badge" }, e.tool) : null, outcomeBadge(e),
          el("a", { href: sessionLink(file, { entry: e.entryId || "", at: e.index }), title: "link to this entry" }, "#" + e.index),
          el("span", {}, when(e.timestamp)),
          e.operationAddress ? el("span", { class: "mono address", title: e.operationAddress }, e.operationAddress) : null),
        entryText(e, re, isTarget));
      // Alternatives at this point of the tree: the children not on the path shown.
      if (t.forked && e.entryId) {
        const next = path[path.indexOf(e) + 1];
        const others = (t.children.get(e.entryId) || []).filter((c) => c !== next && !c.parentEntryId);
        if (others.length) {
          card.append(el("div", { class: "forks" }, `↳ ${others.length} other branch${others.length > 1 ? "es" : ""}: `,
            others.map((c) => el("button", { class: "fork", "data-fork": c.entryId, onclick: () => { shownLeaf = t.deepestUnder(c).entryId; render(); } },
              `#${c.index} ${(c.text || "").slice(0, 60)}`))));
        }
      }
      return card;
    }

    function render() {
      if (!t.count) { put(body, el("p", { class: "muted" }, "This session has no entries yet.")); return; }
      const path = t.shown(shownLeaf);
      const onActive = !t.forked || !shownLeaf || t.pathTo(t.activeLeaf).includes(t.byId.get(shownLeaf));
      put(banner, t.forked ? (onActive
        ? el("div", { class: "muted small" }, "Showing the active path (the branch the agent continued). Other branches are one click away.")
        : el("div", { class: "banner", id: "abandoned" }, "Showing an abandoned branch. ",
          el("button", { class: "link", onclick: () => { shownLeaf = null; render(); } }, "Back to the active path"))) : null);
      const shownSet = new Set(path);
      const nestedUnder = new Map();
      for (const e of t.entries) {
        if (!e || !e.parentEntryId) continue;
        const parent = t.byId.get(e.parentEntryId);
        if (parent && shownSet.has(parent) && parent !== e) {
          if (!nestedUnder.has(parent)) nestedUnder.set(parent, []);
          nestedUnder.get(parent).push(e);
        }
      }
      const nestedSet = new Set([...nestedUnder.values()].flat());
      const cards = [];
      const add = (e, into) => {
        const card = entryCard(e, path, true);
        const kids = nestedUnder.get(e);
        if (kids) {
          const holdsTarget = kids.some((k) => (target && k.entryId === target) || (!target && k.index === at));
          card.append(el("details", { class: "nested", open: kids.length <= 5 || holdsTarget || null },
            el("summary", {}, `${kids.length} nested entr${kids.length === 1 ? "y" : "ies"}`),
            kids.map((k) => entryCard(k, path))));
        }
        into.push(card);
      };
      for (const e of path) if (!nestedSet.has(e)) add(e, cards);
      const extraRoots = t.forked ? t.roots.filter((r) => !shownSet.has(r) && !r.parentEntryId) : [];
      if (extraRoots.length) {
        cards.unshift(el("div", { class: "forks" }, `↳ ${extraRoots.length} other thread${extraRoots.length > 1 ? "s" : ""}: `,
          extraRoots.map((r) => el("button", { class: "fork", onclick: () => { shownLeaf = t.deepestUnder(r).entryId; render(); } }, `#${r.index} ${(r.text || "").slice(0, 60)}`))));
      }
      put(body, ...cards);
      renderTree(path);
    }

    function renderTree(path) {
      if (!t.forked) { tree.hidden = true; return; }
      tree.hidden = false;
      const active = new Set(t.pathTo(t.activeLeaf));
      const shownSet = new Set(path);
      const segment = (start) => { // a run of entries up to the next fork
        const run = [start];
        let e = start;
        for (;;) { const kids = t.children.get(e.entryId) || []; if (kids.length !== 1) return { run, kids }; e = kids[0]; run.push(e); }
      };
      const node = (start) => {
        const { run, kids } = segment(start);
        const last = run[run.length - 1];
        const label = `#${run[0].index}${run.length > 1 ? "–#" + last.index : ""} ${(run[0].text || "").slice(0, 40)}`;
        const cls = (active.has(last) ? "active " : "") + (shownSet.has(last) ? "shown" : "");
        return el("li", {}, el("button", { class: "link " + cls, "data-segment": run[0].entryId,
          onclick: () => { shownLeaf = t.deepestUnder(last).entryId; render(); } }, label, active.has(last) && !kids.length ? " (active)" : ""),
        kids.length ? el("ul", {}, kids.map(node)) : null);
      };
      put(tree, el("h3", {}, "Branches"), el("p", { class: "muted small" }, "green: the active path"), el("ul", {}, t.roots.map(node)));
    }

    function reveal() {
      if (target && t.byId && t.byId.has(target) && t.forked) {
        const e = t.byId.get(target);
        if (!t.pathTo(t.activeLeaf).includes(e)) shownLeaf = t.deepestUnder(e).entryId;
      }
      render();
      const node = view.querySelector(".entry.target");
      if (node) node.scrollIntoView({ block: "center" });
    }

    (async () => {
      try {
        // A long session shows its first pages while the rest loads (in file order; the
        // branch tree and the hit's place come with the last page).
        const note = el("p", { class: "muted", id: "loading" });
        let drawn = 0;
        await t.load((n, total) => {
          if (!drawn) put(body, note);
          for (; drawn < t.entries.length && drawn < 200; drawn++) {
            const e = t.entries[drawn];
            if (e) body.insertBefore(entryCard(e, [], false), note);
          }
          note.textContent = `loading… ${n} of ${total} entries`;
        });
        head.querySelector("h2").textContent = `Session · ${t.count} entries`;
        reveal();
      } catch (err) { put(body, errorBox(err)); }
    })();

    let busy = false;
    return {
      onGeneration: async () => {
        if (busy || !t.byId) return;
        busy = true;
        try {
          const followActive = !shownLeaf;
          const grown = await t.grow();
          if (grown === "reload") { await t.load(); fresh = new Set(); render(); }
          else if (grown) {
            fresh = new Set(grown);
            if (followActive) shownLeaf = null;
            head.querySelector("h2").textContent = `Session · ${t.count} entries`;
            render();
          }
        } catch (err) { put(banner, errorBox(err)); } finally { busy = false; }
      },
    };
  }

  // ------------------------------------------------------------------ sessions list

  function sessionsView(params) {
    const agent = params.get("agent") || "";
    const box = el("div", {}, el("p", { class: "muted" }, "loading…"));
    put(view, el("h2", {}, "Sessions"),
      el("div", { class: "row" }, "agent ", select("agent", ["", "pi", "claude", "codex"], agent, "agent"),
        el("span", { class: "muted small" }, "newest first, grouped by project")), box);
    view.querySelector("select[name=agent]").addEventListener("change", (ev) => go("sessions", { agent: ev.target.value }));
    (async () => {
      let r;
      try { r = await api("sessions", { scope: "global", limit: 500, ...(agent ? { agent } : {}) }); } catch (err) { put(box, errorBox(err)); return; }
      if (r.error) { put(box, errorBox(r.error)); return; }
      const rows = [...r.sessions].sort((a, b) => (b.mtime || 0) - (a.mtime || 0));
      if (!rows.length) { put(box, el("p", { class: "muted" }, "No sessions indexed in this scope.")); return; }
      // A subagent's own file (sidechain, with its parent's id) is listed under the session
      // that spawned it, oldest first; one whose parent is not listed stays in its place.
      const listed = new Set(rows.map((s) => s.id));
      const children = new Map();
      for (const s of rows) {
        if (!s.sidechain || !listed.has(s.parentSession)) continue;
        if (!children.has(s.parentSession)) children.set(s.parentSession, []);
        children.get(s.parentSession).push(s);
      }
      const nested = (s) => s.sidechain && listed.has(s.parentSession);
      const groups = new Map();
      for (const s of rows) {
        if (nested(s)) continue;
        if (!groups.has(s.cwd)) groups.set(s.cwd, []);
        groups.get(s.cwd).push(s);
      }
      const prompts = [];
      const tbody = el("tbody");
      const row = (s, sub) => {
        // The listing already read the first prompt of hot and small cold sessions; only the
        // rows it did not look into cost an expand each.
        // A title the agent recorded names the row; the first prompt stands in without one.
        const c = s.counts;
        const label = s.title || s.firstPrompt;
        const cell = el("td", { class: "prompt" + (label ? "" : " muted"), title: s.firstPrompt || s.title || null },
          label || (c ? "(no prompt)" : "…"),
          c ? el("span", { class: "muted small counts" },
            ` · ${c.prompts} prompt${c.prompts === 1 ? "" : "s"}, ${c.toolResults} tool result${c.toolResults === 1 ? "" : "s"}`) : null,
          c && c.failed ? [" ", el("span", { class: "badge bad" }, `${c.failed} failed`)] : null);
        if (!label && !c) prompts.push([s, cell]);
        const kids = (children.get(s.id) || []).length;
        return el("tr", { "data-session": s.id, class: sub ? "sub" : null, "data-parent": sub ? s.parentSession : null },
          el("td", {}, el("a", { href: sessionLink(s.file, {}) }, (sub ? "↳ " : "") + when(s.mtime))),
          el("td", {}, el("span", { class: "badge" }, s.agent),
            s.sidechain ? el("span", { class: "badge", title: "a subagent's transcript" }, "subagent") : null,
            kids ? el("span", { class: "muted small", title: "subagent transcripts listed below" }, ` +${kids}`) : null),
          cell, el("td", { class: "num" }, s.entryCount), el("td", { class: "muted small" }, s.tier));
      };
      for (const [cwd, list] of groups) {
        tbody.append(el("tr", { class: "group" }, el("td", { colspan: 5, class: "mono" }, cwd || "(no project)",
          el("span", { class: "muted small" }, ` · ${list.length} session${list.length === 1 ? "" : "s"}`))));
        for (const s of list) {
          tbody.append(row(s, false));
          const kids = [...(children.get(s.id) || [])].sort((a, b) => (a.mtime || 0) - (b.mtime || 0));
          for (const k of kids) tbody.append(row(k, true));
        }
      }
      const table = el("table", { class: "sessions" },
        el("colgroup", {}, ["when", "agent", "prompt", "num", "tier"].map((c) => el("col", { class: "c-" + c }))),
        el("thead", {}, el("tr", {}, ["when", "agent", "title or first prompt", "entries", "tier"].map((h) => el("th", {}, h)))), tbody);
      put(box, coverageBox(r.coverage, false), table);
      firstPrompts(prompts.slice(0, 200));
    })();
    return {};
  }

  async function firstPrompts(todo) {
    const one = async ([s, cell]) => {
      if (!s.entryCount) { cell.textContent = "(empty)"; return; }
      try {
        const last = Math.min(5, s.entryCount - 1);
        const r = await api("expand", { session: s.file, entryRange: { first: 0, last }, maxEntries: last + 1, maxChars: 2000 });
        const e = (r.entries || []).find((x) => x.role === "user") || (r.entries || [])[0];
        cell.textContent = e ? (e.text || "").split("\n")[0].slice(0, 200) : "";
        cell.title = cell.textContent;
        cell.classList.remove("muted");
      } catch (_) { cell.textContent = ""; }
    };
    const queue = [...todo];
    await Promise.all([0, 1, 2, 3].map(async () => { while (queue.length) await one(queue.shift()); }));
  }

  // ------------------------------------------------------------------ catalog

  function catalogView() {
    const box = el("div", {}, el("p", { class: "muted" }, "loading…"));
    put(view, el("h2", {}, "Capability catalog"),
      el("p", { class: "muted small" }, "agent → provider → tool, as seen in indexed history; follow a head to its entries."), box);
    (async () => {
      let r;
      try { r = await api("catalog", { scope: "global" }); } catch (err) { put(box, errorBox(err)); return; }
      if (r.error) { put(box, errorBox(r.error)); return; }
      const counts = (x) => [el("span", { class: "muted small" }, ` ${x.count} use${x.count === 1 ? "" : "s"}`),
        x.failures ? el("span", { class: "badge bad" }, `${x.failures} failed`) : null,
        x.lastSeen ? el("span", { class: "muted small" }, ` last ${when(x.lastSeen)}`) : null];
      const headItem = (a, h) => {
        const filter = h.ref ? { ref: h.ref } : h.tool ? { tool: h.tool } : {};
        const outcomes = Object.entries(h.outcomes || {}).map(([k, v]) => `${k} ${v}`).join(", ");
        return el("li", { "data-ref": h.ref },
          el("a", { href: "#/search?" + new URLSearchParams({ scope: "global", agent: a.agent, ...filter }) },
            h.action || h.tool || "(unnamed)"),
          h.ref ? el("span", { class: "mono muted" }, " " + h.ref) : null, ...counts(h),
          el("span", { class: "muted small" }, ` · ${h.sessions} session${h.sessions === 1 ? "" : "s"}`),
          outcomes ? el("span", { class: "muted small" }, " · " + outcomes) : null);
      };
      const providerItem = (a, p) => el("li", {}, p.provider ? el("span", {}, p.provider) : el("span", { class: "muted" }, "(no provider)"), ...counts(p),
        el("ul", {}, p.heads.map((h) => headItem(a, h))));
      const agentItem = (a) => el("li", {}, el("strong", {}, a.agent), ...counts(a),
        el("ul", {}, a.providers.map((p) => providerItem(a, p))));
      const tree = el("div", { class: "tree-cat" }, el("ul", {}, r.agents.map(agentItem)));
      put(box, coverageBox(r.coverage, !r.agents.length),
        r.agents.length ? tree : el("p", { class: "muted" }, "No tool use seen in this scope."),
        r.omittedHeads ? el("p", { class: "muted" }, `${r.omittedHeads} rarely used heads left out`) : null);
    })();
    return {};
  }

  // ------------------------------------------------------------------ routing

  function route() {
    const { name, params } = hashParams();
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.dataset.nav === name || (name === "session" && a.dataset.nav === "sessions"));
    if (name === "session" && params.get("file")) current = sessionView(params);
    else if (name === "sessions") current = sessionsView(params);
    else if (name === "catalog") current = catalogView();
    else current = searchView(params);
  }

  window.addEventListener("hashchange", route);
  follow();
  route();
})();
