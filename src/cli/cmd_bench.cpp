// `lg bench`: times a lane at a real model shape on the GPU, next to its floors.
//   lg bench --shape qwen3-0.6b|qwen3-8b|MODEL_DIR|SHAPE_DIR [--lane handwritten|compiled] [--prompt-len 512,2048]
//            [--batch 1,16,64,128] [--context 512,8192,32768] [--decode-tokens 128] [--prefill-chunk 512]
//            [--json]
// A preset shape, or a directory holding only a config.json (bench/shapes/qwen3-30b-a3b), gets
// deterministic random bf16 weights made on the device (hand-written and compiled lanes; no
// checkpoint of many GB has to exist or travel); a model directory is loaded as is. Reports the device-to-device copy bandwidth (bytes read + written, as shared/peers/hf_peer.py
// measures it) and the bf16 tensor-core rate (a large cuBLASLt GEMM), prefill tokens/s per prompt
// length, and for every (context, batch) the decode step: B sequences at position `context` each
// decode one token per step (median step over the timed steps, each what a generation loop pays:
// the lane's step call, its copies and the token round trip), generated tokens/s, and the step's
// floor: max(weight bytes + the B sequences' K/V bytes over the copy bandwidth, FLOPs over the
// tensor-core rate).
// --prefill-chunk N,... also times, at every (context, batch), the mixed step continuous batching
// runs while a prompt is prefilled: the B decodes plus an N-token prompt chunk of one more sequence
// (its first N positions, rewritten each step), next to the same floor for that step's rows and
// with the chunk's cost over the decode step a prompt token.
// --sample lane|host times sampled decode (--sample-params T,K,P; Qwen3's generation_config by
// default: temperature 0.6, top-k 20, top-p 0.95): `lane` has every sequence draw its token on the lane (SeqStep::draw, what the
// scheduler asks of a GPU lane), `host` brings every logits row back and draws there (what a lane
// without its own draws costs); the step's time includes the draws. --sample-penalties R,P,F adds
// the penalties (each sequence's history: `context` random prompt ids and what it drew), applied
// on the lane with its draw or on the host, the host's share of each pick timed with the step.
// The decode sequences' earlier positions are not prefilled: each holds blocks of its own in the
// pool (as B prefilled sequences would), taken as they are. A step's kernels read every key
// whatever its value, so this times the same memory traffic without B x context tokens of prefill.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <vector>

#include "cli/command.h"
#include "cli/lane_options.h"
#include "cli/numeric_checks.h"
#include "cli/path_checks.h"
#include "cli/preset_shapes.h"
#include "lanes/factory.h"
#include "support/error.h"

// Every GPU lane brings lg_cuda (bandwidth, device name) and the factory builds it.
#if defined(LG_HAVE_LANE_QWEN) || defined(LG_HAVE_LANE_COMPILED)
#define LG_BENCH_GPU 1
#include "model/config.h"
#include "model/model_dir.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm_lt.h"
#include "runtime/solo_sequence.h"
#endif
#include "runtime/sampler.h"

