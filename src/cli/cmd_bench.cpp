// `lg bench`: times a lane at a real model shape on the GPU, next to the memory-bandwidth floor.
//   lg bench --shape qwen3-0.6b|qwen3-8b|MODEL_DIR [--lane handwritten] [--prompt-len 512,2048]
//            [--decode-tokens 128] [--json]
// A preset shape gets deterministic random bf16 weights made on the device (hand-written and
// compiled lanes; no checkpoint of many GB has to exist or travel); a model directory is loaded as is. Reports the device-to-device copy
// bandwidth (bytes read + written, as shared/peers/hf_peer.py measures it), prefill tokens/s per
// prompt length, batch-1 decode ms/token (median over the steps, each a CUDA-graph replay plus the
// token round trip a generation loop pays), and the floor = decode weight bytes / bandwidth.
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
#include "cli/preset_shapes.h"
#include "support/error.h"

// Every GPU lane brings lg_cuda (bandwidth, device name) and the factory builds it.
#if defined(LG_HAVE_LANE_QWEN) || defined(LG_HAVE_LANE_COMPILED)
#define LG_BENCH_GPU 1
#include "lanes/factory.h"
#include "model/config.h"
#include "model/model_dir.h"
#include "runtime/cuda/device.h"
#include "runtime/solo_sequence.h"
#endif

namespace {

struct BenchOpts {
  std::string shape = "qwen3-0.6b";
  std::string lane = "handwritten";
  std::vector<int64_t> prompt_lens{512, 2048};
  int64_t decode_tokens = 128;
  int64_t decode_prompt = 32;
  bool json = false;
  lg::LaneOptions lane_options;
};

#ifdef LG_BENCH_GPU

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

using lg::cli::preset_config;

int run_bench(const BenchOpts& o) {
  using clock = std::chrono::steady_clock;
  const bool is_dir = std::filesystem::is_directory(o.shape);
  if (o.lane != "handwritten" && o.lane != "compiled" && !is_dir)
    throw lg::Error("lg bench: --lane " + o.lane + " needs a model directory as --shape (random real-shape weights "
                    "are made on the device for the hand-written and compiled lanes only)");
  std::optional<lg::model::ModelConfig> preset;
  if (!is_dir) preset = preset_config(o.shape, ", or a model directory");  // an unknown shape name is an error first
  if (!lg::cuda::cuda_device_available())
    throw lg::Error(o.lane == "cpu" ? "lg bench: no CUDA device: lg bench times a lane next to the GPU's copy bandwidth "
                                      "(its floor), so it needs a GPU even for --lane cpu; time the CPU reference with "
                                      "`lg run --lane cpu --model DIR` (it prints prefill and decode speeds)"
                                    : "lg bench: no CUDA device: the " + o.lane + " lane runs on a GPU");
  if (o.decode_tokens < 1) throw lg::Error("lg bench: --decode-tokens must be positive");
  const int64_t max_prompt = *std::max_element(o.prompt_lens.begin(), o.prompt_lens.end());
  const int64_t max_seq = std::max(max_prompt, o.decode_prompt + o.decode_tokens) + 8;
  lg::LaneOptions lane_options = o.lane_options;
  lane_options.max_seq = max_seq;

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
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(config.vocab_size - 1));
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = tok(rng);
    return t;
  };
  lg::runtime::SoloSequence seq(*lane);
  for (int64_t T : o.prompt_lens) {
    auto toks = random_tokens(T);
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

  auto prompt = random_tokens(o.decode_prompt);
  seq.restart();
  int32_t next = seq.feed(prompt, false).argmax;
  std::vector<double> step_ms;
  for (int64_t i = 0; i < o.decode_tokens; ++i) {
    const auto t0 = clock::now();
    next = seq.feed(std::span<const int32_t>(&next, 1), false).argmax;
    step_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  // The first replay includes the graph capture and instantiation: not a steady-state step.
  std::vector<double> steady(step_ms.begin() + 1, step_ms.end());
  if (steady.empty()) steady = step_ms;
  r["decode_steps"] = steady.size();
  r["decode_ms"] = median(steady);
  r["decode_p10_ms"] = percentile(steady, 0.1);
  r["decode_p90_ms"] = percentile(steady, 0.9);
  r["decode_over_floor"] = median(steady) / r["decode_floor_ms"].get<double>();
  // As the lane counts them (its plan, or the decode graph it captured): never a constant here.
  if (const auto n = lane->facts().launches_per_decode_layer) r["launches_per_decode_layer"] = *n;

  if (o.json) {
    std::cout << r.dump() << "\n";
    return 0;
  }
  std::cout << fmt::format("lg bench: {} on {} ({}), {}\n", o.shape, lane->name(), r["provenance"].get<std::string>(),
                           r["device"].get<std::string>());
  std::cout << fmt::format("  weights ready in {:.1f} s; copy bandwidth {:.2f} TB/s (read + write)\n", load_s, bw / 1e12);
  std::cout << fmt::format("  KV pool: {} tokens in blocks of {} (--kv-tokens, --block-size)\n",
                           lane->limits().pool_tokens(), lane->limits().block_size);
  for (int64_t T : o.prompt_lens)
    std::cout << fmt::format("  prefill T={:5}: {:8.2f} ms  {:10.0f} tokens/s\n", T,
                             r[fmt::format("prefill_{}_ms", T)].get<double>(),
                             r[fmt::format("prefill_{}_tok_per_s", T)].get<double>());
  std::cout << fmt::format("  decode (batch 1, CUDA graph): median {:.3f} ms/token over {} steps (p10 {:.3f}, p90 {:.3f})\n",
                           r["decode_ms"].get<double>(), steady.size(), r["decode_p10_ms"].get<double>(),
                           r["decode_p90_ms"].get<double>());
  std::cout << fmt::format("  floor: {:.2f} GB / {:.2f} TB/s = {:.3f} ms/token; decode / floor = {:.2f}\n",
                           weight_bytes / 1e9, bw / 1e12, r["decode_floor_ms"].get<double>(),
                           r["decode_over_floor"].get<double>());
  std::cout << "json: " << r.dump() << "\n";
  return 0;
}

#else

int run_bench(const BenchOpts&) { throw lg::Error("lg bench: this lg was built without CUDA (LG_HAVE_CUDA off)"); }

#endif

}  // namespace

LG_COMMAND("bench", [](CLI::App& app) {
  auto o = std::make_shared<BenchOpts>();
  auto* sub = app.add_subcommand("bench", "Time prefill and batch-1 decode of a lane at a real Qwen3 shape (random "
                                          "bf16 weights) or a model directory, next to the memory-bandwidth floor");
  sub->add_option("--shape", o->shape, "qwen3-0.6b, qwen3-8b, or a model directory")->capture_default_str();
  sub->add_option("--lane", o->lane, "lane to time: handwritten or compiled (random weights at a preset shape, or a model directory); cpu with a model directory")->capture_default_str();
  sub->add_option("--prompt-len", o->prompt_lens, "prefill lengths to time")
      ->delimiter(',')
      ->check(lg::cli::int_in_range(2, int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--decode-tokens", o->decode_tokens, "decode steps to time (the median is reported)")
      ->check(lg::cli::int_in_range(2, int64_t{1} << 20))
      ->capture_default_str();
  sub->add_flag("--json", o->json, "print one JSON object instead of the table");
  lg::cli::add_lane_options(sub, o->lane_options);
  return [o]() -> int { return run_bench(*o); };
});
