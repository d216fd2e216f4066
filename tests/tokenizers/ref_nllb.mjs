// ref_nllb.mjs: an NLLB tokenizer.json directory (tests/spm_bpe/gen_nllb_json.py)
// encoded and decoded by @lenml/tokenizers (a JavaScript port of
// transformers.js's tokenizers, independent of ours and of the Rust
// library), for tests/test_spm_bpe.c.
//
//   node tests/tokenizers/ref_nllb.mjs TOKENIZER_DIR TEST_TXT > OUT.jsonl
//
// TEST_TXT: one raw text a line (tests/spm_bpe/corpus.py's test.txt).
// Output, one JSON line per input line:
//   {"ids": encode(x, add_special_tokens false), "dec": decode(ids, skip_special_tokens)}
// The language code and </s> are the C side's to add (its own layout);
// an added token typed in a text ("</s>", "eng_Latn") is split out here,
// kept as text by mtserve: the test skips those lines.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TokenizerLoader } from "@lenml/tokenizers";

const [dir, file] = process.argv.slice(2);
if (!file) {
  console.error("usage: node ref_nllb.mjs TOKENIZER_DIR TEST_TXT");
  process.exit(2);
}
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
});
const lines = readFileSync(file, "utf8").split("\n");
lines.pop();
const out = [];
for (const line of lines) {
  const ids = tok.encode(line, { add_special_tokens: false });
  const dec = ids.length ? tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }) : "";
  out.push(JSON.stringify({ ids, dec }));
}
process.stdout.write(out.join("\n") + "\n");
