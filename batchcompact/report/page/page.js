// batchcompact report --html: the page's views, from the aggregates embedded by report/html.py.
// Every name is shown with textContent (never innerHTML); no request is made.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const DIM_LABELS = /* the dimensions' names: report/html.py writes them here from report/dimensions.py */;
  // 20 colours told apart at a glance (Tableau 20 reordered: the darker of each pair first), "other" grey.
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
    "#ff9da7", "#17becf", "#1f3a93", "#bcbd22", "#8c564b", "#2ca02c", "#d62728", "#9467bd", "#ffbe7d",
    "#86bcb6", "#f1ce63", "#d4a6c8"];
  const OTHER_COLOUR = "#b4b4b4";
  const TOKENS = [["input_tokens", "input"], ["output_tokens", "output"], ["cache_read_tokens", "cache read"],
    ["cache_write_tokens", "cache write"], ["reasoning_tokens", "reasoning (in output)"]];
  const NUMS = ["requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "reasoning_tokens", "total_tokens", "cost_usd", "unpriced_requests"];
  const WEEKDAYS = {monday: 1, tuesday: 2, wednesday: 3, thursday: 4, friday: 5, saturday: 6, sunday: 0};
  const days = DATA.days;
  const $ = (id) => document.getElementById(id);
  const state = {dimension: DATA.view.dimension, bucket: DATA.view.bucket, top: 10,
    from: days[0] || "", to: days[days.length - 1] || "", dimSort: ["cost_usd", -1], sessionSort: ["cost_usd", -1],
    dimFilter: "", sessionFilter: "", open: new Set(), sessionRows: 100};
  let chart = null;

  const int = new Intl.NumberFormat("en-US");
  const usd = new Intl.NumberFormat("en-US", {style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2});
  const fmtInt = (n) => int.format(n);
  const fmtCost = (c) => usd.format(c);
  const plural = (n, noun) => fmtInt(n) + " " + noun + (n === 1 ? "" : "s");
  const axisCost = (v) => (Math.abs(v) >= 1 ? "$" + int.format(v) : "$" + Number(v.toPrecision(2)));
  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function costCell(td, cost, unpriced, requests) {
    if (unpriced && unpriced >= requests) { td.textContent = "unpriced"; td.classList.add("unpriced"); }
    else if (unpriced) { td.textContent = fmtCost(cost) + " + unpriced"; td.classList.add("unpriced");
      td.title = fmtInt(unpriced) + " requests of models with no price: their cost is unknown, not $0"; }
    else td.textContent = fmtCost(cost);
  }

  // ---- days, buckets, range
  function dayRange() {
    const lo = days.findIndex((d) => d >= state.from), hiRev = [...days].reverse().findIndex((d) => d <= state.to);
    if (lo < 0 || hiRev < 0) return [1, 0];
    return [lo, days.length - 1 - hiRev];
  }
  function inRange(dayIdx) { const d = days[dayIdx]; return d !== undefined && d >= state.from && d <= state.to; }
  function whole() { return state.from <= (days[0] || "") && state.to >= (days[days.length - 1] || ""); }
  function parseDay(s) { const [y, m, d] = s.split("-").map(Number); return new Date(Date.UTC(y, m - 1, d)); }
  function isoDay(t) { return t.toISOString().slice(0, 10); }
  function bucketOf(day) {
    if (state.bucket === "day") return day;
    if (state.bucket === "month") return day.slice(0, 7);
    const t = parseDay(day), first = WEEKDAYS[DATA.start_of_week] ?? 1;
    const back = (t.getUTCDay() - first + 7) % 7;
    return isoDay(new Date(t.getTime() - back * 86400000));
  }
  function allBuckets() {  // every bucket from the range's first day to its last: a day with no use is a gap
    if (!state.from || !state.to || state.from > state.to) return [];
    const out = [], seen = new Set();
    const first = state.from < days[0] ? days[0] : state.from, last = state.to > days[days.length - 1] ? days[days.length - 1] : state.to;
    for (let t = parseDay(first); isoDay(t) <= last; t = new Date(t.getTime() + 86400000)) {
      const b = bucketOf(isoDay(t));
      if (!seen.has(b)) { seen.add(b); out.push(b); }
    }
    return out;
  }

  // ---- sums
  function zero() { const z = {}; for (const k of NUMS) z[k] = 0; return z; }
  function add(acc, src, i) { for (const k of NUMS) acc[k] += src[k][i]; }
  function groupsInRange(dim) {
    const d = DATA.dimensions[dim], sums = new Map();
    for (let i = 0; i < d.group.length; i++) {
      if (!inRange(d.day[i])) continue;
      let acc = sums.get(d.group[i]);
      if (!acc) { acc = zero(); sums.set(d.group[i], acc); }
      add(acc, d, i);
    }
    return sums;
  }
  function totals() {
    if (whole()) return Object.assign(zero(), DATA.totals);  // the report's own totals, as --format json has them
    const t = zero();
    for (const acc of groupsInRange("model").values()) for (const k of NUMS) t[k] += acc[k];
    return t;
  }

  // ---- headline
  function card(id, label, value, detail) {
    const c = el("div", null, "card"); c.id = id;
    c.append(el("div", label, "label"));
    const v = el("div", value, "value"); v.id = id + "-value"; c.append(v);
    if (detail) { const d = el("div", detail, "detail"); d.id = id + "-detail"; c.append(d); }
    return c;
  }
  function renderHeadline() {
    const t = totals(), box = $("headline");
    box.replaceChildren();
    const unpricedModels = DATA.unpriced_models || [];
    let costDetail = t.unpriced_requests ? plural(t.unpriced_requests, "request") + " unpriced (cost unknown, not $0): " +
      unpricedModels.join(", ") : t.requests ? "every request priced" : "no requests";
    box.append(card("cost", "Cost", fmtCost(t.cost_usd) + (t.unpriced_requests ? " + unpriced" : ""), costDetail));
    box.append(card("requests", "Requests", fmtInt(t.requests)));
    box.append(card("tokens", "Tokens", fmtInt(t.total_tokens),
      TOKENS.map(([k, name]) => name + " " + fmtInt(t[k])).join("\n")));
    const denom = t.input_tokens + t.cache_read_tokens;
    box.append(card("cache-rate", "Cache hit rate", denom ? (100 * t.cache_read_tokens / denom).toFixed(1) + "%" : "–",
      "cache read / (input + cache read)"));
    const [lo, hi] = dayRange();
    box.append(card("period", "Period", lo <= hi ? days[lo] + " – " + days[hi] : "no use",
      lo <= hi ? fmtInt(hi - lo + 1) + " days with use" : ""));
    box.append(runsCard());
  }
  function runsCard() {
    const runs = DATA.runs;
    if (!runs) return card("batchcompact", "Compacted by batchcompact", "none", "no run report (compactions-*.parquet) in these files");
    const t = {compacted: 0, failed: 0, tokens_before: 0, tokens_after: 0, cost_usd: 0, batch_saved_usd: 0, calls: 0, latency_s: 0, output_tokens: 0};
    // a range's end at the period's own end is open: the runs before its first day of use or after its last
    // (a run today on an archive last used yesterday) count in the whole period, as in "Whole period"
    const openFrom = !days.length || state.from <= days[0], openTo = !days.length || state.to >= days[days.length - 1];
    runs.days.forEach((day, i) => {
      if ((openFrom || day >= state.from) && (openTo || day <= state.to)) for (const k in t) t[k] += runs.by_day[i][k];
    });
    const lines = [];
    if (t.tokens_before) lines.push("context " + fmtInt(t.tokens_before) + " → " + fmtInt(t.tokens_after) + " tokens (−" +
      (100 * (1 - t.tokens_after / t.tokens_before)).toFixed(0) + "%)");
    lines.push("cost " + fmtCost(t.cost_usd) + (t.batch_saved_usd ? "; batch API saved " + fmtCost(t.batch_saved_usd) : ""));
    if (t.calls && t.latency_s) lines.push("summary calls: " + (t.latency_s / t.calls).toFixed(1) + " s each, " +
      (t.output_tokens / t.latency_s).toFixed(0) + " output tokens/s");
    const tried = t.compacted + t.failed;
    if (tried) lines.push("failed: " + fmtInt(t.failed) + " of " + fmtInt(tried) + " (" + (100 * t.failed / tried).toFixed(1) + "%)");
    return card("batchcompact", "Compacted by batchcompact", fmtInt(t.compacted) + (t.compacted === 1 ? " session" : " sessions"), lines.join("\n"));
  }

  // ---- chart
  function renderChart() {
    const dim = state.dimension, d = DATA.dimensions[dim];
    const buckets = allBuckets(), index = new Map(buckets.map((b, i) => [b, i]));
    const sums = groupsInRange(dim);
    const ranked = [...sums.entries()].sort((a, b) => b[1].cost_usd - a[1].cost_usd || b[1].total_tokens - a[1].total_tokens);
    const shown = ranked.slice(0, state.top).map(([g]) => g), shownSet = new Set(shown);
    const series = new Map(shown.map((g) => [g, new Array(buckets.length).fill(0)]));
    const other = new Array(buckets.length).fill(0);
    let anyOther = false;
    for (let i = 0; i < d.group.length; i++) {
      if (!inRange(d.day[i])) continue;
      const b = index.get(bucketOf(days[d.day[i]]));
      if (b === undefined) continue;
      if (shownSet.has(d.group[i])) series.get(d.group[i])[b] += d.cost_usd[i];
      else { other[b] += d.cost_usd[i]; anyOther = true; }
    }
    const unpricedNote = (acc) => (!acc.unpriced_requests ? "" : acc.unpriced_requests >= acc.requests ? " (unpriced)" : " (partly unpriced)");
    const datasets = shown.map((g, j) => ({label: d.names[g].join(" · ") + unpricedNote(sums.get(g)), data: series.get(g).map((v) => +v.toFixed(6)),
      backgroundColor: PALETTE[j % PALETTE.length], stack: "cost"}));
    if (anyOther) datasets.push({label: "other (" + (ranked.length - shown.length) + ")", data: other.map((v) => +v.toFixed(6)),
      backgroundColor: OTHER_COLOUR, stack: "cost"});
    $("chart-title").textContent = "Spend per " + state.bucket + ", by " + DIM_LABELS[dim] +
      (ranked.length ? " (top " + Math.min(state.top, ranked.length) + (anyOther ? " and other" : "") + ")" : "");
    const empty = !buckets.length || !ranked.length;
    $("chart-empty").hidden = !empty;
    $("chart-box").hidden = empty;
    if (chart) { chart.destroy(); chart = null; }
    if (empty || typeof Chart === "undefined") return;
    chart = new Chart($("chart"), {
      type: "bar",
      data: {labels: buckets, datasets},
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: {mode: "index", intersect: false},
        scales: {x: {stacked: true, grid: {display: false}, ticks: {autoSkip: true, maxRotation: 0}},
          y: {stacked: true, beginAtZero: true, title: {display: true, text: "cost (USD)"},
            ticks: {callback: axisCost}}},
        plugins: {legend: {position: "bottom", labels: {boxWidth: 12}},  // long project paths fit below, not beside
          tooltip: {callbacks: {label: (c) => c.dataset.label + ": " + fmtCost(c.parsed.y)}}},
      },
    });
  }

  // ---- tables
  const DIM_COLUMNS = [["requests", "requests"], ["input_tokens", "input"], ["output_tokens", "output"],
    ["cache_read_tokens", "cache read"], ["cache_write_tokens", "cache write"], ["total_tokens", "total"],
    ["cost_usd", "cost USD"], ["share", "share"]];
  function header(table, columns, sortState, onSort) {
    const tr = el("tr");
    for (const [key, label, cls] of columns) {
      const th = el("th", label, cls); th.dataset.key = key; th.scope = "col";
      if (sortState[0] === key) th.setAttribute("aria-sort", sortState[1] > 0 ? "ascending" : "descending");
      th.addEventListener("click", () => onSort(key));
      tr.append(th);
    }
    table.tHead.replaceChildren(tr);
  }
  function cmp(a, b, key, dir) {
    const x = a[key], y = b[key];
    if (typeof x === "string" || typeof y === "string") return dir * String(x ?? "").localeCompare(String(y ?? ""));
    return dir * ((x ?? 0) - (y ?? 0));
  }
  function nextSort(cur, key) { return cur[0] === key ? [key, -cur[1]] : [key, typeof key === "string" && key.startsWith("key") ? 1 : -1]; }
  function renderDimTable() {
    const dim = state.dimension, d = DATA.dimensions[dim], table = $("dim-table");
    $("table-title").textContent = "By " + DIM_LABELS[dim];
    const keyCols = d.keys.map((k, i) => ["key" + i, k, "text"]);
    header(table, [...keyCols, ...DIM_COLUMNS], state.dimSort, (key) => { state.dimSort = nextSort(state.dimSort, key); renderDimTable(); });
    const sums = groupsInRange(dim), total = zero();
    let rows = [...sums.entries()].map(([g, acc]) => { const r = Object.assign({}, acc); d.names[g].forEach((n, i) => { r["key" + i] = n; }); return r; });
    for (const r of rows) for (const k of NUMS) total[k] += r[k];
    for (const r of rows) r.share = total.cost_usd ? r.cost_usd / total.cost_usd : 0;
    const f = state.dimFilter.toLowerCase();
    if (f) rows = rows.filter((r) => d.keys.some((_, i) => String(r["key" + i]).toLowerCase().includes(f)));
    rows.sort((a, b) => cmp(a, b, state.dimSort[0], state.dimSort[1]) || cmp(a, b, "key0", 1));
    const body = document.createDocumentFragment();
    for (const r of rows) body.append(dimRow(r, d.keys.length));
    table.tBodies[0].replaceChildren(body);
    const foot = dimRow(Object.assign({key0: "TOTAL", share: total.cost_usd ? 1 : null}, f ? rows.reduce((t, r) => { for (const k of NUMS) t[k] += r[k]; return t; }, zero()) : total), d.keys.length);
    if (f) foot.lastChild.textContent = "";
    table.tFoot.replaceChildren(foot);
  }
  function dimRow(r, nkeys) {
    const tr = el("tr");
    for (let i = 0; i < nkeys; i++) tr.append(el("td", r["key" + i] ?? "", "text"));
    for (const [key] of DIM_COLUMNS) {
      const td = el("td"); td.dataset.key = key;
      if (key === "cost_usd") costCell(td, r.cost_usd, r.unpriced_requests, r.requests);
      else if (key === "share") td.textContent = r.share === null ? "–" : (100 * r.share).toFixed(1) + "%";
      else td.textContent = fmtInt(r[key]);
      tr.append(td);
    }
    return tr;
  }

  const S = DATA.sessions;
  const SESSION_COLUMNS = [["session", "session", "text"], ["agent", "agent", "text"], ["project", "project", "text"],
    ["branch", "branch", "text"], ["model", "models", "text"], ["first", "first", "text when"], ["last", "last", "text when"],
    ["requests", "requests"], ["total_tokens", "tokens"], ["cost_usd", "cost USD"]];
  function sessionsInRange() {
    const out = new Map();
    for (let i = 0; i < S.group.length; i++) {
      if (!inRange(S.day[i])) continue;
      let r = out.get(S.group[i]);
      if (!r) {
        const n = S.names[S.group[i]];
        r = Object.assign(zero(), {g: S.group[i], session: n[0], agent: n[1], project: n[2], models: new Set(),
          branches: new Set(), first: null, last: null, rows: []});
        out.set(S.group[i], r);
      }
      add(r, S, i); r.rows.push(i);
      S.models[i].forEach((m) => r.models.add(m)); S.branches[i].forEach((b) => r.branches.add(b));
      if (S.first[i] && (!r.first || S.first[i] < r.first)) r.first = S.first[i];
      if (S.last[i] && (!r.last || S.last[i] > r.last)) r.last = S.last[i];
    }
    for (const r of out.values()) { r.model = [...r.models].join(", "); r.branch = [...r.branches].join(", "); }
    return [...out.values()];
  }
  const when = (t) => (t ? t.slice(0, 16).replace("T", " ") : "");
  function renderSessions() {
    const table = $("session-table");
    header(table, SESSION_COLUMNS, state.sessionSort, (key) => { state.sessionSort = nextSort(state.sessionSort, key); renderSessions(); });
    let rows = sessionsInRange();
    const f = state.sessionFilter.toLowerCase();
    if (f) rows = rows.filter((r) => [r.session, r.agent, r.project, r.branch, r.model].some((v) => String(v).toLowerCase().includes(f)));
    rows.sort((a, b) => cmp(a, b, state.sessionSort[0], state.sessionSort[1]) || cmp(a, b, "session", 1));
    const shownCap = state.sessionRows, body = document.createDocumentFragment();
    for (const r of rows.slice(0, shownCap)) {
      const tr = el("tr", null, "session"); tr.tabIndex = 0; tr.dataset.session = r.session;
      tr.title = "Show this session's days";
      for (const [key, , cls] of SESSION_COLUMNS) {
        const td = el("td", null, cls);
        if (key === "cost_usd") costCell(td, r.cost_usd, r.unpriced_requests, r.requests);
        else if (key === "first" || key === "last") td.textContent = when(r[key]);
        else if ((cls || "").startsWith("text")) td.textContent = r[key] ?? "";
        else td.textContent = fmtInt(r[key]);
        tr.append(td);
      }
      const toggle = () => { state.open.has(r.g) ? state.open.delete(r.g) : state.open.add(r.g); renderSessions(); };
      tr.addEventListener("click", toggle);
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") toggle(); });
      body.append(tr);
      if (state.open.has(r.g)) body.append(sessionDays(r));
    }
    table.tBodies[0].replaceChildren(body);
    const inPage = rows.length > shownCap ? " (the first " + fmtInt(shownCap) + " listed)" : "";
    $("session-more").hidden = rows.length <= shownCap;
    $("session-note").textContent = fmtInt(rows.length) + " sessions in this period" + inPage +
      (S.count > S.names.length ? "; the page holds the " + fmtInt(S.names.length) + " costliest of " + fmtInt(S.count) +
        " sessions (batchcompact report --by session lists every one)" : "") + ". Click a session for its days.";
  }
  function sessionDays(r) {
    const tr = el("tr", null, "days"), td = el("td"); td.colSpan = SESSION_COLUMNS.length;
    const t = el("table"); t.className = "session-days";
    const head = el("tr");
    for (const h of ["day", "models", "branch", "requests", "input", "output", "cache read", "cache write", "cost USD"]) head.append(el("th", h));
    t.createTHead().append(head);
    const body = t.createTBody();
    for (const i of r.rows) {
      const row = el("tr");
      row.append(el("td", days[S.day[i]], "text"), el("td", S.models[i].join(", "), "text"), el("td", S.branches[i].join(", "), "text"));
      for (const k of ["requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]) row.append(el("td", fmtInt(S[k][i])));
      const c = el("td"); costCell(c, S.cost_usd[i], S.unpriced_requests[i], S.requests[i]); row.append(c);
      body.append(row);
    }
    td.append(t); tr.append(td);
    return tr;
  }

  // ---- page
  function renderAll() { renderHeadline(); renderChart(); renderDimTable(); renderSessions(); }
  function setup() {
    const f = DATA.filters, parts = [];
    if (f.agents.length) parts.push("agents " + f.agents.join(", "));
    if (f.projects.length) parts.push("projects " + f.projects.join(", "));
    if (f.sessions.length) parts.push("sessions " + f.sessions.join(", "));
    if (f.since || f.until) parts.push("days " + (f.since || "…") + " – " + (f.until || "…"));
    $("subtitle").textContent = (days.length ? days[0] + " – " + days[days.length - 1] : "No usage in these files") +
      " · days in " + f.timezone + " · cost " + f.cost_mode + (parts.length ? " · only " + parts.join("; ") : "");
    $("notes").textContent = "Error rate, latency and tokens per second: only batchcompact's own run reports record " +
      "them (its summary calls, in the card above); no agent's session files give them per request in the usage " +
      "table. " + fmtInt(DATA.dropped_zero_token_requests) + " requests with no tokens left out.";
    $("footer").textContent = "Made by batchcompact report --html. Prices: " + DATA.pricing + ". Chart: Chart.js 4.6.1 (MIT).";
    const dimSel = $("dimension");
    for (const k of Object.keys(DATA.dimensions)) { const o = el("option", DIM_LABELS[k]); o.value = k; dimSel.append(o); }
    dimSel.value = state.dimension;
    $("bucket").value = state.bucket;
    for (const id of ["from", "to"]) { $(id).value = state[id]; $(id).min = days[0] || ""; $(id).max = days[days.length - 1] || ""; }
    dimSel.addEventListener("change", () => { state.dimension = dimSel.value; state.dimSort = ["cost_usd", -1]; renderChart(); renderDimTable(); });
    $("bucket").addEventListener("change", () => { state.bucket = $("bucket").value; renderChart(); });
    $("top").addEventListener("change", () => { state.top = Number($("top").value); renderChart(); });
    for (const id of ["from", "to"]) $(id).addEventListener("change", () => { state[id] = $(id).value || (id === "from" ? days[0] : days[days.length - 1]) || ""; renderAll(); });
    $("reset-range").addEventListener("click", () => { state.from = days[0] || ""; state.to = days[days.length - 1] || "";
      $("from").value = state.from; $("to").value = state.to; renderAll(); });
    $("dim-filter").addEventListener("input", () => { state.dimFilter = $("dim-filter").value; renderDimTable(); });
    $("session-filter").addEventListener("input", () => { state.sessionFilter = $("session-filter").value; renderSessions(); });
    $("session-more").addEventListener("click", () => { state.sessionRows += 100; renderSessions(); });
    renderAll();
    window.__batchcompactRendered = performance.now();  // bench/bench_html.py: time to first render
    document.body.dataset.ready = "1";
  }
  setup();
})();
