// bench/ct2/ct2_bench.cc: CTranslate2's C++ Translator timed as bench/bench_engine
// times mtserve, on the same source ids.
//
//   ct2_bench --model CT2_DIR --src-ids FILE [--n 32] [--threads 2]
//             [--compute-type float32|int8] [--configs 1:1,32:1,32:4]
//             [--max-decoding-length 40] [--ids-out FILE] [--use-vmap 1]
//             [--target-prefix TOKEN]
//
// FILE: one source a line as a JSON list of token ids, as bench_engine
// --src-out writes them (the model's SentencePiece ids, </s> last; CTranslate2
// adds no </s> to a source by itself).  The ids become tokens through the
// converted model's own source vocabulary, and back to ids again: the ids the
// driver decodes are printed ("src_ids_sum", and --ids-out's "src" record) so
// the caller can check they are the ids mtserve decodes.
//
// Timing, as bench_engine: the model is loaded and the input read outside it;
// for each batch:beam configuration one warm-up chunk (the first `batch`
// sources), then all n sources in chunks of `batch`, one translate_batch call
// per chunk, timed with the steady clock.
// Target tokens, as bench_engine counts mtserve's (mt_hyp.n_ids): the ids
// generated, </s> included.  CTranslate2 leaves </s> out of its hypotheses
// (return_end_token false, its default, which also keeps its length
// normalization stock), so a hypothesis shorter than max_decoding_length
// ended on </s> and counts one more; one at the cap stopped there, without </s>.
//
// Decoding options: beam_size, patience 1, length_penalty 1, one hypothesis,
// min_decoding_length 0, greedy = beam 1 (sampling_topk 1), everything else
// at CTranslate2's defaults.  max_decoding_length: mtserve's max_length counts
// the decoder's start token, so max_length 41 gives at most 40 ids (39 tokens
// and a forced </s>); CTranslate2's cap counts generated tokens only: 40 runs
// the same 40 decoder steps (bench/ct2/compare.py passes max_length - 1).
//
// --target-prefix TOKEN: every sentence decoded with the target prefix [TOKEN]
// (NLLB-200 / M2M-100: the target language's token, as CTranslate2's documentation
// translates with them; mtserve forces the same token as the first generated id).
// The prefix is part of CTranslate2's output and of its max_decoding_length, as
// the forced token is of mtserve's ids and max_length.
//
// --use-vmap 1: TranslationOptions.use_vmap, the model directory's vmap.txt
// restricting each batch's output vocabulary (refused when it has none).
//
// --ids-out FILE: a first line {"src": [[ids]...]} (the round-tripped source
// ids), then one line a configuration, {"batch","beam","sentences","ids"}: each
// output as target ids, </s> appended when the hypothesis ended on it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <ctranslate2/models/sequence_to_sequence.h>
#include <ctranslate2/translator.h>

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void fail(const std::string& msg) {
  std::cerr << "ct2_bench: " << msg << "\n";
  std::exit(2);
}

// "[1, 2, 3]" -> {1, 2, 3}; anything but digits separates numbers.
std::vector<size_t> parse_ids(const std::string& line) {
  std::vector<size_t> ids;
  size_t v = 0;
  bool in = false;
  for (char c : line) {
    if (c >= '0' && c <= '9') {
      v = v * 10 + size_t(c - '0');
      in = true;
    } else if (in) {
      ids.push_back(v);
      v = 0;
      in = false;
    } else if (c == '-') {
      fail("negative id in the source ids");
    }
  }
  if (in)
    ids.push_back(v);
  return ids;
}

struct Config {
  size_t batch, beam;
};

std::vector<Config> parse_configs(const std::string& s) {
  std::vector<Config> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos)
      end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
      fail("--configs: expected batch:beam, got " + item);
    Config c{std::stoul(item.substr(0, colon)), std::stoul(item.substr(colon + 1))};
    if (!c.batch || !c.beam)
      fail("--configs: batch and beam must be at least 1");
    out.push_back(c);
    pos = end + 1;
  }
  return out;
}

