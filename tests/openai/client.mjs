// client.mjs: the official OpenAI Node client (the `openai` npm package, as
// published: tests/openai/package-lock.json), unmodified, with its baseURL set
// to mtserve's /v1, against the models of tests/llm/gen_served.py; run by
// tests/test_openai.c (test_npm_client) against a server started with
// --api-key.  Each check printed, then "openai-client: N passed, M failed";
// exit status 1 if any failed.
//
//   node tests/openai/client.mjs BASE_URL API_KEY EXPECTED_JSON
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, apiKey, expectedPath] = process.argv.slice(2);
if (!expectedPath) {
  console.error("usage: node client.mjs BASE_URL API_KEY EXPECTED_JSON");
  process.exit(2);
}
const expected = JSON.parse(readFileSync(expectedPath, "utf8"));
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
let passed = 0, failed = 0;
function check(name, ok, detail = "") {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ": " + detail : ""}`);
}
async function attempt(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, `threw ${e?.constructor?.name}: ${e?.message}`);
  }
}

const chat = expected.chats[0];
const zephyr = expected.chats.find((c) => c.model === "llama-chat");
const raw = expected.raw[0];

await attempt("models.list", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  check("models.list", ids.includes("qwen") && ids.includes("llama") && !ids.includes("en-fr"), ids.join(","));
});

await attempt("models.retrieve", async () => {
  const m = await client.models.retrieve("qwen");
  check("models.retrieve", m.id === "qwen" && m.object === "model" && m.owned_by === "mtserve");
});

let plain;
await attempt("chat.completions.create", async () => {
  plain = await client.chat.completions.create({
    model: chat.model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0,
  });
  check("chat: text equals the float64 reference", plain.choices[0].message.content === chat.expected,
        JSON.stringify(plain.choices[0].message.content));
  check("chat: finish_reason", plain.choices[0].finish_reason === chat.finish_reason, plain.choices[0].finish_reason);
  check("chat: usage", plain.usage.prompt_tokens === chat.prompt_ids.length &&
        plain.usage.completion_tokens === chat.ids.length, JSON.stringify(plain.usage));
});

await attempt("chat stream", async () => {
  const stream = await client.chat.completions.create({
    model: chat.model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += ch.delta?.content ?? "";
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  check("chat stream: chunks concatenate to the plain text", plain && text === plain.choices[0].message.content,
        `${chunks} chunks`);
  check("chat stream: finish_reason and usage", finish === chat.finish_reason &&
        usage?.total_tokens === plain?.usage.total_tokens);
});

await attempt("chat, Zephyr's template", async () => {
  const r = await client.chat.completions.create({
    model: zephyr.model, messages: zephyr.messages, max_tokens: zephyr.max_tokens, temperature: 0,
  });
  check("chat (llama-chat, Zephyr template): text equals the reference", r.choices[0].message.content === zephyr.expected,
        JSON.stringify(r.choices[0].message.content));
});

await attempt("completions.create", async () => {
  const r = await client.completions.create({ model: "llama", prompt: raw.text, max_tokens: 15, temperature: 0 });
  check("completion: text equals the reference", r.choices[0].text === raw.expected, JSON.stringify(r.choices[0].text));
  check("completion: prompt tokens", r.usage.prompt_tokens === raw.prompt_ids.length);
});

await attempt("seed", async () => {
  const ask = (seed) => client.chat.completions.create({
    model: "qwen", messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 10, temperature: 1.5, seed,
  }).then((r) => r.choices[0].message.content);
  const [a, b, c] = [await ask(11), await ask(11), await ask(12)];
  check("seed: the same seed, the same text", a === b, JSON.stringify(a));
  check("seed: another seed, another text", a !== c, JSON.stringify(c));
});

await attempt("stop", async () => {
  const want = chat.expected;
  const cp = [...want];
  const stop = cp.slice(Math.floor(cp.length / 2), Math.floor(cp.length / 2) + 2).join("");
  const r = await client.chat.completions.create({
    model: chat.model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, stop: [stop],
  });
  check("stop: cut before the stop string", r.choices[0].message.content === want.slice(0, want.indexOf(stop)) &&
        r.choices[0].finish_reason === "stop", `${JSON.stringify(stop)} -> ${JSON.stringify(r.choices[0].message.content)}`);
  // decoding ends at the stop string: fewer ids decoded (and counted) than the same chat without it
  check("stop: completion_tokens below the chat's without stop", plain &&
        r.usage.completion_tokens < plain.usage.completion_tokens && r.usage.completion_tokens > 0,
        `${r.usage.completion_tokens} < ${plain?.usage.completion_tokens}`);
  const stream = await client.chat.completions.create({
    model: chat.model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, stop: [stop],
    stream: true, stream_options: { include_usage: true },
  });
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += ch.delta?.content ?? "";
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  check("stop stream: chunks concatenate to the plain text with stop", text === r.choices[0].message.content &&
        finish === "stop" && usage?.completion_tokens === r.usage.completion_tokens,
        `${chunks} chunks, ${JSON.stringify(text)}, ${usage?.completion_tokens} tokens`);
});

await attempt("wrong key", async () => {
  const bad = new OpenAI({ baseURL, apiKey: "sk-wrong", maxRetries: 0 });
  try {
    await bad.chat.completions.create({ model: "qwen", messages: [{ role: "user", content: "hi" }] });
    check("wrong key: AuthenticationError", false, "no error");
  } catch (e) {
    check("wrong key: AuthenticationError", e instanceof OpenAI.AuthenticationError && e.status === 401 &&
          e.code === "invalid_api_key", `${e.constructor.name} ${e.status} ${e.code}`);
  }
});

await attempt("unknown model", async () => {
  try {
    await client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "hi" }] });
    check("unknown model: NotFoundError", false, "no error");
  } catch (e) {
    check("unknown model: NotFoundError", e instanceof OpenAI.NotFoundError && e.code === "model_not_found",
          `${e.constructor.name} ${e.code}`);
  }
});

console.log(`openai-client: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
