/* lt_page.mjs: LibreTranslate's own web page (tests/e2e/libretranslate/) served
 * beside an mtserve under test, and the helpers that drive it; used by
 * libretranslate.mjs (the shipped models) and lt_nllb.mjs (an NLLB-200 model). */

import { createReadStream, existsSync, statSync } from 'node:fs';
import http from 'node:http';
import { extname, resolve, sep } from 'node:path';
import { ROOT, check, stopServer } from './lib.mjs';

export const FIXTURE = resolve(ROOT, 'tests/e2e/libretranslate');
/* Files the page names that the fixture leaves out (README.md): answered 204. */
const OMITTED = new Set(['/static/favicon.ico']);
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'application/javascript; charset=utf-8',
                '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.woff2': 'font/woff2' };

/* ---- the page's server: the fixture, and every other path passed to mtserve ------------------- */

export function startFront(apiBase) {
  const upstream = new URL(apiBase);
  const proxied = [];                         /* "METHOD /path status" of every proxied request */
  const server = http.createServer((req, res) => {
    const path = new URL(req.url, 'http://front').pathname;
    const file = path === '/' ? 'index.html' : path === '/js/app.js' ? 'js/app.js'
      : path.startsWith('/static/') ? path.slice(1) : null;
    if (file && (req.method === 'GET' || req.method === 'HEAD')) {
      const full = resolve(FIXTURE, decodeURIComponent(file));
      if (OMITTED.has(path)) {
        res.writeHead(204).end();
      } else if (!full.startsWith(FIXTURE + sep) || !existsSync(full) || !statSync(full).isFile()) {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`not in the fixture: ${path}\n`);
      } else {
        res.writeHead(200, { 'Content-Type': TYPES[extname(full)] || 'application/octet-stream' });
        if (req.method === 'HEAD') res.end();
        else createReadStream(full).pipe(res);
      }
      return;
    }
    const up = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url,
                              headers: { ...req.headers, host: upstream.host } }, (ur) => {
      proxied.push(`${req.method} ${path} ${ur.statusCode}`);
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on('error', (e) => {
      proxied.push(`${req.method} ${path} 502`);
      res.writeHead(502, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: `proxy: ${e.message}` }));
    });
    req.pipe(up);
  });
  return new Promise((res) => server.listen(0, '127.0.0.1', () =>
    res({ server, proxied, base: `http://127.0.0.1:${server.address().port}` })));
}

/* ---- page helpers ---------------------------------------------------------------------------- */

export const SRC = 'select[aria-labelledby=sourceLangLabel]';
export const TGT = 'select[aria-labelledby=targetLangLabel]';

export const options = (page, sel) => page.$$eval(`${sel} option`, (os) => os.map((o) => [o.value, o.textContent.trim()]));

/* The fields of a multipart/form-data body (what the page sends). */
export async function formFields(request) {
  const form = await new Response(request.postDataBuffer(), {
    headers: { 'Content-Type': request.headers()['content-type'] } }).formData();
  return Object.fromEntries([...form.entries()]);
}

/* Clears the text, picks the languages, types text; resolves to the fields the
 * page sent to /translate and its reply, once the translation is on screen. */
export async function translateVia(page, source, target, text) {
  await page.fill('#textarea1', '');
  await page.selectOption(SRC, source);
  await page.selectOption(TGT, target);
  const sent = page.waitForRequest((r) => r.url().endsWith('/translate') && r.method() === 'POST' &&
                                          (r.postData() || '').includes(text.slice(0, 20)), { timeout: 20000 });
  const answered = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/translate') &&
                                               (r.request().postData() || '').includes(text.slice(0, 20)),
                                        { timeout: 30000 });
  await page.fill('#textarea1', text);
  const fields = await formFields(await sent);
  const res = await answered;
  const reply = await res.json();
  await page.waitForFunction(() => window._vueApp && !window._vueApp.loadingTranslation, null, { timeout: 30000 });
  return { fields, reply, status: res.status() };
}

/* The body a JSON client would send for the fields the page sent (api_key is empty). */
export function jsonBody(fields, changes = {}) {
  const body = { q: fields.q, source: fields.source, target: fields.target, format: fields.format,
                 alternatives: Number(fields.alternatives) };
  return { ...body, ...changes };
}

/* What went wrong on page, gathered as it happens: bad (responses >= 400 and
 * failed requests; a navigation that turns into a download, which ends as
 * net::ERR_ABORTED, is not one) and errors (script errors, console errors). */
export function watchPage(page) {
  const bad = [], errors = [];
  page.on('response', (r) => { if (r.status() >= 400) bad.push(`${r.status()} ${r.request().method()} ${r.url()}`); });
  page.on('requestfailed', (r) => {
    const why = r.failure() && r.failure().errorText;
    if (why === 'net::ERR_ABORTED' && r.url().includes('/download_file/')) return;
    bad.push(`failed ${r.method()} ${r.url()}: ${why}`);
  });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  return { bad, errors };
}

// The end of both page tests: the browser and the front closed, the server
// stopped with SIGTERM and checked to exit cleanly.
export async function closeAll({ browser, front, server }) {
  if (browser) await browser.close();
  if (front) front.server.close();
  const code = await stopServer(server);
  check('the server exited cleanly on SIGTERM', code === 0, server.log().slice(-2000));
}
