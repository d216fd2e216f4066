/* What the e2e scripts share: the checks and their counts, the real server
 * (build/mtserve, or $B/mtserve, or $MTSERVE_BIN) on a free loopback port with
 * both shipped models, plain API calls, Debian's chromium, and a guard that
 * ends a stuck run.  Used by demo.mjs, libretranslate.mjs and lt_client.mjs.
 *
 * Environment: B (build dir, default build), MTSERVE_BIN, CHROMIUM, E2E_OUT. */

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = resolve(ROOT, process.env.MTSERVE_BIN || `${process.env.B || 'build'}/mtserve`);
export const OUT = resolve(ROOT, process.env.E2E_OUT || `${process.env.B || 'build'}/e2e`);
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/* ---- checks ----------------------------------------------------------------------- */

export const counts = { passed: 0, failed: 0 };

export function check(name, ok, detail = '') {
  if (ok) counts.passed++;
  else counts.failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${!ok && detail ? ' -- ' + detail : ''}`);
  return ok;
}

export function equal(name, got, want) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  return check(name, g === w, `got ${g}, want ${w}`);
}

/* One phase of the test: an exception fails it (and is printed), the next ones still run. */
export async function phase(name, fn) {
  console.log(`-- ${name}`);
  try {
    await fn();
  } catch (e) {
    check(`${name}: ran to the end`, false, e.stack || String(e));
  }
}

/* ---- the server ------------------------------------------------------------------------ */

let serverChild = null;      /* killed on every way out, so no server outlives the test */

/* `mtserve serve` on a free loopback port with en-fr (and fr-en when shipped;
 * shipped false: neither) and the extra arguments; base resolves to its URL
 * once it says "listening on". */
export function startServer(extra = [], { shipped = true } = {}) {
  const args = ['serve', '--host', '127.0.0.1', '--port', '0'];
  if (shipped)
    args.push('--model', `en-fr=${resolve(ROOT, 'models/en-fr')}`);
  if (shipped && existsSync(resolve(ROOT, 'models/fr-en/model.safetensors')))
    args.push('--model', `fr-en=${resolve(ROOT, 'models/fr-en')}`);
  args.push(...extra);
  const child = spawn(BIN, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  serverChild = child;
  let log = '';
  const base = new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`no "listening on" from ${BIN} in 20 s:\n${log}`)), 20000);
    const read = (chunk) => {
      log += chunk;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (m) { clearTimeout(timer); res(m[1]); }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => { clearTimeout(timer); rej(new Error(`${BIN} exited (${code}):\n${log}`)); });
  });
  base.catch(() => {});      /* awaited by the caller; no unhandled rejection if it never is */
  return { child, base, log: () => log };
}

export async function waitHealthy(base) {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(base + '/health')).status === 200) return;
    } catch (e) { /* not yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('/health never answered 200');
}

/* SIGTERM, then the exit code (null: killed by a signal). */
export async function stopServer(server) {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    const exited = new Promise((r) => server.child.on('exit', r));
    server.child.kill('SIGTERM');
    await exited;
  }
  return server.child.exitCode;
}

/* The API's JSON reply (rejects on a status >= 400, naming it and the body). */
export async function api(base, method, path, body) {
  const res = await fetch(base + path, {
    method, headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch (e) { throw new Error(`${method} ${path}: ${res.status}, not JSON: ${text.slice(0, 200)}`); }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return json;
}

/* ---- the browser ----------------------------------------------------------------------- */

export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  const args = ['--disable-dev-shm-usage'];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');   /* chromium refuses root otherwise */
  return chromium.launch({ executablePath: CHROMIUM, args });
}

/* ---- the whole run ---------------------------------------------------------------------- */

/* Runs main() with a time limit and signal handlers, prints "<label>: N passed,
 * M failed" and exits 1 if any check failed. */
export async function run(label, seconds, main) {
  const abandon = (why) => {
    check(why, false);
    if (serverChild && serverChild.exitCode === null) serverChild.kill('SIGKILL');
    console.log(`${label}: ${counts.passed} passed, ${counts.failed} failed`);
    process.exit(1);
  };
  const guard = setTimeout(() => abandon(`the whole test within ${seconds} s`), seconds * 1000);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => abandon(`interrupted (${sig})`));
  try {
    await main();
  } catch (e) {
    check('setup', false, e.stack || String(e));
  }
  clearTimeout(guard);
  if (serverChild && serverChild.exitCode === null && serverChild.signalCode === null) serverChild.kill('SIGKILL');
  console.log(`${label}: ${counts.passed} passed, ${counts.failed} failed`);
  process.exit(counts.failed ? 1 : 0);
}
