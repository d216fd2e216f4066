/* mtserve demo page: GET /health, GET /models, POST /translate, POST /attention.
 * No build step, no dependencies.  The API base URL is this page's origin, or
 * ?base=URL, or what was typed last (kept in localStorage); cross-origin calls
 * rely on the server's CORS headers.  Response shapes are read leniently (see
 * the *Of helpers) so that small API changes do not break the page. */
'use strict';

const $ = (id) => document.getElementById(id);
const state = { sentences: [], att: null, attKey: '' };

/* ---- settings ---------------------------------------------------------- */

function store(key, value) {
  try { localStorage.setItem('mtserve.' + key, value); } catch (e) { /* file:// or private mode */ }
}
function recall(key) {
  try { return localStorage.getItem('mtserve.' + key); } catch (e) { return null; }
}

function initialBase() {
  const q = new URLSearchParams(location.search).get('base');
  if (q) return q;
  const saved = recall('base');
  if (saved) return saved;
  if (location.protocol === 'http:' || location.protocol === 'https:') return location.origin;
  return 'http://127.0.0.1:8080';
}

/* ---- HTTP -------------------------------------------------------------- */

function apiUrl(path) {
  return $('base').value.trim().replace(/\/+$/, '') + path;
}

/* Calls the API; resolves to the parsed JSON, rejects with a readable message
 * (the server's {"error":{"code","message"}} envelope when there is one). */
