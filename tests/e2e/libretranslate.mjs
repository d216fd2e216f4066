/* LibreTranslate's own web page (a real client we did not write) against our
 * server, in Debian's chromium driven by playwright-core.
 *
 * The page is LibreTranslate v1.9.6's, rendered once into
 * tests/e2e/libretranslate/ (its README: origin, licence AGPL-3.0, how).  A
 * small HTTP server here serves it and passes every other path (/translate,
 * /languages, /detect, /frontend/settings, /translate_file, ...) to the
 * mtserve under test, so that page and API share one origin, as on a
 * LibreTranslate server.  Checked, each against the API asked directly:
 *   - the page starts: /frontend/settings and /languages load, no error card;
 *     the source list is Auto Detect then /languages' names (English,
 *     French), the target list /languages' (all of them for Auto Detect, the
 *     source's targets otherwise); the settings' source, target and charLimit
 *     are the page's
 *   - English typed with en -> fr: the text shown is POST /translate's for
 *     the fields the page sent
 *   - Auto Detect with French typed (target en): the page says French was
 *     detected, with the reply's confidence, the same language and
 *     confidence as POST /detect, and shows the translation asked with
 *     source fr
 *   - markup typed: the page asks for format html, and shows POST
 *     /translate's html translation
 *   - two lines typed (the page's form sends its line breaks as CRLF): the
 *     reply is POST /translate's for the lines joined by "\n", the last break
 *     dropped, as LibreTranslate reads a form's q
 *   - no request failed (every response < 400) and no console error
 *   - then charLimit characters of two bytes each (a body over --max-body):
 *     413 in LibreTranslate's shape, and the page shows its message
 * Prints each check, then "e2e-libretranslate: N passed, M failed"; exits 1
 * if any failed.  Screenshots: $E2E_OUT (default build/e2e/) libretranslate-*.png.
 *
 *   B=build node tests/e2e/libretranslate.mjs      (MTSERVE_BIN, CHROMIUM, E2E_OUT override)
 */

import { mkdirSync, readFileSync } from 'node:fs';
import { OUT, api, check, equal, launchChromium, phase, run, startServer, waitHealthy } from './lib.mjs';
import { SRC, TGT, closeAll, jsonBody, options, startFront, translateVia, watchPage } from './lt_page.mjs';

/* Sentences of the shipped models' domain (Debian package descriptions). */
const EN = 'This package provides the documentation.';
const FR = 'Ce paquet contient les fichiers de développement de la bibliothèque.';
const HTML = '<p>This package provides the <b>documentation</b> of the library.</p>';
const EN2 = 'It is free software, released under the GNU General Public License.';

/* ---- the test ------------------------------------------------------------------------------------ */

