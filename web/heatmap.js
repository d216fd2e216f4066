/* heatmap: one matrix on a canvas, with row and column labels, masked cells,
 * a tooltip (mouse or arrow keys) and a selected row; and the small unlabelled
 * version the explorer's grid uses.
 *
 * A map is drawn once into an offscreen image (one pixel per cell, scaled up
 * without smoothing); hover, cursor and selection are drawn over that copy, so
 * moving the mouse never recomputes the cells. */

/* Attention weights: white (0) to dark blue (1) over sqrt(weight), so that
 * weights of a few percent stay visible; the legend says so. */
export function weightColour(v) {
  const t = Math.sqrt(Math.min(1, Math.max(0, v)));
  return [255 + (8 - 255) * t, 255 + (48 - 255) * t, 255 + (107 - 255) * t];
}

/* -1 (blue) .. 0 (white) .. 1 (red), linear. */
export function signedColour(v) {
  const t = Math.min(1, Math.max(-1, v));
  return t >= 0 ? [255 + (178 - 255) * t, 255 + (24 - 255) * t, 255 + (43 - 255) * t]
                : [255 + (33 - 255) * -t, 255 + (102 - 255) * -t, 255 + (172 - 255) * -t];
}

/* Masked cells: grey with darker grey diagonal hatching.  Neutral greys are
 * off both colour scales above, which is how a reader (and the e2e test) tells
 * a masked cell from a weight. */
export const MASK_FILL = [200, 200, 200];
const FONT = '12px system-ui, sans-serif';
const ACCENT = '#d95f02';
const MASK_HATCH = '#9a9a9a';
let hatchPattern = null;

function hatch(ctx) {
  if (!hatchPattern) {
    const tile = document.createElement('canvas');
    tile.width = tile.height = 6;
    const t = tile.getContext('2d');
    t.fillStyle = `rgb(${MASK_FILL.join(',')})`;
    t.fillRect(0, 0, 6, 6);
    t.strokeStyle = MASK_HATCH;
    t.lineWidth = 1;
    t.beginPath();
    t.moveTo(0, 6); t.lineTo(6, 0);
    t.stroke();
    hatchPattern = ctx.createPattern(tile, 'repeat');
  }
  return hatchPattern;
}

/* One pixel per cell: rows x cols, masked cells in the mask's grey. */
function cellImage(m, colour, masked) {
  const rows = m.length, cols = rows ? m[0].length : 0;
  const img = document.createElement('canvas');
  img.width = Math.max(1, cols);
  img.height = Math.max(1, rows);
  const ctx = img.getContext('2d');
  const data = ctx.createImageData(img.width, img.height);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const c = masked && masked(i, j) ? MASK_FILL : colour(m[i][j]);
      const at = (i * cols + j) * 4;
      data.data[at] = c[0]; data.data[at + 1] = c[1]; data.data[at + 2] = c[2]; data.data[at + 3] = 255;
    }
  }
  ctx.putImageData(data, 0, 0);
  return img;
}

function sizeCanvas(canvas, w, h) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  canvas.style.width = w + 'px';
  canvas.style.height = h + 'px';
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

function paintCells(ctx, img, m, masked, x0, y0, cw, ch) {
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(img, x0, y0, img.width * cw, img.height * ch);
  if (!masked || cw < 4) return;
  ctx.fillStyle = hatch(ctx);
  for (let i = 0; i < m.length; i++)
    for (let j = 0; j < m[i].length; j++)
      if (masked(i, j)) ctx.fillRect(x0 + j * cw, y0 + i * ch, cw, ch);
}

/* A line before row and column b (0: none): where a decoder-only reply's output starts. */
function paintBoundary(ctx, b, rows, cols, x0, y0, cw, ch) {
  if (!(b > 0 && b < Math.max(rows, cols))) return;
  ctx.strokeStyle = ACCENT;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  if (b < rows) { ctx.moveTo(x0, y0 + b * ch); ctx.lineTo(x0 + cols * cw, y0 + b * ch); }
  if (b < cols) { ctx.moveTo(x0 + b * cw, y0); ctx.lineTo(x0 + b * cw, y0 + rows * ch); }
  ctx.stroke();
}

