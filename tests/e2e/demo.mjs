/* The demo page end to end, in a real browser: Debian's chromium driven by
 * playwright-core, against the real server (build/mtserve) on a free loopback
 * port, as a user would use it at 1366x768 and at a phone's width.
 *
 * Every expectation comes from the API itself, asked by this script over
 * plain HTTP (not through the page): the translation from POST /translate with
 * the body the page sent, the token counts from POST /tokenize, the weights
 * from POST /attention, the model's shape from GET /models, and the position
 * encodings' values from docs/MARIAN.md 1.1 (computed by the
 * PyTorch reference).  The HTML mode: the markup shown is POST /translate's
 * with "format": "html", rendered beside it in a frame with sandbox="" where
 * the markup's script does not run.  Source "auto": the language shown as
 * detected is the one the reply names.  RoPE (web/rope.js): the page's angles
 * and scores equal an independent computation here (complex multiplication,
 * not the page's rotation), and its pixels have constant diagonals.  The
 * decoder-only attention view is a RENDERING test of the page: /attention is
 * answered through page.route with tests/e2e/fixtures/decoder-only-attention.json
 * (the float64 reference's probabilities, tests/e2e/fixtures/
 * decoder_only_attention.py), since the server does not serve LLMs there yet.
 * Prints each check, then "e2e: N passed, M failed";
 * exits 1 if any failed.  Screenshots: $E2E_OUT (default build/e2e/).
 *
 *   B=build node tests/e2e/demo.mjs     (make e2e; MTSERVE_BIN, CHROMIUM, E2E_OUT override) */

import { mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { OUT, ROOT, api as apiAt, check, equal, launchChromium, phase, run, startServer, stopServer, waitHealthy } from './lib.mjs';

const DESKTOP = { width: 1366, height: 768 };
const PHONE = { width: 390, height: 844 };

/* Sentences of the shipped models' domain (Debian package descriptions). */
const S1 = 'This package provides the documentation.';
const S2 = 'It is free software, released under the GNU General Public License.';
const S3 = 'This package contains the development files for the library.';
const FR = 'Ce paquet contient les fichiers de développement de la bibliothèque.';
/* Over the server's default --max-tokens (1024 source tokens a request): 413. */
const TOO_LONG = (S1 + ' ').repeat(150);
/* A page: inline tags, a link, and a script that must not run where it is rendered. */
const PAGE = '<h2>Description</h2><p>This package provides the <b>documentation</b> of the ' +
             '<a href="https://www.debian.org/">library</a>.</p>' +
             '<script>document.title = "a script ran"; parent.postMessage("a script ran", "*")</script>';

let BASE = '';

/* The API's plain JSON reply.  A body the page sent with "stream": true is asked
 * for without it: the stream's last event is that same reply (tests/test_stream.c). */
async function api(method, path, body) {
  if (body && body.stream) {
    body = { ...body };
    delete body.stream;
  }
  return apiAt(BASE, method, path, body);
}

/* ---- page helpers --------------------------------------------------------------------------- */

async function ready(page) {
  await page.waitForSelector('body[data-ready=true]', { timeout: 20000 });
}

/* Clicks Translate; resolves to the JSON body the page sent, after the reply is shown. */
async function translateVia(page, text, act) {
  await page.fill('#source', text);
  const sent = page.waitForRequest((r) => r.url().endsWith('/translate') && r.method() === 'POST');
  await (act ? act() : page.click('#translate'));
  const body = JSON.parse((await sent).postData());
  await page.waitForFunction(() => document.getElementById('output').getAttribute('aria-busy') === 'false' &&
                                   !document.getElementById('translate').disabled, null, { timeout: 30000 });
  return body;
}

const outputText = (page) => page.$eval('#output', (el) => el.textContent);

/* The large map's geometry and cell counts (heatmap.js puts them in its dataset). */
const mapInfo = (page) => page.$eval('#att-map', (c) => ({
  rows: Number(c.dataset.rows), cols: Number(c.dataset.cols), masked: Number(c.dataset.masked),
  x0: Number(c.dataset.x0), y0: Number(c.dataset.y0), cw: Number(c.dataset.cw), ch: Number(c.dataset.ch),
}));

/* The RGB at each cell's centre of the large map. */
const cellColours = (page) => page.$eval('#att-map', (c) => {
  const d = c.dataset, dpr = window.devicePixelRatio || 1, ctx = c.getContext('2d');
  const out = [];
  for (let i = 0; i < Number(d.rows); i++) {
    const row = [];
    for (let j = 0; j < Number(d.cols); j++) {
      const x = (Number(d.x0) + (j + 0.5) * Number(d.cw)) * dpr, y = (Number(d.y0) + (i + 0.5) * Number(d.ch)) * dpr;
      row.push(Array.from(ctx.getImageData(Math.floor(x), Math.floor(y), 1, 1).data.slice(0, 3)));
    }
    out.push(row);
  }
  return out;
});

/* heatmap.js: masked cells are neutral grey (hatched); weights run from white to
 * blue, where blue - red grows with the weight and near-white stays above 225. */
const isMaskGrey = ([r, g, b]) => Math.abs(r - g) < 8 && Math.abs(g - b) < 8 && r > 120 && r < 225;
/* heatmap.js's line between a decoder-only reply's prompt and output: orange (#d95f02) */
const isOrange = ([r, g, b]) => r - b > 80 && r > g + 30;

/* The RGB at canvas-pixel (x, y) in CSS px of a canvas (device pixels read). */
const pixelsAt = (page, sel, points) => page.$eval(sel, (c, pts) => {
  const dpr = window.devicePixelRatio || 1, ctx = c.getContext('2d');
  return pts.map(([x, y]) => Array.from(ctx.getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data.slice(0, 3)));
}, points);

/* RoPE's score by the closed form of complex numbers: pair i of a vector is
 * z = x[i] + i x[i + d/2] (HF rotate_half), rotation by m multiplies it by
 * e^(i m theta_i), and x.y = Re(sum z_x conj(z_y)); so the score of q at m
 * and k at n is sum_i Re(z_q conj(z_k) e^(i (m - n) theta_i)) / sqrt(d). */
function ropeScoreRef(q, k, m, n, base) {
  const d = q.length, h = d / 2;
  let s = 0;
  for (let i = 0; i < h; i++) {
    const phi = (m - n) * Math.pow(base, (-2 * i) / d);
    const re = q[i] * k[i] + q[i + h] * k[i + h], im = q[i + h] * k[i] - q[i] * k[i + h];
    s += re * Math.cos(phi) - im * Math.sin(phi);
  }
  return s / Math.sqrt(d);
}

/* True when the element's box lies inside the viewport. */
const inViewport = (page, sel) => page.$eval(sel, (el) => {
  const r = el.getBoundingClientRect();
  return r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
});

async function attentionShown(page) {
  await page.waitForFunction(() => !document.getElementById('att-body').hidden &&
                                   document.getElementById('att-map').dataset.rows, null, { timeout: 30000 });
}

async function tokenCounts(model, source, translation) {
  const s = await api('POST', '/tokenize', { text: source, model });
  const t = await api('POST', '/tokenize', { text: translation, model, side: 'target' });
  return { ns: s.pieces.length, nt: t.pieces.length, src: s.pieces, tgt: t.pieces };
}

/* ---- the test ---------------------------------------------------------------------------------- */

async function main() {
  mkdirSync(OUT, { recursive: true });
  const server = startServer(['--web', resolve(ROOT, 'web')]);
  let browser;
  try {
    BASE = await server.base;
    await waitHealthy(BASE);
    const models = (await api('GET', '/models')).models;
    const enfr = models.find((m) => m.id === 'en-fr');
    browser = await launchChromium();
    console.log(`server ${BASE}, chromium ${browser.version()}, screenshots in ${OUT}`);
    const context = await browser.newContext({ viewport: DESKTOP });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const bad = [], errors = [];
    page.on('response', (r) => { if (r.status() >= 400) bad.push(`${r.status()} ${r.request().method()} ${r.url()}`); });
    page.on('pageerror', (e) => errors.push(e.message));
    /* chromium logs every 4xx; the 413 and the 400 (an empty glossary term) the test
     * provokes are checked on their own, and the sandbox's refusal to run the
     * rendered page's script is logged as one */
    const blocked = [];
    page.on('console', (m) => {
      if (m.type() !== 'error' || /status of 413/.test(m.text()) || (/status of 400/.test(m.text()) && page.glossary400)) return;
      if (/Blocked script execution in 'about:srcdoc'/.test(m.text())) blocked.push(m.text());
      else errors.push(m.text());
    });

    let first = null;      /* {source, translation} of the first translation */

    await phase('the page at / and at /web/', async () => {
      for (const path of ['/', '/web/']) {     /* /web/ last: the later phases use the page it leaves */
        bad.length = 0;
        await page.goto(BASE + path);
        if (!check(`${path}: the page starts`, await ready(page).then(() => true, () => false))) continue;
        equal(`${path}: every request answered (no 4xx/5xx)`, bad, []);
        equal(`${path}: the stylesheet applies`,
              await page.$eval('main', (el) => getComputedStyle(el).maxWidth), '1240px');
        check(`${path}: connected`, (await page.textContent('#status')).startsWith('connected'),
              await page.textContent('#status'));
      }
      equal('model choice: every model of /models, and "by the languages"',
            await page.$$eval('#model option', (os) => os.map((o) => o.value)), ['', ...models.map((m) => m.id)]);
      equal('language choice: "auto" (detect it), then the languages of /languages',
            await page.$$eval('#src-lang option', (os) => os.map((o) => o.value)),
            ['auto', ...(await api('GET', '/languages')).map((l) => l.code)]);
      equal('text mode at first: no rendering frame', [await page.isChecked('#mode-text'), await page.isHidden('#render-col')],
            [true, true]);
      const maxBeam = Math.min(8, enfr.limits.max_batch), beams = ['1'];
      for (let b = 2; b <= maxBeam; b += 2) beams.push(String(b));
      equal(`search choice: greedy and beams up to the model's max_batch (${maxBeam})`,
            await page.$$eval('#beam option', (os) => os.map((o) => o.value)), beams);
      equal('no script errors', errors, []);
    });

    await phase('translate (beam 4): the text shown equals the API\'s reply', async () => {
      await page.selectOption('#beam', '4');
      const sent = await translateVia(page, S1);
      equal('the page asked for beam 4, en -> fr', [sent.beam_size, sent.source, sent.target], [4, 'en', 'fr']);
      equal('the page asked for a stream (the server\'s OpenAPI lists "stream")', sent.stream, true);
      const want = (await api('POST', '/translate', sent)).translations[0].text;
      const got = await outputText(page);
      equal('the text shown equals POST /translate\'s reply', got, want);
      check('timing shown', /\d+ ms/.test(await page.textContent('#timing')), await page.textContent('#timing'));
      await page.click('#copy');
      equal('copy puts the translation on the clipboard', await page.evaluate(() => navigator.clipboard.readText()), got);
      first = { source: S1, translation: got };
      await page.screenshot({ path: `${OUT}/1-translated.png` });
    });

    await phase('the attention explorer', async () => {
      const sent = page.waitForRequest((r) => r.url().endsWith('/attention'));
      await page.click('#att-show');
      const body = JSON.parse((await sent).postData());
      equal('the target sent to /attention is the translation shown (teacher-forced)',
            [body.text, body.target, body.model], [first.source, first.translation, 'en-fr']);
      await attentionShown(page);
      const { ns, nt, src, tgt } = await tokenCounts('en-fr', first.source, first.translation);
      const ref = await api('POST', '/attention', { text: first.source, target: first.translation, model: 'en-fr' });
      equal('/attention\'s target tokens are the translation\'s (sanity)', ref.target_tokens, tgt);
      const L = enfr.config.decoder_layers, H = enfr.config.decoder_heads;
      const shapes = { encoder: [ns, ns, enfr.config.encoder_layers], decoder: [nt, nt, L], cross: [nt, ns, L] };
      for (const [kind, [rows, cols, layers]] of Object.entries(shapes)) {
        await page.click(`#tab-${kind}`);
        equal(`${kind}: tab selected`, await page.getAttribute(`#tab-${kind}`, 'aria-selected'), 'true');
        const m = await mapInfo(page);
        equal(`${kind}: the large map is ${rows} x ${cols} (the token counts)`, [m.rows, m.cols], [rows, cols]);
        const minis = await page.$$eval('#att-grid .mini canvas', (cs) => cs.map((c) => [+c.dataset.rows, +c.dataset.cols]));
        equal(`${kind}: the grid has every layer x (head + average) = ${layers} x ${H + 1} maps`, minis.length, layers * (H + 1));
        check(`${kind}: every small map is ${rows} x ${cols}`, minis.every(([r, c]) => r === rows && c === cols),
              JSON.stringify(minis));
        await page.screenshot({ path: `${OUT}/2-attention-${kind}.png`, fullPage: true });
      }

      /* the decoder's causal mask: every cell above the diagonal drawn masked, none below */
      await page.click('#tab-decoder');
      const m = await mapInfo(page);
      equal('decoder: the map counts n(n-1)/2 masked cells', m.masked, nt * (nt - 1) / 2);
      const colours = await cellColours(page);
      const wrong = [];
      colours.forEach((row, i) => row.forEach((c, j) => { if (isMaskGrey(c) !== (j > i)) wrong.push([i, j, c]); }));
      equal('decoder: the upper triangle is drawn masked (hatched grey), the rest as weights', wrong, []);
      await page.click('#tab-encoder');
      const enc = await cellColours(page);
      check('encoder: nothing drawn masked', enc.every((row) => row.every((c) => !isMaskGrey(c))));

      /* one map large: a click in the grid opens layer 1 head 2 */
      await page.click('#tab-cross');
      await page.click('#att-grid .mini[data-layer="1"][data-head="2"]');
      equal('a click in the grid opens that map large',
            [await page.textContent('#att-large-title'), await page.inputValue('#att-layer'), await page.inputValue('#att-head')],
            ['Cross-attention: layer 1, head 2', '1', '2']);
      equal('the grid marks the open map',
            await page.$$eval('#att-grid .mini[aria-pressed=true]', (bs) => bs.map((b) => [b.dataset.layer, b.dataset.head])),
            [['1', '2']]);

      /* hover: the two tokens and the weight, equal to /attention's */
      const at = async (i, j) => {
        const g = await mapInfo(page), box = await (await page.$('#att-map')).boundingBox();
        await page.mouse.move(box.x + g.x0 + (j + 0.5) * g.cw, box.y + g.y0 + (i + 0.5) * g.ch);
        return page.textContent('#att-tip');
      };
      const [i, j] = [Math.min(2, nt - 1), Math.min(1, ns - 1)];
      let w = ref.cross_attention[1][2][i][j];
      equal('hover shows the target token, the source token and the weight (layer 1, head 2)',
            await at(i, j), `${tgt[i]} ← ${src[j]}: ${w.toFixed(3)}`);
      check('the tooltip is visible', await page.isVisible('#att-tip'));
      await page.selectOption('#att-head', 'avg');
      w = ref.cross_attention[1].reduce((s, h) => s + h[i][j], 0) / H;
      equal('the average over heads: its weight is the mean of /attention\'s heads',
            await at(i, j), `${tgt[i]} ← ${src[j]}: ${w.toFixed(3)}`);
      await page.mouse.move(0, 0);

      /* clicking a target token shades its source alignment in the text */
      const row = Math.min(1, nt - 1);
      await page.click(`#att-rows button[data-row="${row}"]`);
      const spans = await page.$$eval('#att-align .w', (ss) => ss.map((s) => ({
        text: s.textContent, w: Number(s.dataset.weight), hl: s.classList.contains('hl') })));
      const avg = ref.cross_attention[1][0][row].map((_, c) => ref.cross_attention[1].reduce((s, h) => s + h[row][c], 0) / H);
      const argmax = (xs) => xs.indexOf(Math.max(...xs));
      equal('the source text is shown as its tokens', spans.length, ns);
      equal('the most-attended source token is highlighted most', argmax(spans.map((s) => s.w)), argmax(avg));
      check('it is highlighted', spans[argmax(avg)].hl);
      equal('the chosen target token is marked', await page.getAttribute(`#att-rows button[data-row="${row}"]`, 'aria-pressed'), 'true');

      /* keyboard: the tabs take arrow keys; the map takes arrow keys for its tooltip */
      await page.focus('#tab-cross');
      await page.keyboard.press('ArrowLeft');
      equal('ArrowLeft on the tabs selects the decoder tab', await page.getAttribute('#tab-decoder', 'aria-selected'), 'true');
      await page.focus('#att-map');
      await page.keyboard.press('ArrowDown');
      check('arrow keys on the map show the tooltip', await page.isVisible('#att-tip'));
      await page.screenshot({ path: `${OUT}/3-attention-keyboard.png`, fullPage: true });
    });

    await phase('an error is shown in view, and nothing of the previous translation stays', async () => {
      await page.selectOption('#beam', '1');
      bad.length = 0;
      await translateVia(page, TOO_LONG);
      check('the error is visible', await page.isVisible('#error'));
      check('the error is inside the 1366x768 viewport', await inViewport(page, '#error'),
            JSON.stringify(await page.$eval('#error', (e) => e.getBoundingClientRect().toJSON())));
      check('the error names the HTTP status and the server\'s code', /HTTP 413 input_too_long/.test(await page.textContent('#error')),
            await page.textContent('#error'));
      check('the previous translation is gone', !(await outputText(page)).includes(first.translation));
      check('the previous maps are gone', await page.$eval('#att-map', (c) => !c.dataset.rows) &&
            (await page.$$('#att-grid .mini')).length === 0 && await page.isHidden('#att-body'));
      equal('the only failed request is that 413', bad.map((b) => b.split(' ')[0]), ['413']);
      await page.screenshot({ path: `${OUT}/4-error.png` });
    });

    await phase('a second translation replaces the first map', async () => {
      const sent = await translateVia(page, S2);
      const t2 = await outputText(page);
      equal('greedy: the text shown equals POST /translate\'s reply', t2, (await api('POST', '/translate', sent)).translations[0].text);
      await attentionShown(page);                   /* once opened, the explorer follows each translation */
      let c = await tokenCounts('en-fr', S2, t2);
      let m = await mapInfo(page);
      equal('the map follows: its size is the new token counts', [m.rows, m.cols], [c.nt, c.nt]);

      /* the next one, by keyboard (Ctrl+Enter): the old map goes at once */
      await page.fill('#source', S3);
      await page.focus('#source');
      const att = page.waitForRequest((r) => r.url().endsWith('/attention'));
      /* the translation is held back until the check has looked: on a loaded machine the
       * reply and the new maps could otherwise come before it does */
      let release, passed;
      const held = new Promise((r) => { release = r; });
      const through = new Promise((r) => { passed = r; });
      await page.route('**/translate', async (route) => {
        await held;
        await route.continue().catch(() => {});
        passed();
      });
      await page.keyboard.press('Control+Enter');
      equal('at once, while translating: no map, no grid',
            await page.evaluate(() => [!!document.getElementById('att-map').dataset.rows,
                                       document.querySelectorAll('#att-grid .mini').length]), [false, 0]);
      release();
      await through;
      await page.unroute('**/translate');
      const body = JSON.parse((await att).postData());
      await attentionShown(page);
      const t3 = await outputText(page);
      equal('Ctrl+Enter translated; /attention got that translation as its target', [body.text, body.target], [S3, t3]);
      c = await tokenCounts('en-fr', S3, t3);
      m = await mapInfo(page);
      equal('the new map is the new translation\'s: decoder map nt x nt', [m.rows, m.cols], [c.nt, c.nt]);
      await page.click('#tab-cross');
      m = await mapInfo(page);
      equal('and its cross-attention nt x ns', [m.rows, m.cols], [c.nt, c.ns]);
      equal('one large map on the page', (await page.$$('canvas#att-map')).length, 1);
      await page.screenshot({ path: `${OUT}/5-second-translation.png`, fullPage: true });
    });

    if (models.some((m) => m.id === 'fr-en')) {
      await phase('model choice: fr-en', async () => {
        await page.selectOption('#model', 'fr-en');
        equal('choosing the model sets the languages',
              [await page.inputValue('#src-lang'), await page.inputValue('#tgt-lang')], ['fr', 'en']);
        const sent = await translateVia(page, FR);
        equal('the page named the model', sent.model, 'fr-en');
        equal('the text shown equals POST /translate\'s reply', await outputText(page),
              (await api('POST', '/translate', sent)).translations[0].text);
        await attentionShown(page);
        equal('the explorer uses that model', await page.textContent('#att-status').then((s) => /model fr-en/.test(s)), true);
      });
    }

    await phase('HTML mode: the translated markup as text, and rendered beside it (sandboxed)', async () => {
      await page.selectOption('#model', '');
      await page.selectOption('#src-lang', 'en');
      await page.selectOption('#tgt-lang', 'fr');
      await page.check('#mode-html');
      equal('the mode is HTML: the frame is shown, the labels say HTML',
            [await page.isVisible('#render'), await page.textContent('#source-label'), await page.textContent('#output-label')],
            [true, 'HTML', 'Translated HTML']);
      equal('the frame is sandboxed with nothing allowed (sandbox="")', await page.getAttribute('#render', 'sandbox'), '');
      check('the attention view is off in HTML mode', await page.isDisabled('#att-show'));
      await page.evaluate(() => { window.__messages = []; addEventListener('message', (e) => window.__messages.push(e.data)); });
      const sent = await translateVia(page, PAGE);
      equal('the page asked for format html, without a stream', [sent.format, sent.stream, sent.source, sent.target],
            ['html', undefined, 'en', 'fr']);
      const want = (await api('POST', '/translate', sent)).translations[0].text;
      const shown = await outputText(page);
      equal('the markup shown (as text) is POST /translate\'s', shown, want);
      check('the tags are kept in it', /^<h2>[^<]+<\/h2><p>[^<]*<b>[^<]+<\/b>[^<]*<a href="https:\/\/www\.debian\.org\/">[^<]+<\/a>[^<]*<\/p><script>/.test(want),
            want);
      equal('the frame renders that markup (srcdoc)', await page.getAttribute('#render', 'srcdoc'), want);
      const frame = await (await page.$('#render')).contentFrame();
      await frame.waitForLoadState();
      const bold = want.match(/<b>([^<]+)<\/b>/);
      equal('rendered: the bold words are the translation\'s', await frame.textContent('b'), bold && bold[1]);
      equal('rendered: the link keeps its address', await frame.getAttribute('a', 'href'), 'https://www.debian.org/');
      equal('the markup\'s script did not run (the frame\'s title is untouched)', await frame.title(), '');
      for (let i = 0; i < 50 && !blocked.length; i++) await page.waitForTimeout(100);   /* the console is asynchronous */
      check('chromium reports that it blocked the script (the sandbox)', blocked.length > 0, JSON.stringify(blocked));
      equal('no message came from the frame', await page.evaluate(() => window.__messages), []);
      const [out, ren] = await Promise.all(['#output', '#render'].map((sel) => page.$eval(sel, (el) => el.getBoundingClientRect().toJSON())));
      check('side by side at 1366 px: the frame is right of the markup, on the same row',
            ren.left >= out.right && Math.abs(ren.top - out.top) < 40, JSON.stringify({ out, ren }));
      await page.screenshot({ path: `${OUT}/6-html-mode.png` });
      await page.check('#mode-text');
      equal('back in text mode: no frame, the translation cleared', [await page.isHidden('#render-col'),
            (await outputText(page)).includes(want)], [true, false]);
    });

    await phase('a glossary: its terms are sent and kept', async () => {
      await page.click('#glossary-box summary');
      await page.fill('#glossary', 'package = colis\ndocumentation\tnotice\n\nno separator here');
      const sent = await translateVia(page, 'This package provides the documentation.');
      equal('the page sent the glossary of the box', sent.glossary, { package: 'colis', documentation: 'notice' });
      const shown = await outputText(page);
      check('the translation shown holds both target terms', /\bcolis\b/.test(shown) && /\bnotice\b/.test(shown), shown);
      const reply = await api('POST', '/translate', { ...sent, stream: false });
      equal('and is POST /translate\'s', shown, reply.translations[0].text);
      await page.fill('#glossary', 'package = ');
      page.glossary400 = true;
      await translateVia(page, 'This package provides the documentation.');
      page.glossary400 = false;
      check('an empty target term: the server\'s 400 is shown', /HTTP 400/.test(await page.textContent('#error')),
            await page.textContent('#error'));
      await page.fill('#glossary', '');
    });

    if (models.some((m) => m.id === 'fr-en')) {
      await phase('source "auto": the language detected is shown', async () => {
        await page.selectOption('#src-lang', 'auto');
        const targets = await page.$$eval('#tgt-lang option', (os) => os.map((o) => o.value));
        const all = [...new Set((await api('GET', '/languages')).flatMap((l) => l.targets))];
        equal('the targets of "auto": every target of /languages', targets.sort(), all.sort());
        await page.selectOption('#tgt-lang', 'en');
        const sent = await translateVia(page, FR);
        equal('the page sent source auto, target en', [sent.source, sent.target, sent.model], ['auto', 'en', undefined]);
        const reply = await api('POST', '/translate', sent);
        equal('the text shown is POST /translate\'s', await outputText(page), reply.translations[0].text);
        equal('which is the translation with source fr', reply.translations[0].text,
              (await api('POST', '/translate', { ...sent, source: 'fr' })).translations[0].text);
        const det = reply.detected_language || {};      /* our JSON API: {"language", "confidence"} */
        equal('the reply names French as detected', det.language, 'fr');
        check('with a confidence in (0, 100]', det.confidence > 0 && det.confidence <= 100, JSON.stringify(det));
        check('the page shows it', await page.isVisible('#detected'), await page.textContent('#detected'));
        equal('as "Detected: French (fr), N%" with the reply\'s confidence', await page.textContent('#detected'),
              `Detected: French (fr), ${Math.round(det.confidence * 10) / 10}%`);
        await page.screenshot({ path: `${OUT}/7-detected.png` });
        await page.selectOption('#src-lang', 'en');
        check('a named source: nothing shown as detected', await page.isHidden('#detected'));
      });
    }

    await phase('a file dropped on the page: a progress bar, then the translated file', async () => {
      await page.selectOption('#src-lang', 'en');
      await page.selectOption('#tgt-lang', 'fr');
      const text = [S1, '', S2, S3].join('\n') + '\n';
      await page.evaluate((t) => {          /* a real drop event carrying a File, as a browser makes it */
        const dt = new DataTransfer();
        dt.items.add(new File([t], 'notes.txt', { type: 'text/plain' }));
        document.getElementById('file-zone').dispatchEvent(
          new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      }, text);
      await page.waitForSelector('#file-link:not([hidden])', { timeout: 60000 });
      const bar = await page.$eval('#file-progress', (p) => [p.value, p.max, p.hidden]);
      equal('the progress bar is full', bar, [3, 3, false]);
      equal('the link names the file', await page.getAttribute('#file-link', 'download'), 'notes.fr.txt');
      const got = await page.evaluate(async (h) => (await fetch(h)).text(), await page.getAttribute('#file-link', 'href'));
      const lines = got.split('\n');
      equal('the file has the input\'s lines (4 and a final newline)', lines.length, text.split('\n').length);
      equal('its second line is blank, as the input\'s', lines[1], '');
      equal('its first line is the model\'s translation of the first', lines[0],
            (await api('POST', '/translate', { text: S1, model: 'en-fr' })).translations[0].text);
      await page.screenshot({ path: `${OUT}/8-file.png` });
      const fromInput = 'Paragraph one.\n';
      await page.setInputFiles('#file-input', { name: 'one.txt', mimeType: 'text/plain', buffer: Buffer.from(fromInput) });
      await page.waitForFunction(() => document.getElementById('file-link').download === 'one.fr.txt', null,
                                 { timeout: 60000 });
      check('a file chosen with the file input is translated too', true);
    });

    await phase('the position encodings', async () => {
      /* docs/MARIAN.md 1.1: values of the PyTorch reference, d = 512 */
      const got = await page.evaluate(async () => {
        const { positionTable } = await import('/web/positions.js');
        const t = positionTable(3, 512);
        return [t[512], t[513], t[512 + 256], t[512 + 257], t[1024], t[1024 + 256], t[0], t[255], t[256], t[511]];
      });
      const want = [0.841471, 0.8218562, 0.5403023, 0.569695, 0.9092974, -0.4161468, 0, 0, 1, 1];
      check('the table equals the reference values (sin half, then cos half)',
            got.every((v, k) => Math.abs(v - want[k]) < 1e-6), `got ${got}`);
      const model = models.find((m) => m.id === 'fr-en') || enfr;
      const n = Number(await page.inputValue('#pos-count'));
      const pe = await page.$eval('#pe-map', (c) => [Number(c.dataset.rows), Number(c.dataset.cols)]);
      equal(`the picture is positions x d_model (${n} x ${model.config.d_model})`, pe, [n, model.config.d_model]);
      const sim = await page.$eval('#sim-map', (c) => [Number(c.dataset.rows), Number(c.dataset.cols)]);
      equal('the similarity map is positions x positions', sim, [n, n]);
      const toeplitz = await page.evaluate(async (d) => {
        const { positionTable, positionSimilarity } = await import('/web/positions.js');
        const s = positionSimilarity(positionTable(40, d), 40, d);
        let worst = 0;
        for (let p = 0; p + 5 < 40; p++) for (let q = 0; q + 5 < 40; q++) worst = Math.max(worst, Math.abs(s[p][q] - s[p + 5][q + 5]));
        return worst;
      }, model.config.d_model);
      check('the similarity depends on the offset only (constant diagonals)', toeplitz < 1e-5, `max difference ${toeplitz}`);
      await (await page.$('#positions-panel')).screenshot({ path: `${OUT}/8-positions.png` });
    });

    await phase('RoPE beside the sinusoids (web/rope.js)', async () => {
      const shown = () => page.evaluate(async () => (await import('/web/rope.js')).ropeShown);
      for (const [base, d] of [[10000, 64], [1000000, 128]]) {
        if (base !== 10000) {                        /* the controls: Qwen's rope_theta and head_dim */
          await page.fill('#rope-base', String(base));
          await page.dispatchEvent('#rope-base', 'change');
          await page.selectOption('#rope-dim', String(d));
        }
        const r = await shown(), n = r.n, what = `base ${base}, d ${d}`;
        equal(`${what}: the page drew with these settings`, [r.base, r.d], [base, d]);
        equal(`${what}: the angle map is positions x d/2 pairs`,
              await page.$eval('#rope-angle-map', (c) => [+c.dataset.rows, +c.dataset.cols]), [n, d / 2]);
        equal(`${what}: the score map is positions x positions`,
              await page.$eval('#rope-score-map', (c) => [+c.dataset.rows, +c.dataset.cols]), [n, n]);
        equal(`${what}: the line has the 2n-1 offsets`, await page.$eval('#rope-line', (c) => +c.dataset.points), 2 * n - 1);
        let worst = 0;
        r.angles.forEach((row, m) => row.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - Math.cos(m * Math.pow(base, (-2 * i) / d)))); }));
        check(`${what}: the angle map holds cos(m base^(-2i/d))`, worst < 1e-12, `max difference ${worst}`);
        worst = 0;
        r.scores.forEach((row, m) => row.forEach((v, j) => { worst = Math.max(worst, Math.abs(v - ropeScoreRef(r.q, r.k, m, j, base))); }));
        check(`${what}: every score equals the complex-number form computed here (rotate_half pairs)`, worst < 1e-9,
              `max difference ${worst}`);
        let diag = 0, spread = 0;
        for (let m = 0; m + 1 < n; m++) for (let j = 0; j + 1 < n; j++) diag = Math.max(diag, Math.abs(r.scores[m][j] - r.scores[m + 1][j + 1]));
        for (let j = 0; j < n; j++) spread = Math.max(spread, Math.abs(r.scores[n - 1][j] - r.scores[n - 1][n - 1]));
        check(`${what}: constant diagonals (score(m, n) = score(m+1, n+1))`, diag < 1e-9, `max difference ${diag}`);
        check(`${what}: and the score does change with the offset`, spread > 0.2 * r.top, `${spread} vs ${r.top}`);
        /* the pixels: along each diagonal one colour; the diagonals not all alike */
        const g = await page.$eval('#rope-score-map', (c) => ({ x0: +c.dataset.x0, y0: +c.dataset.y0, cw: +c.dataset.cw, ch: +c.dataset.ch }));
        const pts = [];
        for (let m = 0; m < n; m += 3) for (let j = 0; j < n; j += 3) pts.push([g.x0 + (j + 0.5) * g.cw, g.y0 + (m + 0.5) * g.ch, m - j]);
        const px = await pixelsAt(page, '#rope-score-map', pts.map(([x, y]) => [x, y]));
        const byOffset = new Map();
        let bad = 0;
        pts.forEach(([, , off], t) => {
          const c = px[t], first = byOffset.get(off);
          if (!first) byOffset.set(off, c);
          else if (c.some((v, ch) => Math.abs(v - first[ch]) > 1)) bad++;
        });
        const distinct = new Set([...byOffset.values()].map((c) => c.join(','))).size;
        check(`${what}: the score map's pixels are constant along every diagonal`, bad === 0, `${bad} cells differ`);
        check(`${what}: and differ between diagonals`, distinct > 10, `${distinct} colours`);
        /* the angle map's pixels are signedColour(cos(m theta_i)), theta_i computed here */
        const ga = await page.$eval('#rope-angle-map', (c) => ({ x0: +c.dataset.x0, y0: +c.dataset.y0, cw: +c.dataset.cw, ch: +c.dataset.ch }));
        const cells = [];
        for (let m = 0; m < n; m += 5) for (let i = 0; i < d / 2; i += 3) cells.push([m, i]);
        const got = await pixelsAt(page, '#rope-angle-map', cells.map(([mm, i]) => [ga.x0 + (i + 0.5) * ga.cw, ga.y0 + (mm + 0.5) * ga.ch]));
        const wantC = await page.evaluate(async (vals) => {
          const { signedColour } = await import('/web/heatmap.js');
          return vals.map((v) => signedColour(v).map(Math.round));
        }, cells.map(([mm, i]) => Math.cos(mm * Math.pow(base, (-2 * i) / d))));
        const off = got.filter((c, t) => c.some((v, ch) => Math.abs(v - wantC[t][ch]) > 3)).length;
        check(`${what}: the angle map's pixels are the colours of cos(m theta_i)`, off === 0, `${off} of ${cells.length} differ`);
      }
      await page.fill('#rope-base', '10000');
      await page.dispatchEvent('#rope-base', 'change');
      await page.selectOption('#rope-dim', '64');
      await (await page.$('#positions-panel')).screenshot({ path: `${OUT}/8-rope.png` });
    });

    await phase('decoder-only attention: a RENDERING test of the page (/attention answered from a fixture)', async () => {
      const fixture = JSON.parse(readFileSync(resolve(ROOT, 'tests/e2e/fixtures/decoder-only-attention.json'), 'utf8'));
      const N = fixture.tokens.length, P = fixture.prompt_length, L = fixture.layers.length, H = fixture.heads.length;
      await page.route('**/attention', (route) => route.fulfill({ status: 200, contentType: 'application/json',
                                                                  body: JSON.stringify(fixture) }));
      await page.selectOption('#beam', '1');
      await translateVia(page, S1);                 /* the explorer is open: it asks /attention for the new translation */
      await page.waitForFunction(() => document.getElementById('att-map').dataset.kind === 'llm', null, { timeout: 30000 });
      check('the tabs (encoder / decoder / cross) are hidden', await page.isHidden('#att-tabs'));
      const status = await page.textContent('#att-status');
      check('the status counts prompt and generated tokens', status.includes(`${P} prompt tokens, ${N - P} generated tokens`), status);
      const m = await mapInfo(page);
      equal(`the large map is N x N (${N})`, [m.rows, m.cols], [N, N]);
      equal('its upper triangle is masked: N(N-1)/2 cells', m.masked, N * (N - 1) / 2);
      equal('the prompt/output boundary is at the prompt length',
            await page.$eval('#att-map', (c) => +c.dataset.boundary), P);
      const minis = await page.$$eval('#att-grid .mini canvas', (cs) => cs.map((c) => [+c.dataset.rows, +c.dataset.cols]));
      equal(`the grid: ${L} layers x (${H} heads + average)`, minis.length, L * (H + 1));
      check('every small map is N x N', minis.every(([r, c]) => r === N && c === N), JSON.stringify(minis));
      equal('the selects list the reply\'s layers and heads',
            [await page.$$eval('#att-layer option', (os) => os.map((o) => o.textContent)),
             await page.$$eval('#att-head option', (os) => os.map((o) => o.textContent))],
            [fixture.layers.map(String), [...fixture.heads.map(String), 'average']]);
      /* one head large: every cell's colour is the fixture's weight (weightColour), masked above the diagonal */
      await page.selectOption('#att-layer', '1');
      await page.selectOption('#att-head', '2');
      equal('the title names layer and head', await page.textContent('#att-large-title'),
            `Self-attention (decoder-only): layer ${fixture.layers[1]}, head ${fixture.heads[2]}`);
      const want = fixture.self_attention[1][2];
      const expect = await page.evaluate(async (w) => {
        const { weightColour } = await import('/web/heatmap.js');
        return w.map((row) => row.map((v) => weightColour(v).map(Math.round)));
      }, want);
      const colours = await cellColours(page), wrong = [];
      colours.forEach((row, i) => row.forEach((c, j) => {
        const ok = j > i ? isMaskGrey(c) : c.every((v, ch) => Math.abs(v - expect[i][j][ch]) <= 3);
        if (!ok) wrong.push([i, j, c, j > i ? 'mask' : expect[i][j]]);
      }));
      equal('every cell is the fixture\'s weight in colour, or masked above the diagonal', wrong, []);
      const g = await mapInfo(page), line = [];
      for (let i = P + 1; i < N; i++) line.push([g.x0 + P * g.cw, g.y0 + (i + 0.5) * g.ch]);
      for (let j = 0; j < P - 1; j++) line.push([g.x0 + (j + 0.5) * g.cw, g.y0 + P * g.ch]);
      const onLine = await pixelsAt(page, '#att-map', line);
      check('an orange line runs between prompt and output (column and row P)', onLine.every(isOrange), JSON.stringify(onLine));
      const off = await pixelsAt(page, '#att-map', [[g.x0 + 2 * g.cw, g.y0 + (N - 1 + 0.5) * g.ch]]);
      check('and nowhere else (column 2)', !isOrange(off[0]), JSON.stringify(off));
      /* tokens: prompt, a marker, then the output; hover names both tokens and the weight */
      const toks = await page.$$eval('#att-rows > *', (els) => els.map((e) => [e.tagName, e.textContent, e.className]));
      equal('the row tokens: the prompt, "output:", the generated ones (dashed)', toks,
            [...fixture.tokens.slice(0, P).map((t) => ['BUTTON', t, 'tok']), ['SPAN', 'output:', 'tok-boundary'],
             ...fixture.tokens.slice(P).map((t) => ['BUTTON', t, 'tok gen'])]);
      await page.$eval('#att-map', (c) => c.scrollIntoView({ block: 'center' }));
      const box = await (await page.$('#att-map')).boundingBox(), [i, j] = [N - 1, 1];
      await page.mouse.move(box.x + g.x0 + (j + 0.5) * g.cw, box.y + g.y0 + (i + 0.5) * g.ch);
      equal('hover: the two tokens and the weight', await page.textContent('#att-tip'),
            `${fixture.tokens[i]} ← ${fixture.tokens[j]}: ${want[i][j].toFixed(3)}`);
      await page.mouse.move(0, 0);
      await page.screenshot({ path: `${OUT}/8-attention-decoder-only.png`, fullPage: true });
      /* a Marian reply afterwards: the explorer is as before (tabs, cross-attention) */
      await page.unroute('**/attention');
      await translateVia(page, S2);
      await page.waitForFunction(() => document.getElementById('att-map').dataset.kind === 'cross', null, { timeout: 30000 });
      check('a Marian reply after it: the tabs are back', await page.isVisible('#att-tabs'));
      equal('and the cross-attention tab is selected', await page.getAttribute('#tab-cross', 'aria-selected'), 'true');
      equal('no orange boundary on a Marian map', await page.$eval('#att-map', (c) => +c.dataset.boundary), 0);
    });

    await phase('accessible names', async () => {
      const unnamed = await page.$$eval('select, textarea, input, button', (els) => els
        .filter((el) => !el.closest('[hidden]') && !(el.labels && el.labels.length) && !el.getAttribute('aria-label') &&
                        !(el.textContent || '').trim())
        .map((el) => el.id || el.outerHTML.slice(0, 60)));
      equal('every control has a label, a name or text', unnamed, []);
      equal('the maps have names', await page.$$eval('canvas[role=img]', (cs) => cs.filter((c) => !c.getAttribute('aria-label')).length), 0);
    });

    await phase('a phone\'s width (390 px)', async () => {
      const phone = await browser.newPage({ viewport: PHONE, isMobile: true, hasTouch: true });
      await phone.goto(BASE + '/');
      await ready(phone);
      const sent = await translateVia(phone, S1);
      equal('the text shown equals POST /translate\'s reply', await outputText(phone),
            (await api('POST', '/translate', sent)).translations[0].text);
      await phone.click('#att-show');
      await attentionShown(phone);
      const widths = await phone.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
      check('nothing wider than the screen (no sideways scrolling of the page)', widths[0] <= widths[1], `${widths}`);
      for (const sel of ['#source', '#translate', '#output', '#att-map'])
        check(`${sel} fits the width`, await phone.$eval(sel, (el) => el.getBoundingClientRect().right <= innerWidth + 0.5));
      await phone.screenshot({ path: `${OUT}/9-phone.png`, fullPage: true });
      await translateVia(phone, TOO_LONG);
      check('an error is in view on the phone too', await inViewport(phone, '#error'));
      await phone.check('#mode-html');
      await translateVia(phone, PAGE);
      for (const sel of ['#source', '#output', '#render'])
        check(`HTML mode: ${sel} fits the width`, await phone.$eval(sel, (el) => el.getBoundingClientRect().right <= innerWidth + 0.5));
      const widths2 = await phone.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
      check('HTML mode: nothing wider than the screen', widths2[0] <= widths2[1], `${widths2}`);
      await phone.close();
    });

    equal('no script errors in the whole run', errors, []);
  } finally {
    if (browser) await browser.close();
    const code = await stopServer(server);
    check('the server exited cleanly on SIGTERM', code === 0, server.log().slice(-2000));
  }
}

await run('e2e', 240, main);
