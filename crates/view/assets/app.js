// The page of `gantry view`: plain ES module, no dependencies, nothing
// fetched from outside the view's own server.
//
// Data (the run log contract): `GET /api/runs` lists run summaries,
// `GET /api/runs/{id}` gives every record of one run, `/api/events` pushes
// each new record (`record`) and each change of a run's state (`run`).
// The selected run is held as a model built from its records (`indexRecord`).
// The timeline is updated in place, record by record; the other sections
// are small and redrawn from the model, at most once per frame.
//
// Record text is whatever tools and models wrote: it only ever reaches the
// page through text nodes (`el`), never innerHTML.

const TOKEN_KEY = 'gantry-view-token';
// A full draw opens, among the last N calls, those with diffs or images;
// calls that arrive live are opened the same way.
const AUTO_OPEN_LAST = 20;
// Kinds shown inside their call (when they carry one) rather than as rows.
const CALL_KINDS = ['call.start', 'call.end', 'file.write', 'confirm.ask', 'confirm.answer', 'sandbox.refused'];

const state = {
  token: '',
  runs: [],        // run summaries, newest first
  selected: null,  // id of the selected run
  run: null,       // its model (newRunModel)
  tab: 'timeline',
  opened: new Set(), // "<testid>:<call id>" the person opened...
  closed: new Set(), // ...or closed, kept across redraws of the selected run
};
// DOM of the selected run (drawDetail).
let view = { callNodes: new Map() };

// ---------- helpers ----------

const $ = (selector) => document.querySelector(selector);

/** Nodes from a nested list of nodes, text (made text nodes) and absent
 * values (null, undefined, false: skipped). */
function nodes(children) {
  return children.flat(Infinity)
    .filter((child) => child !== undefined && child !== null && child !== false)
    .map((child) => (child instanceof Node ? child : document.createTextNode(String(child))));
}

/** An element. `props` become properties, except `class`, `testid` (data-testid)
 * and `data` (dataset entries); children as for `nodes`. */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'testid') node.dataset.testid = value;
    else if (key === 'data') for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
    else node[key] = value;
  }
  node.append(...nodes(children));
  return node;
}

/** Replaces the children of `node`, as `el` makes them. */
function fill(node, ...children) {
  node.replaceChildren(...nodes(children));
}

const pad = (n) => String(n).padStart(2, '0');
function clock(time) {
  const d = new Date(time);
  return isNaN(d) ? '' : `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
function dateTime(time) {
  const d = new Date(time);
  return isNaN(d) ? '' : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(time)}`;
}
function duration(ms) {
  if (typeof ms !== 'number') return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
const basename = (path) => String(path ?? '').split('/').filter(Boolean).pop() ?? '';
const workerOf = (by) => /^worker (\S+)$/.exec(by ?? '')?.[1];

// ---------- token, API ----------

/** The token from `#token=...` (then dropped from the address bar, so it is not
 * left in history or screenshots), else from sessionStorage (a reload). */
function readToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const fromUrl = hash.get('token');
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    hash.delete('token');
    const rest = hash.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
  }
  return fromUrl || sessionStorage.getItem(TOKEN_KEY) || '';
}

class AuthError extends Error {}

