/* The demo page: connection, language and model choice, translation (of text,
 * or of HTML: the translated markup and, beside it, its rendering in a
 * sandboxed frame where no script runs), the language detected for a source
 * "auto"; the attention explorer (attention.js), the position encodings
 * (positions.js) and RoPE (rope.js) are fed from here.  Plain ES modules, no build step, nothing
 * from a CDN. */

import * as API from './api.js';
import { AttentionExplorer } from './attention.js';
import { FilePanel } from './files.js';
import { PositionsView } from './positions.js';
import { RopeView } from './rope.js';

const $ = (id) => document.getElementById(id);
const AUTO = 'auto';           /* the source "detect the language" */

const page = {
  models: [],              /* modelsOf(/models) */
  languages: [],           /* /languages: [{code, name, targets}] */
  examples: {},            /* examples.json */
  streams: false,          /* the server streams /translate */
  inflight: null,          /* AbortController of the translation in flight */
  shown: null,             /* {model, source, translation} on screen */
  mode: 'text',            /* 'text' or 'html': what the source is, and how the reply is shown */
  detected: null,          /* {language, confidence} the server detected for the last "auto" translation */
};

let explorer, positions, rope;

/* ---- connection ------------------------------------------------------------- */

function setStatus(text, ok) {
  const s = $('status');
  s.textContent = text;
  s.className = 'status ' + (ok ? 'ok' : 'bad');
}