void write_id_list(FILE* f, const std::vector<size_t>& ids) {
  std::fputc('[', f);
  for (size_t i = 0; i < ids.size(); i++)
    std::fprintf(f, i ? ",%zu" : "%zu", ids[i]);
  std::fputc(']', f);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, src_path, compute = "float32", configs = "1:1,32:1,32:4", ids_out, prefix;
  size_t n_max = 32, threads = 2, max_dec = 40, use_vmap = 0;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc)
      fail(a + " needs a value");
    const std::string v = argv[i + 1];
    if (a == "--model") model_dir = v;
    else if (a == "--src-ids") src_path = v;
    else if (a == "--n") n_max = std::stoul(v);
    else if (a == "--threads") threads = std::stoul(v);
    else if (a == "--compute-type") compute = v;
    else if (a == "--configs") configs = v;
    else if (a == "--max-decoding-length") max_dec = std::stoul(v);
    else if (a == "--ids-out") ids_out = v;
    else if (a == "--use-vmap") use_vmap = std::stoul(v);
    else if (a == "--target-prefix") prefix = v;
    else fail("unknown option " + a);
  }
  if (model_dir.empty() || src_path.empty())
    fail("usage: ct2_bench --model CT2_DIR --src-ids FILE [--n 32] [--threads 2] [--compute-type float32] "
         "[--configs 1:1,32:1,32:4] [--max-decoding-length 40] [--ids-out FILE] [--use-vmap 1] "
         "[--target-prefix TOKEN]");
  const std::vector<Config> cfgs = parse_configs(configs);

  // the model: one replica, `threads` intra-op threads (OpenMP)
  const double t_load = seconds_now();
  ctranslate2::models::ModelLoader loader(model_dir);
  loader.device = ctranslate2::Device::CPU;
  loader.compute_type = ctranslate2::str_to_compute_type(compute);
  loader.num_replicas_per_device = 1;
  ctranslate2::ReplicaPoolConfig pool;
  pool.num_threads_per_replica = threads;
  ctranslate2::Translator translator(loader, pool);
  const double load_s = seconds_now() - t_load;
  auto s2s = std::dynamic_pointer_cast<const ctranslate2::models::SequenceToSequenceModel>(
      translator.get_first_replica().model());
  if (!s2s)
    fail(model_dir + " is not a sequence-to-sequence model");
  if (use_vmap && !s2s->get_vocabulary_map())
    fail(model_dir + " has no vmap.txt (--use-vmap)");
  const ctranslate2::Vocabulary& sv = s2s->get_source_vocabulary();
  const ctranslate2::Vocabulary& tv = s2s->get_target_vocabulary();
  const size_t eos = tv.eos_id();
  if (!prefix.empty() && !tv.contains(prefix))
    fail("--target-prefix " + prefix + " is not a token of the target vocabulary");

  // the sources: ids -> tokens (CTranslate2's input) -> ids again (what it decodes)
  std::vector<std::vector<std::string>> src;
  std::vector<std::vector<size_t>> src_back;
  {
    std::ifstream f(src_path);
    if (!f)
      fail("cannot open " + src_path);
    std::string line;
    while (src.size() < n_max && std::getline(f, line)) {
      const std::vector<size_t> ids = parse_ids(line);
      if (ids.empty())
        continue;
      std::vector<std::string> toks;
      std::vector<size_t> back;
      for (size_t id : ids) {
        if (id >= sv.size())
          fail("source id " + std::to_string(id) + " outside the model's vocabulary");
        toks.push_back(sv.to_token(id));
        back.push_back(sv.to_id(toks.back(), /*allow_unk=*/false));
      }
      src.push_back(std::move(toks));
      src_back.push_back(std::move(back));
    }
  }
  const size_t n = src.size();
  if (!n)
    fail("no sources in " + src_path);
  size_t src_tokens = 0, src_sum = 0;
  for (auto& ids : src_back)
    for (size_t id : ids)
      src_tokens++, src_sum += id;

  FILE* fo = ids_out.empty() ? nullptr : std::fopen(ids_out.c_str(), "w");
  if (!ids_out.empty() && !fo)
    fail("cannot write " + ids_out);
  if (fo) {
    std::fputs("{\"src\": [", fo);
    for (size_t i = 0; i < n; i++) {
      if (i)
        std::fputc(',', fo);
      write_id_list(fo, src_back[i]);
    }
    std::fputs("]}\n", fo);
  }
  std::printf("{\"model\": {\"engine\": \"ct2\", \"dir\": \"%s\", \"compute_type\": \"%s\", \"vocab\": %zu, "
              "\"threads\": %zu, \"sentences\": %zu, \"source_tokens\": %zu, \"src_ids_sum\": %zu, "
              "\"max_decoding_length\": %zu, \"load_ms\": %.0f}}\n",
              model_dir.c_str(), compute.c_str(), tv.size(), threads, n, src_tokens, src_sum, max_dec,
              load_s * 1e3);
  std::fflush(stdout);

  for (const Config& c : cfgs) {
    ctranslate2::TranslationOptions opt;
    opt.beam_size = c.beam;
    opt.patience = 1;
    opt.length_penalty = 1;
    opt.num_hypotheses = 1;
    opt.min_decoding_length = 0;
    opt.max_decoding_length = max_dec;
    opt.sampling_topk = 1;
    opt.use_vmap = use_vmap != 0;

    std::vector<ctranslate2::TranslationResult> res;
    auto decode = [&](size_t count) {
      res.clear();
      const double t0 = seconds_now();
      for (size_t i = 0; i < count; i += c.batch) {
        const size_t k = std::min(c.batch, count - i);
        std::vector<std::vector<std::string>> chunk(src.begin() + long(i), src.begin() + long(i + k));
        std::vector<std::vector<std::string>> tgt(prefix.empty() ? 0 : k, std::vector<std::string>{prefix});
        for (auto& r : translator.translate_batch(chunk, tgt, opt, /*max_batch_size=*/0))
          res.push_back(std::move(r));
      }
      return seconds_now() - t0;
    };
    decode(std::min(c.batch, n));  // warm-up chunk
    const double dt = decode(n);

    size_t ntok = 0;
    std::vector<std::vector<size_t>> outs;
    for (auto& r : res) {
      std::vector<size_t> ids;
      for (const std::string& t : r.output())
        ids.push_back(tv.to_id(t, /*allow_unk=*/false));
      if (ids.size() < max_dec)  // it ended on </s>, which CTranslate2 does not return
        ids.push_back(eos);
      ntok += ids.size();
      outs.push_back(std::move(ids));
    }
    std::printf("{\"engine\": \"ct2\", \"compute_type\": \"%s\", \"batch\": %zu, \"beam\": %zu, "
                "\"sentences\": %zu, \"seconds\": %.3f, \"sent_per_s\": %.2f, \"tok_per_s\": %.1f, "
                "\"target_tokens\": %zu, \"vmap\": %s}\n",
                compute.c_str(), c.batch, c.beam, n, dt, double(n) / dt, double(ntok) / dt, ntok,
                use_vmap ? "true" : "false");
    std::fflush(stdout);
    if (fo) {
      std::fprintf(fo, "{\"batch\": %zu, \"beam\": %zu, \"sentences\": %zu, \"ids\": [", c.batch, c.beam, n);
      for (size_t i = 0; i < outs.size(); i++) {
        if (i)
          std::fputc(',', fo);
        write_id_list(fo, outs[i]);
      }
      std::fputs("]}\n", fo);
    }
  }
  if (fo)
    std::fclose(fo);
  return 0;
}