async function api(path) {
  const response = await fetch(path, {
    headers: { Authorization: `Bearer ${state.token}` },
    cache: 'no-store',
  });
  if (response.status === 401) throw new AuthError('token refused');
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

function showBanner(text) {
  const banner = $('#banner');
  banner.textContent = text ?? '';
  banner.hidden = !text;
}

const NO_TOKEN = 'No token: open the address `gantry view` printed (the one ending in #token=…).';

function failed(error) {
  if (!(error instanceof AuthError)) showBanner(`Could not read from gantry view: ${error.message}`);
  else if (!state.token) showBanner(NO_TOKEN);
  else showBanner('The view refused the token: open the address `gantry view` printed (the one ending in #token=…).');
}

function setStatus(kind, text) {
  const status = $('#status');
  status.className = `status ${kind}`;
  status.textContent = text;
}

// ---------- runs list ----------

async function loadRuns() {
  try {
    const runs = await api('/api/runs');
    state.runs = Array.isArray(runs) ? runs : [];
    sortRuns();
    renderRuns();
    showBanner('');
  } catch (error) {
    failed(error);
  }
}

// Newest first by start time (ids also sort by time, but their pid part is not zero-padded).
function sortRuns() {
  state.runs.sort((a, b) =>
    String(b.start?.time ?? '').localeCompare(String(a.start?.time ?? '')) || String(b.id).localeCompare(String(a.id)));
}

function upsertRun(summary) {
  if (!summary?.id) return;
  const at = state.runs.findIndex((run) => run.id === summary.id);
  if (at >= 0) state.runs[at] = summary;
  else state.runs.push(summary);
  sortRuns();
  renderRuns();
  if (summary.id === state.selected) scheduleDraw();
}

// The `run` event comes on state changes only; the counts of a running run
// change with its records, so the list is re-read, at most every 1.5 s.
let runsTimer = null;
function refreshRunsSoon() {
  if (runsTimer) return;
  runsTimer = setTimeout(() => { runsTimer = null; loadRuns(); }, 1500);
}

function stateBadge(runState) {
  return el('span', { class: `state ${runState}` }, el('span', { class: 'dot' }), runState);
}

function runItem(run) {
  const start = run.start ?? {};
  const counts = [plural(run.calls ?? 0, 'call'), run.refused ? `${run.refused} refused` : null].filter(Boolean).join(' · ');
  const button = el('button', { type: 'button', class: 'run-button', onclick: () => selectRun(run.id) },
    el('span', { class: 'run-line' },
      stateBadge(run.state),
      el('strong', {}, start.client?.name ?? start.front ?? 'unknown'),
      el('span', { class: 'muted' }, basename(start.workspace))),
    el('span', { class: 'run-line muted' }, dateTime(start.time), el('span', { class: 'counts' }, counts)));
  return el('li', {
    class: run.id === state.selected ? 'run selected' : 'run',
    testid: 'run-item', data: { runId: run.id }, title: run.id,
  }, button);
}

function renderRuns() {
  fill($('#runs'), state.runs.map(runItem));
  $('#no-runs').hidden = state.runs.length > 0;
}

const summaryOf = (id) => state.runs.find((run) => run.id === id);

// ---------- the selected run: model ----------

function newRunModel(id) {
  return {
    id,
    loaded: false,
    seen: new Set(),        // seqs applied: records come from fetches and events, each once
    maxSeq: -1,
    records: [],            // in seq order
    start: null, end: null, cut: false,
    calls: new Map(),       // call id -> call (callOf)
    order: [],              // timeline entries in log order: {call} or {record}
    writes: [],             // file.write
    refusals: [],           // sandbox.refused, confirm.answer other than yes
    resources: new Map(),   // resource name -> its resource.start, until its resource.end
    workers: new Map(),     // worker id -> transcript entries: {turn} or {call}
  };
}

function workerEntries(m, id) {
  if (!m.workers.has(id)) m.workers.set(id, []);
  return m.workers.get(id);
}

function callOf(m, r) {
  let call = m.calls.get(r.call);
  if (!call) {
    const parent = r.parent != null ? m.calls.get(r.parent) : null;
    call = {
      id: r.call, tool: r.tool, by: r.by, depth: parent ? parent.depth + 1 : 0,
      start: null, end: null, writes: [], asks: [], answers: [], refusals: [],
    };
    m.calls.set(r.call, call);
    m.order.push({ call });
    const worker = workerOf(r.by);
    if (worker) workerEntries(m, worker).push({ call });
  }
  return call;
}

/** Adds one record to the model; returns the timeline entry it changed. */
function indexRecord(m, r) {
  switch (r.kind) {
    case 'run.start': m.start = r; break;
    case 'run.end': m.end = r; break;
    case 'log.cut': m.cut = true; break;
    case 'file.write': m.writes.push(r); break;
    case 'sandbox.refused': m.refusals.push(r); break;
    case 'confirm.answer': if (r.answer !== 'yes') m.refusals.push(r); break;
    case 'resource.start': m.resources.set(r.resource, r); break;
    case 'resource.end': m.resources.delete(r.resource); break;
    case 'worker.turn': workerEntries(m, String(r.worker)).push({ turn: r }); break;
  }
  if (r.call == null || !CALL_KINDS.includes(r.kind)) {
    const entry = { record: r };
    m.order.push(entry);
    return entry;
  }
  const call = callOf(m, r);
  if (r.kind === 'call.start') Object.assign(call, { start: r, tool: r.tool ?? call.tool, by: r.by ?? call.by });
  else if (r.kind === 'call.end') { call.end = r; call.tool ??= r.tool; }
  else if (r.kind === 'file.write') call.writes.push(r);
  else if (r.kind === 'confirm.ask') call.asks.push(r);
  else if (r.kind === 'confirm.answer') call.answers.push(r);
  else call.refusals.push(r);
  return { call };
}

/** The model again from its records (after records arrived out of order). */
function reindex(m) {
  const fresh = newRunModel(m.id);
  fresh.loaded = m.loaded;
  fresh.seen = m.seen;
  fresh.maxSeq = m.maxSeq;
  fresh.records = m.records.sort((a, b) => a.seq - b.seq);
  for (const r of fresh.records) indexRecord(fresh, r);
  return fresh;
}

/** Applies records (from a fetch or an event), skipping those already seen. */
function applyRecords(records) {
  let m = state.run;
  const fresh = records.filter((r) => r && Number.isInteger(r.seq) && !m.seen.has(r.seq));
  if (!fresh.length) return;
  const wasEmpty = m.records.length === 0;
  const inOrder = fresh.every((r, i) => r.seq > (i ? fresh[i - 1].seq : m.maxSeq));
  for (const r of fresh) {
    m.seen.add(r.seq);
    m.records.push(r);
    m.maxSeq = Math.max(m.maxSeq, r.seq);
  }
  if (wasEmpty || !inOrder) {
    state.run = m = reindex(m);
    drawDetail();
    return;
  }
  for (const r of fresh) timelineApply(indexRecord(m, r));
  scheduleDraw();
}

async function selectRun(id) {
  if (state.selected === id) return;
  state.selected = id;
  state.run = newRunModel(id);
  state.opened = new Set();
  state.closed = new Set();
  history.replaceState(null, '', `#run=${encodeURIComponent(id)}`);
  renderRuns();
  drawDetail();
  await loadSelected();
}

/** (Re)reads the selected run: on selection, on each (re)connection of the
 * event stream, and when an event shows a gap in the seqs. */
async function loadSelected() {
  const id = state.selected;
  if (!id) return;
  try {
    const records = await api(`/api/runs/${encodeURIComponent(id)}`);
    if (state.selected !== id) return; // another run was selected meanwhile
    state.run.loaded = true;
    applyRecords(Array.isArray(records) ? records : []);
    scheduleDraw();
  } catch (error) {
    failed(error);
  }
}

function runStateOf(m) {
  return summaryOf(m.id)?.state ?? (m.end ? 'ended' : 'running');
}

// ---------- live events ----------

function onRecord(r) {
  if (!r || typeof r !== 'object') return;
  refreshRunsSoon();
  const m = state.run;
  if (!m || r.run !== m.id) return;
  const gap = m.loaded && r.seq > m.maxSeq + 1;
  applyRecords([r]);
  if (gap) loadSelected();
}

function parse(data) {
  try { return JSON.parse(data); } catch { return null; }
}

// EventSource reconnects by itself after a dropped connection; after an
// HTTP error (a 401, the server gone) it stops, so it is made again.
function connect() {
  const source = new EventSource(`/api/events?token=${encodeURIComponent(state.token)}`);
  source.addEventListener('open', () => {
    setStatus('live', 'live');
    // Whatever happened while not connected: read it (seqs dedupe the overlap).
    loadRuns();
    loadSelected();
  });
  source.addEventListener('error', () => {
    if (source.readyState === EventSource.CLOSED) {
      setStatus('down', 'disconnected, retrying…');
      setTimeout(connect, 3000);
    } else {
      setStatus('down', 'reconnecting…');
    }
  });
  source.addEventListener('record', (event) => onRecord(parse(event.data)));
  source.addEventListener('run', (event) => upsertRun(parse(event.data)));
}

// ---------- pieces of records ----------

function outcomeClass(outcome) {
  if (outcome === 'ok') return 'ok';
  if (outcome === 'running') return 'run';
  if (['refused', 'cancelled', 'input_required'].includes(outcome)) return 'warn';
  return 'bad';
}

/** A unified diff, one element per line, classed add / del / hunk / ctx / meta.
 * Hunk headers' counts tell content from a "+++"/"---" file header. */
function diffView(w) {
  if (typeof w.diff !== 'string') {
    return el('p', { class: 'muted' }, w.action === 'delete' ? 'The file was deleted.' : 'No diff recorded.');
  }
  const lines = w.diff.split('\n');
  if (lines.at(-1) === '') lines.pop();
  let oldLeft = 0;
  let newLeft = 0;
  const spans = lines.map((line) => {
    let kind = 'meta';
    const hunk = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line);
    if (hunk && oldLeft <= 0 && newLeft <= 0) {
      kind = 'hunk';
      oldLeft = hunk[1] === undefined ? 1 : Number(hunk[1]);
      newLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
    } else if (oldLeft > 0 || newLeft > 0) {
      if (line.startsWith('+')) { kind = 'add'; newLeft--; }
      else if (line.startsWith('-')) { kind = 'del'; oldLeft--; }
      else if (line.startsWith('\\')) kind = 'meta';
      else { kind = 'ctx'; oldLeft--; newLeft--; }
    } else if (/^[+-]/.test(line) && !/^(\+\+\+|---) /.test(line)) {
      kind = line[0] === '+' ? 'add' : 'del'; // a diff without usable counts
    }
    return el('span', { class: `dl ${kind}` }, line, '\n');
  });
  return el('div', {},
    el('pre', { class: 'diff', testid: 'diff' }, spans),
    w.diff_cut ? el('p', { class: 'muted' }, 'The diff was cut.') : null);
}

