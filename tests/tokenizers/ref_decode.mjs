// ref_decode.mjs: token ids -> text with @lenml/tokenizers (the independent
// JavaScript implementation of tokenizer.json), for tests/llm/gen_served.py.
//
//   node tests/tokenizers/ref_decode.mjs TOKENIZER_DIR < [[ids...], ...] > ["text", ...]
//
// decode(ids, skip_special_tokens: true), as the server decodes a translation.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TokenizerLoader } from "@lenml/tokenizers";

const dir = process.argv[2];
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
});
const lists = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(lists.map((ids) => tok.decode(ids, { skip_special_tokens: true }))) + "\n");