async function connect() {
  API.configure($('base').value, $('apikey').value);
  API.store('base', $('base').value.trim());
  for (;;) {
    try {
      await API.api('GET', '/health');
      break;
    } catch (e) {
      if (e.status !== 503) {
        setStatus('not connected', false);
        showError(e.message);
        if (e.status === 401) document.querySelector('.settings').open = true;   /* where the key goes */
        return;
      }
      setStatus('models loading…', false);                 /* 503 while loading: ask again */
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
  }
  try {
    const [models, languages] = await Promise.all([API.api('GET', '/models'), API.api('GET', '/languages')]);
    page.models = API.modelsOf(models);
    page.languages = Array.isArray(languages) ? languages : [];
    page.streams = await API.serverStreams();
    setStatus(`connected: ${page.models.length} model${page.models.length === 1 ? '' : 's'}`, true);
    showError(null);
    fillLanguages();
  } catch (e) {
    setStatus(e.status === 401 ? 'API key needed' : 'not connected', false);
    showError(e.message);
    if (e.status === 401) document.querySelector('.settings').open = true;
  }
}

/* ---- languages, model, search ------------------------------------------------ */

function languageName(code) {
  if (code === AUTO) return 'Detect the language';
  const l = page.languages.find((x) => x.code === code);
  return l ? `${l.name} (${code})` : code;
}

/* The targets of a source: /languages', or for "auto" every language some source reaches. */
function targetsOf(source) {
  if (source === AUTO) return [...new Set(page.languages.flatMap((l) => l.targets))];
  const l = page.languages.find((x) => x.code === source);
  return l ? l.targets : [];
}

function fillSelect(sel, options, value) {
  sel.textContent = '';
  for (const [v, label] of options) sel.add(new Option(label, v));
  if (options.some(([v]) => v === value)) sel.value = value;
}

/* 1 when model m translates s (AUTO: any of its sources) into t: a Marian
 * model's source and target(s), a decoder-only model's declared pairs. */
function modelFits(m, s, t) {
  if (m.pairs) return m.pairs.some(([a, b]) => (s === AUTO || a === s) && b === t);
  return (s === AUTO || m.source === s) && (m.target === t || (m.targets || []).includes(t));
}

/* "en→fr" for the model selector */
function pairsLabel(m) {
  if (m.pairs) return m.pairs.map(([a, b]) => `${a}→${b}`).join(', ');
  return `${m.source}→${m.targets ? m.targets.join(',') : m.target}`;
}

function fillLanguages() {
  const src = API.recall('source') || (page.models.find((m) => m.isDefault) || page.models[0] || {}).source;
  fillSelect($('src-lang'), [AUTO, ...page.languages.map((l) => l.code)].map((c) => [c, languageName(c)]), src);
  fillTargets(API.recall('target'));
  const model = API.recall('model') || '';
  fillSelect($('model'), [['', 'by the languages'], ...page.models.map((m) =>
    [m.id, `${m.id} (${pairsLabel(m)})`])], model);
  modelChanged(false);
}

function fillTargets(want) {
  const targets = targetsOf($('src-lang').value);
  fillSelect($('tgt-lang'), targets.map((c) => [c, languageName(c)]), want || targets[0]);
}

/* The model a request will use: the one chosen, or the one for the pair
 * (direct), or the default (the server picks pivots itself). */
function currentModel() {
  const id = $('model').value;
  if (id) return page.models.find((m) => m.id === id);
  const s = $('src-lang').value, t = $('tgt-lang').value;
  return page.models.find((m) => modelFits(m, s, t)) || page.models.find((m) => m.isDefault) || page.models[0];
}

function modelChanged(fromUser) {
  const chosen = page.models.find((m) => m.id === $('model').value);
  if (chosen && fromUser && !modelFits(chosen, $('src-lang').value, $('tgt-lang').value)) {
    $('src-lang').value = chosen.pairs ? chosen.pairs[0][0] : chosen.source;      /* the model decides the languages */
    fillTargets(chosen.pairs ? chosen.pairs[0][1] : chosen.target);
  }
  const m = currentModel();
  const old = Number(API.recall('beam')) || (m ? m.defaultBeam : 1);
  const max = m ? m.maxBeam : 8;
  const opts = [];
  for (let b = 1; b <= max; b += b === 1 ? 1 : 2) opts.push([String(b), b === 1 ? 'greedy' : `beam ${b}`]);   /* 1, 2, 4, 6, 8 */
  const fits = opts.map(([v]) => Number(v)).filter((v) => v <= old);   /* the widest offered up to the wish */
  fillSelect($('beam'), opts, String(Math.max(1, ...fits)));
  API.store('source', $('src-lang').value);
  API.store('target', $('tgt-lang').value);
  API.store('model', $('model').value);
  fillExamples();
  positions.setModel(m);
  rope.setModel(m);
}

function languagesChanged() {
  const chosen = page.models.find((m) => m.id === $('model').value);
  if (chosen && !modelFits(chosen, $('src-lang').value, $('tgt-lang').value))
    $('model').value = '';               /* a model that does not fit: back to "by the languages" */
  modelChanged(false);
}

function swap() {
  let s = $('src-lang').value;
  const t = $('tgt-lang').value;
  if (s === AUTO) {                      /* the detected language, if a translation found one */
    if (!page.detected || !page.shown) {
      showError('Choose the source language (or translate once, to detect it) before swapping.');
      return;
    }
    s = page.detected.language;
  }
  if (!page.languages.some((l) => l.code === t && l.targets.includes(s))) {
    showError(`No model translates ${languageName(t)} into ${languageName(s)}.`);
    return;
  }
  $('src-lang').value = t;
  fillTargets(s);
  const out = page.shown && page.shown.translation;
  if (out) $('source').value = out;
  languagesChanged();
}

/* The examples of a source language (every language's for "auto"), of the mode's kind. */
function examplesOf(source) {
  const table = page.mode === 'html' ? page.examples.html || {} : page.examples;
  if (source === AUTO) return page.languages.flatMap((l) => table[l.code] || []);
  return table[source] || [];
}

function isExample(text) {
  const all = [page.examples, page.examples.html || {}].flatMap((t) => Object.values(t).filter(Array.isArray).flat());
  return all.includes(text);
}

function fillExamples() {
  const box = $('examples');
  box.textContent = '';
  const list = examplesOf($('src-lang').value);
  if (!list.length) return;
  box.append(Object.assign(document.createElement('span'), { className: 'muted small', textContent: 'Examples:' }));
  list.forEach((text, i) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'small-button';
    b.textContent = String(i + 1);
    b.title = text;
    b.setAttribute('aria-label', 'Example: ' + text);
    b.addEventListener('click', () => { $('source').value = text; $('source').focus(); });
    box.append(b);
  });
}

/* ---- text or HTML --------------------------------------------------------------------- */

/* In HTML mode the source is markup, translated with "format": "html"; the
 * reply's markup is shown as text and, beside it, rendered in the sandboxed
 * frame (srcdoc; sandbox="" in index.html: no script, an opaque origin). */
function setMode(mode, fromUser) {
  const html = mode === 'html';
  page.mode = html ? 'html' : 'text';
  $(html ? 'mode-html' : 'mode-text').checked = true;
  $('cols').classList.toggle('html-mode', html);
  $('render-col').hidden = !html;
  $('source-label').textContent = html ? 'HTML' : 'Text';
  $('source').placeholder = html ? 'Markup to translate: <p>Text with <b>tags</b></p>' : 'Text to translate';
  $('output-label').textContent = html ? 'Translated HTML' : 'Translation';
  API.store('mode', page.mode);
  if (fromUser) {
    const text = $('source').value;
    if (!text.trim() || isExample(text) || text === $('source').defaultValue) {
      const first = examplesOf($('src-lang').value)[0];       /* an example of the new kind */
      if (first) $('source').value = first;
    }
    clearShown(html ? 'HTML mode: the attention view is for text translations.' : '');
  }
  fillExamples();
}

