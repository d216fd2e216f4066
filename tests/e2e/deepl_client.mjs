/* DeepL's official Node client, deepl-node (npm, unmodified), pointed at our
 * server with its serverUrl option: code we did not write, calling mtserve as
 * it calls DeepL's API.
 *
 * Every translation is checked against the same request to POST /translate
 * (the client's results must be the engine's, not a look-alike): one text and
 * several, source given and detected, split_sentences off / on / nonewlines,
 * tagHandling html (with ignoreTags too), tagHandling xml with ignoreTags, splittingTags and
 * outlineDetection off (the output read back by Python's xml.etree, an XML
 * parser that is not ours: the input's elements, the ignored element's
 * text, each unit's words the plain translation), malformed XML (a DeepLError
 * with expat's message), a glossary; then glossaries v2 (createGlossary, with CSV,
 * getGlossary, listGlossaries, getGlossaryEntries, deleteGlossary) and v3
 * (DeepLClient's multilingual glossaries); translateDocument on a .txt and a
 * .docx (the file equal byte for byte to POST /translate_file's); getSourceLanguages / getTargetLanguages, getUsage
 * (the count is the code points sent; past the key's char-quota the client
 * throws its QuotaExceededError), a wrong key (AuthorizationError), a refused
 * parameter (DeepLError naming it) and a 429 the client retries after
 * Retry-After until it succeeds.
 * Prints each check, then "e2e-deepl-client: N passed, M failed"; exits 1 if any failed.
 *
 *   B=build node tests/e2e/deepl_client.mjs      (MTSERVE_BIN overrides)
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { api, check, equal, phase, ROOT as ROOT_DIR, run, startServer } from './lib.mjs';

const EN = 'This package provides the documentation.';
const EN2 = 'It is free software, released under the GNU General Public License.';
const FR = 'Ce paquet contient les fichiers de développement de la bibliothèque.';
const WRAPPED = 'This package provides the documentation\nof the library.';
const HTML = '<p>This package provides the <b>documentation</b> of the <a href="https://example.org/">library</a>.</p>';
const XML = '<doc><par>This package provides the <b>documentation</b>.</par>\n<code>make <i>all</i> &amp; install</code>' +
  '<par>It is free <x id="1"/> software.</par></doc>';
const KEY = 'e2e-key:fx', QUOTA_KEY = 'e2e-quota', SLOW_KEY = 'e2e-slow';

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'mtserve-deepl-'));
  const keys = join(dir, 'keys');
  writeFileSync(keys, `${KEY}\n${QUOTA_KEY} char-quota=100\n${SLOW_KEY} req-limit=20\n`);
  const server = startServer(['--api-keys', keys, '--usage-file', join(dir, 'usage')]);
  const BASE = await server.base;
  for (let i = 0; i < 100 && (await fetch(BASE + '/health')).status !== 200; i++)
    await new Promise((r) => setTimeout(r, 200));
  console.log(`server ${BASE}`);
  const deepl = await import('deepl-node');
  const client = (key, opts = {}) => new deepl.Translator(key, { serverUrl: BASE, ...opts });
  const tr = client(KEY);
  /* our POST /translate of one text, with the same key */
  const ours = async (text, source, target, more = {}) => {
    const res = await fetch(BASE + '/translate', {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ text, source, target, ...more }),
    });
    return (await res.json()).translations[0].text;
  };

  await phase('translateText: one text, source given', async () => {
    const r = await tr.translateText(EN, 'en', 'fr');
    equal('the text is POST /translate\'s', r.text, await ours(EN, 'en', 'fr'));
    equal('detectedSourceLang', r.detectedSourceLang, 'en');
    equal('billedCharacters: the code points sent', r.billedCharacters, [...EN].length);
  });

  await phase('translateText: several texts, source detected', async () => {
    const r = await tr.translateText([EN, EN2], null, 'fr');
    equal('two results', r.length, 2);
    equal('each is POST /translate\'s', r.map((x) => x.text), [await ours(EN, 'en', 'fr'), await ours(EN2, 'en', 'fr')]);
    equal('detected English', r.map((x) => x.detectedSourceLang), ['en', 'en']);
    const b = await tr.translateText(FR, null, 'en-GB');
    equal('French into en-GB is fr-en\'s', b.text, await ours(FR, 'fr', 'en'));
    equal('detected French', b.detectedSourceLang, 'fr');
    const same = await tr.translateText(FR, null, 'fr');
    equal('detected as the target: sent back unchanged', [same.text, same.detectedSourceLang], [FR, 'fr']);
  });

  await phase('translateText: splitSentences', async () => {
    const joined = await ours(WRAPPED.replace('\n', ' '), 'en', 'fr');
    const byLine = await ours(WRAPPED, 'en', 'fr');
    const whole = await ours(WRAPPED, 'en', 'fr', { split: false });
    const nl = (await tr.translateText(WRAPPED, 'en', 'fr', { splitSentences: 'nonewlines' })).text;
    equal('nonewlines: the wrapped line read as one', nl.replace('\n', ' '), joined);
    equal('nonewlines: its line break put back where the alignment places it', nl.split('\n').length, 2);
    equal('on: split at the line break too', (await tr.translateText(WRAPPED, 'en', 'fr', { splitSentences: 'on' })).text,
          byLine);
    equal('off: one piece', (await tr.translateText(WRAPPED, 'en', 'fr', { splitSentences: 'off' })).text, whole);
  });

  await phase('translateText: tagHandling html, preserveFormatting', async () => {
    const r = await tr.translateText(HTML, 'en', 'fr', { tagHandling: 'html', preserveFormatting: true });
    equal('the page is POST /translate\'s with format html', r.text, await ours(HTML, 'en', 'fr', { format: 'html' }));
    check('the markup is kept', /^<p>[^<]*<b>[^<]+<\/b>[^<]*<a href="https:\/\/example\.org\/">[^<]+<\/a>[^<]*<\/p>$/.test(r.text),
          r.text);
    const k = await tr.translateText('<p>Run <kbd>ls  -l</kbd> now.</p>', 'en', 'fr', { tagHandling: 'html', ignoreTags: ['kbd'] });
    check('ignoreTags with html: the element byte for byte', k.text.includes('<kbd>ls  -l</kbd>') && k.text.startsWith('<p>'),
          k.text);
  });

  /* Python's xml.etree (Debian's /usr/bin/python3) reads an XML text: its
   * elements' names in document order, the text of each par (whitespace runs one
   * space) and of each code; it throws on XML that is not well-formed. */
  const etree = (xml) => JSON.parse(execFileSync('/usr/bin/python3', ['-c', `
import json, sys, xml.etree.ElementTree as E
r = E.fromstring('<r>' + sys.stdin.read() + '</r>')
text = lambda e: ' '.join(''.join(e.itertext()).split())
print(json.dumps({'names': [e.tag for e in r.iter()][1:], 'par': [text(e) for e in r.iter('par')],
                  'code': [text(e) for e in r.iter('code')]}))`], { input: xml }).toString());

  await phase('translateText: tagHandling xml, ignoreTags, splittingTags', async () => {
    const r = await tr.translateText(XML, 'en', 'fr', { tagHandling: 'xml', ignoreTags: ['code'], splittingTags: ['par'],
                                                        outlineDetection: false });
    check('the ignored element and the line break come back byte for byte',
          r.text.includes('</par>\n<code>make <i>all</i> &amp; install</code><par>'), r.text);
    let got = null;
    try { got = etree(r.text); } catch (e) { check('xml.etree reads the output', false, `${e}: ${r.text}`); }
    const want = etree(XML);
    if (got) {
      equal('xml.etree: the input\'s elements, in order', got.names, want.names);
      equal('xml.etree: the ignored element\'s text', got.code, want.code);
      equal('xml.etree: each par\'s words are its plain translation', got.par,
            [await ours('This package provides the documentation.', 'en', 'fr'),
             await ours('It is free software.', 'en', 'fr')]);
    }
    let err = null;
    try { await tr.translateText('<p>unclosed <b>bold</p>', 'en', 'fr', { tagHandling: 'xml' }); } catch (e) { err = e; }
    check('malformed XML: DeepLError with the parser\'s message', err instanceof deepl.DeepLError &&
          /Tag handling parsing failed.*mismatched tag/.test(err.message), String(err));
  });

  await phase('glossaries v2', async () => {
    const entries = new deepl.GlossaryEntries({ entries: { package: 'paquetage', documentation: 'docs' } });
    const g = await tr.createGlossary('Debian terms', 'en', 'fr', entries);
    equal('created: its languages and count', [g.sourceLang, g.targetLang, g.entryCount, g.ready], ['en', 'fr', 2, true]);
    check('an id', /^[0-9a-f-]{36}$/.test(g.glossaryId), g.glossaryId);
    equal('getGlossary', (await tr.getGlossary(g.glossaryId)).name, 'Debian terms');
    equal('listGlossaries', (await tr.listGlossaries()).map((x) => x.glossaryId), [g.glossaryId]);
    equal('getGlossaryEntries', (await tr.getGlossaryEntries(g)).entries(), { package: 'paquetage', documentation: 'docs' });
    const r = await tr.translateText(EN, 'en', 'fr', { glossary: g });
    equal('translateText with it is POST /translate with those terms', r.text,
          await ours(EN, 'en', 'fr', { glossary: { package: 'paquetage', documentation: 'docs' } }));
    check('the terms are in it', r.text.includes('paquetage'), r.text);
    const c = await tr.createGlossaryWithCsv('from CSV', 'en', 'fr', Buffer.from('"free software","logiciel libre"\nlibrary,bibliothèque\n'));
    equal('createGlossaryWithCsv', c.entryCount, 2);
    await tr.deleteGlossary(g);
    await tr.deleteGlossary(c);
    let err = null;
    try { await tr.getGlossary(g.glossaryId); } catch (e) { err = e; }
    check('deleted: GlossaryNotFoundError', err instanceof deepl.GlossaryNotFoundError, String(err));
    err = null;
    /* deepl-node checks TSV entries itself; CSV goes to the server as it is */
    try { await tr.createGlossaryWithCsv('dup', 'en', 'fr', Buffer.from('a,b\na,c\n')); } catch (e) { err = e; }
    check('a duplicate source (CSV): a DeepLError from the server naming its line',
          err instanceof deepl.DeepLError && /line 2: duplicate/.test(err.message), String(err));
  });

  await phase('glossaries v3 (multilingual)', async () => {
    const dc = new deepl.DeepLClient(KEY, { serverUrl: BASE });
    const g = await dc.createMultilingualGlossary('Both ways', [
      { sourceLangCode: 'en', targetLangCode: 'fr', entries: new deepl.GlossaryEntries({ entries: { package: 'paquetage' } }) },
      { sourceLangCode: 'fr', targetLangCode: 'en', entries: new deepl.GlossaryEntries({ entries: { paquet: 'parcel' } }) },
    ]);
    equal('two dictionaries', g.dictionaries.map((d) => [d.sourceLangCode, d.targetLangCode, d.entryCount]),
          [['en', 'fr', 1], ['fr', 'en', 1]]);
    equal('getMultilingualGlossary', (await dc.getMultilingualGlossary(g.glossaryId)).name, 'Both ways');
    check('listMultilingualGlossaries has it', (await dc.listMultilingualGlossaries()).some((x) => x.glossaryId === g.glossaryId));
    const d = await dc.getMultilingualGlossaryDictionaryEntries(g, 'fr', 'en');
    equal('its fr -> en entries', d.entries.entries(), { paquet: 'parcel' });
    const r = await dc.translateText(FR, 'fr', 'en-US', { glossary: g });
    equal('translateText with its fr -> en dictionary', r.text, await ours(FR, 'fr', 'en', { glossary: { paquet: 'parcel' } }));
    await dc.deleteMultilingualGlossary(g);
    check('deleted', !(await dc.listMultilingualGlossaries()).some((x) => x.glossaryId === g.glossaryId));
  });

  await phase('translateDocument', async () => {
    /* our POST /translate_file of the same file: LibreTranslate's form, then its download */
    const viaFiles = async (path, name) => {
      const form = new FormData();
      form.append('file', new Blob([readFileSync(path)]), name);
      form.append('source', 'en');
      form.append('target', 'fr');
      const res = await fetch(BASE + '/translate_file', { method: 'POST', body: form, headers: { Authorization: `Bearer ${KEY}` } });
      const url = (await res.json()).translatedFileUrl;
      return Buffer.from(await (await fetch(url, { headers: { Authorization: `Bearer ${KEY}` } })).arrayBuffer());
    };
    const txt = join(dir, 'notes.txt');
    writeFileSync(txt, `${EN}\n\n${EN2}\n`);
    const out = join(dir, 'notes.fr.txt');
    const st = await tr.translateDocument(txt, out, 'en', 'fr');
    equal('.txt: done, billed its characters', [st.status, st.billedCharacters], ['done', [...EN].length + [...EN2].length]);
    equal('.txt: the file is POST /translate_file\'s', readFileSync(out).toString(), (await viaFiles(txt, 'notes.txt')).toString());
    const docx = join(ROOT_DIR, 'tests/fixtures/documents/office.docx');
    const outx = join(dir, 'office.fr.docx');
    const sx = await tr.translateDocument(docx, outx, 'en', 'fr');
    equal('.docx: done', sx.status, 'done');
    check('.docx: the file is POST /translate_file\'s, byte for byte', readFileSync(outx).equals(await viaFiles(docx, 'office.docx')));
    let err = null;
    try { await tr.translateDocument(txt, join(dir, 'x.txt'), 'en', 'de'); } catch (e) { err = e; }
    check('a pair no model serves: DocumentTranslationError', err instanceof deepl.DocumentTranslationError, String(err));
  });

  await phase('languages', async () => {
    const src = await tr.getSourceLanguages(), tgt = await tr.getTargetLanguages();
    equal('sources', src.map((l) => l.code).sort(), ['en', 'fr']);
    equal('targets, English by variant', tgt.map((l) => l.code).sort(), ['en-GB', 'en-US', 'fr']);
    check('names', src.every((l) => typeof l.name === 'string' && l.name.length > 0), JSON.stringify(src));
    equal('no formality', tgt.map((l) => l.supportsFormality), [false, false, false]);
  });

  await phase('usage and quota', async () => {
    const q = client(QUOTA_KEY);
    const before = (await q.getUsage()).character;
    equal('a fresh key: 0 of 100', [before.count, before.limit], [0, 100]);
    await q.translateText([EN, 'Été'], 'en', 'fr');
    const after = (await q.getUsage()).character;
    equal('the count is the code points sent', after.count, [...EN].length + 3);
    check('not over the limit yet', !after.limitReached());
    let err = null;
    try { await q.translateText(EN2 + ' ' + EN2, 'en', 'fr'); } catch (e) { err = e; }
    check('past the quota: QuotaExceededError', err instanceof deepl.QuotaExceededError, String(err));
    equal('nothing counted for it', (await q.getUsage()).character.count, after.count);
  });

  await phase('errors the client knows', async () => {
    let err = null;
    try { await client('wrong-key').translateText(EN, 'en', 'fr'); } catch (e) { err = e; }
    check('a wrong key: AuthorizationError', err instanceof deepl.AuthorizationError, String(err));
    err = null;
    try { await tr.translateText(EN, 'en', 'fr', { formality: 'more' }); } catch (e) { err = e; }
    check('formality "more": DeepLError naming formality', err instanceof deepl.DeepLError && /formality/.test(err.message),
          String(err));
  });

  await phase('429: the client backs off and retries', async () => {
    /* req-limit=20: a burst of 20, then one more every 3 s.  The burst is spent by
     * requests refused at once (no target_lang), so the client's own call meets
     * a 429; deepl-node retries after 1 s, 2.6 s, 5.2 s ... (its backoff; it
     * does not read Retry-After) until a request is let through. */
    for (let i = 0; i < 20; i++) {
      const res = await fetch(BASE + '/v2/translate', {
        method: 'POST', headers: { Authorization: `DeepL-Auth-Key ${SLOW_KEY}` }, body: new URLSearchParams({ text: 'x' }),
      });
      await res.text();
    }
    const t0 = Date.now();
    const r = await client(SLOW_KEY).translateText(EN, 'en', 'fr');
    const waited = (Date.now() - t0) / 1000;
    equal('answered, as POST /translate', r.text, await ours(EN, 'en', 'fr'));
    check('after a 429 and the client\'s backoff (one request per 3 s)', waited > 0.9, `${waited} s`);
  });

  await api(BASE, 'GET', '/health');
}

run('e2e-deepl-client', 240, main);