namespace {

struct BenchOpts {
  std::string shape = "qwen3-0.6b";
  std::string lane;  ///< empty: lg::default_gpu_lane of the shape's config (check_bench_shape)
  std::vector<int64_t> prompt_lens{512, 2048};
  int64_t decode_tokens = 128;
  std::vector<int64_t> batches{1};
  std::vector<int64_t> contexts{32};
  std::vector<int64_t> chunks;  ///< --prefill-chunk: prompt chunks timed with each decode batch
  bool json = false;
  std::string sample = "none";  ///< none (greedy argmax), lane or host: see the top of the file
  std::vector<double> sample_params{0.6, 20, 0.95};  ///< temperature, top-k, top-p of --sample
  std::vector<double> sample_penalties{1, 0, 0};   ///< repetition, presence, frequency penalties of --sample
  lg::LaneOptions lane_options;
};

/// What lg bench refuses before it looks for a device, in a build with or without CUDA: an unknown
/// lane (named as such, as lg run names it, not as a lane that "runs on a GPU" or needs a model
/// directory), the cpu lane without a model directory, an unknown shape name. An absent --lane
/// becomes the lane the shape runs on (lg::default_gpu_lane: the hand-written lane for the
/// Qwen2/Qwen3 dense shapes its templates take, else compiled; a model directory's config.json is
/// read for it). Returns the config of a random-weights shape (a preset, or a directory holding
/// only a config.json); nullopt for a model directory.
std::optional<lg::model::ModelConfig> check_bench_shape(BenchOpts& o) {
  // A directory of only a config.json (bench/shapes/qwen3-30b-a3b) is a shape like a preset: its
  // .lg program's params get random bf16 weights made on the device.
  const bool is_dir = std::filesystem::is_directory(o.shape) && !lg::cli::config_only_dir(o.shape);
  if (!o.lane.empty()) {  // a lane given is judged before the shape is looked at
    lg::check_lane_known(o.lane);
    if (o.lane != "handwritten" && o.lane != "compiled" && !is_dir)
      throw lg::Error("lg bench: --lane " + o.lane + " needs a model directory as --shape (random real-shape weights "
                      "are made on the device for the hand-written and compiled lanes only)");
  }
  std::optional<lg::model::ModelConfig> preset;
  if (!is_dir) preset = lg::cli::random_shape(o.shape, ", or a model directory").config;  // an unknown name by name
  if (o.lane.empty())
    o.lane = lg::default_gpu_lane(preset ? *preset : lg::model::load_config(std::filesystem::path(o.shape) / "config.json"));
  return preset;
}

/// --sample's draws as a request's (--sample-params, --sample-penalties), checked before any device
/// is looked for: by the Sampler's own checks, each message naming the bench option. Throws
/// lg::Error for a value out of range, and for sampling values given with --sample none (which
/// would be ignored).
lg::runtime::SamplingOptions bench_sampling(const BenchOpts& o) {
  const auto& tkp = o.sample_params;
  const auto& rpf = o.sample_penalties;
  if (o.sample == "none") {
    if (rpf != std::vector<double>{1, 0, 0})
      throw lg::Error("lg bench: --sample-penalties needs --sample lane or host (the penalties change the pick)");
    if (tkp != BenchOpts{}.sample_params)
      throw lg::Error("lg bench: --sample-params needs --sample lane or host (greedy decode takes the argmax)");
  }
  if (!(tkp[1] >= 0 && tkp[1] <= INT32_MAX) || tkp[1] != static_cast<double>(static_cast<int64_t>(tkp[1])))
    throw lg::Error(fmt::format("lg bench: --sample-params: top-k must be a whole number in 0..2^31 - 1, got {}", tkp[1]));
  lg::runtime::SamplingOptions sampling{tkp[0], static_cast<int64_t>(tkp[1]), tkp[2], 7};
  sampling.penalties = {rpf[0], rpf[1], rpf[2]};
  try {
    lg::runtime::Sampler checked(sampling);
  } catch (const lg::Error& e) {
    // The Sampler names the value by its request field (temperature, top_p, repetition_penalty, ...).
    throw lg::Error(fmt::format("lg bench: --sample-params {},{},{} / --sample-penalties {},{},{}: {}", tkp[0], tkp[1],
                                tkp[2], rpf[0], rpf[1], rpf[2], e.what()));
  }
  return sampling;
}

/// The error of a bench that finds no GPU to run on (`why`: no device, or a build without CUDA).
lg::Error no_gpu_error(const BenchOpts& o, const std::string& why) {
  return lg::Error(o.lane == "cpu" ? "lg bench: " + why + ": lg bench times a lane next to the GPU's copy bandwidth (its "
                                         "floor), so it needs a GPU even for --lane cpu; time the CPU reference with "
                                         "`lg run --lane cpu --model DIR` (it prints prefill and decode speeds)"
                                   : "lg bench: " + why + ": the " + o.lane + " lane runs on a GPU");
}

#ifdef LG_BENCH_GPU

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

struct DecodeTiming {
  double median_ms, p10_ms, p90_ms;
  size_t steps;
};

/// Times `steps` decode steps of B sequences that start at position `context`, each in blocks of
/// its own (see the top of the file); nullopt when the pool cannot hold them. Two untimed steps
/// first (graph capture, cuBLASLt's algorithm choice). Sampled (`sample` lane or host), each
/// sequence picks with a copy of `sampling`'s Sampler; with a penalty its history is `context`
/// random prompt ids and the tokens it drew, as a request's. `chunk` > 0 makes every step a mixed
/// one: one more sequence, last in the batch, prefills positions 0 .. chunk - 1 of a random prompt
/// in blocks of its own (greedy; its pick is not used).
std::optional<DecodeTiming> time_decode(lg::Lane& lane, int64_t B, int64_t context, int64_t chunk, int64_t steps,
                                        int32_t vocab, const std::string& sample,
                                        const lg::runtime::SamplingOptions& sampling, std::mt19937& rng) {
  using clock = std::chrono::steady_clock;
  const lg::LaneLimits& lim = lane.limits();
  const int64_t warm = 2, last = context + warm + steps;  // positions context .. last - 1 are decoded
  const int64_t per_seq = (last + lim.block_size - 1) / lim.block_size;
  const int64_t chunk_blocks = (chunk + lim.block_size - 1) / lim.block_size;
  if (B * per_seq + chunk_blocks > lim.num_blocks || last > lim.max_seq || chunk > lim.max_seq ||
      B + chunk > lim.max_tokens)
    return std::nullopt;
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(B));
  std::vector<int32_t> tokens(static_cast<size_t>(B));
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  std::vector<lg::runtime::Sampler> samplers;
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(B)), outputs(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    auto& t = tables[static_cast<size_t>(b)];
    t.resize(static_cast<size_t>(per_seq));
    for (int64_t j = 0; j < per_seq; ++j) t[static_cast<size_t>(j)] = static_cast<int32_t>(b * per_seq + j);
    tokens[static_cast<size_t>(b)] = tok(rng);
    lg::runtime::SamplingOptions own = sampling;
    own.seed = sampling.seed + static_cast<uint64_t>(b);
    samplers.emplace_back(own);
    if (sampling.penalties.active())
      for (int64_t k = 0; k < context; ++k) prompts[static_cast<size_t>(b)].push_back(tok(rng));
  }
  std::vector<int32_t> chunk_tokens(static_cast<size_t>(chunk)), chunk_table(static_cast<size_t>(chunk_blocks));
  for (auto& t : chunk_tokens) t = tok(rng);
  for (int64_t j = 0; j < chunk_blocks; ++j) chunk_table[static_cast<size_t>(j)] = static_cast<int32_t>(B * per_seq + j);
  std::vector<lg::SeqStep> batch(static_cast<size_t>(B + (chunk > 0 ? 1 : 0)));
  if (chunk > 0) {
    lg::SeqStep& q = batch.back();
    q.tokens = chunk_tokens;
    q.start_pos = 0;
    q.blocks = chunk_table;
  }
  std::vector<double> ms;
  for (int64_t i = 0; i < warm + steps; ++i) {
    const auto t0 = clock::now();  // the host's share of a pick (the penalties' edits) counts too
    for (int64_t b = 0; b < B; ++b) {
      const auto k = static_cast<size_t>(b);
      auto& q = batch[k];
      q.tokens = std::span<const int32_t>(&tokens[k], 1);
      q.start_pos = context + i;
      q.blocks = tables[k];
      q.want_logits = sample == "host";
      if (sample == "lane") {
        q.draw = samplers[k].next_draw();
        q.penalty = samplers[k].penalty();
        q.logit_edits = samplers[k].logit_edits(prompts[k], outputs[k]);
      }
    }
    const auto res = lane.step(batch);
    for (int64_t b = 0; b < B; ++b) {
      const auto k = static_cast<size_t>(b);
      const lg::SeqResult& r = res[k];
      int32_t next = r.argmax;
      if (sample == "lane") next = r.drawn;
      if (sample == "host") next = samplers[k].pick(r.logits, prompts[k], outputs[k]);
      if (next < 0) throw lg::Error("lg bench: a step's logits were not finite (a NaN or Inf)");
      tokens[k] = next;
      if (sampling.penalties.active()) outputs[k].push_back(next);
    }
    if (i >= warm) ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  return DecodeTiming{median(ms), percentile(ms, 0.1), percentile(ms, 0.9), ms.size()};
}

