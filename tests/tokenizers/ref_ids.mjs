// ref_ids.mjs: the reference ids of tests/test_hf_tokenizer.c, from
// @lenml/tokenizers (a JavaScript port of transformers.js's tokenizers,
// written independently of ours and of the Rust library).
//
//   node tests/tokenizers/ref_ids.mjs TOKENIZER_DIR LINES_FILE... > expected.jsonl
//
// TOKENIZER_DIR holds tokenizer.json and tokenizer_config.json.  Each input
// line is one text, written with the escapes of tests/fixtures/tokenizer
// (README.md): \\ backslash, \n LF, \t TAB, \r CR, \xHH one raw byte.
// Output: one JSON line per input line, in order:
//   {"ids": [...], "text": "..."}   encode(x) with add_special_tokens, and
//                                   decode(ids) (special tokens kept)
//   {"invalid": true}               x is not valid UTF-8 (the C side must refuse it)
// --bench: instead, time encode over all lines (ignoring invalid ones) and
// print {"lines", "bytes", "tokens", "seconds"} once.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TokenizerLoader } from "@lenml/tokenizers";
import { unescape } from "./escapes.mjs";

const args = process.argv.slice(2);
const bench = args[0] === "--bench";
if (bench) args.shift();
if (args.length < 2) {
  console.error("usage: node ref_ids.mjs [--bench] TOKENIZER_DIR LINES_FILE...");
  process.exit(2);
}
const dir = args[0];
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
});


const dec = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });  // keep a leading U+FEFF
const texts = [];
for (const file of args.slice(1)) {
  let lines = readFileSync(file, "utf8").split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  for (const line of lines) {
    try {
      texts.push(dec.decode(unescape(line)));
    } catch {
      texts.push(null);
    }
  }
}

if (bench) {
  const valid = texts.filter((t) => t !== null);
  let tokens = 0, bytes = 0;
  for (const t of valid) bytes += Buffer.byteLength(t);
  tok.encode(valid[0] ?? "");       // warm-up
  const t0 = process.hrtime.bigint();
  for (const t of valid) tokens += tok.encode(t).length;
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(JSON.stringify({ lines: valid.length, bytes, tokens, seconds: s }));
} else {
  const out = [];
  for (const t of texts) {
    if (t === null) {
      out.push('{"invalid": true}');
      continue;
    }
    const ids = tok.encode(t, { add_special_tokens: true });
    const text = ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "";  // decode([]) throws
    out.push(JSON.stringify({ ids, text }));
  }
  process.stdout.write(out.join("\n") + "\n");
}
