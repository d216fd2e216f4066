/* LibreTranslate's own web page (tests/e2e/libretranslate/, lt_page.mjs)
 * against an mtserve serving one NLLB-200-shaped model alone (issue 49): the
 * small random-weight model of `make m2m-models` ($MT_M2M_DIR, default
 * build/m2m: nllb-small/f32), with its float64 reference (nllb-small/served.jsonl,
 * tests/m2m/gen_m2m.py).
 * Checked, each against the API asked directly:
 *   - the page starts with no error card; the source list is Auto Detect and
 *     /languages' 202 languages by name, the target list for French its 201
 *     targets; the languages NLLB has in two scripts named with their script
 *     ("Chinese (Traditional)" for zho_Hant, "Chinese (Simplified)" for zh)
 *   - the reference's French sentence typed, fr -> en: the page sent source
 *     fr, target en; the text shown is POST /translate's for those fields;
 *     those fields without the page's alternatives (beam search) give a text
 *     that begins with the reference's greedy one (no max_length there: it
 *     goes on past the reference's 18 ids)
 *   - mtserve's own demo page (/) names them so too, "Chinese (Traditional) (zho_Hant)"
 *   - no request failed, no console error
 * Prints each check, then "e2e-lt-nllb: N passed, M failed"; exits 1 if any failed.
 *
 *   B=build MT_M2M_DIR=build/m2m node tests/e2e/lt_nllb.mjs      (MTSERVE_BIN, CHROMIUM, E2E_OUT override)
 */

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { OUT, ROOT, api, check, equal, launchChromium, phase, run, startServer, waitHealthy } from './lib.mjs';
import { SRC, TGT, closeAll, jsonBody, options, startFront, translateVia, watchPage } from './lt_page.mjs';

const MDIR = resolve(ROOT, process.env.MT_M2M_DIR || 'build/m2m', 'nllb-small');

async function main() {
  mkdirSync(OUT, { recursive: true });
  check(`the NLLB-shaped model is there (make m2m-models): ${MDIR}`, existsSync(`${MDIR}/f32/config.json`));
  const rows = readFileSync(`${MDIR}/served.jsonl`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const ref = rows.find((r) => r.source === 'fr' && r.target === 'en');
  check('the reference has a fr -> en row', !!ref);
  const server = startServer(['--model', `nllb=${MDIR}/f32`], { shipped: false });
  let browser, front;
  try {
    const BASE = await server.base;
    await waitHealthy(BASE);
    front = await startFront(BASE);
    const languages = await api(BASE, 'GET', '/languages');
    /* as the page shows a name: its first letter upper-cased */
    const shown = (n) => n.charAt(0).toUpperCase() + n.slice(1);
    const nameOf = (code) => { const l = languages.find((x) => x.code === code); return shown(l ? l.name : code); };
    const byName = (codes) => codes.map((c) => [c, nameOf(c)]).sort((a, b) => a[1].localeCompare(b[1]));

    browser = await launchChromium();
    console.log(`server ${BASE} (nllb alone), page ${front.base}, chromium ${browser.version()}`);
    const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    page.setDefaultTimeout(15000);
    const { bad, errors } = watchPage(page);

    await phase('the page starts with the 202 languages of one NLLB-200 model', async () => {
      await page.goto(front.base + '/');
      const started = await page.waitForSelector(`${SRC} option`, { state: 'attached', timeout: 20000 }).then(() => true, () => false);
      check('the translator is shown (the lists are filled)', started);
      equal('no error card', await page.evaluate(() => window._vueApp.error), '');
      equal('/languages lists 202 languages', languages.length, 202);
      equal('the source list: Auto Detect, then /languages by name', await options(page, SRC),
            [['auto', 'Auto Detect'], ...byName(languages.map((l) => l.code))]);
      await page.selectOption(SRC, 'fr');
      const fr = languages.find((l) => l.code === 'fr');
      equal('the target list for French: /languages\' 201 targets of fr', await options(page, TGT), byName(fr.targets));
      equal('201 of them', fr.targets.length, 201);
      const shownAs = async (code) => page.$eval(`${SRC} option[value="${code}"]`, (o) => o.textContent.trim());
      equal('the two scripts of Chinese and of Achinese, each named with its script',
            [await shownAs('zh'), await shownAs('zho_Hant'), await shownAs('ace'), await shownAs('ace_Latn')],
            ['Chinese (Simplified)', 'Chinese (Traditional)', 'Achinese (Arabic)', 'Achinese (Latin)']);
      await page.screenshot({ path: `${OUT}/lt-nllb-1-start.png` });
    });

    await phase('the reference\'s French sentence, fr -> en: POST /translate\'s text, the reference\'s first', async () => {
      const { fields, reply, status } = await translateVia(page, 'fr', 'en', ref.text);
      equal('the page sent source fr, target en', [fields.source, fields.target], ['fr', 'en']);
      equal('its reply is 200', status, 200);
      const direct = await api(BASE, 'POST', '/translate', jsonBody(fields));
      equal('the reply the page got is POST /translate\'s', reply.translatedText, direct.translatedText);
      equal('the text shown is that translation', await page.inputValue('#textarea2'), direct.translatedText);
      /* the page asks for alternatives (beam search); greedy is the reference's */
      const greedy = await api(BASE, 'POST', '/translate', jsonBody(fields, { alternatives: 0 }));
      equal('the same fields without alternatives (greedy) begin with the float64 reference\'s text',
            (greedy.translatedText || '').slice(0, ref.dec.length), ref.dec);
      await page.screenshot({ path: `${OUT}/lt-nllb-2-fr-en.png` });
    });

    await phase('mtserve\'s demo page names the two scripts as /languages does', async () => {
      const demo = await browser.newPage();
      await demo.goto(BASE + '/');
      await demo.waitForSelector('#src-lang option[value="zho_Hant"]', { state: 'attached' });
      const label = async (code) => demo.$eval(`#src-lang option[value="${code}"]`, (o) => o.textContent.trim());
      equal('the source list: "Chinese (Traditional) (zho_Hant)", "Chinese (Simplified) (zh)", "Kashmiri (Devanagari) (kas_Deva)"',
            [await label('zho_Hant'), await label('zh'), await label('kas_Deva')],
            ['Chinese (Traditional) (zho_Hant)', 'Chinese (Simplified) (zh)', 'Kashmiri (Devanagari) (kas_Deva)']);
      await demo.screenshot({ path: `${OUT}/lt-nllb-3-demo.png` });
      await demo.close();
    });

    await phase('nothing failed', async () => {
      equal('every response < 400, no request failed', bad, []);
      equal('no console error, no script error', errors, []);
    });
  } finally {
    await closeAll({ browser, front, server });
  }
}

await run('e2e-lt-nllb', 120, main);