/// The lane's options for this run: a context long enough for the longest prompt and the longest
/// context plus its decode tokens, in whole blocks; max_batch at least the largest --batch.
lg::LaneOptions bench_lane_options(const BenchOpts& o) {
  const int64_t max_prompt = *std::max_element(o.prompt_lens.begin(), o.prompt_lens.end());
  const int64_t max_context = *std::max_element(o.contexts.begin(), o.contexts.end());
  const int64_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  // Whole blocks: time_decode gives each sequence ceil(positions / block_size) blocks of a pool of
  // max_batch x max_seq positions.
  const int64_t bs = o.lane_options.block_size > 0 ? o.lane_options.block_size : 16;
  lg::LaneOptions lane_options = o.lane_options;
  const int64_t max_chunk = o.chunks.empty() ? 0 : *std::max_element(o.chunks.begin(), o.chunks.end());
  lane_options.max_seq =
      (std::max({max_prompt, max_chunk, max_context + o.decode_tokens + 2}) + 8 + bs - 1) / bs * bs;
  // A mixed step's chunk is one more sequence beside the batch's decodes.
  const int64_t max_seqs = max_batch + (max_chunk > 0 ? 1 : 0);
  if (lane_options.max_batch == 0) lane_options.max_batch = std::max<int64_t>(max_seqs, 1);
  if (lane_options.max_batch < max_seqs)
    throw lg::Error(fmt::format("lg bench: --batch {}{} needs --max-batch of at least {} (got {})", max_batch,
                                max_chunk > 0 ? " with --prefill-chunk" : "", max_seqs, lane_options.max_batch));
  // A mixed step holds the largest batch's decodes and the largest chunk (resolve_limits' default
  // budget is a 2,048-token chunk or a full batch).
  if (max_chunk > 0) {
    if (lane_options.max_tokens == 0)
      lane_options.max_tokens = std::max(std::min<int64_t>(lane_options.max_seq, 2048), max_batch + max_chunk);
    else if (lane_options.max_tokens < max_batch + max_chunk)
      throw lg::Error(fmt::format("lg bench: --batch {} with --prefill-chunk {} needs --max-step-tokens of at least {} "
                                  "(got {})",
                                  max_batch, max_chunk, max_batch + max_chunk, lane_options.max_tokens));
  }
  return lane_options;
}

