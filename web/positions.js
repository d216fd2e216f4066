/* positions: the model's sinusoidal position encodings as a picture
 * (positions x dimensions), and the similarity of positions.
 *
 * Why computing them here equals the model's: MarianMT's position table is not
 * learned and not stored in model.safetensors; the engine computes it at load
 * (engine/model/model.c, compute_positions) from d_model and max_position_embeddings
 * alone, with the layout of MarianSinusoidalPositionalEmbedding
 * (docs/MARIAN.md 1.1): for k < ceil(d/2)
 *   PE[pos][k]            = sin(pos / 10000^(2k/d))
 *   PE[pos][ceil(d/2) + k] = cos(pos / 10000^(2k/d))     (k < floor(d/2))
 * in double precision, then rounded to float32.  positionTable does exactly
 * that with d and max_positions from GET /models (Math.fround is the float32
 * rounding), so the picture is the table the model adds to its embeddings. */

import { Heatmap, signedColour } from './heatmap.js';

/* n x d table, row-major, float32 like the engine's. */
export function positionTable(n, d) {
  const pe = new Float32Array(n * d);
  const half = d % 2 ? (d + 1) / 2 : d / 2;
  for (let pos = 0; pos < n; pos++) {
    for (let k = 0; k < half; k++)
      pe[pos * d + k] = Math.fround(Math.sin(pos / Math.pow(10000, (2 * k) / d)));
    for (let k = 0; k < Math.floor(d / 2); k++)
      pe[pos * d + half + k] = Math.fround(Math.cos(pos / Math.pow(10000, (2 * k) / d)));
  }
  return pe;
}

/* n x n cosine similarity of the rows: PE[p].PE[q] / (|PE[p]| |PE[q]|).
 * For even d every row's squared norm is d/2 (sin^2 + cos^2 per frequency) and
 * PE[p].PE[q] = sum_k cos((p - q) w_k): it depends on p - q only. */
export function positionSimilarity(pe, n, d) {
  const norms = new Float64Array(n);
  for (let p = 0; p < n; p++) {
    let s = 0;
    for (let k = 0; k < d; k++) s += pe[p * d + k] * pe[p * d + k];
    norms[p] = Math.sqrt(s) || 1;
  }
  const sim = [];
  for (let p = 0; p < n; p++) {
    const row = new Array(n);
    for (let q = 0; q < n; q++) {
      let s = 0;
      for (let k = 0; k < d; k++) s += pe[p * d + k] * pe[q * d + k];
      row[q] = s / (norms[p] * norms[q]);
    }
    sim.push(row);
  }
  return sim;
}

function rowsOf(pe, n, d) {
  const m = [];
  for (let p = 0; p < n; p++) m.push(Array.from(pe.subarray(p * d, (p + 1) * d)));
  return m;
}

const range = (n) => Array.from({ length: n }, (_, i) => String(i));

export class PositionsView {
  constructor(els) {
    this.els = els;             /* {count, info, peCanvas, peTip, simCanvas, simTip, simRange} */
    this.pe = new Heatmap(els.peCanvas, { tooltip: els.peTip });
    this.sim = new Heatmap(els.simCanvas, { tooltip: els.simTip });
    this.model = null;
    els.count.addEventListener('change', () => this.draw());
  }

  /* model: {id, d, maxPositions} */
  setModel(model) {
    if (model && model.architecture === 'decoder-only') {    /* the sinusoids shown stay another model's */
      this.els.info.textContent = `${model.id} is decoder-only: it adds no sinusoids, it rotates queries and keys ` +
        '(RoPE, below).' + (this.model ? ` The table shown is ${this.model.id}'s.` : '');
      return;
    }
    if (!model || !model.d || !model.maxPositions) return;
    if (this.model && this.model.id === model.id) { this.els.info.textContent = this.infoText || ''; return; }
    this.model = model;
    const sel = this.els.count, old = Number(sel.value) || 64;
    sel.textContent = '';
    /* at most 512: the similarity map costs n^2 d multiplications (1024 x 1024 x 1024 would take seconds) */
    for (const n of [16, 32, 64, 128, 256, 512].filter((x) => x <= model.maxPositions))
      sel.add(new Option(String(n), String(n)));
    if (!sel.options.length) sel.add(new Option(String(model.maxPositions), String(model.maxPositions)));
    const fits = [...sel.options].map((o) => Number(o.value)).filter((n) => n <= old);
    sel.value = String(fits.length ? Math.max(...fits) : sel.options[0].value);
    this.draw();
  }

  draw() {
    if (!this.model) return;
    const d = this.model.d, n = Math.min(Number(this.els.count.value) || 64, this.model.maxPositions);
    const half = d % 2 ? (d + 1) / 2 : d / 2;
    const table = positionTable(n, d);
    /* the cells get the figure's width less the row labels' */
    const widthOf = (canvas) => Math.max(200, canvas.parentElement.clientWidth - 40);
    this.infoText = `${this.model.id}: d_model ${d}, ${this.model.maxPositions} positions ` +
      `(showing the first ${n}); dimensions 0–${half - 1} are sines, ${half}–${d - 1} cosines.`;
    this.els.info.textContent = this.infoText;
    this.pe.show({
      m: rowsOf(table, n, d), rowLabels: range(n), colLabels: range(d), colour: signedColour,
      maxWidth: widthOf(this.els.peCanvas), maxHeight: 420, minCell: 1, maxCell: 8, tallRows: true,
      label: `position encodings: ${n} positions by ${d} dimensions`,
      describe: (p, k) => {
        const f = k < half ? 'sin' : 'cos', kk = k < half ? k : k - half;
        return `position ${p}, dimension ${k} = ${f}(${p} / 10000^(${2 * kk}/${d})) = ${table[p * d + k].toFixed(4)}`;
      },
    });
    const sim = positionSimilarity(table, n, d);
    const low = Math.min(...sim.map((row) => Math.min(...row)));
    this.els.simRange.textContent = `Here from ${low.toFixed(2)} to 1.`;
    this.sim.show({
      m: sim, rowLabels: range(n), colLabels: range(n), colour: signedColour,
      maxWidth: widthOf(this.els.simCanvas), maxHeight: 520, minCell: 1, maxCell: 8,
      label: `cosine similarity of ${n} positions`,
      describe: (p, q) => `positions ${p} and ${q} (offset ${q - p}): cosine ${sim[p][q].toFixed(4)}`,
    });
  }
}