/* A small map without labels, at most size px on its longer side. */
export function drawSmall(canvas, m, { colour = weightColour, masked = null, size = 96, boundary = 0 } = {}) {
  const rows = m.length, cols = rows ? m[0].length : 0;
  const cell = Math.max(1, Math.floor(size / Math.max(rows, cols, 1)));
  const ctx = sizeCanvas(canvas, cols * cell, rows * cell);
  paintCells(ctx, cellImage(m, colour, masked), m, masked, 0, 0, cell, cell);
  paintBoundary(ctx, boundary, rows, cols, 0, 0, cell, cell);
  canvas.dataset.rows = rows;
  canvas.dataset.cols = cols;
}


/* A labelled map.  opts: tooltip (element), onRow(i) when a row is chosen
 * (click, or Enter on the keyboard cursor). */
export class Heatmap {
  constructor(canvas, opts = {}) {
    this.canvas = canvas;
    this.tooltip = opts.tooltip || null;
    this.onRow = opts.onRow || (() => {});
    this.map = null;
    this.row = -1;            /* selected row */
    this.cursor = null;       /* {i, j} of the keyboard cursor or the mouse */
    canvas.addEventListener('mousemove', (ev) => this.hover(this.cellAt(ev.clientX, ev.clientY), ev));
    canvas.addEventListener('mouseleave', () => this.hover(null));
    canvas.addEventListener('click', (ev) => {
      const c = this.cellAt(ev.clientX, ev.clientY, true);
      if (c) this.onRow(c.i);
    });
    canvas.addEventListener('keydown', (ev) => this.key(ev));
    canvas.addEventListener('blur', () => this.hover(null));
  }

  /* map: {m: [rows][cols], rowLabels, colLabels, masked(i,j)?, colour?, describe(i,j) -> text, boundary?
   *       (a line before row and column b),
   *       maxWidth, maxHeight (px for the cells), minCell, maxCell, tallRows (rows may be taller
   *       than columns are wide; else cells are at most square)} */
  show(map) {
    this.map = map;
    this.row = -1;
    this.cursor = null;
    this.layout();
    this.redraw();
  }

  clear() {
    this.map = null;
    const ctx = sizeCanvas(this.canvas, 1, 1);
    ctx.clearRect(0, 0, 1, 1);
    delete this.canvas.dataset.rows;
    delete this.canvas.dataset.cols;
    delete this.canvas.dataset.masked;
    this.hover(null);
  }

  selectRow(i) {
    this.row = i;
    this.redraw();
  }