/// Prefill of each --prompt-len on one sequence (median of 5 after a warm-up), into r as
/// prefill_{T}_ms and prefill_{T}_tok_per_s.
void time_prefills(lg::Lane& lane, const BenchOpts& o, int32_t vocab, std::mt19937& rng, nlohmann::json& r) {
  using clock = std::chrono::steady_clock;
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  lg::runtime::SoloSequence seq(lane);
  for (int64_t T : o.prompt_lens) {
    std::vector<int32_t> toks(static_cast<size_t>(T));
    for (auto& x : toks) x = tok(rng);
    seq.restart();
    seq.feed(toks, false);  // warm-up: cuBLASLt algorithm choice, first-touch
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) {
      seq.restart();
      const auto t0 = clock::now();
      seq.feed(toks, false);
      ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    r[fmt::format("prefill_{}_ms", T)] = median(ms);
    r[fmt::format("prefill_{}_tok_per_s", T)] = static_cast<double>(T) / (median(ms) / 1e3);
  }
  seq.restart();  // its blocks back: the decode timings place sequences in the pool themselves
}

/// The floors of the decode (and mixed) steps lg bench times: the bytes a step must read and the
/// FLOPs it must do, from the config alone.
struct StepFloor {
  const lg::model::ModelConfig& config;
  double bw, tc_rate;  ///< copy bandwidth (bytes/s), bf16 tensor-core rate (FLOP/s)