/* Nothing of the previous translation stays: its text, rendering, detection, timing, maps. */
function clearShown(explorerMessage) {
  page.shown = null;
  page.detected = null;
  showDetected(null);
  setOutput('', 'empty');
  $('render').srcdoc = '';
  $('copy').disabled = true;
  $('copy-state').textContent = '';
  $('timing').textContent = '';
  explorer.reset(explorerMessage);
}

/* The language the server detected for a source "auto", or nothing. */
function showDetected(det) {
  const box = $('detected');
  box.hidden = !det;
  if (!det) { box.textContent = ''; return; }
  const l = page.languages.find((x) => x.code === det.language);
  const conf = typeof det.confidence === 'number' ? `, ${Math.round(det.confidence * 10) / 10}%` : '';
  box.textContent = `Detected: ${l ? l.name : det.language} (${det.language})${conf}`;
}

/* ---- translating ---------------------------------------------------------------- */

function showError(message) {
  const box = $('error');
  box.hidden = !message;
  box.textContent = message || '';
  if (message) box.scrollIntoView({ block: 'nearest' });
}

function setOutput(text, state) {
  const out = $('output');
  out.classList.toggle('busy', state === 'busy');
  out.classList.toggle('failed', state === 'failed');
  out.setAttribute('aria-busy', state === 'busy' ? 'true' : 'false');
  out.textContent = '';
  if (state === 'busy' && !text) {
    out.append(Object.assign(document.createElement('span'), { className: 'spinner', ariaHidden: 'true' }),
               Object.assign(document.createElement('span'), { className: 'muted', textContent: 'Translating…' }));
  } else if (state === 'empty') {
    out.append(Object.assign(document.createElement('span'), { className: 'muted', textContent: 'The translation appears here.' }));
  } else if (state === 'failed') {
    out.append(Object.assign(document.createElement('span'), { className: 'muted', textContent: 'No translation (see the error below).' }));
  } else {
    out.textContent = text;
  }
}

/* The glossary box: "source = target" or "source<TAB>target" a line, blank
 * lines and lines without a separator skipped (the server checks the terms). */
function glossaryOf(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^(.*?)(?:\t|\s=\s|=)(.*)$/.exec(line);
    if (m && m[1].trim()) out[m[1].trim()] = m[2].trim();
  }
  return out;
}

async function translate() {
  const text = $('source').value;
  if (!text.trim()) {
    showError('Type some text to translate first.');
    $('source').focus();
    return;
  }
  if (page.inflight) page.inflight.abort();
  const ctl = new AbortController();
  page.inflight = ctl;
  const model = currentModel();
  const html = page.mode === 'html';
  const body = { text, beam_size: Number($('beam').value) };
  if ($('model').value) body.model = $('model').value;
  if (!$('model').value || (model && model.pairs)) {   /* a decoder-only model's prompt names both languages */
    body.source = $('src-lang').value;
    body.target = $('tgt-lang').value;
  }
  if (html) body.format = 'html';
  else if (page.streams) body.stream = true;      /* a page is answered whole: no stream with format html */
  const glossary = glossaryOf($('glossary').value);
  if (Object.keys(glossary).length) body.glossary = glossary;
  /* nothing of the previous translation stays: its text, rendering, detection, timing, maps */
  clearShown('Translating…');
  showError(null);
  setOutput('', 'busy');
  $('translate').disabled = true;
  $('translate').textContent = 'Translating…';
  const t0 = performance.now();
  try {
    const r = await API.translate(body, (soFar) => { if (page.inflight === ctl) setOutput(soFar, 'busy'); }, ctl.signal);
    if (page.inflight !== ctl) return;
    const translation = API.translationOf(r);
    setOutput(translation, 'done');                  /* markup too: shown as text */
    if (html) $('render').srcdoc = translation;      /* and rendered, sandboxed */
    page.detected = body.source === AUTO ? API.detectedOf(r) : null;
    showDetected(page.detected);
    const ms = Math.round(performance.now() - t0);
    const server = typeof r.timing_ms === 'number' ? `, ${Math.round(r.timing_ms)} ms in the server` : '';
    const via = r.pivot ? ` via ${r.pivot.language} (${r.pivot.models.join(' + ')})` : '';
    $('timing').textContent = `${ms} ms${server}; ${r.model}${via}, ` +
      (body.beam_size === 1 ? 'greedy' : `beam ${body.beam_size}`) + (html ? ', HTML' : '');
    $('copy').disabled = false;
    page.shown = { model: r.model, source: text, translation };
    if (html) explorer.reset('HTML mode: the attention view is for text translations (the model translated the ' +
                             'page\'s text pieces one by one).');
    else explorer.setSubject({ ...page.shown, pivot: r.pivot ? r.pivot.language : null });
    positions.setModel(page.models.find((m) => m.id === r.model) || model);
    $('output').scrollIntoView({ block: 'nearest' });
  } catch (e) {
    if (e.name === 'AbortError') return;
    setOutput('', 'failed');
    explorer.reset('No translation: nothing to show.');
    showError(e.message);
  } finally {
    if (page.inflight === ctl) {
      page.inflight = null;
      $('translate').disabled = false;
      $('translate').textContent = 'Translate';
    }
  }
}