  layout() {
    const { m, rowLabels, colLabels } = this.map;
    const rows = m.length, cols = rows ? m[0].length : 0;
    const ctx = this.canvas.getContext('2d');
    ctx.font = FONT;
    const widest = (labels) => labels.reduce((w, s) => Math.max(w, ctx.measureText(s).width), 0);
    const x0 = Math.min(Math.ceil(widest(rowLabels)) + 10, 150);
    const y0 = Math.min(Math.ceil(widest(colLabels)) + 10, 150);
    const minCell = this.map.minCell || 4, maxCell = this.map.maxCell || 28;
    const cw = Math.max(minCell, Math.min(maxCell, Math.floor((this.map.maxWidth || 600) / Math.max(cols, 1))));
    const ch = Math.max(minCell, Math.min(this.map.tallRows ? maxCell : cw,
                                          Math.floor((this.map.maxHeight || 640) / Math.max(rows, 1))));
    this.geo = { x0, y0, cw, ch, rows, cols, w: x0 + cols * cw + 4, h: y0 + rows * ch + 4 };
    this.image = cellImage(m, this.map.colour || weightColour, this.map.masked);
    this.canvas.dataset.rows = rows;
    this.canvas.dataset.cols = cols;
    let masked = 0;
    if (this.map.masked)
      for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) masked += this.map.masked(i, j) ? 1 : 0;
    this.canvas.dataset.masked = masked;
    this.canvas.setAttribute('aria-label', this.map.label || `${rows} by ${cols} map`);
  }

  redraw() {
    if (!this.map) return;
    const { x0, y0, cw, ch, rows, cols, w, h } = this.geo;
    const { m, rowLabels, colLabels, masked } = this.map;
    const ctx = sizeCanvas(this.canvas, w, h);
    ctx.clearRect(0, 0, w, h);
    paintCells(ctx, this.image, m, masked, x0, y0, cw, ch);
    ctx.strokeStyle = '#bbb';
    ctx.lineWidth = 1;
    ctx.strokeRect(x0 - 0.5, y0 - 0.5, cols * cw + 1, rows * ch + 1);
    paintBoundary(ctx, this.map.boundary, rows, cols, x0, y0, cw, ch);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    /* labels: every one when cells are tall/wide enough, else every k-th */
    const rowStep = Math.ceil(13 / ch), colStep = Math.ceil(13 / cw);
    ctx.textAlign = 'right';
    for (let i = 0; i < rows; i += rowStep) {
      ctx.fillStyle = i === this.row ? ACCENT : '#222';
      ctx.fillText(rowLabels[i], x0 - 5, y0 + i * ch + ch / 2, x0 - 6);
    }
    ctx.textAlign = 'left';
    ctx.fillStyle = '#222';
    for (let j = 0; j < cols; j += colStep) {
      ctx.save();
      ctx.translate(x0 + j * cw + cw / 2, y0 - 5);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(colLabels[j], 0, 0, y0 - 6);
      ctx.restore();
    }
    ctx.lineWidth = 2;
    if (this.row >= 0 && this.row < rows) {
      ctx.strokeStyle = ACCENT;
      ctx.strokeRect(x0 - 1, y0 + this.row * ch - 1, cols * cw + 2, ch + 2);
    }
    if (this.cursor) {
      ctx.strokeStyle = '#000';
      ctx.strokeRect(x0 + this.cursor.j * cw + 1, y0 + this.cursor.i * ch + 1, cw - 2, ch - 2);
    }
  }

  /* The cell under a client point, or null; withLabels: a row label counts as its row. */
  cellAt(x, y, withLabels = false) {
    if (!this.map) return null;
    const r = this.canvas.getBoundingClientRect();
    const { x0, y0, cw, ch, rows, cols } = this.geo;
    const i = Math.floor((y - r.top - y0) / ch), j = Math.floor((x - r.left - x0) / cw);
    if (i < 0 || i >= rows) return null;
    if (withLabels && x - r.left < x0) return { i, j: -1 };
    if (j < 0 || j >= cols) return null;
    return { i, j };
  }

  hover(cell) {
    this.cursor = cell && cell.j >= 0 ? cell : null;
    this.redraw();
    const tip = this.tooltip;
    if (!tip) return;
    if (!this.cursor) { tip.hidden = true; return; }
    const { i, j } = this.cursor;
    const { x0, y0, cw, ch } = this.geo;
    tip.textContent = this.map.describe(i, j);
    tip.hidden = false;
    /* beside the cell, inside the canvas's box (the container scrolls with it) */
    const left = this.canvas.offsetLeft + x0 + (j + 1) * cw + 8;
    const top = this.canvas.offsetTop + y0 + (i + 1) * ch + 4;
    tip.style.left = Math.max(0, Math.min(left, this.canvas.offsetLeft + this.geo.w - tip.offsetWidth)) + 'px';
    tip.style.top = top + 'px';
  }

  /* Arrow keys move a cursor over the cells; Enter or Space chooses its row. */
  key(ev) {
    if (!this.map) return;
    const { rows, cols } = this.geo;
    const c = this.cursor || { i: Math.max(this.row, 0), j: 0 };
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[ev.key]) {
      ev.preventDefault();
      const [di, dj] = this.cursor ? moves[ev.key] : [0, 0];
      this.hover({ i: Math.min(rows - 1, Math.max(0, c.i + di)), j: Math.min(cols - 1, Math.max(0, c.j + dj)) });
    } else if ((ev.key === 'Enter' || ev.key === ' ') && this.cursor) {
      ev.preventDefault();
      this.onRow(this.cursor.i);
    } else if (ev.key === 'Escape') {
      this.hover(null);
    }
  }
}