  double kv_bytes_per_position() const {  // K and V, bf16, every layer
    return 2.0 * 2.0 * static_cast<double>(config.num_hidden_layers) *
           static_cast<double>(config.num_key_value_heads * config.head_dim);
  }
  double attn_flops_per_position() const {  // q.k and p.v of every query head
    return 4.0 * static_cast<double>(config.num_hidden_layers) *
           static_cast<double>(config.num_attention_heads * config.head_dim);
  }
  /// ms: max(the weights the step's rows read (a mixture of experts: the union of their experts)
  /// + the decodes' K/V at `ctx` positions each over bw, FLOPs over tc_rate). B decode rows and
  /// `chunk` prompt rows; 2 FLOPs per bf16 weight a row reads (bytes = FLOPs), the LM head for
  /// each sequence's last row only, a causal chunk's attention N (N + 1) / 2 positions.
  double ms(int64_t B, double ctx, int64_t chunk) const {
    const double Bd = static_cast<double>(B), N = static_cast<double>(chunk);
    const double row_bytes = static_cast<double>(lg::model::decode_weight_bytes(config));
    const double head_bytes = 2.0 * static_cast<double>(config.vocab_size * config.hidden_size);
    const double kv_bytes = Bd * ctx * kv_bytes_per_position() + N * kv_bytes_per_position();
    const double weight_bytes = static_cast<double>(lg::model::decode_weight_bytes(config, B + chunk));
    double flops = Bd * row_bytes + Bd * ctx * attn_flops_per_position();
    if (chunk > 0) flops += row_bytes + (N - 1) * (row_bytes - head_bytes) + 0.5 * N * (N + 1) * attn_flops_per_position();
    return std::max((weight_bytes + kv_bytes) / bw, flops / tc_rate) * 1e3;
  }
};