function fileWrite(w, m) {
  const sizes = [w.before != null ? `${w.before} → ` : '', w.size != null ? `${w.size} bytes` : ''].join('');
  const call = w.call != null ? m?.calls.get(w.call) : null;
  return el('div', { class: 'file-write', testid: 'file-write', data: { path: w.path ?? '' } },
    el('div', { class: 'write-head' },
      el('span', { class: `action ${w.action}` }, w.action ?? 'write'),
      el('code', {}, w.path ?? '?'),
      el('span', { class: 'muted' }, sizes),
      call ? jumpButton(call) : null),
    diffView(w));
}

function resultImage(image) {
  const mime = /^image\/[\w.+-]+$/.test(image?.mime ?? '') ? image.mime : null;
  if (!mime || typeof image.data !== 'string') return el('p', { class: 'muted' }, 'An image of an unknown type.');
  return el('img', {
    class: 'result-image', testid: 'result-image', alt: 'image returned by the call',
    src: `data:${mime};base64,${image.data}`,
  });
}

function refusalText(r) {
  if (r.kind === 'confirm.answer') return `confirmation answered "${r.answer}"`;
  const where = r.host ? ` (${r.host}${r.port != null ? `:${r.port}` : ''})` : '';
  return `sandbox refused ${r.what ?? ''}: ${r.detail ?? ''}${where}`;
}

