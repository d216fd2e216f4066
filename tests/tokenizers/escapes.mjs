// escapes.mjs: one escaped fixture line -> its bytes, for the reference
// scripts beside it (ref_ids.mjs, ref_chat.mjs).  The escapes of
// tests/fixtures/tokenizer (README.md): \\ backslash, \n LF, \t TAB, \r CR,
// \xHH one raw byte; everything else is the line's own UTF-8.
export function unescape(line) {
  const out = [];
  const enc = new TextEncoder();
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c !== "\\") {
      const cp = line.codePointAt(i);
      if (cp > 0xffff) i++;
      out.push(...enc.encode(String.fromCodePoint(cp)));
      continue;
    }
    const n = line[++i];
    if (n === "\\") out.push(0x5c);
    else if (n === "n") out.push(0x0a);
    else if (n === "t") out.push(0x09);
    else if (n === "r") out.push(0x0d);
    else if (n === "x") {
      out.push(parseInt(line.slice(i + 1, i + 3), 16));
      i += 2;
    } else throw new Error(`bad escape \\${n} in ${JSON.stringify(line)}`);
  }
  return Uint8Array.from(out);
}
