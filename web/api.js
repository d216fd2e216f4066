/* api: every call the page makes to the mtserve API, and how replies are read.
 *
 * The base URL is this page's origin, or ?base=URL, or what was typed last
 * (localStorage); cross-origin calls rely on the server's CORS headers.
 * Errors come back as Error objects whose message names the call, the HTTP
 * status and the server's {"error": {"code", "message"}} envelope. */

const KEY_PREFIX = 'mtserve.';

export function store(key, value) {
  try { localStorage.setItem(KEY_PREFIX + key, value); } catch (e) { /* private mode */ }
}

export function recall(key) {
  try { return localStorage.getItem(KEY_PREFIX + key); } catch (e) { return null; }
}

const settings = { base: '', key: '' };

export function configure(base, key) {
  settings.base = (base || '').trim().replace(/\/+$/, '');
  settings.key = (key || '').trim();
}

export function initialBase() {
  const q = new URLSearchParams(location.search).get('base');
  if (q) return q;
  const saved = recall('base');
  if (saved) return saved;
  return location.origin;
}

export class ApiError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function url(path) { return settings.base + path; }

function headers(body) {
  const h = {};
  if (body !== undefined) h['Content-Type'] = 'application/json';
  if (settings.key) h['Authorization'] = 'Bearer ' + settings.key;
  return h;
}

async function send(method, path, body, signal) {
  try {
    return await fetch(url(path), {
      method, headers: headers(body), mode: 'cors', signal,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(`${method} ${path}: no answer from ${url(path)} (${e.message}): ` +
                       'is the server running, and is the URL right?', 0, 'network');
  }
}

/* The server's error envelope, or the start of whatever came instead. */
function failure(method, path, res, text) {
  let data = null;
  try { data = JSON.parse(text); } catch (e) { /* not JSON */ }
  const err = data && data.error;
  let code = '', msg = text.slice(0, 300);
  if (typeof err === 'string') msg = err;
  else if (err) { code = err.code || ''; msg = err.message || msg; }
  return new ApiError(`${method} ${path}: HTTP ${res.status}${code ? ' ' + code : ''}: ${msg}`, res.status, code);
}

/* Resolves to the parsed JSON reply; rejects with an ApiError. */
export async function api(method, path, body, signal) {
  const res = await send(method, path, body, signal);
  const text = await res.text();
  if (!res.ok) throw failure(method, path, res, text);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError(`${method} ${path}: the reply is not JSON`, res.status, 'bad_reply');
  }
}

/* ---- /translate, streamed or not ------------------------------------------
 * With "stream": true a server that streams answers text/event-stream: one
 * event per token whose JSON data carries the new text ({"delta": "..."}),
 * then a last event holding the reply object ({"translations": [...]}).  A
 * server that does not stream answers plain JSON, which is used as is.  The
 * page asks for a stream only when the server's OpenAPI lists "stream"
 * (serverStreams below); onDelta(textSoFar) sees the text as it grows. */

export async function translate(body, onDelta, signal) {
  const res = await send('POST', '/translate', body, signal);
  const type = res.headers.get('Content-Type') || '';
  if (!res.ok || !type.startsWith('text/event-stream') || !res.body) {
    const text = await res.text();
    if (!res.ok) throw failure('POST', '/translate', res, text);
    try { return JSON.parse(text); } catch (e) {
      throw new ApiError('POST /translate: the reply is not JSON', res.status, 'bad_reply');
    }
  }
  return readStream(res, onDelta);
}

/* The delta of one event, or the final reply, or an error, from its data. */
function applyEvent(name, data, acc) {
  let obj;
  try { obj = JSON.parse(data); } catch (e) { return; }
  if (name === 'error' || (obj && obj.error)) {
    const err = obj.error || obj;
    throw new ApiError(`POST /translate (stream): ${err.code ? err.code + ': ' : ''}${err.message || data}`,
                       200, err.code || 'stream_error');
  }
  if (obj && Array.isArray(obj.translations)) { acc.reply = obj; return; }
  const delta = obj && (obj.delta ?? obj.text ?? obj.token);
  if (typeof delta === 'string') acc.text += delta;
}

async function readStream(res, onDelta) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const acc = { text: '', reply: null };
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    buf += decoder.decode(value || new Uint8Array(), { stream: !done });
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {          /* one event per blank line */
      const block = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, '');
      let name = 'message';
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) {
        applyEvent(name, data.join('\n'), acc);
        if (!acc.reply) onDelta(acc.text);
      }
    }
    if (done) break;
  }
  return acc.reply || { translations: [{ text: acc.text }] };
}

