/* rope: rotary position embedding (RoPE), the decoder-only models' way of
 * telling positions apart, beside the sinusoids the Marian models add.
 *
 * RoPE adds nothing to the embeddings: inside every attention layer it rotates
 * each head's query and key vectors by an angle that grows with the position.
 * With head dimension d and base b (config.json rope_theta), dimension pair i
 * (0 <= i < d/2) turns by m * theta_i at position m, theta_i = b^(-2i/d).  The
 * pairs are the Hugging Face rotate_half ones, (i, i + d/2), as
 * engine/model/llm.c rotates them:
 *   x'[i]       = x[i] cos(m theta_i) - x[i + d/2] sin(m theta_i)
 *   x'[i + d/2] = x[i + d/2] cos(m theta_i) + x[i] sin(m theta_i)
 * A rotation by m then one by -n is one by m - n, so the score of a query at m
 * and a key at n, R(m)q . R(n)k = q . R(n - m)k, depends on m - n only: the
 * score map has constant diagonals.  Computed here in double precision. */

import { Heatmap, signedColour } from './heatmap.js';

/* theta_i = base^(-2i/d), i < d/2 (HF: inv_freq). */
export function ropeInvFreq(d, base) {
  const t = new Float64Array(d / 2);
  for (let i = 0; i < d / 2; i++) t[i] = Math.pow(base, (-2 * i) / d);
  return t;
}

/* [n][d/2]: cos(m theta_i), the cosine of the angle pair i has turned by at position m. */
export function ropeAngleTable(n, theta) {
  const rows = [];
  for (let m = 0; m < n; m++) rows.push(Array.from(theta, (t) => Math.cos(m * t)));
  return rows;
}

/* d standard normal numbers from a 32-bit seed (mulberry32 + Box-Muller): the
 * same q and k on every draw. */
export function seededVector(d, seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  const v = new Float64Array(d);
  for (let i = 0; i < d; i++) v[i] = Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  return v;
}

/* x rotated to position m (rotate_half pairs). */
export function rotate(x, m, theta) {
  const h = x.length / 2, y = new Float64Array(x.length);
  for (let i = 0; i < h; i++) {
    const c = Math.cos(m * theta[i]), s = Math.sin(m * theta[i]);
    y[i] = x[i] * c - x[i + h] * s;
    y[i + h] = x[i + h] * c + x[i] * s;
  }
  return y;
}

const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);

/* [n][n]: the attention score (R(m)q . R(n)k) / sqrt(d) of q at row m, k at column n. */
export function ropeScores(q, k, n, theta) {
  const qs = [], ks = [], scale = 1 / Math.sqrt(q.length);
  for (let m = 0; m < n; m++) { qs.push(rotate(q, m, theta)); ks.push(rotate(k, m, theta)); }
  return qs.map((qm) => ks.map((kn) => dot(qm, kn) * scale));
}

/* The score at offset m - n = D for D in -(n-1)..n-1, from one rotation of the
 * pair (q at D, k at 0; or q at 0, k at -D): what every diagonal should hold. */
export function scoreByOffset(q, k, n, theta) {
  const out = [], scale = 1 / Math.sqrt(q.length);
  for (let D = -(n - 1); D < n; D++)
    out.push(D >= 0 ? dot(rotate(q, D, theta), k) * scale : dot(q, rotate(k, -D, theta)) * scale);
  return out;
}

export const Q_SEED = 1234, K_SEED = 5678;

/* The data of the last draw, for the e2e test (tests/e2e/demo.mjs). */
export let ropeShown = null;

const range = (n) => Array.from({ length: n }, (_, i) => String(i));

export class RopeView {
  constructor(els) {
    this.els = els;   /* {base, dim, count, info, angleCanvas, angleTip, scoreCanvas, scoreTip, lineCanvas} */
    this.angle = new Heatmap(els.angleCanvas, { tooltip: els.angleTip });
    this.score = new Heatmap(els.scoreCanvas, { tooltip: els.scoreTip });
    for (const el of [els.base, els.dim, els.count]) el.addEventListener('change', () => this.draw());
    this.draw();
  }

  /* A decoder-only model's own RoPE: its rope_theta and head_dim (GET /models "rope"). */
  setModel(model) {
    if (!model || !model.rope) return;
    const { els } = this, d = String(model.rope.headDim);
    els.base.value = String(model.rope.theta);
    if (![...els.dim.options].some((o) => o.value === d)) els.dim.add(new Option(d, d));
    els.dim.value = d;
    this.draw();
  }