function callBody(call) {
  const parts = [];
  if (call.start && call.start.args !== undefined) {
    parts.push(el('h4', {}, 'Arguments'), el('pre', { class: 'json' }, JSON.stringify(call.start.args, null, 2)));
  }
  for (const ask of call.asks) parts.push(el('p', { class: 'confirm' }, 'Asked the person: ', ask.summary ?? ''));
  for (const answer of call.answers) {
    parts.push(el('p', { class: `confirm ${answer.answer === 'yes' ? 'ok' : 'bad'}` }, 'Answer: ', answer.answer ?? '?'));
  }
  for (const refusal of call.refusals) parts.push(el('p', { class: 'refusal' }, refusalText(refusal)));
  if (call.end) {
    if (typeof call.end.text === 'string' && call.end.text) {
      parts.push(el('h4', {}, 'Result'), el('pre', { class: 'result' }, call.end.text));
    }
    for (const image of call.end.images ?? []) parts.push(resultImage(image));
  }
  if (call.writes.length) parts.push(el('h4', {}, 'Files written'), call.writes.map((w) => fileWrite(w)));
  if (!parts.length) parts.push(el('p', { class: 'muted' }, 'Nothing recorded yet.'));
  return el('div', { class: 'call-body' }, parts);
}

function callBadges(call) {
  const badges = [];
  if (call.writes.length) badges.push(plural(call.writes.length, 'file'));
  const images = call.end?.images?.length ?? 0;
  if (images) badges.push(plural(images, 'image'));
  if (call.asks.length) badges.push('asked');
  for (const answer of call.answers) if (answer.answer !== 'yes') badges.push(`answer: ${answer.answer}`);
  for (const refusal of call.refusals) badges.push(`sandbox: ${refusal.what}`);
  return badges.map((text) => el('span', { class: 'badge' }, text));
}

