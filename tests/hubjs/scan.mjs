// Hugging Face's own client reads a cache:  node scan.mjs CACHE_DIR
// Prints what its scanCacheDir found, as JSON: the repositories (name, type, size,
// files), each revision (commit, refs, size, files with their blob), and its warnings
// (a repository it could not read is one).
import { scanCacheDir } from "@huggingface/hub";
import { relative } from "path";

const cacheDir = process.argv[2];
if (!cacheDir) {
  console.error("usage: node scan.mjs CACHE_DIR");
  process.exit(2);
}
const scan = await scanCacheDir(cacheDir);
const out = {
  size: scan.size,
  warnings: scan.warnings.map((w) => String(w?.message ?? w)),
  repos: scan.repos.map((r) => ({
    name: r.id.name,
    type: r.id.type,
    size: r.size,
    filesCount: r.filesCount,
    revisions: r.revisions.map((v) => ({
      commitOid: v.commitOid,
      refs: v.refs,
      size: v.size,
      files: v.files.map((f) => ({ path: relative(v.path, f.path), blob: relative(r.path, f.blob.path), size: f.blob.size })),
    })),
  })),
};
console.log(JSON.stringify(out));
