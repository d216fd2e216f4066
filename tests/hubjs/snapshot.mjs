// Hugging Face's own client downloads a repository into a cache, as a user of
// @huggingface/hub would:  node snapshot.mjs HUB_URL CACHE_DIR org/name[@rev]
// Prints the snapshot folder it returns (the last line of stdout).
import { snapshotDownload } from "@huggingface/hub";

const [hubUrl, cacheDir, spec] = process.argv.slice(2);
if (!hubUrl || !cacheDir || !spec) {
  console.error("usage: node snapshot.mjs HUB_URL CACHE_DIR org/name[@rev]");
  process.exit(2);
}
console.debug = (...a) => console.error(...a);   // its "Downloading ..." lines: not our output
const [name, revision] = spec.split("@");
try {
  const folder = await snapshotDownload({ repo: { type: "model", name }, revision, cacheDir, hubUrl });
  console.log(folder);
} catch (e) {
  console.error(`snapshotDownload: ${e.message}`);
  process.exit(1);
}