function fillSummary(node) {
  const call = node.call;
  const outcome = call.end?.outcome ?? 'running';
  fill(node.summary,
    el('span', { class: `outcome ${outcomeClass(outcome)}` }, outcome),
    el('span', { class: 'tool' }, call.tool ?? '?'),
    el('span', { class: 'muted' }, `by ${call.by ?? '?'}`),
    call.end ? el('span', { class: 'muted' }, duration(call.end.ms)) : null,
    callBadges(call),
    el('time', { class: 'muted when' }, clock((call.start ?? call.end)?.time)));
  node.details.dataset.tool = call.tool ?? '';
}

// A call as an expandable element; its body is built when first opened.
function callNode(call, testid = 'call') {
  const key = `${testid}:${call.id}`;
  const details = el('details', { class: 'call', testid, data: { callId: call.id } });
  details.style.setProperty('--depth', call.depth);
  const node = { call, details, summary: el('summary'), body: null, stale: true, key };
  details.append(node.summary);
  fillSummary(node);
  details.addEventListener('toggle', () => {
    if (details.open) {
      ensureBody(node);
      state.opened.add(key);
      state.closed.delete(key);
    } else {
      state.closed.add(key);
      state.opened.delete(key);
    }
  });
  if (state.opened.has(key)) openNode(node);
  return node;
}

function ensureBody(node) {
  if (!node.stale) return;
  const body = callBody(node.call);
  if (node.body) node.body.replaceWith(body);
  else node.details.append(body);
  node.body = body;
  node.stale = false;
}

function openNode(node) {
  ensureBody(node);
  node.details.open = true;
}

// Diffs and images show without a click, unless the person closed that call.
function autoOpen(node) {
  const call = node.call;
  if (state.closed.has(node.key)) return;
  if (call.writes.length || call.end?.images?.length) openNode(node);
}

function refreshCall(node) {
  fillSummary(node);
  node.stale = true;
  if (node.details.open) ensureBody(node);
}

function jumpButton(call) {
  return el('button', { type: 'button', class: 'link', onclick: () => showInTimeline(call.id) },
    `#${call.id} ${call.tool ?? ''}`);
}

function recordRow(r) {
  return el('div', { class: `row kind-${String(r.kind).replace('.', '-')}`, testid: 'record', data: { kind: r.kind, seq: r.seq } },
    el('time', { class: 'muted when' }, clock(r.time)),
    el('span', { class: 'kind' }, r.kind),
    el('div', { class: 'what' }, describe(r)));
}

function describe(r) {
  switch (r.kind) {
    case 'run.start': {
      const client = r.client ? `${r.client.name} ${r.client.version ?? ''}` : 'no client';
      return `${r.front ?? '?'} · ${client} · ${r.workspace ?? ''} · ${r.surface?.cap ?? '?'}, approval ${r.surface?.approval ?? '?'}`;
    }
    case 'run.end': return `${r.reason ?? ''} (${plural(r.calls ?? 0, 'call')})`;
    case 'notice': return el('span', { class: 'pre' }, r.text ?? '');
    case 'sandbox.refused':
    case 'confirm.answer': return refusalText(r);
    case 'confirm.ask': return `asked the person: ${r.summary ?? ''}`;
    case 'resource.start':
    case 'resource.end': return [el('strong', {}, r.resource ?? '?'), r.detail ? ` · ${r.detail}` : ''];
    case 'worker.turn': return workerTurn(r);
    case 'file.write': return fileWrite(r, state.run);
    case 'log.cut': return 'The log reached its cap: later records carry no text, arguments, diffs or images.';
    default: return el('pre', { class: 'json' }, JSON.stringify(r, null, 2));
  }
}

function workerTurn(r) {
  const tools = Array.isArray(r.tools) && r.tools.length ? r.tools.join(', ') : 'no tool';
  return el('div', { class: 'turn' },
    el('div', { class: 'muted' }, `worker ${r.worker}, turn ${r.turn} · called ${tools}`),
    r.text ? el('p', { class: 'pre' }, r.text) : null);
}

