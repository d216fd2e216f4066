/* attention: the explorer of the translation on screen.
 *
 * POST /attention runs the model teacher-forced on (source, the translation
 * shown): "target" is the displayed text, so the maps are of the same
 * hypothesis as the text, whatever search (greedy or beam) produced it.  The
 * reply holds, per layer and head, the encoder self-attention [src][src], the
 * decoder self-attention [tgt][tgt] (causal: row t sees positions <= t) and
 * the cross-attention [tgt][src].  The explorer shows one kind at a time (tabs):
 * a grid of every layer x head plus each layer's average over heads, one map
 * large (chosen in the grid or by the selects), a tooltip with the two tokens
 * and the weight, and the row chosen (click a token) as shading over the text
 * of the columns.
 *
 * A decoder-only model (Llama, Qwen: "architecture": "decoder-only") has one
 * kind only: its reply holds "tokens" (the prompt's pieces, then the generated
 * ones), "prompt_length" P and "self_attention" [layer][head][N][N] (causal),
 * and no encoder or cross fields.  The explorer then hides the tabs and shows
 * that one kind, with a line between the prompt (rows/columns < P) and the
 * output. */

import { api } from './api.js';
import { Heatmap, drawSmall } from './heatmap.js';

/* Decoder row t is fed the start token (Marian starts from <pad>) then the
 * target shifted right, and predicts target_tokens[t]. */
const START = '<pad>';

const KINDS = {
  encoder: {
    key: 'encoder_self_attention', layers: 'encoder_layers', rows: 'source', cols: 'source',
    title: 'Encoder self-attention',
    help: 'Each source token (row) over all source tokens (columns): the encoder sees the whole sentence ' +
          'in both directions, nothing is masked.',
  },
  decoder: {
    key: 'decoder_self_attention', layers: 'decoder_layers', rows: 'target', cols: 'input', causal: true,
    title: 'Decoder self-attention',
    help: 'Row t is the decoder step that predicts target token t; columns are the tokens fed to the decoder ' +
          `(${START} as the start, then the translation shifted by one). The causal mask hides every later ` +
          'position: the hatched upper triangle is masked, its weights are exactly 0.',
  },
  llm: {
    key: 'self_attention', layers: 'layers', rows: 'tokens', cols: 'tokens', causal: true, boundary: true,
    title: 'Self-attention (decoder-only)',
    help: 'One sequence: the prompt, then the generated tokens (after the orange line). Each position (row) ' +
          'over itself and every earlier position (columns); the causal mask hides later ones (the hatched ' +
          'upper triangle, weights exactly 0). Each generated token was predicted by the row just before it.',
  },
  cross: {
    key: 'cross_attention', layers: 'decoder_layers', rows: 'target', cols: 'source',
    title: 'Cross-attention',
    help: 'Each decoder step (row, labelled with the token it predicts) over the source tokens (columns): ' +
          'where the decoder reads the source when it writes that word.',
  },
};

/* A piece as text: the SentencePiece word mark (and byte-level BPE's Ġ, Ċ) becomes a space (newline). */
function pieceText(p) { return p.replace(/[\u2581\u0120]/g, ' ').replace(/\u010a/g, '\n'); }

/* A reply of a decoder-only model (the field, else its shape). */
export function isDecoderOnly(r) {
  return r.architecture === 'decoder-only' || (!!r.self_attention && !r.cross_attention);
}

function meanOverHeads(heads) {
  const rows = heads[0].length, cols = rows ? heads[0][0].length : 0;
  const out = [];
  for (let i = 0; i < rows; i++) {
    const row = new Array(cols).fill(0);
    for (const h of heads) for (let j = 0; j < cols; j++) row[j] += h[i][j];
    out.push(row.map((v) => v / heads.length));
  }
  return out;
}

