/* LibreTranslate's npm clients against our server: code we did not write,
 * calling mtserve as it calls a LibreTranslate server.
 *
 *   libretranslate@1.0.1      translate({query, source, target, format, apiurl}):
 *                             reads /languages to check the codes, then POST
 *                             /translate (JSON); source defaults to "auto"
 *   libretranslate-ts@0.5.12  libreTranslate.listLanguages(), .detect(text),
 *                             .translate(text, source, target, alternatives)
 *
 * Checked against the API asked directly (fetch): translate (text), format
 * html (markup kept), source auto (the reply's detectedLanguage, as
 * LibreTranslate gives it: {language, confidence}, and the translation the
 * named source gives), detect (POST /detect's best, best first), languages,
 * alternatives, and a refused pair reaching the client as LibreTranslate's
 * {"error": "..."}; then what LibreTranslate (its app.py) does beyond the plain
 * case: text without a letter detected as en with confidence 0, an empty q
 * refused with its message, an api_key ignored when none is required, codes
 * in capitals, blank text with source auto sent back, and a body over
 * --max-body refused in its shape (the message reaches the client as text);
 * text already in the target language (source auto, or named) sent back as it
 * is with 200, as its identity translation gives it, a string or a list; a
 * list's /detect gathered as its detect_languages() does (recomputed here from
 * each text's); and what Dialect (a desktop client, GTK, not run here) asks,
 * sent as its libretrans provider sends it: GET /spec's info.title, and
 * /suggest's 403 in its shape.  The replies the first client got are recorded (it uses
 * the global fetch) so that fields it does not return can be checked too.
 * Prints each check, then "e2e-lt-client: N passed, M failed"; exits 1 if any failed.
 *
 *   B=build node tests/e2e/lt_client.mjs      (MTSERVE_BIN overrides)
 */

import { api, check, equal, phase, run, startServer, stopServer, waitHealthy } from './lib.mjs';

const EN = 'This package provides the documentation.';
const EN2 = 'It is free software, released under the GNU General Public License.';
const FR = 'Ce paquet contient les fichiers de développement de la bibliothèque.';
const HTML = '<p>This package provides the <b>documentation</b> of the <a href="https://example.org/">library</a>.</p>';
const FR2 = 'Le fichier contient une liste des paquets installés.';

/* LibreTranslate's detect_languages() (language.py) over each text's own
 * candidates (POST /detect of that text alone): a language found in several
 * texts gets their mean confidence and their characters together, then a
 * stable sort on confidence * characters, best first. */
function gatherLT(perText, texts) {
  const cands = [];
  perText.forEach((list, t) => list.forEach(({ language, confidence }) => {
    let c = cands.find((x) => x.language === language);
    if (!c) cands.push(c = { language, sum: 0, n: 0, length: 0 });
    c.sum += confidence;
    c.n += 1;
    c.length += [...texts[t]].length;          /* code points, as Python's len */
  }));
  return cands.map((c) => ({ ...c, confidence: c.sum / c.n }))
    .sort((a, b) => b.confidence * b.length - a.confidence * a.length)
    .map(({ confidence, language }) => ({ confidence, language }));
}

/* Every request the global fetch made once the server is up, and its reply:
 * [{method, url, sent, status, body}] (the reply's body parsed when JSON). */
const seen = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (url, init = {}) => {
  const res = await realFetch(url, init);
  const text = await res.clone().text();
  let body = text;
  try { body = JSON.parse(text); } catch (e) { /* not JSON */ }
  seen.push({ method: init.method || 'GET', url: String(url), sent: init.body, status: res.status, body });
  return res;
};
const lastReply = (path) => [...seen].reverse().find((s) => new URL(s.url).pathname === path);