async function main() {
  mkdirSync(OUT, { recursive: true });
  const server = startServer();
  let browser, front;
  try {
    const BASE = await server.base;
    await waitHealthy(BASE);
    front = await startFront(BASE);
    const languages = await api(BASE, 'GET', '/languages');
    const settings = await api(BASE, 'GET', '/frontend/settings');
    const nameOf = (code) => { const l = languages.find((x) => x.code === code); return l ? l.name : code; };
    const byName = (codes) => codes.map((c) => [c, nameOf(c)]).sort((a, b) => a[1].localeCompare(b[1]));

    browser = await launchChromium();
    console.log(`server ${BASE}, page ${front.base}, chromium ${browser.version()}, screenshots in ${OUT}`);
    const page = await browser.newPage({ viewport: { width: 1366, height: 900 }, acceptDownloads: true });
    page.setDefaultTimeout(15000);
    const { bad, errors } = watchPage(page);

    await phase('the page starts', async () => {
      const settingsSeen = page.waitForResponse((r) => r.url().endsWith('/frontend/settings'));
      const languagesSeen = page.waitForResponse((r) => r.url().endsWith('/languages'));
      await page.goto(front.base + '/');
      equal('GET /frontend/settings answered 200', (await settingsSeen).status(), 200);
      equal('GET /languages answered 200', (await languagesSeen).status(), 200);
      const started = await page.waitForSelector(`${SRC} option`, { state: 'attached', timeout: 20000 }).then(() => true, () => false);
      check('the translator is shown (the lists are filled)', started,
            await page.evaluate(() => window._vueApp && window._vueApp.error));
      equal('no error card', await page.evaluate(() => window._vueApp.error), '');
      const src = await options(page, SRC);
      for (const name of ['Auto Detect', 'English', 'French'])
        check(`the source list has ${name}`, src.some(([, n]) => n === name), JSON.stringify(src));
      equal('the source list: Auto Detect, then /languages by name', src,
            [['auto', 'Auto Detect'], ...byName(languages.map((l) => l.code))]);
      equal('the languages chosen are the settings\' (source auto, target the default model\'s)',
            [await page.inputValue(SRC), await page.inputValue(TGT)],
            [settings.language.source.code, settings.language.target.code]);
      equal('the target list for Auto Detect: every language of /languages',
            await options(page, TGT), byName(languages.map((l) => l.code)));
      await page.selectOption(SRC, 'en');
      equal('the target list for English: /languages\' targets of en',
            await options(page, TGT), byName(languages.find((l) => l.code === 'en').targets));
      equal('the text box takes at most charLimit characters', await page.$eval('#textarea1', (t) => t.maxLength),
            settings.charLimit);
      await page.screenshot({ path: `${OUT}/libretranslate-1-start.png` });
    });

    await phase('English typed, en -> fr: the text shown is POST /translate\'s', async () => {
      const { fields, reply, status } = await translateVia(page, 'en', 'fr', EN);
      equal('the page sent q, source en, target fr, format text', [fields.q, fields.source, fields.target, fields.format],
            [EN, 'en', 'fr', 'text']);
      equal('its reply is 200', status, 200);
      const direct = await api(BASE, 'POST', '/translate', jsonBody(fields));
      equal('the reply the page got is POST /translate\'s (JSON, same fields)', reply.translatedText, direct.translatedText);
      equal('the text shown is that translation', await page.inputValue('#textarea2'), direct.translatedText);
      check('the translation is French, not the input', direct.translatedText && direct.translatedText !== EN,
            direct.translatedText);
      equal('no detected language is shown for a named source', await page.evaluate(() => window._vueApp.detectedLangText), '');
      await page.screenshot({ path: `${OUT}/libretranslate-2-en-fr.png` });
    });

    await phase('Auto Detect with French typed: French detected, the same translation as naming fr', async () => {
      const { fields, reply, status } = await translateVia(page, 'auto', 'en', FR);
      equal('the page sent source auto, target en', [fields.source, fields.target], ['auto', 'en']);
      equal('its reply is 200', status, 200);
      const det = reply.detectedLanguage || {};
      equal('the reply names French as detected', det.language, 'fr');
      check('with a confidence in (0, 100]', typeof det.confidence === 'number' && det.confidence > 0 && det.confidence <= 100,
            JSON.stringify(det));
      const detect = await fetch(BASE + '/detect', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                     body: JSON.stringify({ q: FR }) });
      const detected = detect.ok ? await detect.json() : await detect.text();
      check('POST /detect answers', detect.ok, `${detect.status} ${JSON.stringify(detected)}`);
      if (detect.ok)
        equal('the reply\'s detection is POST /detect\'s best (language, confidence)',
              [det.language, det.confidence], [detected[0] && detected[0].language, detected[0] && detected[0].confidence]);
      const shown = await page.evaluate(() => window._vueApp.detectedLangText);
      equal('the page shows French detected, with the reply\'s confidence', shown, `: French (${det.confidence}%)`);
      check('next to "Translate from"', (await page.textContent('.language-select')).includes(`French (${det.confidence}%)`));
      const named = await api(BASE, 'POST', '/translate', jsonBody(fields, { source: 'fr' }));
      equal('the reply\'s translation is the one with source fr', reply.translatedText, named.translatedText);
      equal('the text shown is that translation', await page.inputValue('#textarea2'), named.translatedText);
      await page.screenshot({ path: `${OUT}/libretranslate-3-auto.png` });
    });

    await phase('markup typed: format html', async () => {
      const { fields, reply, status } = await translateVia(page, 'en', 'fr', HTML);
      equal('the page asked for format html', fields.format, 'html');
      equal('its reply is 200', status, 200);
      const direct = await api(BASE, 'POST', '/translate', jsonBody(fields));
      equal('the text shown is POST /translate\'s html translation', await page.inputValue('#textarea2'), direct.translatedText);
      equal('which is the reply the page got', reply.translatedText, direct.translatedText);
      check('the markup is kept', /^<p>.*<b>.+<\/b>.*<\/p>$/.test(direct.translatedText || ''), direct.translatedText);
    });

    await phase('two lines typed: as LibreTranslate reads a form\'s line breaks', async () => {
      const { fields, reply, status } = await translateVia(page, 'en', 'fr', `${EN}\n${EN2}\n`);
      equal('its reply is 200', status, 200);
      check('the page sent the lines', fields.q.includes(EN2), JSON.stringify(fields.q));
      const direct = await api(BASE, 'POST', '/translate', jsonBody(fields, { q: `${EN}\n${EN2}` }));
      equal('the reply is POST /translate\'s for the lines joined by "\\n", the last break dropped',
            reply.translatedText, direct.translatedText);
      check('no CR in it', !reply.translatedText.includes('\r'), JSON.stringify(reply.translatedText));
      equal('the text shown is that translation', await page.inputValue('#textarea2'), direct.translatedText);
    });

    await phase('a file through LibreTranslate\'s own file tab: POST /translate_file, then the download', async () => {
      await page.click('button:has-text("Translate Files")');
      await page.selectOption(SRC, 'en');
      await page.selectOption(TGT, 'fr');
      const text = `${EN}\n\n${EN2}\n`;
      await page.setInputFiles('input[type=file]', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(text) });
      const [download] = await Promise.all([
        page.waitForEvent('download', { timeout: 60000 }),
        page.click('#translation-form button.btn:has-text("Translate")'),
      ]);
      equal('the browser saves it under the translated name', download.suggestedFilename(), 'notes.fr.txt');
      const got = readFileSync(await download.path(), 'utf8');
      const lines = got.split('\n');
      equal('the file keeps its lines', lines.length, text.split('\n').length);
      const one = await api(BASE, 'POST', '/translate', { q: EN, source: 'en', target: 'fr' });
      equal('its first line is POST /translate\'s translation', lines[0], one.translatedText);
      check('the page offers the Download link', await page.isVisible('a.btn:has-text("Download")'));
      check('the request went through the proxy to mtserve',
            front.proxied.some((p) => p.startsWith('POST /translate_file 200')), JSON.stringify(front.proxied));
      await page.screenshot({ path: `${OUT}/libretranslate-file.png` });
      await page.click('button:has-text("Translate Text")');
    });

    await phase('nothing failed', async () => {
      equal('every response < 400, no request failed', bad, []);
      equal('no console error, no script error', errors, []);
      equal('every API call went to mtserve and was answered < 400',
            front.proxied.filter((p) => Number(p.split(' ')[2]) >= 400), []);
      check('the API calls were proxied (settings, languages, translate)',
            ['GET /frontend/settings', 'GET /languages', 'POST /translate'].every((k) => front.proxied.some((p) => p.startsWith(k))),
            JSON.stringify(front.proxied));
    });

    await phase('charLimit characters over --max-body bytes: the page shows the 413\'s message', async () => {
      await page.fill('#textarea1', '');
      await page.selectOption(SRC, 'en');
      await page.selectOption(TGT, 'fr');
      const answered = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/translate'),
                                            { timeout: 60000 });
      answered.catch(() => {});               /* awaited below; no unhandled rejection if a step before fails */
      await page.$eval('#textarea1', (t, n) => {         /* typed at once (fill would take minutes) */
        t.value = '\u00e9'.repeat(n);                    /* 2 bytes each */
        t.dispatchEvent(new Event('input'));
      }, settings.charLimit);
      const res = await answered;
      equal('the reply is 413', res.status(), 413);
      const body = await res.json();
      check('in LibreTranslate\'s shape: {"error": string}', typeof body.error === 'string' &&
            Object.keys(body).length === 1, JSON.stringify(body));
      await page.waitForFunction(() => window._vueApp && !window._vueApp.loadingTranslation, null, { timeout: 30000 });
      equal('the page shows that message', await page.evaluate(() => window._vueApp.error), body.error);
      await page.screenshot({ path: `${OUT}/libretranslate-4-too-large.png` });
    });
  } finally {
    await closeAll({ browser, front, server });
  }
}

await run('e2e-libretranslate', 180, main);