export class AttentionExplorer {
  /* els: the explorer's elements (index.html ids, looked up by app.js) */
  constructor(els) {
    this.els = els;
    this.kind = 'cross';
    this.layer = 0;             /* index into the reply's layer list */
    this.head = 'avg';          /* index into the reply's head list, or 'avg' */
    this.row = -1;
    this.open = false;          /* shown once; then it follows every translation */
    this.subject = null;        /* {model, source, translation, sentences} */
    this.data = null;
    this.pending = null;        /* AbortController of the request in flight */
    this.large = new Heatmap(els.map, { tooltip: els.tip, onRow: (i) => this.selectRow(i) });
    els.show.addEventListener('click', () => { this.open = true; this.load(); });
    els.sentence.addEventListener('change', () => this.load());
    els.layer.addEventListener('change', () => { this.layer = Number(els.layer.value); this.render(); });
    els.head.addEventListener('change', () => {
      this.head = els.head.value === 'avg' ? 'avg' : Number(els.head.value);
      this.render();
    });
    this.tabs = [...els.tabs.querySelectorAll('[role=tab]')];
    for (const tab of this.tabs) {
      tab.addEventListener('click', () => this.setKind(tab.dataset.kind));
      tab.addEventListener('keydown', (ev) => this.tabKey(ev, tab));
    }
    this.reset('Translate something first: the explorer shows the attention of the translation on screen.');
  }

  /* A new translation is on its way: nothing of the old one stays on screen. */
  reset(message) {
    if (this.pending) this.pending.abort();
    this.pending = null;
    this.subject = null;
    this.data = null;
    this.row = -1;
    this.els.show.disabled = true;
    this.els.body.hidden = true;
    this.els.sentenceLabel.hidden = true;
    this.large.clear();
    this.els.grid.textContent = '';
    this.els.align.textContent = '';
    this.els.rowTokens.textContent = '';
    this.setError(null);
    this.setStatus(message);
  }

  /* The translation now on screen.  subject: {model, source, translation, pivot?} */
  setSubject(subject) {
    this.reset('');
    if (subject.pivot) {
      this.setStatus(`This translation went through ${subject.pivot} (two models): attention is shown per ` +
                     'model, so pick one model for the pair to explore it.');
      return;
    }
    this.subject = subject;
    this.fillSentences();
    this.els.show.disabled = false;
    if (this.open) this.load();
    else this.setStatus('Press “Show attention” to see how the model attended while writing this translation.');
  }

  /* Whole text, and each sentence pair when source and translation split into
   * as many sentences (the server translates sentence by sentence). */
  fillSentences() {
    const sel = this.els.sentence, s = this.subject;
    sel.textContent = '';
    sel.add(new Option('whole text', 'all'));
    const src = splitSentences(s.source), tgt = splitSentences(s.translation);
    s.pairs = src.length > 1 && src.length === tgt.length ? src.map((x, i) => [x, tgt[i]]) : [];
    s.pairs.forEach(([x], i) => sel.add(new Option(`${i + 1}: ${x.length > 50 ? x.slice(0, 49) + '…' : x}`, String(i))));
    this.els.sentenceLabel.hidden = s.pairs.length === 0;
  }

  async load() {
    const s = this.subject;
    if (!s) return;
    const pick = this.els.sentence.value;
    const [text, target] = pick === 'all' || !s.pairs[Number(pick)] ? [s.source, s.translation] : s.pairs[Number(pick)];
    if (this.pending) this.pending.abort();
    const ctl = new AbortController();
    this.pending = ctl;
    this.setError(null);
    this.setStatus('Loading attention…', true);
    this.els.show.disabled = true;
    try {
      const r = await api('POST', '/attention', { text, target, model: s.model }, ctl.signal);
      if (this.pending !== ctl) return;
      this.show(r);
    } catch (e) {
      if (e.name === 'AbortError') return;
      this.setStatus('');
      this.setError(e.message + (e.status === 413 ? ' — choose one sentence above.' : ''));
    } finally {
      if (this.pending === ctl) {
        this.pending = null;
        this.els.show.disabled = !this.subject;
      }
    }
  }

  /* A reply of POST /attention on screen (Marian or decoder-only). */
  show(r) {
    const llm = isDecoderOnly(r);
    this.data = r;
    this.row = -1;
    if (llm) this.kind = 'llm';
    else if (this.kind === 'llm') this.kind = 'cross';
    this.els.tabs.hidden = llm;
    this.layer = Math.min(this.layer, Math.max(0, this.tensor().layers.length - 1));
    const ms = typeof r.timing_ms === 'number' ? `; ${Math.round(r.timing_ms)} ms` : '';
    this.setStatus(llm
      ? `${r.prompt_length} prompt tokens, ${r.tokens.length - r.prompt_length} generated tokens ` +
        `(model ${r.model}, decoder-only: one causal pass over prompt and output${ms}).`
      : `${r.source_tokens.length} source tokens, ${r.target_tokens.length} target tokens ` +
        `(model ${r.model}, target = the translation shown, teacher-forced${ms}).`);
    this.els.body.hidden = false;
    this.render();
  }