async function main() {
  const server = startServer();
  try {
    const BASE = await server.base;
    await waitHealthy(BASE);
    seen.length = 0;                            /* the clients' calls only */
    const { translate } = await import('libretranslate');
    const { libreTranslate } = await import('libretranslate-ts');
    const direct = (body) => api(BASE, 'POST', '/translate', body);
    console.log(`server ${BASE}`);

    await phase('libretranslate: translate (text)', async () => {
      const got = await translate({ query: EN, source: 'en', target: 'fr', apiurl: BASE });
      const want = (await direct({ q: EN, source: 'en', target: 'fr', format: 'text' })).translatedText;
      equal('the translation is POST /translate\'s', got, want);
      check('and it is a translation', typeof got === 'string' && got.length > 0 && got !== EN, JSON.stringify(got));
      check('the client read /languages first', seen.some((s) => s.url.endsWith('/languages') && s.status === 200));
      equal('every reply it got was < 400', seen.filter((s) => s.status >= 400).map((s) => `${s.status} ${s.url}`), []);
    });

    await phase('libretranslate: format html', async () => {
      const got = await translate({ query: HTML, source: 'en', target: 'fr', format: 'html', apiurl: BASE });
      const want = (await direct({ q: HTML, source: 'en', target: 'fr', format: 'html' })).translatedText;
      equal('the translation is POST /translate\'s with format html', got, want);
      check('the markup is kept: <p>, <b>, <a href> in order',
            /^<p>[^<]*<b>[^<]+<\/b>[^<]*<a href="https:\/\/example\.org\/">[^<]+<\/a>[^<]*<\/p>$/.test(got || ''), got);
      check('the words are translated', typeof got === 'string' && !got.includes('provides'), got);
    });

    await phase('libretranslate: source auto (its default)', async () => {
      const got = await translate({ query: FR, target: 'en', apiurl: BASE });
      const reply = lastReply('/translate');
      equal('the client sent source auto; the reply is 200', [JSON.parse(reply.sent).source, reply.status], ['auto', 200]);
      const det = reply && reply.body && reply.body.detectedLanguage;
      equal('the reply names French as detected', det && det.language, 'fr');
      check('with a confidence in (0, 100]', det && typeof det.confidence === 'number' && det.confidence > 0 &&
            det.confidence <= 100, JSON.stringify(det));
      equal('the translation is the one with source fr', got,
            (await direct({ q: FR, source: 'fr', target: 'en', format: 'text' })).translatedText);
      const en = await translate({ query: EN, target: 'fr', apiurl: BASE });
      const det2 = lastReply('/translate').body.detectedLanguage;
      equal('English text: English detected', det2 && det2.language, 'en');
      equal('and translated as with source en', en,
            (await direct({ q: EN, source: 'en', target: 'fr', format: 'text' })).translatedText);
    });

    await phase('libretranslate: a code /languages does not list', async () => {
      const err = await translate({ query: EN, source: 'en', target: 'xx', apiurl: BASE }).then(() => null, (e) => e);
      check('is refused by the client from our /languages', err instanceof TypeError && /not found/.test(err.message),
            String(err));
    });

    libreTranslate.setApiEndpoint(BASE);
    libreTranslate.setApiKey('');

    await phase('libretranslate-ts: listLanguages', async () => {
      const got = await libreTranslate.listLanguages();
      equal('the list is GET /languages', got, await api(BASE, 'GET', '/languages'));
      check('with English and French', ['en', 'fr'].every((c) => got.some((l) => l.code === c)), JSON.stringify(got));
    });

    await phase('libretranslate-ts: detect', async () => {
      for (const [text, lang] of [[FR, 'fr'], [EN, 'en'], [EN2, 'en']]) {
        const got = await libreTranslate.detect(text);
        equal(`"${text.slice(0, 24)}...": status 200`, [got.status, got.error], [200, undefined]);
        equal(`  detected ${lang}`, got.language, lang);
        const res = await realFetch(BASE + '/detect', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                        body: JSON.stringify({ q: text }) });
        const want = res.ok ? await res.json() : null;
        equal('  as POST /detect\'s best (language, confidence)', [got.language, got.confidence],
              want ? [want[0].language, want[0].confidence] : [`HTTP ${res.status}`]);
        if (want) {
          check('  POST /detect: a list, best first, confidences in (0, 100]',
                Array.isArray(want) && want.every((c, i) => typeof c.language === 'string' && c.confidence > 0 &&
                  c.confidence <= 100 && (i === 0 || c.confidence <= want[i - 1].confidence)), JSON.stringify(want));
        }
      }
    });

    await phase('libretranslate-ts: translate', async () => {
      let got = await libreTranslate.translate(EN, 'en', 'fr');
      let want = await direct({ q: EN, source: 'en', target: 'fr', format: 'text' });
      equal('en -> fr: status 200, POST /translate\'s text', [got.status, got.translatedText, got.error],
            [200, want.translatedText, undefined]);
      got = await libreTranslate.translate(EN, 'en', 'fr', 2);
      want = await direct({ q: EN, source: 'en', target: 'fr', format: 'text', alternatives: 2 });
      equal('alternatives 2: the same text and alternatives', [got.translatedText, got.alternatives],
            [want.translatedText, want.alternatives]);
      check('  at most 2 alternatives', Array.isArray(got.alternatives) && got.alternatives.length <= 2,
            JSON.stringify(got.alternatives));
      got = await libreTranslate.translate(FR, 'auto', 'en');
      want = await direct({ q: FR, source: 'fr', target: 'en', format: 'text' });
      equal('source auto, French text: the translation with source fr', [got.status, got.translatedText],
            [200, want.translatedText]);
      got = await libreTranslate.translate(EN, 'en', 'xx');
      check('an unknown target: the client reports our {"error": "..."} message',
            got.status >= 400 && typeof got.error === 'string' && got.error.length > 0 && !/status code/.test(got.error),
            JSON.stringify(got));
    });

    await phase('as LibreTranslate beyond the plain case', async () => {
      let got = await libreTranslate.detect('12345');
      equal('libretranslate-ts detect("12345"): 200, en with confidence 0 (LibreTranslate\'s answer)',
            [got.status, got.language, got.confidence, got.error], [200, 'en', 0, undefined]);
      got = await libreTranslate.detect('');
      equal('detect(""): refused, LibreTranslate\'s message reaches the client', got.error,
            'Invalid request: missing q parameter');
      libreTranslate.setApiKey('a-key-nobody-asked-for');
      got = await libreTranslate.translate(EN, 'en', 'fr');
      const want = await direct({ q: EN, source: 'en', target: 'fr', format: 'text' });
      equal('an api_key is ignored when none is required: 200, the translation', [got.status, got.translatedText],
            [200, want.translatedText]);
      libreTranslate.setApiKey('');
      got = await libreTranslate.translate(EN, 'EN', 'FR');
      equal('codes in capitals (EN, FR) are en and fr', [got.status, got.translatedText], [200, want.translatedText]);
      const blank = await translate({ query: '   ', target: 'fr', apiurl: BASE });
      equal('libretranslate: blank text with source auto comes back as it is', blank, '   ');
      const reply = lastReply('/translate');
      equal('  with detectedLanguage en, confidence 0', reply && reply.body && reply.body.detectedLanguage,
            { confidence: 0, language: 'en' });
      got = await libreTranslate.translate('word '.repeat(250000), 'en', 'fr');
      check('a body over --max-body: the client reports the message as text (LibreTranslate\'s {"error": "..."})',
            got.status >= 400 && typeof got.error === 'string' && /over the limit/.test(got.error), JSON.stringify(got));
    });

    /* LibreTranslate's translate() takes the detected language as the source
     * whatever the target (app.py: src_lang = get_language_with_fallback(
     * detected_src_lang["language"], languages)); fr -> fr is argos' identity
     * translation: the text itself, and no alternative left by filter_unique. */
    await phase('as LibreTranslate: text already in the target language', async () => {
      const best = (await api(BASE, 'POST', '/detect', { q: FR2 }))[0];
      equal('POST /detect: the text is French', best.language, 'fr');
      const got = await translate({ query: FR2, target: 'fr', apiurl: BASE });
      equal('libretranslate, source auto, target fr: the text as it is', got, FR2);
      let reply = lastReply('/translate');
      equal('  200, detectedLanguage POST /detect\'s best', [reply.status, reply.body.detectedLanguage], [200, best]);
      let ts = await libreTranslate.translate(FR2, 'auto', 'fr', 2);
      equal('libretranslate-ts, auto -> fr, alternatives 2: 200, the text, alternatives []',
            [ts.status, ts.translatedText, ts.alternatives, ts.error], [200, FR2, [], undefined]);
      ts = await libreTranslate.translate(FR2, 'fr', 'fr');
      equal('libretranslate-ts, fr -> fr: 200, the text', [ts.status, ts.translatedText, ts.error], [200, FR2, undefined]);
      ts = await libreTranslate.translate([FR, FR2], 'auto', 'fr');
      equal('libretranslate-ts, a list, auto -> fr: each text as it is', [ts.status, ts.translatedText], [200, [FR, FR2]]);
    });

    /* app.py detect(): `return jsonify(model2iso(detect_languages(q)))`: a
     * list's texts detected each alone, gathered into one list. */
    await phase('as LibreTranslate: /detect of a list', async () => {
      const texts = [FR, EN, FR2, '12345'];
      const perText = [];
      for (const t of texts) perText.push(await api(BASE, 'POST', '/detect', { q: t }));
      const want = gatherLT(perText, texts);
      const got = await api(BASE, 'POST', '/detect', { q: texts });
      equal('POST /detect of the list: languages in detect_languages()\' order', got.map((g) => g.language),
            want.map((g) => g.language));
      check('  with its confidences (mean over the texts)', got.length === want.length &&
            got.every((g, i) => Math.abs(g.confidence - want[i].confidence) < 1e-6),
            `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
      const ts = await libreTranslate.detect(texts);
      equal('libretranslate-ts detect(list): the list\'s best', [ts.status, ts.language, ts.confidence],
            [200, got[0].language, got[0].confidence]);
    });

    /* Dialect's libretrans provider: validate_instance() reads /spec and
     * checks `response["info"]["title"] == "LibreTranslate"`; init_trans() reads
     * /frontend/settings ("suggestions"); suggest() posts a form to /suggest. */
    await phase('what Dialect asks (sent as its provider sends it)', async () => {
      const spec = await (await realFetch(BASE + '/spec')).json();
      equal('GET /spec: info.title', spec.info && spec.info.title, 'LibreTranslate');
      equal('  info as LibreTranslate v1.9.6 gives it', [spec.info.version, spec.info.description, spec.info.license],
            ['1.9.6', 'Free and Open Source Machine Translation API.', { name: 'AGPL-3.0' }]);
      const settings = await api(BASE, 'GET', '/frontend/settings');
      equal('/frontend/settings: suggestions false', settings.suggestions, false);
      const res = await realFetch(BASE + '/suggest', { method: 'POST', body: new URLSearchParams(
        { q: EN, source: 'en', target: 'fr', s: 'Ce paquet fournit la documentation.' }) });
      equal('POST /suggest: 403 {"error": "Suggestions are disabled on this server."}', [res.status, await res.json()],
            [403, { error: 'Suggestions are disabled on this server.' }]);
    });
  } finally {
    const code = await stopServer(server);
    check('the server exited cleanly on SIGTERM', code === 0, server.log().slice(-2000));
  }
}

await run('e2e-lt-client', 120, main);
