/* llm_page.mjs: the demo page with a decoder-only model, against the real
 * server: en-fr (Marian) and "llama", the Llama-shaped random-weight model of
 * tests/llm/gen_served.py ($MT_LLM_SERVED, default <B>/../build/llm-served; make
 * llm-served), whose expected translations come from references independent of
 * the engine (expected.json: prompt ids from @lenml/tokenizers, greedy ids from
 * the numpy float64 forward, text decoded by @lenml/tokenizers).
 *
 *   the model selector names llama by its pairs; choosing it sets de -> en;
 *   a translation through the page is the reference's text, the request naming
 *   the model and both languages; the RoPE controls take llama's rope_theta and
 *   head_dim; the attention explorer shows llama's one causal self-attention
 *   over the prompt and the output (the real /attention reply, prompt length as
 *   the reference's prompt ids).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ROOT, api, check, equal, launchChromium, phase, run, startServer, stopServer, waitHealthy } from './lib.mjs';

const SERVED = resolve(ROOT, process.env.MT_LLM_SERVED || 'build/llm-served');

async function main() {
  const expected = JSON.parse(readFileSync(resolve(SERVED, 'expected.json'), 'utf8'));
  const c = expected.cases.find((x) => x.model === 'llama' && x.pair === 'de-en');
  const server = startServer(['--web', resolve(ROOT, 'web'), '--model', `llama=${resolve(SERVED, 'llama')}`]);
  let browser;
  try {
    const base = await server.base;
    await waitHealthy(base);
    const llama = (await api(base, 'GET', '/models')).models.find((m) => m.id === 'llama');
    browser = await launchChromium();
    const page = await (await browser.newContext({ viewport: { width: 1366, height: 768 } })).newPage();
    page.setDefaultTimeout(15000);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(base + '/');
    await page.waitForSelector('body[data-ready=true]', { timeout: 20000 });

    await phase('choosing the decoder-only model', async () => {
      const label = await page.$eval('#model option[value="llama"]', (o) => o.textContent);
      equal('the selector names llama by its pairs', label, 'llama (de→en, en-de, fr→en)'.replace('en-de', 'en→de'));
      await page.selectOption('#model', 'llama');
      equal('its first pair becomes the languages', [await page.inputValue('#src-lang'), await page.inputValue('#tgt-lang')],
            ['de', 'en']);
      equal('the RoPE controls take its rope_theta and head_dim',
            [Number(await page.inputValue('#rope-base')), await page.inputValue('#rope-dim')],
            [llama.rope.theta, String(llama.rope.head_dim)]);
    });

    await phase('a translation through the page', async () => {
      await page.selectOption('#beam', '1');
      await page.fill('#source', c.text);
      const sent = page.waitForRequest((r) => r.url().endsWith('/translate') && r.method() === 'POST');
      await page.click('#translate');
      const body = JSON.parse((await sent).postData());
      equal('the request names the model and both languages', [body.model, body.source, body.target],
            ['llama', 'de', 'en']);
      await page.waitForFunction(() => document.getElementById('output').getAttribute('aria-busy') === 'false' &&
                                       !document.getElementById('translate').disabled, null, { timeout: 30000 });
      equal('the translation shown is the reference\'s', (await page.$eval('#output', (el) => el.textContent)).trim(),
            c.expected);
    });

    await phase('the attention explorer on the real /attention', async () => {
      const sent = page.waitForRequest((r) => r.url().endsWith('/attention'));
      await page.click('#att-show');
      const body = JSON.parse((await sent).postData());
      equal('it asks /attention of llama', body.model, 'llama');
      await page.waitForFunction(() => document.getElementById('att-map').dataset.kind === 'llm', null, { timeout: 30000 });
      check('the encoder / decoder / cross tabs are hidden', await page.isHidden('#att-tabs'));
      const P = c.prompt_ids.length;
      equal('the prompt/output boundary is at the reference prompt\'s length',
            await page.$eval('#att-map', (el) => +el.dataset.boundary), P);
      const rows = await page.$eval('#att-map', (el) => +el.dataset.rows);
      check('the map covers the prompt and the output', rows > P, `${rows} rows, prompt ${P}`);
    });
    equal('no script error on the page', errors, []);
  } finally {
    if (browser) await browser.close();
    await stopServer(server);
  }
}

await run('e2e-llm-page', 180, main);