async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const key = $('apikey').value.trim();
  if (key) headers['Authorization'] = 'Bearer ' + key;
  let res;
  try {
    res = await fetch(apiUrl(path), {
      method, headers, mode: 'cors',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new Error(`${method} ${apiUrl(path)}: ${e.message} (server down, wrong URL or CORS?)`);
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!res.ok) {
    const err = data && data.error;
    const msg = !err ? text.slice(0, 300)
      : typeof err === 'string' ? err : [err.code, err.message].filter(Boolean).join(': ');
    throw new Error(`${method} ${path}: HTTP ${res.status} ${msg}`);
  }
  if (data === null) throw new Error(`${method} ${path}: the answer is not JSON`);
  return data;
}

function showError(e) {
  const box = $('error');
  if (!e) { box.hidden = true; box.textContent = ''; return; }
  box.hidden = false;
  box.textContent = String(e.message || e);
}

/* ---- reading responses ------------------------------------------------- */

function modelsOf(r) {
  const list = Array.isArray(r) ? r : (r.models || r.data || []);
  return list.map((m) => (typeof m === 'string' ? { id: m } : m));
}
function modelIdOf(m) { return m.id || m.name || m.model || ''; }
function numberOf(...xs) {
  for (const x of xs) if (Number.isInteger(x) && x > 0) return x;
  return 0;
}
function decLayersOf(m) {
  const c = m.config || m.info || {};
  return numberOf(m.dec_layers, m.decoder_layers, c.dec_layers, c.decoder_layers, m.layers);
}
function decHeadsOf(m) {
  const c = m.config || m.info || {};
  return numberOf(m.dec_heads, m.decoder_heads, m.decoder_attention_heads, c.dec_heads, c.decoder_heads,
                  c.decoder_attention_heads, m.heads);
}
/* Largest beam the model's sessions take (limits.max_batch), capped at 8. */
function maxBeamOf(m) {
  const l = m.limits || {};
  return Math.min(8, numberOf(l.max_beam, l.max_batch, 8));
}
function defaultBeamOf(m) {
  const c = m.config || m.info || {};
  return numberOf(m.default_beam, c.default_beam);
}

function translationOf(r) {
  if (typeof r === 'string') return r;
  if (typeof r.translation === 'string') return r.translation;
  if (typeof r.translatedText === 'string') return r.translatedText;
  if (Array.isArray(r.translations)) return r.translations.map(translationOf).join('\n');
  if (Array.isArray(r.sentences)) return r.sentences.map(translationOf).join(' ');
  if (typeof r.text === 'string') return r.text;
  if (typeof r.target === 'string') return r.target;
  return JSON.stringify(r);
}

/* A rough client-side split, only to offer sentences to the attention view when
 * the server does not report them (the server splits with its own rules). */
function roughSplit(text) {
  const out = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    for (const s of line.split(/(?<=[.!?\u2026](?:\s?\u00bb)?["'\u00bb\u201d)\]]*)\s+(?=["'(\[\u00ab\u201c\u00bf\u00a1]?\s?[\p{Lu}\p{N}])/u)) {
      if (s.trim()) out.push(s.trim());
    }
  }
  return out;
}

/* [{src, tgt, score}] per sentence; sentences from roughSplit (without their own
 * translations) when the server does not report sentences. */
function sentencesOf(r, source) {
  const list = r.sentences || r.segments;
  if (Array.isArray(list) && list.length) {
    return list.map((s) => ({
      src: s.source || s.src || s.text || '',
      tgt: s.translation || s.target || s.tgt || '',
      score: typeof s.score === 'number' ? s.score : null,
    }));
  }
  const parts = roughSplit(source);
  if (parts.length < 2) return [{ src: source.trim(), tgt: translationOf(r), score: null }];
  return parts.map((p) => ({ src: p, tgt: '', score: null }));
}

function depth(a) { return Array.isArray(a) ? 1 + depth(a[0]) : 0; }

/* Position of value in the list of indices the server reports for a selection
 * ("decoder_layers": [2], "heads": [5]), else value itself. */
function selectedIndex(list, value) {
  if (!Array.isArray(list)) return value;
  const k = list.indexOf(value);
  return k >= 0 ? k : 0;
}

/* {src, tgt, m, layers, heads}: m[t][s] = weight of source token s for target
 * token t.  Accepts a [tgt][src] matrix, or [head][tgt][src] / [layer][head][tgt][src]
 * from which the chosen layer/head is taken. */
function attentionOf(r, layer, head) {
  const pick = (...xs) => xs.find((x) => Array.isArray(x)) || [];
  const src = pick(r.source_tokens, r.src_tokens, r.source && r.source.tokens, r.tokens && r.tokens.source);
  const tgt = pick(r.target_tokens, r.tgt_tokens, r.target && r.target.tokens, r.tokens && r.tokens.target);
  let m = pick(r.cross_attention, r.cross, r.attention, r.weights, r.matrix);
  const li = selectedIndex(r.decoder_layers, layer), hi = selectedIndex(r.heads, head);
  if (depth(m) === 4) m = m[li] || m[0];
  if (depth(m) === 3) m = m[hi] || m[0];
  if (depth(m) !== 2) throw new Error('POST /attention: no [target][source] matrix in the answer');
  return {
    src, tgt, m,
    layers: numberOf(r.layers, r.dec_layers, r.n_layers, r.num_layers),
    heads: numberOf(r.heads, r.dec_heads, r.n_heads, r.num_heads),
    translation: typeof r.translation === 'string' ? r.translation : null,
    generated: r.target_generated === true,
  };
}

/* ---- UI helpers -------------------------------------------------------- */

function fillRange(select, n, keep) {
  const old = keep ? select.value : null;
  select.textContent = '';
  for (let i = 0; i < n; i++) select.add(new Option(String(i), String(i)));
  if (old !== null && Number(old) < n) select.value = old;
}

function setStatus(text, ok) {
  const s = $('status');
  s.textContent = text;
  s.className = 'status ' + (ok ? 'ok' : 'bad');
}

function renderSentences() {
  const box = $('sentences');
  box.textContent = '';
  const sel = $('att-sentence');
  sel.textContent = '';
  state.sentences.forEach((s, i) => {
    sel.add(new Option(`${i + 1}: ${s.src.slice(0, 40)}${s.src.length > 40 ? '…' : ''}`, String(i)));
    if (state.sentences.length < 2 || !state.sentences.some((x) => x.tgt)) return;
    const row = document.createElement('div');
    row.className = 'sentence';
    const a = document.createElement('span'); a.textContent = s.src;
    const b = document.createElement('span'); b.textContent = s.tgt;
    row.append(a, b);
    if (s.score !== null) row.title = 'score ' + s.score.toFixed(3);
    box.append(row);
  });
}

/* ---- actions ----------------------------------------------------------- */

async function connect() {
  store('base', $('base').value.trim());
  showError(null);
  try {
    const h = await api('GET', '/health');
    setStatus('health: ' + (h.status || 'ok'), true);
  } catch (e) {
    if (/HTTP 503/.test(e.message)) {          /* {"status":"loading"}: try again */
      setStatus('loading model…', false);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      return connect();
    } else {
      setStatus('unreachable', false);
      showError(e);
    }
    return;
  }
  try {
    const models = modelsOf(await api('GET', '/models'));
    const sel = $('model');
    const old = sel.value || recall('model');
    sel.textContent = '';
    for (const m of models) {
      const id = modelIdOf(m);
      const langs = m.source_lang && m.target_lang ? ` (${m.source_lang}→${m.target_lang})` : '';
      const opt = new Option(id + langs, id);
      opt.dataset.layers = decLayersOf(m);
      opt.dataset.heads = decHeadsOf(m);
      opt.dataset.maxBeam = maxBeamOf(m);
      opt.dataset.defaultBeam = defaultBeamOf(m);
      sel.add(opt);
    }
    if (old && [...sel.options].some((o) => o.value === old)) sel.value = old;
    modelChanged();
  } catch (e) {
    showError(e);
  }
}

function modelChanged() {
  const opt = $('model').selectedOptions[0];
  store('model', $('model').value);
  fillRange($('layer'), Number(opt && opt.dataset.layers) || 6, true);
  fillRange($('head'), Number(opt && opt.dataset.heads) || 8, true);
  const beam = $('beam'), old = Number(recall('beam') || (opt && opt.dataset.defaultBeam) || 4);
  const max = Number(opt && opt.dataset.maxBeam) || 8;
  beam.textContent = '';
  for (let b = 1; b <= max; b++) beam.add(new Option(b === 1 ? '1 (greedy)' : String(b), String(b)));
  beam.value = String(Math.min(Math.max(old, 1), max));
}

async function translate() {
  const text = $('source').value;
  if (!text.trim()) return;
  const body = { text, beam_size: Number($('beam').value) };
  if ($('model').value) body.model = $('model').value;
  const button = $('translate');
  button.disabled = true;
  showError(null);
  $('output').classList.add('busy');
  const t0 = performance.now();
  try {
    const r = await api('POST', '/translate', body);
    $('output').textContent = translationOf(r);
    $('timing').textContent = `${Math.round(performance.now() - t0)} ms`;
    state.sentences = sentencesOf(r, text);
    renderSentences();
  } catch (e) {
    showError(e);
  } finally {
    button.disabled = false;
    $('output').classList.remove('busy');
  }
}

async function attention() {
  const i = Number($('att-sentence').value || 0);
  const sent = state.sentences[i];
  const text = sent ? sent.src : $('source').value.split('\n').find((l) => l.trim()) || '';
  if (!text.trim()) return;
  const layer = Number($('layer').value || 0), head = Number($('head').value || 0);
  const body = { text, layers: layer, heads: head };
  if ($('model').value) body.model = $('model').value;
  showError(null);
  $('attention').disabled = true;
  try {
    const r = await api('POST', '/attention', body);
    const att = attentionOf(r, layer, head);
    if (att.layers) fillRange($('layer'), att.layers, true);
    if (att.heads) fillRange($('head'), att.heads, true);
    state.att = att;
    $('att-info').textContent = `${att.tgt.length || att.m.length} × ${att.src.length || att.m[0].length} tokens`
      + (att.generated ? ' (target = greedy translation)' : '')
      + (att.translation ? ` — ${att.translation}` : '');
    drawHeatmap();
  } catch (e) {
    showError(e);
  } finally {
    $('attention').disabled = false;
  }
}

/* ---- the heat map ------------------------------------------------------ */

const heat = { x0: 0, y0: 0, cw: 1, ch: 1 };

/* White (0) to dark blue (max); a square root keeps small weights visible. */
function colour(v, max) {
  const t = max > 0 ? Math.sqrt(Math.max(0, v) / max) : 0;
  const lerp = (a, b) => Math.round(a + (b - a) * t);
  return `rgb(${lerp(255, 8)},${lerp(255, 48)},${lerp(255, 107)})`;
}

function drawHeatmap() {
  const att = state.att;
  if (!att) return;
  const canvas = $('heatmap');
  const ctx = canvas.getContext('2d');
  const nt = att.m.length, ns = att.m[0].length;
  const srcLab = (j) => String(att.src[j] !== undefined ? att.src[j] : j);
  const tgtLab = (i) => String(att.tgt[i] !== undefined ? att.tgt[i] : i);
  ctx.font = '12px system-ui, sans-serif';
  let wS = 0, wT = 0;
  for (let j = 0; j < ns; j++) wS = Math.max(wS, ctx.measureText(srcLab(j)).width);
  for (let i = 0; i < nt; i++) wT = Math.max(wT, ctx.measureText(tgtLab(i)).width);
  const x0 = Math.min(Math.ceil(wT) + 12, 180), y0 = Math.min(Math.ceil(wS) + 12, 180);
  const avail = Math.max(200, canvas.parentElement.clientWidth - x0 - 16);
  /* columns fit the width; rows shrink (to 12 px) to keep long targets about 640 px high */
  const cw = Math.max(14, Math.min(40, Math.floor(avail / ns)));
  const ch = Math.max(12, Math.min(cw, Math.floor(640 / nt)));
  const w = x0 + ns * cw + 8, h = y0 + nt * ch + 8;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  canvas.style.width = w + 'px'; canvas.style.height = h + 'px';
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = '12px system-ui, sans-serif';
  let max = 0;
  for (const row of att.m) for (const v of row) max = Math.max(max, v);
  for (let i = 0; i < nt; i++) {
    for (let j = 0; j < ns; j++) {
      ctx.fillStyle = colour(att.m[i][j], max);
      ctx.fillRect(x0 + j * cw, y0 + i * ch, cw, ch);
    }
  }
  ctx.strokeStyle = '#ccc';
  ctx.strokeRect(x0 + 0.5, y0 + 0.5, ns * cw, nt * ch);
  ctx.fillStyle = '#222';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  ctx.font = (ch < 15 ? '11px' : '12px') + ' system-ui, sans-serif';
  for (let i = 0; i < nt; i++) ctx.fillText(tgtLab(i), x0 - 6, y0 + i * ch + ch / 2, x0 - 8);
  ctx.font = '12px system-ui, sans-serif';
  ctx.textAlign = 'left';
  for (let j = 0; j < ns; j++) {
    ctx.save();
    ctx.translate(x0 + j * cw + cw / 2, y0 - 6);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(srcLab(j), 0, 0, y0 - 8);
    ctx.restore();
  }
  Object.assign(heat, { x0, y0, cw, ch });
}

function heatTip(ev) {
  const att = state.att, tip = $('tip');
  if (!att) return;
  const r = $('heatmap').getBoundingClientRect();
  const j = Math.floor((ev.clientX - r.left - heat.x0) / heat.cw);
  const i = Math.floor((ev.clientY - r.top - heat.y0) / heat.ch);
  if (i < 0 || j < 0 || i >= att.m.length || j >= att.m[0].length) { tip.hidden = true; return; }
  tip.textContent = `${att.tgt[i] ?? i} ← ${att.src[j] ?? j}: ${att.m[i][j].toFixed(3)}`;
  tip.style.left = (ev.clientX - r.left + 12) + 'px';
  tip.style.top = (ev.clientY - r.top + 12) + 'px';
  tip.hidden = false;
}

/* ---- wiring ------------------------------------------------------------ */

window.addEventListener('DOMContentLoaded', () => {
  $('base').value = initialBase();
  const beam = recall('beam');
  if (beam) $('beam').value = beam;
  fillRange($('layer'), 6, false);
  fillRange($('head'), 8, false);
  $('base').addEventListener('change', connect);
  $('model').addEventListener('change', modelChanged);
  $('beam').addEventListener('change', () => store('beam', $('beam').value));
  $('translate').addEventListener('click', translate);
  $('attention').addEventListener('click', attention);
  for (const id of ['layer', 'head']) $(id).addEventListener('change', () => { if (state.att) attention(); });
  $('source').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); translate(); }
  });
  $('heatmap').addEventListener('mousemove', heatTip);
  $('heatmap').addEventListener('mouseleave', () => { $('tip').hidden = true; });
  window.addEventListener('resize', drawHeatmap);
  const params = new URLSearchParams(location.search);
  connect().then(async () => {
    /* ?auto=1 translates and shows the attention at once (used for screenshots) */
    if (params.get('auto')) {
      await translate();
      await attention();
    }
  });
});