/// The decode step of every (--context, --batch) next to its floor (StepFloor, the K/V at the
/// middle of the timed positions), and with each --prefill-chunk the mixed step (its "mixed"
/// entries). Returns the entries (r["decode"]); what the pool or the step's token budget cannot
/// hold goes to `skipped`.
nlohmann::json time_decodes(lg::Lane& lane, const BenchOpts& o, const lg::model::ModelConfig& config,
                            const lg::runtime::SamplingOptions& sampling, double bw, double tc_rate,
                            std::mt19937& rng, std::vector<std::string>& skipped) {
  const StepFloor floor{config, bw, tc_rate};
  const auto vocab = static_cast<int32_t>(config.vocab_size);
  const auto timing_json = [](const DecodeTiming& m, double floor_ms) {
    nlohmann::json e;
    e["steps"] = m.steps;
    e["step_ms"] = m.median_ms;
    e["p10_ms"] = m.p10_ms;
    e["p90_ms"] = m.p90_ms;
    e["floor_ms"] = floor_ms;
    e["over_floor"] = m.median_ms / floor_ms;
    return e;
  };
  nlohmann::json decode = nlohmann::json::array();
  for (int64_t C : o.contexts) {
    for (int64_t B : o.batches) {
      auto m = time_decode(lane, B, C, 0, o.decode_tokens, vocab, o.sample, sampling, rng);
      if (!m) {
        skipped.push_back(fmt::format("batch {} at context {}: needs {} KV positions, the pool has {}", B, C,
                                      B * (C + o.decode_tokens + 2), lane.limits().pool_tokens()));
        continue;
      }
      const double Bd = static_cast<double>(B), ctx = static_cast<double>(C) + 0.5 * static_cast<double>(o.decode_tokens);
      nlohmann::json e = timing_json(*m, floor.ms(B, ctx, 0));
      e["batch"] = B;
      e["context"] = C;
      e["tok_per_s"] = Bd / (m->median_ms / 1e3);
      e["kv_GB"] = Bd * ctx * floor.kv_bytes_per_position() / 1e9;
      nlohmann::json mixed = nlohmann::json::array();
      for (int64_t N : o.chunks) {
        const auto mm = time_decode(lane, B, C, N, o.decode_tokens, vocab, o.sample, sampling, rng);
        if (!mm) {
          skipped.push_back(fmt::format("batch {} at context {} with a {}-token chunk: needs {} KV positions and {} "
                                        "tokens a step, the pool has {} and the step {}",
                                        B, C, N, B * (C + o.decode_tokens + 2) + N, B + N,
                                        lane.limits().pool_tokens(), lane.limits().max_tokens));
          continue;
        }
        nlohmann::json x = timing_json(*mm, floor.ms(B, ctx, N));
        x["chunk"] = N;
        // What each prompt token of the chunk adds to the decode step (vs. its own prefill rate).
        x["chunk_us_per_token"] = (mm->median_ms - m->median_ms) * 1e3 / static_cast<double>(N);
        mixed.push_back(x);
      }
      if (!o.chunks.empty()) e["mixed"] = mixed;
      decode.push_back(e);
    }
  }
  return decode;
}

/// The human-readable report of r (what --json prints as it is), its JSON on the last line.
void print_bench(const BenchOpts& o, const lg::runtime::SamplingOptions& sampling, const lg::Lane& lane,
                 const nlohmann::json& r) {
  std::cout << fmt::format("lg bench: {} on {} ({}), {}\n", o.shape, lane.name(), r["provenance"].get<std::string>(),
                           r["device"].get<std::string>());
  std::cout << fmt::format("  weights ready in {:.1f} s; copy bandwidth {:.2f} TB/s (read + write)\n",
                           r["load_s"].get<double>(), r["copy_TBps"].get<double>());
  std::cout << fmt::format("  KV pool: {} tokens in blocks of {} (--kv-tokens, --block-size)\n",
                           lane.limits().pool_tokens(), lane.limits().block_size);
  for (int64_t T : o.prompt_lens)
    std::cout << fmt::format("  prefill T={:5}: {:8.2f} ms  {:10.0f} tokens/s\n", T,
                             r[fmt::format("prefill_{}_ms", T)].get<double>(),
                             r[fmt::format("prefill_{}_tok_per_s", T)].get<double>());
  std::cout << fmt::format("  floors: weights {:.2f} GB over {:.2f} TB/s = {:.3f} ms; tensor cores {:.0f} TFLOP/s\n",
                           r["decode_weight_GB"].get<double>(), r["copy_TBps"].get<double>(),
                           r["decode_floor_ms"].get<double>(), r["tensor_TFLOPs"].get<double>());
  const auto& rpf = o.sample_penalties;
  if (o.sample != "none")
    std::cout << fmt::format("  decode steps sample every token (temperature {}, top-k {}, top-p {}{}), drawn {}\n",
                             o.sample_params[0], o.sample_params[1], o.sample_params[2],
                             sampling.penalties.active()
                                 ? fmt::format("; penalties: repetition {}, presence {}, frequency {} over a history of "
                                               "the context's random ids",
                                               rpf[0], rpf[1], rpf[2])
                                 : "",
                             o.sample == "lane" ? "on the lane" : "on the host from the logits rows");
  std::cout << "  decode   batch  context   step ms  (p10 .. p90)      tokens/s   floor ms  step/floor\n";
  for (const auto& e : r["decode"])
    std::cout << fmt::format("         {:6} {:8} {:9.3f}  ({:.3f} .. {:.3f}) {:10.0f} {:10.3f} {:10.2f}\n",
                             e["batch"].get<int64_t>(), e["context"].get<int64_t>(), e["step_ms"].get<double>(),
                             e["p10_ms"].get<double>(), e["p90_ms"].get<double>(), e["tok_per_s"].get<double>(),
                             e["floor_ms"].get<double>(), e["over_floor"].get<double>());
  if (!o.chunks.empty()) {
    std::cout << "  mixed    batch  context  chunk   step ms  (p10 .. p90)    us/chunk token   floor ms  step/floor\n";
    for (const auto& e : r["decode"])
      for (const auto& x : e["mixed"])
        std::cout << fmt::format("         {:6} {:8} {:6} {:9.3f}  ({:.3f} .. {:.3f}) {:14.2f} {:10.3f} {:10.2f}\n",
                                 e["batch"].get<int64_t>(), e["context"].get<int64_t>(), x["chunk"].get<int64_t>(),
                                 x["step_ms"].get<double>(), x["p10_ms"].get<double>(), x["p90_ms"].get<double>(),
                                 x["chunk_us_per_token"].get<double>(), x["floor_ms"].get<double>(),
                                 x["over_floor"].get<double>());
  }
  for (const auto& sk : r["decode_skipped"]) std::cout << "  skipped: " << sk.get<std::string>() << " (--kv-tokens)\n";
  std::cout << "json: " << r.dump() << "\n";
}