// ---------- the selected run: drawing ----------

function drawDetail() {
  const main = $('#detail');
  const m = state.run;
  if (!m) {
    fill(main, el('p', { class: 'empty' }, 'Select a run on the left.'));
    return;
  }
  view = { callNodes: new Map() };
  view.head = el('section', { class: 'run-head' });
  view.tabs = el('div', { class: 'tabs', role: 'tablist' });
  view.timeline = el('div', { class: 'timeline', testid: 'timeline' });
  const recent = new Set([...m.calls.values()].slice(-AUTO_OPEN_LAST));
  for (const entry of m.order) view.timeline.append(entryNode(entry, recent));
  view.timelinePanel = el('div', { class: 'panel' }, view.timeline);
  view.other = el('div', { class: 'panel' });
  fill(main, view.head, view.tabs, view.timelinePanel, view.other);
  drawNow();
}

function entryNode(entry, autoOpenAmong) {
  if (entry.record) return recordRow(entry.record);
  const node = callNode(entry.call);
  view.callNodes.set(entry.call.id, node);
  if (!autoOpenAmong || autoOpenAmong.has(entry.call)) autoOpen(node);
  return node.details;
}

/** The timeline, in place, for one record: a new row, a new call, or a call changed. */
function timelineApply(entry) {
  if (!view.timeline) return;
  if (entry.record) {
    view.timeline.append(recordRow(entry.record));
    return;
  }
  const node = view.callNodes.get(entry.call.id);
  if (!node) {
    view.timeline.append(entryNode(entry, null));
    return;
  }
  refreshCall(node);
  autoOpen(node);
}

let drawPending = false;
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    if (state.run && view.head) drawNow();
  });
}

function drawNow() {
  drawHead();
  drawTabs();
  drawPanel();
}

function drawHead() {
  const m = state.run;
  const summary = summaryOf(m.id);
  const start = m.start ?? summary?.start ?? {};
  const end = m.end ?? summary?.end;
  const client = start.client ? `${start.client.name} ${start.client.version ?? ''}`.trim() : start.front ?? 'run';
  const facts = [
    ['run', m.id],
    ['front', start.front],
    ['workspace', start.workspace],
    ['surface', start.surface ? `${start.surface.cap}, approval ${start.surface.approval}` : null],
    ['started', dateTime(start.time)],
    ['ended', end ? `${dateTime(end.time)} · ${end.reason ?? ''}` : null],
    ['pid', start.pid],
    ['gantry', start.version],
    ['log', summary?.bytes != null ? `${summary.bytes} bytes` : null],
  ].filter(([, value]) => value != null && value !== '');
  fill(view.head,
    el('h2', {}, stateBadge(runStateOf(m)), ' ', client, el('span', { class: 'muted' }, ` · ${basename(start.workspace)}`)),
    el('dl', { class: 'facts' }, facts.map(([key, value]) => [el('dt', {}, key), el('dd', {}, value)])),
    m.cut ? el('p', { class: 'note' }, 'This log reached its cap: later records carry no text, arguments, diffs or images.') : null,
    m.loaded || m.records.length ? null : el('p', { class: 'muted' }, 'Loading…'));
}

function openCalls(m) {
  return [...m.calls.values()].filter((call) => !call.end);
}

const TABS = [
  ['timeline', 'Timeline', (m) => m.calls.size],
  ['running', 'Running now', (m) => openCalls(m).length + m.resources.size],
  ['refused', 'Refused', (m) => m.refusals.length],
  ['workers', 'Workers', (m) => m.workers.size],
  ['files', 'Files', (m) => m.writes.length],
];

function drawTabs() {
  const m = state.run;
  fill(view.tabs, TABS.map(([key, label, count]) =>
    el('button', {
      type: 'button', role: 'tab', class: key === state.tab ? 'tab active' : 'tab',
      testid: `tab-${key}`, ariaSelected: String(key === state.tab),
      onclick: () => { state.tab = key; drawTabs(); drawPanel(); },
    }, label, el('span', { class: 'count' }, String(count(m))))));
}

function drawPanel() {
  const timeline = state.tab === 'timeline';
  view.timelinePanel.hidden = !timeline;
  view.other.hidden = timeline;
  const draw = { running: drawRunning, refused: drawRefused, workers: drawWorkers, files: drawFiles }[state.tab];
  fill(view.other, draw ? draw(state.run) : null);
}