  setStatus(text, busy = false) {
    this.els.status.textContent = text;
    this.els.panel.setAttribute('aria-busy', busy ? 'true' : 'false');
  }

  setError(message) {
    const box = this.els.error;
    box.hidden = !message;
    box.textContent = message || '';
    if (message) box.scrollIntoView({ block: 'nearest' });
  }

  setKind(kind) {
    this.kind = kind;
    for (const tab of this.tabs) {
      const on = tab.dataset.kind === kind;
      tab.setAttribute('aria-selected', on ? 'true' : 'false');
      tab.tabIndex = on ? 0 : -1;
    }
    this.row = -1;
    this.render();
  }

  /* Left/Right/Home/End move between tabs (the WAI-ARIA tabs pattern). */
  tabKey(ev, tab) {
    const i = this.tabs.indexOf(tab), n = this.tabs.length;
    const to = { ArrowRight: (i + 1) % n, ArrowLeft: (i + n - 1) % n, Home: 0, End: n - 1 }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    this.tabs[to].focus();
    this.setKind(this.tabs[to].dataset.kind);
  }

  /* ---- what is on screen ---------------------------------------------------- */

  labels(side) {
    const r = this.data;
    if (side === 'source') return r.source_tokens;
    if (side === 'target') return r.target_tokens;
    if (side === 'tokens') return r.tokens;
    return [START, ...r.target_tokens.slice(0, -1)];        /* 'input': what the decoder is fed */
  }

  /* [layer][head][rows][cols] of the current kind, and its layer numbers. */
  tensor() {
    const k = KINDS[this.kind];
    return { w: this.data[k.key], layers: this.data[k.layers], heads: this.data.heads };
  }

  matrix(li, head) {
    const { w } = this.tensor();
    return head === 'avg' ? meanOverHeads(w[li]) : w[li][head];
  }

  render() {
    if (!this.data) return;
    const k = KINDS[this.kind];
    const { layers, heads } = this.tensor();
    this.layer = Math.min(this.layer, layers.length - 1);
    if (this.head !== 'avg' && this.head >= heads.length) this.head = 'avg';   /* another model's heads */
    fillSelect(this.els.layer, layers.map((l, i) => [String(i), `${l}`]), String(this.layer));
    fillSelect(this.els.head, [...heads.map((h, i) => [String(i), `${h}`]), ['avg', 'average']], String(this.head));
    this.els.panelHelp.textContent = k.help;
    this.els.tabpanel.setAttribute('aria-labelledby', this.kind === 'llm' ? 'h-attention' : 'tab-' + this.kind);
    this.renderGrid();
    this.renderLarge();
  }