/* 1 when the server's OpenAPI says /translate takes "stream". */
export async function serverStreams() {
  try {
    const doc = await api('GET', '/openapi.json');
    const req = doc.components && doc.components.schemas && doc.components.schemas.TranslateRequest;
    return !!(req && req.properties && req.properties.stream);
  } catch (e) {
    return false;
  }
}

/* ---- reading replies -------------------------------------------------------- */

/* The text of a /translate reply: its translations, one per line. */
export function translationOf(r) {
  if (Array.isArray(r.translations)) return r.translations.map((t) => t.text).join('\n');
  if (typeof r.translatedText === 'string') return r.translatedText;
  throw new ApiError('POST /translate: no "translations" in the reply', 200, 'bad_reply');
}

/* The language the server detected for a request with source "auto":
 * {language, confidence} from our reply's detected_language (or
 * LibreTranslate's detectedLanguage; the first of a list), or null when the
 * reply names none. */
export function detectedOf(r) {
  let d = r.detected_language ?? r.detectedLanguage ?? null;
  if (Array.isArray(d)) d = d[0];
  if (typeof d === 'string') d = { language: d };
  return d && typeof d.language === 'string' && d.language ? d : null;
}

/* /models -> [{id, architecture, source, target, targets, pairs, layers:{enc,dec}, heads:{enc,dec}, d, maxPositions, maxBeam, defaultBeam, rope}] */
export function modelsOf(r) {
  return (r.models || []).map((m) => {
    const c = m.config || {}, l = m.limits || {};
    return {
      id: m.id,
      architecture: m.architecture || 'marian',     /* 'decoder-only' for Llama / Qwen */
      isDefault: !!m.default,
      source: m.source_lang || '',
      target: m.target_lang || '',
      targets: Array.isArray(m.target_languages) ? m.target_languages : null,
      pairs: Array.isArray(m.pairs) ? m.pairs : null,           /* decoder-only: [[source, target], ...] */
      encLayers: c.encoder_layers, decLayers: c.decoder_layers,
      encHeads: c.encoder_heads, decHeads: c.decoder_heads,
      d: c.d_model, maxPositions: c.max_positions,
      maxBeam: Math.max(1, Math.min(8, l.max_batch || 8)),
      defaultBeam: c.default_beam || 1,
      rope: m.rope && m.rope.theta > 1 ? { theta: m.rope.theta, headDim: m.rope.head_dim } : null,   /* decoder-only */
    };
  });
}

/* ---- files ------------------------------------------------------------------
 * POST /translate_file with async=true: 202 {"id", "status_url",
 * "translatedFileUrl"}; GET status_url until "done"; the file at
 * translatedFileUrl (kept by the server for --file-ttl seconds). */

export async function translateFile(file, source, target, signal) {
  const form = new FormData();
  form.append('file', file, file.name);
  form.append('source', source);
  form.append('target', target);
  form.append('async', 'true');
  const h = {};
  if (settings.key) h['Authorization'] = 'Bearer ' + settings.key;
  let res;
  try {
    res = await fetch(url('/translate_file'), { method: 'POST', headers: h, mode: 'cors', body: form, signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(`POST /translate_file: no answer from ${url('/translate_file')} (${e.message})`, 0, 'network');
  }
  const text = await res.text();
  if (!res.ok) throw failure('POST', '/translate_file', res, text);
  return JSON.parse(text);
}

/* The status of a file job ({"state", "done", "total", ...}). */
export function fileStatus(statusUrl, signal) { return api('GET', statusUrl, undefined, signal); }

/* A download URL as the page can use it: the server's absolute URL names the
 * host the request went to, which is the base already; keep its path. */
export function fileUrl(translatedFileUrl) {
  const i = translatedFileUrl.indexOf('/download_file/');
  return i >= 0 ? url(translatedFileUrl.slice(i)) : translatedFileUrl;
}