int run_bench(BenchOpts o) {
  using clock = std::chrono::steady_clock;
  const std::optional<lg::model::ModelConfig> preset = check_bench_shape(o);
  const bool is_dir = !preset;
  const lg::runtime::SamplingOptions sampling = bench_sampling(o);
  if (!lg::cuda::cuda_device_available()) throw no_gpu_error(o, "no CUDA device");
  if (o.decode_tokens < 1) throw lg::Error("lg bench: --decode-tokens must be positive");
  const lg::LaneOptions lane_options = bench_lane_options(o);

  std::unique_ptr<lg::Lane> lane;
  std::unique_ptr<lg::model::ModelDir> dir;
  const auto t_load = clock::now();
  if (is_dir) {
    dir = std::make_unique<lg::model::ModelDir>(lg::model::ModelDir::open(o.shape));
    lane = lg::make_lane(o.lane, *dir, lane_options);
  } else {
    lane = lg::make_random_lane(o.lane, *preset, 20261129, lane_options);
  }
  const lg::model::ModelConfig& config = is_dir ? dir->config : *preset;
  const double load_s = std::chrono::duration<double>(clock::now() - t_load).count();

  nlohmann::json r;
  r["shape"] = o.shape;
  r["lane"] = lane->name();
  r["provenance"] = lg::to_string(lane->provenance());
  r["sample"] = o.sample;
  r["sample_params"] = o.sample_params;
  r["sample_penalties"] = o.sample_penalties;
  r["device"] = lg::cuda::device_description();
  r["load_s"] = load_s;
  r["kv_pool_tokens"] = lane->limits().pool_tokens();
  r["kv_block_size"] = lane->limits().block_size;
  const double bw = lg::cuda::measure_copy_bandwidth();
  r["copy_TBps"] = bw / 1e12;
  const double weight_bytes = static_cast<double>(lg::model::decode_weight_bytes(config));
  r["decode_weight_GB"] = weight_bytes / 1e9;
  r["decode_floor_ms"] = weight_bytes / bw * 1e3;

  std::mt19937 rng(7);
  time_prefills(*lane, o, static_cast<int32_t>(config.vocab_size), rng, r);
  const double tc_rate = lg::cuda::measure_bf16_tensor_rate();
  r["tensor_TFLOPs"] = tc_rate / 1e12;
  std::vector<std::string> skipped;
  r["decode"] = time_decodes(*lane, o, config, sampling, bw, tc_rate, rng, skipped);
  r["decode_skipped"] = skipped;
  for (const auto& e : r["decode"])  // the batch-1 figures at the first context, as before --batch existed
    if (e["batch"] == 1) {
      r["decode_ms"] = e["step_ms"];
      r["decode_over_floor"] = e["step_ms"].get<double>() / r["decode_floor_ms"].get<double>();
      break;
    }
  // As the lane counts them (its plan, or the decode graph it captured): never a constant here.
  if (const auto n = lane->facts().launches_per_decode_layer) r["launches_per_decode_layer"] = *n;

  if (o.json)
    std::cout << r.dump() << "\n";
  else
    print_bench(o, sampling, *lane, r);
  return 0;
}