  renderGrid() {
    const { layers, heads } = this.tensor();
    const grid = this.els.grid, masked = KINDS[this.kind].causal ? (i, j) => j > i : null;
    grid.textContent = '';
    grid.style.gridTemplateColumns = `auto repeat(${heads.length + 1}, max-content)`;
    grid.append(cell('div', 'corner', ''));
    for (const h of heads) grid.append(cell('div', 'colhead', `head ${h}`));
    grid.append(cell('div', 'colhead', 'average'));
    layers.forEach((l, li) => {
      grid.append(cell('div', 'rowhead', `layer ${l}`));
      for (const hi of [...heads.keys(), 'avg']) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'mini';
        const name = hi === 'avg' ? `layer ${l}, average over heads` : `layer ${l}, head ${heads[hi]}`;
        b.setAttribute('aria-label', `${KINDS[this.kind].title}, ${name}: open large`);
        b.setAttribute('aria-pressed', li === this.layer && hi === this.head ? 'true' : 'false');
        b.dataset.layer = li;
        b.dataset.head = hi;
        const c = document.createElement('canvas');
        drawSmall(c, this.matrix(li, hi), { masked, size: 84, boundary: this.boundary() });
        b.append(c);
        b.addEventListener('click', () => {
          this.layer = li;
          this.head = hi;
          this.render();
          this.els.large.scrollIntoView({ block: 'nearest' });
          this.els.map.focus({ preventScroll: true });
        });
        grid.append(b);
      }
    });
  }

  /* The first generated position of a decoder-only reply (where the line goes), else 0. */
  boundary() { return KINDS[this.kind].boundary ? this.data.prompt_length : 0; }

  renderLarge() {
    const k = KINDS[this.kind];
    const { layers, heads } = this.tensor();
    const m = this.matrix(this.layer, this.head);
    const rows = this.labels(k.rows), cols = this.labels(k.cols);
    const which = this.head === 'avg' ? 'average over heads' : `head ${heads[this.head]}`;
    this.els.largeTitle.textContent = `${k.title}: layer ${layers[this.layer]}, ${which}`;
    const width = Math.max(200, this.els.large.clientWidth - 24);
    this.large.show({
      m, rowLabels: rows, colLabels: cols,
      masked: k.causal ? (i, j) => j > i : null, boundary: this.boundary(),
      maxWidth: width, maxHeight: 560,
      label: `${k.title}, layer ${layers[this.layer]}, ${which}: ${rows.length} rows by ${cols.length} columns`,
      describe: (i, j) => (k.causal && j > i)
        ? `${rows[i]} ← ${cols[j]}: masked (a later position)`
        : `${rows[i]} ← ${cols[j]}: ${m[i][j].toFixed(3)}`,
    });
    const g = this.large.geo, ds = this.els.map.dataset;
    Object.assign(ds, { x0: g.x0, y0: g.y0, cw: g.cw, ch: g.ch, kind: this.kind, boundary: this.boundary() });
    this.renderRowTokens(rows);
    this.selectRow(this.row >= 0 && this.row < rows.length ? this.row : -1);
  }

  /* The rows' tokens as buttons: choosing one shades the column text by its weights. */
  renderRowTokens(rows) {
    const box = this.els.rowTokens;
    box.textContent = '';
    const P = this.boundary();
    rows.forEach((t, i) => {
      if (P && i === P) box.append(cell('span', 'tok-boundary', 'output:'));
      const b = document.createElement('button');
      b.type = 'button';
      b.className = P && i >= P ? 'tok gen' : 'tok';
      b.textContent = t;
      b.dataset.row = i;
      b.addEventListener('click', () => this.selectRow(i));
      box.append(b);
    });
  }

  selectRow(i) {
    this.row = i;
    this.large.selectRow(i);
    for (const b of this.els.rowTokens.children) b.setAttribute('aria-pressed', Number(b.dataset.row) === i ? 'true' : 'false');
    const k = KINDS[this.kind], cols = this.labels(k.cols);
    const box = this.els.align;
    box.textContent = '';
    const m = i >= 0 ? this.matrix(this.layer, this.head) : null;
    const rowName = i >= 0 ? this.labels(k.rows)[i] : '';
    this.els.alignHelp.textContent = i < 0 ? 'Click a token above (or a row label of the map) to see where it looks.'
      : `Where “${rowName}” looks: each token shaded by its weight (darker = more).`;
    cols.forEach((t, j) => {
      const span = document.createElement('span');
      span.className = 'w';
      span.textContent = /^<.*>$/.test(t) ? ` ${t} ` : pieceText(t);
      span.dataset.col = j;
      if (m) {
        const masked = k.causal && j > i;
        const v = masked ? 0 : m[i][j];
        span.dataset.weight = v.toFixed(6);
        if (masked) span.classList.add('masked');
        else if (v > 0.005) {
          span.classList.add('hl');
          span.style.setProperty('--w', Math.sqrt(v).toFixed(3));
          span.title = `${t}: ${v.toFixed(3)}`;
        }
      }
      box.append(span);
    });
  }
}

function cell(tag, cls, text) {
  const el = document.createElement(tag);
  el.className = cls;
  el.textContent = text;
  return el;
}

function fillSelect(sel, options, value) {
  sel.textContent = '';
  for (const [v, label] of options) sel.add(new Option(label, v));
  if (options.some(([v]) => v === value)) sel.value = value;
}

/* A rough sentence split (end punctuation, space, capital or digit), only to
 * offer sentence pairs: used when source and translation split alike. */
export function splitSentences(text) {
  const out = [];
  for (const line of text.split(/\r\n|\r|\n/))
    for (const s of line.split(/(?<=[.!?\u2026]["'\u00bb\u201d)\]]*)\s+(?=["'(\[\u00ab\u201c]?\s?[\p{Lu}\p{N}])/u))
      if (s.trim()) out.push(s.trim());
  return out;
}