async function copy() {
  const text = page.shown ? page.shown.translation : '';
  if (!text) return;
  try {
    await navigator.clipboard.writeText(text);
  } catch (e) {                          /* no clipboard API (not a secure context): select and copy */
    const range = document.createRange();
    range.selectNodeContents($('output'));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    document.execCommand('copy');
  }
  $('copy-state').textContent = 'copied';
  setTimeout(() => { $('copy-state').textContent = ''; }, 2000);
}

/* ---- wiring ------------------------------------------------------------------- */

async function loadExamples() {
  try {
    const res = await fetch(new URL('examples.json', import.meta.url));
    if (res.ok) page.examples = await res.json();
  } catch (e) { /* examples are a convenience */ }
}

function start() {
  explorer = new AttentionExplorer({
    panel: $('attention-panel'), show: $('att-show'), status: $('att-status'), error: $('att-error'),
    body: $('att-body'), sentence: $('att-sentence'), sentenceLabel: $('att-sentence-label'),
    tabs: $('att-tabs'), tabpanel: $('att-tabpanel'), panelHelp: $('att-help'), grid: $('att-grid'),
    large: $('att-large'), largeTitle: $('att-large-title'), layer: $('att-layer'), head: $('att-head'),
    map: $('att-map'), tip: $('att-tip'), rowTokens: $('att-rows'), align: $('att-align'),
    alignHelp: $('att-align-help'),
  });
  positions = new PositionsView({
    count: $('pos-count'), info: $('pos-info'), peCanvas: $('pe-map'), peTip: $('pe-tip'),
    simCanvas: $('sim-map'), simTip: $('sim-tip'), simRange: $('sim-range'),
  });
  rope = new RopeView({
    base: $('rope-base'), dim: $('rope-dim'), count: $('rope-count'), info: $('rope-info'),
    angleCanvas: $('rope-angle-map'), angleTip: $('rope-angle-tip'), scoreCanvas: $('rope-score-map'),
    scoreTip: $('rope-score-tip'), lineCanvas: $('rope-line'),
  });
  new FilePanel({
    zone: $('file-zone'), input: $('file-input'), progress: $('file-progress'), status: $('file-status'),
    link: $('file-link'), error: $('file-error'), cancel: $('file-cancel'),
    source: () => $('src-lang').value, target: () => $('tgt-lang').value,
  });
  $('base').value = API.initialBase();
  $('base').addEventListener('change', connect);
  $('apikey').addEventListener('change', connect);
  $('src-lang').addEventListener('change', () => {
    fillTargets($('tgt-lang').value);
    languagesChanged();
    if ($('src-lang').value !== AUTO) showDetected(null);
  });
  for (const id of ['mode-text', 'mode-html'])
    $(id).addEventListener('change', () => { if ($(id).checked) setMode($(id).value, true); });
  $('tgt-lang').addEventListener('change', languagesChanged);
  $('model').addEventListener('change', () => modelChanged(true));
  $('beam').addEventListener('change', () => API.store('beam', $('beam').value));
  $('swap').addEventListener('click', swap);
  $('translate-form').addEventListener('submit', (ev) => { ev.preventDefault(); translate(); });
  $('copy').addEventListener('click', copy);
  $('source').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); translate(); }
  });
  let resizing = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => { explorer.render(); positions.draw(); rope.draw(); }, 150);
  });
  loadExamples().then(connect).then(() => {
    if (API.recall('mode') === 'html') setMode('html', true);
    document.body.dataset.ready = 'true';          /* for the e2e test: the selects are filled */
  });
}

start();