#else

int run_bench(BenchOpts o) {
  check_bench_shape(o);
  bench_sampling(o);
  throw no_gpu_error(o, "this lg was built without CUDA (LG_HAVE_CUDA off)");
}

#endif

}  // namespace

LG_COMMAND("bench", [](CLI::App& app) {
  auto o = std::make_shared<BenchOpts>();
  auto* sub = app.add_subcommand("bench", "Time prefill and batched decode of a lane at a real Qwen3 shape (random "
                                          "bf16 weights) or a model directory, next to the bandwidth and tensor-core floors");
  sub->add_option("--shape", o->shape, "qwen3-0.6b, qwen3-8b, a model directory, or a directory holding only a "
                                       "config.json (random weights at its shape)")->capture_default_str();
  sub->add_option("--lane", o->lane, "lane to time: handwritten or compiled (random weights at a preset shape, or a model directory); cpu with a model directory, on a machine with a GPU (default: handwritten where its templates take the shape, else compiled)")
      ->check(lg::cli::lane_name());
  sub->add_option("--prompt-len", o->prompt_lens, "prefill lengths to time")
      ->delimiter(',')
      ->check(lg::cli::int_in_range(2, int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--decode-tokens", o->decode_tokens, "decode steps to time (the median is reported)")
      ->check(lg::cli::int_in_range(2, int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--batch", o->batches, "decode batch sizes to time (sequences per step)")
      ->delimiter(',')
      ->check(lg::cli::int_in_range(1, int64_t{1} << 16))
      ->capture_default_str();
  sub->add_option("--context", o->contexts, "positions each decoding sequence already holds")
      ->delimiter(',')
      ->check(lg::cli::int_in_range(1, int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--prefill-chunk", o->chunks,
                  "also time each decode batch with an N-token prompt chunk in its step (continuous batching's "
                  "mixed step)")
      ->delimiter(',')
      ->check(lg::cli::int_in_range(1, int64_t{1} << 20));
  sub->add_option("--sample", o->sample,
                  "decode steps greedy (none), or sampling every token (temperature 0.6, top-k 20, top-p 0.95) "
                  "drawn on the lane (lane) or on the host from each logits row (host)")
      ->check(CLI::IsMember({"none", "lane", "host"}))
      ->capture_default_str();
  sub->add_option("--sample-params", o->sample_params, "--sample's temperature (>= 0), top-k (0: off) and top-p (in (0, 1])")
      ->delimiter(',')
      ->expected(3)
      ->capture_default_str();
  sub->add_option("--sample-penalties", o->sample_penalties,
                  "--sample's repetition (> 0; 1: off), presence and frequency (in [-2, 2]) penalties; each "
                  "sequence's history is then its context's random ids and its drawn tokens")
      ->delimiter(',')
      ->expected(3)
      ->capture_default_str();
  sub->add_flag("--json", o->json, "print one JSON object instead of the table");
  lg::cli::add_lane_options(sub, o->lane_options);
  return [o]() -> int { return run_bench(*o); };
});
