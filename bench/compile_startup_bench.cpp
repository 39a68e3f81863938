// compile-startup-bench CONFIG.json [MAX_SEQ] [THREADS]: what the compiled lane does on the CPU
// before it touches the GPU, each phase timed: lower the model's .lg program against the config
// (runtime::forward_graph, as make_compiled_lane_random), lift, fuse, emit (emit::cuda::compile),
// launches per layer, and NVRTC through the on-disk cache (run twice to see a warm cache) in
// THREADS units (default: this machine's cores, as the lane). No GPU needed; run as `lg run`
// sizes its cache (MAX_SEQ = prompt + new tokens, default 160).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "emit/cuda/compile.h"
#include "emit/cuda/nvrtc_program.h"
#include "model/config.h"
#include "runtime/forward_graph.h"
#include "support/startup_clock.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: compile-startup-bench CONFIG.json [MAX_SEQ] [THREADS]\n");
    return 2;
  }
  setenv("LG_STARTUP_TIMES", "1", 1);
  try {
    const lg::model::ModelConfig config = lg::model::load_config(argv[1]);
    const int64_t max_seq = argc > 2 ? std::atoll(argv[2]) : 160;
    const size_t threads =
        argc > 3 ? static_cast<size_t>(std::atoll(argv[3]))
                 : std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), 32));
    lg::StartupClock clock("compile-startup-bench");
    lg::runtime::ForwardGraph fg = lg::runtime::forward_graph(config, max_seq);
    clock.mark("lower", std::to_string(fg.graph.nodes.size()) + " nodes");
    lg::emit::cuda::CompileOptions opts;
    opts.clock = &clock;
    const lg::emit::cuda::Compilation comp = lg::emit::cuda::compile(fg.graph, opts);
    const auto ll = lg::emit::cuda::layer_launches(comp);
    clock.mark("launches per layer", std::to_string(ll.per_layer) + " x " + std::to_string(ll.layers) + " layers");
    const auto chunks = lg::emit::cuda::nvrtc_compile_program(comp.program, comp.arch, threads);
    size_t hits = 0;
    for (const auto& c : chunks) hits += c.cache_hit;
    clock.mark("nvrtc", std::to_string(hits) + "/" + std::to_string(chunks.size()) + " units from the cache");
    std::fprintf(stderr, "compile-startup-bench: total %.3f s\n", clock.total());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compile-startup-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
