// ref_chat_msgs.mjs: the reference chat prompts of message lists for
// tests/test_openai_units.c (engine/tokenizer/prompt.c, mt_prompt_chat_*): each
// published chat template (tests/fixtures/chat-templates/*.json) rendered by
// @huggingface/jinja as transformers' apply_chat_template does it
// (add_generation_prompt true; Qwen3 with enable_thinking false), the string
// tokenized by @lenml/tokenizers (add_special_tokens false).  Both independent
// of our C renderer and tokenizer.
//
//   node tests/tokenizers/ref_chat_msgs.mjs TOKENIZERS_DIR TEMPLATES_DIR > chat_msgs.jsonl
//
// Conversations: multi-turn lists with and without a system message (a system
// message later in the list too, where the template allows it), Qwen3 assistant
// turns holding <think> reasoning, contents from texts.txt and the corpus test
// split.  A list the template refuses (raise_exception: Llama 2's alternation)
// is written with "error" and the message, and the C side must refuse it too.
// Left out (counted in the summary): contents that spell an added token, not a blank one (kept
// plain on purpose by the C side), with U+FEFF or U+0085, and for llama2-chat
// contents ending in a character on which Python's strip and JavaScript's trim
// disagree (as ref_chat.mjs; gemma: starting or ending, every content but a first
// system message, which its template does not trim), and Llama 2 lists whose system message JavaScript
// finds loosely equal to false ("", blanks, "0": see below), and Qwen3 lists with
// an assistant content starting with a blank other than "\n" (@huggingface/jinja's
// lstrip('\n') strips every blank: see below).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { TokenizerLoader } from "@lenml/tokenizers";
import { unescape } from "./escapes.mjs";

const [tokDir, tplDir] = process.argv.slice(2);
if (!tplDir) {
  console.error("usage: node ref_chat_msgs.mjs TOKENIZERS_DIR TEMPLATES_DIR");
  process.exit(2);
}
const readJSON = (p) => JSON.parse(readFileSync(p, "utf8"));
const toks = {};
for (const name of ["llama2", "qwen3", "gemma3"]) {
  const tj = readJSON(join(tokDir, name, "tokenizer.json"));
  toks[name] = {
    tok: TokenizerLoader.fromPreTrained({ tokenizerJSON: tj, tokenizerConfig: readJSON(join(tokDir, name, "tokenizer_config.json")) }),
    added: tj.added_tokens.map((t) => t.content).filter((a) => !/^[\p{White_Space}\u2581]+$/u.test(a)),
  };
}
const SETS = [
  ["llama2-chat", "llama2", "Llama-2-7b-chat-hf.json"],
  ["zephyr", "llama2", "TinyLlama-1.1B-Chat-v1.0.json"],
  ["qwen3", "qwen3", "Qwen3-0.6B.json"],
  ["chatml", "qwen3", "Qwen2.5-0.5B-Instruct.json"],
  ["gemma", "gemma3", "gemma-3-1b-it.json"],
];

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
function lines(file) {
  const out = [];
  for (const s of readFileSync(file, "utf8").split("\n")) {
    if (s === "") continue;
    try { out.push(utf8.decode(unescape(s))); } catch { /* invalid UTF-8: not a content */ }
  }
  return out;
}
const texts = [...lines(join(tplDir, "texts.txt")),
  ...lines("tests/fixtures/tokenizer/inputs/test.en.txt").filter((_, i) => i % 37 === 0).slice(0, 20)];
const T = (i) => texts[i % texts.length];

// The conversations: roles, contents drawn from the texts in turn.
const SHAPES = [
  ["system", "user"],
  ["system", "user", "assistant", "user"],
  ["user", "assistant", "user"],
  ["user"],
  ["system", "user", "assistant", "user", "assistant", "user"],
  ["user", "system", "user"],             // a later system turn (Llama 2: refused)
  ["user", "user"],                       // not alternating (Llama 2: refused)
  ["system", "user", "assistant"],        // ends with the assistant (Llama 2: refused by us, not an error there)
  ["user", "assistant", "system", "user"], // a system turn where a user one stands (Gemma: refused)
  ["system"],                             // no turn (Gemma: the system message dropped, as its template does)
];
const THINK = "<think>\nFirst I read it.\n</think>\n\nThe answer.";

