// ref_chat.mjs: the reference prompts of tests/test_prompt.c.  Each published
// chat template (tests/fixtures/chat-templates/*.json) is rendered by
// @huggingface/jinja (the Jinja implementation of transformers.js) as
// transformers' apply_chat_template does it, and the result tokenized by
// @lenml/tokenizers (a transformers.js port): both written independently of
// our C renderer (engine/tokenizer/prompt.c) and tokenizer.
//
//   node tests/tokenizers/ref_chat.mjs TOKENIZERS_DIR TEMPLATES_DIR > chat.jsonl
//
// TOKENIZERS_DIR holds llama2/, qwen3/ and gemma3/ (tokenizer.json, tokenizer_config.json);
// TEMPLATES_DIR the fixtures and texts.txt.  Texts: lines of the corpus test split
// (tests/fixtures/tokenizer/inputs/test.{en,fr}.txt), the hand-written hard cases
// of TEMPLATES_DIR/texts.txt and some of tests/fixtures/hf-tokenizers/hard.txt
// (escapes: \\ \n \t \r \xHH, as tests/fixtures/tokenizer/README.md).
// Output, one JSON object a line:
//   {"kind", "tok", "src", "tgt", "text", "prompt", "ids"}   one case (translategemma:
//                                           also "src_code", "tgt_code"; its template
//                                           gets the structured request its model card
//                                           documents, and names the languages itself)
//   {"stop": TOK, "newline_ids": [...]}     the ids whose decoding (alone, special
//                                           tokens kept) contains "\n"
//   {"summary": {...}}                      counts, and what was left out and why
// Left out (counted in the summary): texts that spell one of the tokenizer's
// added tokens other than blank ones (the C side keeps them plain on purpose: test_prompt checks those
// separately), texts with U+FEFF or U+0085 (JavaScript's \s differs from the Rust
// library's there, see test_hf_tokenizer), and for llama2-chat texts ending in
// a character on which Python's str.strip and JavaScript's trim disagree
// (U+001C..U+001F, U+0085, U+FEFF); for gemma the same, and for translategemma
// texts starting or ending with one (its template trims the text itself).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { TokenizerLoader } from "@lenml/tokenizers";
import { unescape } from "./escapes.mjs";

const [tokDir, tplDir] = process.argv.slice(2);
if (!tplDir) {
  console.error("usage: node ref_chat.mjs TOKENIZERS_DIR TEMPLATES_DIR");
  process.exit(2);
}
const readJSON = (p) => JSON.parse(readFileSync(p, "utf8"));

// The prompt strings, as the C header states them (engine/tokenizer/tokenizer.h).
const INSTRUCTION = "Translate the following {src} text into {tgt}. Reply with the translation only.\n\n{text}";
const ALMA = "Translate this from {src} to {tgt}:\n{src}: {text}\n{tgt}:";
const fill = (fmt, src, tgt, text) =>
  fmt.replaceAll("{src}", src).replaceAll("{tgt}", tgt).replace("{text}", () => text);

const toks = {};
for (const name of ["llama2", "qwen3", "gemma3"]) {
  const cfg = readJSON(join(tokDir, name, "tokenizer_config.json"));
  toks[name] = {
    cfg,
    tok: TokenizerLoader.fromPreTrained({
      tokenizerJSON: readJSON(join(tokDir, name, "tokenizer.json")),
      tokenizerConfig: cfg,
    }),
    // the blank ones (Gemma's runs of newlines) are split out of the text by the C side too
    added: readJSON(join(tokDir, name, "tokenizer.json")).added_tokens.map((t) => t.content)
      .filter((a) => !/^[\p{White_Space}\u2581]+$/u.test(a)),
  };
}

// kind, tokenizer, template fixture (null: not a chat template).
const SETS = [
  ["alma", "llama2", null],
  ["llama2-chat", "llama2", "Llama-2-7b-chat-hf.json"],
  ["zephyr", "llama2", "TinyLlama-1.1B-Chat-v1.0.json"],
  ["raw", "llama2", null],
  ["qwen3", "qwen3", "Qwen3-0.6B.json"],
  ["chatml", "qwen3", "Qwen2.5-0.5B-Instruct.json"],
  ["raw", "qwen3", null],
  ["alma", "qwen3", null],
  ["gemma", "gemma3", "gemma-3-1b-it.json"],
  ["translategemma", "gemma3", "TranslateGemma-4b-it.partial.json"],
];

// translategemma: names as a caller gives them and the codes; the template
// writes its own table's names (so "Brazilian Portuguese" becomes "Portuguese").
const CODE_PAIRS = [
  ["English", "en", "French", "fr"],
  ["French", "fr", "English", "en"],
  ["German", "de", "Chinese (Simplified)", "zh-Hans"],
  ["Japanese", "ja", "Brazilian Portuguese", "pt_BR"],
  ["Spanish", "es", "Italian", "it"],
];

