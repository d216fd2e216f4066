// ref_prompt.mjs: chat prompts of translations as Hugging Face's
// apply_chat_template makes them, for tests/llm/gen_served.py: the model's
// own chat_template (its tokenizer_config.json) rendered by @huggingface/jinja,
// the result tokenized by @lenml/tokenizers (add_special_tokens false, as
// apply_chat_template(tokenize=True) does); both independent of our C code.
//
//   node tests/tokenizers/ref_prompt.mjs TOKENIZER_DIR < [{src, tgt, text} | {messages}] > [{prompt, ids}]
//
// An item with "messages" is that conversation as it is (the OpenAI-compatible
// chat of tests/test_openai.c); the others a translation's user turn.
// src and tgt are language names; the user turn is the instruction of
// engine/tokenizer/tokenizer.h (MT_PROMPT_INSTRUCTION); enable_thinking false.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { TokenizerLoader } from "@lenml/tokenizers";

const INSTRUCTION = "Translate the following {src} text into {tgt}. Reply with the translation only.\n\n{text}";
const dir = process.argv[2];
const cfg = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
  tokenizerConfig: cfg,
});
const tpl = new Template(cfg.chat_template);
const str = (t) => (t && typeof t === "object" ? t.content : t);
const out = JSON.parse(readFileSync(0, "utf8")).map(({ src, tgt, text, messages }) => {
  const content = messages ? null : INSTRUCTION.replaceAll("{src}", src).replaceAll("{tgt}", tgt).replace("{text}", () => text);
  const prompt = tpl.render({
    messages: messages ?? [{ role: "user", content }], add_generation_prompt: true, enable_thinking: false,
    bos_token: str(cfg.bos_token) || "", eos_token: str(cfg.eos_token) || "",
  });
  return { prompt, ids: tok.encode(prompt, { add_special_tokens: false }) };
});
process.stdout.write(JSON.stringify(out) + "\n");