  draw() {
    const { els } = this;
    const base = Number(els.base.value), d = Number(els.dim.value), n = Number(els.count.value);
    if (!(base > 1) || !(d >= 2) || d % 2 || !(n >= 2)) {
      els.info.textContent = 'The base must be a number above 1, the head dimension even.';
      return;
    }
    const theta = ropeInvFreq(d, base);
    const q = seededVector(d, Q_SEED), k = seededVector(d, K_SEED);
    const angles = ropeAngleTable(n, theta), scores = ropeScores(q, k, n, theta);
    const byOffset = scoreByOffset(q, k, n, theta);
    const top = Math.max(...byOffset.map(Math.abs)) || 1;
    ropeShown = { base, d, n, theta: Array.from(theta), q: Array.from(q), k: Array.from(k), angles, scores,
                  byOffset, top };
    const widthOf = (canvas) => Math.max(200, canvas.parentElement.clientWidth - 40);
    const lastTurn = (2 * Math.PI) / theta[d / 2 - 1];
    els.info.textContent = `θ_i from 1 (pair 0) down to ${theta[d / 2 - 1].toPrecision(3)} (pair ${d / 2 - 1}): ` +
      `pair 0 turns once in ${(2 * Math.PI).toFixed(2)} positions, pair ${d / 2 - 1} once in ` +
      `${lastTurn.toPrecision(3)}.`;
    this.angle.show({
      m: angles, rowLabels: range(n), colLabels: range(d / 2), colour: signedColour,
      maxWidth: widthOf(els.angleCanvas), maxHeight: 420, minCell: 1, maxCell: 12, tallRows: true,
      label: `RoPE angles: cos(m θ_i) for ${n} positions by ${d / 2} dimension pairs`,
      describe: (m, i) => `position ${m}, pair ${i} (dimensions ${i} and ${i + d / 2}): θ = ${theta[i].toPrecision(4)}, ` +
        `angle ${(m * theta[i]).toFixed(3)} rad, cos ${angles[m][i].toFixed(4)}`,
    });
    this.score.show({
      m: scores.map((row) => row.map((v) => v / top)), rowLabels: range(n), colLabels: range(n),
      colour: signedColour, maxWidth: widthOf(els.scoreCanvas), maxHeight: 420, minCell: 1, maxCell: 8,
      label: `RoPE attention score of one query and one key over ${n} by ${n} positions`,
      describe: (m, j) => `q at ${m}, k at ${j} (offset ${m - j}): score ${scores[m][j].toFixed(4)}`,
    });
    Object.assign(els.angleCanvas.dataset, geometry(this.angle.geo));
    Object.assign(els.scoreCanvas.dataset, { top: String(top), ...geometry(this.score.geo) });
    this.drawLine(byOffset, scores, n, top);
  }

  /* Score against offset: the line from one rotation per offset, the dots every
   * (m, n) cell of the map at that offset (they fall on the line). */
  drawLine(byOffset, scores, n, top) {
    const c = this.els.lineCanvas, dpr = window.devicePixelRatio || 1;
    const W = Math.max(240, Math.min(720, c.parentElement.clientWidth - 8)), H = 180, L = 44, R = 8, T = 10, B = 30;
    c.width = Math.round(W * dpr); c.height = Math.round(H * dpr);
    c.style.width = W + 'px'; c.style.height = H + 'px';
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const x = (D) => L + ((D + n - 1) / (2 * n - 2)) * (W - L - R), y = (v) => T + (1 - (v / top + 1) / 2) * (H - T - B);
    ctx.font = '11px system-ui, sans-serif';
    ctx.strokeStyle = '#bbb'; ctx.fillStyle = '#555'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(L, y(0)); ctx.lineTo(W - R, y(0)); ctx.moveTo(x(0), T); ctx.lineTo(x(0), H - B); ctx.stroke();
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (const v of [top, 0, -top]) ctx.fillText(v.toFixed(2), L - 4, y(v));
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    for (const D of [-(n - 1), 0, n - 1]) ctx.fillText(String(D), x(D), H - B + 4);
    ctx.fillText('offset m − n', (L + W - R) / 2, H - 14);
    ctx.fillStyle = 'rgba(217, 95, 2, 0.35)';
    for (let m = 0; m < n; m++) for (let j = 0; j < n; j++) ctx.fillRect(x(m - j) - 1.5, y(scores[m][j]) - 1.5, 3, 3);
    ctx.strokeStyle = '#08306b'; ctx.lineWidth = 1.5;
    ctx.beginPath();
    byOffset.forEach((v, i) => (i ? ctx.lineTo : ctx.moveTo).call(ctx, x(i - (n - 1)), y(v)));
    ctx.stroke();
    c.dataset.points = String(byOffset.length);
    c.setAttribute('aria-label', `RoPE score against the offset m − n, from −${n - 1} to ${n - 1}`);
  }
}

function geometry(g) {
  return { x0: String(g.x0), y0: String(g.y0), cw: String(g.cw), ch: String(g.ch) };
}