// ---- texts ----
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
function lines(file) {
  const l = readFileSync(file, "utf8").split("\n");
  if (l.length && l[l.length - 1] === "") l.pop();
  const out = [];
  for (const s of l) {
    try {
      out.push(utf8.decode(unescape(s)));
    } catch {
      /* invalid UTF-8: test_prompt refuses those itself */
    }
  }
  return out;
}
const PAIRS = [
  ["English", "French"],
  ["French", "English"],
  ["German", "Chinese"],
  ["Japanese", "Brazilian Portuguese"],
  ["Norwegian Bokmål", "Українська"],
];
const every = (arr, k, max) => arr.filter((_, i) => i % k === 0).slice(0, max);
const cases = [];
for (const t of every(lines("tests/fixtures/tokenizer/inputs/test.en.txt"), 29, 40)) cases.push(["English", "French", t]);
for (const t of every(lines("tests/fixtures/tokenizer/inputs/test.fr.txt"), 53, 25)) cases.push(["French", "English", t]);
let k = 0;
for (const t of lines(join(tplDir, "texts.txt"))) cases.push([...PAIRS[k++ % PAIRS.length], t]);
for (const t of every(lines("tests/fixtures/hf-tokenizers/hard.txt"), 3, 30)) cases.push([...PAIRS[k++ % PAIRS.length], t]);

// ---- rendering as transformers' apply_chat_template ----
function render(tpl, cfgTpl, content, kind) {
  const tokenOf = (v) => (v && typeof v === "object" ? v.content : v);
  return new Template(tpl).render({
    messages: [{ role: "user", content }],
    add_generation_prompt: true,
    ...(kind === "qwen3" ? { enable_thinking: false } : {}),
    bos_token: tokenOf(cfgTpl.bos_token) ?? "",
    eos_token: tokenOf(cfgTpl.eos_token) ?? "",
    unk_token: tokenOf(cfgTpl.unk_token) ?? "",
    pad_token: tokenOf(cfgTpl.pad_token) ?? "",
  });
}

const out = [];
const summary = { cases: {}, left_out: {} };
const leave = (key, why) => {
  summary.left_out[key] ??= {};
  summary.left_out[key][why] = (summary.left_out[key][why] ?? 0) + 1;
};
for (const [kind, tname, fixture] of SETS) {
  const { tok, added } = toks[tname];
  const cfgTpl = fixture ? readJSON(join(tplDir, fixture)) : null;
  const key = `${kind}/${tname}`;
  let n = 0;
  for (const [src, tgt, text] of cases) {
    if (added.some((a) => text.includes(a))) { leave(key, "spells an added token"); continue; }
    if (/[\ufeff\u0085]/u.test(text)) { leave(key, "U+FEFF or U+0085"); continue; }
    if ((kind === "llama2-chat" || kind === "gemma") && /[\u001c-\u001f\u0085\ufeff]$/u.test(text)) {
      leave(key, "strip differs");
      continue;
    }
    if (kind === "translategemma" && /^[\u001c-\u001f\u0085\ufeff]|[\u001c-\u001f\u0085\ufeff]$/u.test(text)) {
      leave(key, "strip differs");
      continue;
    }
    let prompt, ids, codes = {};
    if (kind === "translategemma") {
      const [sn, sc, tn, tc] = CODE_PAIRS[n % CODE_PAIRS.length];
      codes = { src: sn, tgt: tn, src_code: sc, tgt_code: tc };
      prompt = new Template(cfgTpl.chat_template).render({
        messages: [{ role: "user", content: [{ type: "text", source_lang_code: sc, target_lang_code: tc, text }] }],
        add_generation_prompt: true, bos_token: cfgTpl.bos_token,
      });
      ids = tok.encode(prompt, { add_special_tokens: false });
    } else if (kind === "raw") {
      prompt = text;
      ids = tok.encode(text, { add_special_tokens: true });
    } else if (kind === "alma") {
      prompt = fill(ALMA, src, tgt, text);
      ids = tok.encode(prompt, { add_special_tokens: true });
    } else {
      prompt = render(cfgTpl.chat_template, cfgTpl, fill(INSTRUCTION, src, tgt, text), kind);
      ids = tok.encode(prompt, { add_special_tokens: false });  // what apply_chat_template(tokenize=True) does
    }
    out.push(JSON.stringify({ kind, tok: tname, src, tgt, text, ...codes, prompt, ids }));
    n++;
  }
  summary.cases[key] = n;
}

for (const tname of ["llama2", "qwen3"]) {
  const { tok } = toks[tname];
  const size = tok.model.vocab.length;
  const ids = [];
  for (let id = 0; id < size; id++) {
    if (tok.model.vocab[id] === undefined) continue;
    if (tok.decode([id], { skip_special_tokens: false }).includes("\n")) ids.push(id);
  }
  out.push(JSON.stringify({ stop: tname, newline_ids: ids }));
}
out.push(JSON.stringify({ summary }));
process.stdout.write(out.join("\n") + "\n");
console.error(JSON.stringify(summary));