const tokenOf = (v) => (v && typeof v === "object" ? v.content : v);
const out = [];
const summary = { cases: {}, refused: {}, left_out: {} };
let k = 0;
for (const [kind, tname, fixture] of SETS) {
  const cfg = readJSON(join(tplDir, fixture));
  const tpl = new Template(cfg.chat_template);
  const { tok, added } = toks[tname];
  const key = `${kind}/${tname}`;
  summary.cases[key] = 0;
  summary.refused[key] = 0;
  const convs = [];
  for (let rep = 0; rep < 12; rep++)
    for (const shape of SHAPES) convs.push(shape.map((role) => ({ role, content: T(k++) })));
  if (kind === "qwen3") {   // reasoning in assistant turns, before and after the last user turn
    convs.push([{ role: "user", content: T(k++) }, { role: "assistant", content: THINK }, { role: "user", content: T(k++) }]);
    convs.push([{ role: "system", content: T(k++) }, { role: "user", content: T(k++) }, { role: "assistant", content: THINK }]);
    convs.push([{ role: "user", content: T(k++) }, { role: "assistant", content: "plain answer" }]);
  }
  for (const messages of convs) {
    const bad = messages.find((m) => added.some((a) => m.content.includes(a)) && m.content !== THINK);
    if (bad) { summary.left_out[key] = (summary.left_out[key] ?? 0) + 1; continue; }
    if (messages.some((m) => /[\ufeff\u0085]/u.test(m.content)) ||
        ((kind === "llama2-chat" || kind === "gemma") &&
         messages.some((m) => /^[\u001c-\u001f\u0085\ufeff]|[\u001c-\u001f\u0085\ufeff]$/u.test(m.content)))) {
      summary.left_out[key] = (summary.left_out[key] ?? 0) + 1;
      continue;
    }
    // Llama 2's `system_message != false`: @huggingface/jinja compares as JavaScript's
    // loose !=, under which "", whitespace or "0" equal false (Python's Jinja: never)
    if (kind === "llama2-chat" && messages[0].role === "system" && messages[0].content == false) {
      summary.left_out[key] = (summary.left_out[key] ?? 0) + 1;
      continue;
    }
    // Qwen3's content.lstrip('\n'): @huggingface/jinja's lstrip/strip ignore their
    // argument and strip all whitespace (Python's strip only '\n')
    if (kind === "qwen3" && messages.some((m) => m.role === "assistant" && /^\n*[^\S\n]/u.test(m.content))) {
      summary.left_out[key] = (summary.left_out[key] ?? 0) + 1;
      continue;
    }
    let prompt;
    try {
      prompt = tpl.render({
        messages, add_generation_prompt: true, ...(kind === "qwen3" ? { enable_thinking: false } : {}),
        bos_token: tokenOf(cfg.bos_token) ?? "", eos_token: tokenOf(cfg.eos_token) ?? "",
        unk_token: tokenOf(cfg.unk_token) ?? "", pad_token: tokenOf(cfg.pad_token) ?? "",
      });
    } catch (e) {
      out.push(JSON.stringify({ kind, tok: tname, messages, error: String(e.message ?? e) }));
      summary.refused[key]++;
      continue;
    }
    out.push(JSON.stringify({ kind, tok: tname, messages, prompt, ids: tok.encode(prompt, { add_special_tokens: false }) }));
    summary.cases[key]++;
  }
}
out.push(JSON.stringify({ summary }));
process.stdout.write(out.join("\n") + "\n");
console.error(JSON.stringify(summary));