function showInTimeline(callId) {
  state.tab = 'timeline';
  drawTabs();
  drawPanel();
  const node = view.callNodes.get(callId);
  if (!node) return;
  openNode(node);
  node.details.scrollIntoView({ block: 'start' });
}

function drawRunning(m) {
  const runState = runStateOf(m);
  const calls = openCalls(m);
  const resources = [...m.resources.values()];
  const intro = runState === 'running'
    ? 'Started and not yet finished.'
    : `This run ${runState === 'killed' ? 'was killed' : 'ended'}; what it left unfinished:`;
  return el('section', { class: 'section', testid: 'running-now' },
    el('p', { class: 'muted' }, intro),
    el('h3', {}, 'Resources'),
    resources.length
      ? resources.map((r) => el('div', { class: 'row', testid: 'open-resource', data: { resource: r.resource } },
        el('time', { class: 'muted when' }, clock(r.time)), el('strong', {}, r.resource), r.detail ? ` · ${r.detail}` : ''))
      : el('p', { class: 'empty' }, 'None.'),
    el('h3', {}, 'Calls'),
    calls.length
      ? calls.map((call) => el('div', { class: 'row', testid: 'open-call', data: { callId: call.id } },
        el('time', { class: 'muted when' }, clock(call.start?.time)), jumpButton(call), el('span', { class: 'muted' }, ` by ${call.by ?? '?'}`)))
      : el('p', { class: 'empty' }, 'None.'));
}

function drawRefused(m) {
  return el('section', { class: 'section', testid: 'refused' },
    m.refusals.length
      ? m.refusals.map((r) => {
        const call = r.call != null ? m.calls.get(r.call) : null;
        const asked = call?.asks.at(-1)?.summary;
        return el('div', { class: 'row refusal', testid: 'refusal', data: { kind: r.kind } },
          el('time', { class: 'muted when' }, clock(r.time)),
          call ? jumpButton(call) : el('span', { class: 'muted' }, 'no call'),
          el('div', { class: 'what' }, refusalText(r), asked ? el('div', { class: 'muted' }, `asked: ${asked}`) : null));
      })
      : el('p', { class: 'empty' }, 'Nothing was refused in this run.'));
}

function drawWorkers(m) {
  const workers = [...m.workers.entries()];
  return el('section', { class: 'section', testid: 'workers' },
    workers.length
      ? workers.map(([id, entries]) => el('div', { class: 'worker', testid: 'worker', data: { worker: id } },
        el('h3', {}, `worker ${id}`, workerBadge(m, id)),
        entries.map((entry) => (entry.turn
          ? el('div', { class: 'row turn-row' }, el('time', { class: 'muted when' }, clock(entry.turn.time)), workerTurn(entry.turn))
          : callNode(entry.call, 'worker-call').details))))
      : el('p', { class: 'empty' }, 'No workers in this run.'));
}

// A worker is a resource ("worker w1"): running while started and not ended.
function workerBadge(m, id) {
  if (!m.resources.has(`worker ${id}`)) return null;
  return el('span', { class: 'badge' }, runStateOf(m) === 'running' ? 'running' : 'never ended');
}

function drawFiles(m) {
  return el('section', { class: 'section', testid: 'files' },
    m.writes.length
      ? m.writes.map((w) => el('div', { class: 'row-block' }, el('time', { class: 'muted when' }, clock(w.time)), fileWrite(w, m)))
      : el('p', { class: 'empty' }, 'No file was written in this run.'));
}

// ---------- start ----------

async function init() {
  state.token = readToken();
  if (!state.token) {
    // Nothing to ask without it: every /api request would be refused.
    showBanner(NO_TOKEN);
    setStatus('down', 'no token');
    return;
  }
  const wanted = new URLSearchParams(location.hash.slice(1)).get('run');
  connect();
  // A killed run ends without a record, so without an event: while the list
  // shows a run as running, it is re-read now and then.
  setInterval(() => {
    if (state.runs.some((run) => run.state === 'running')) loadRuns();
  }, 10000);
  await loadRuns();
  // The run named in the address (a reload), else the newest.
  const first = (wanted && summaryOf(wanted)) ? wanted : state.runs[0]?.id;
  if (first && !state.selected) selectRun(first);
}

init();
