// Compile time per phase (not a test): how long checking and lowering, lifting, fusion, emission
// and the stage listing take, in-process, for
//   - the curve: generated programs of growing size (tests/common/deep_programs.h): a `+` chain
//     of n terms in one statement, and fns that inline to a chain of n nodes (fn_tower);
//   - one program: `--lg FILE --config config.json` (e.g. models/qwen3.lg with an 8B-shaped
//     config, bench/configs/qwen3-8b.json), S as `lg compile` picks it (at most 4096).
// Each phase's time is the CPU time of this (single-threaded) process in seconds, the least of
// --repeat runs (default 3): on a shared machine wall time mostly measures the neighbours.
// `unfused` lifts and emits with no fusion pass, as `lg compile --no-fuse`. The numbers in
// docs/lifting.md come from this.
//
// Usage: compile_time_bench [--max-nodes N] [--write DIR] [--repeat R]
//        compile_time_bench --lg FILE --config FILE [--repeat R]
// --write DIR also writes each generated program to DIR/chain-N.lg and DIR/fns-N.lg (with
// DIR/config.json) so that the CLI can be timed on the same text.
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "common/deep_programs.h"
#include "emit/cuda/program.h"
#include "lang/lower.h"
#include "lift/explain.h"
#include "lift/lift.h"
#include "lift/passes.h"
#include "support/error.h"

namespace {

int repeat = 3;

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// CPU seconds of f, the least of `repeat` runs.
double seconds(const std::function<void()>& f) {
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const double t0 = cpu_now();
    f();
    best = std::min(best, cpu_now() - t0);
  }
  return best;
}

// Times lift, fuse, emit and explain of `g`, fused and unfused, and prints one row.
void measure(const std::string& name, const lg::ir::Graph& g, double front) {
  lg::lift::StagedProgram p, u;
  const double lift = seconds([&] { p = lg::lift::lift(g); });
  u = p;
  lg::lift::StagedProgram fused;
  const double fuse = seconds([&] {
    fused = p;
    lg::lift::fuse(fused);
  });
  p = fused;
  size_t kernels = 0;
  const double emit = seconds([&] { kernels = lg::emit::cuda::emit_program(p).kernels.size(); });
  const double expl = seconds([&] { (void)lg::lift::explain(p, false); });
  const double u_emit = seconds([&] { (void)lg::emit::cuda::emit_program(u); });
  const double u_expl = seconds([&] { (void)lg::lift::explain(u, false); });
  std::printf("%-16s %8zu %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f | %6zu %8.3f %8.3f\n", name.c_str(), g.nodes.size(), front,
              lift, fuse, emit, expl, front + lift + fuse + emit + expl, p.launches.size(), lift + u_emit + u_expl,
              front + lift + u_emit + u_expl);
  std::fflush(stdout);
  (void)kernels;
}

void header() {
  std::printf("%-16s %8s %8s %8s %8s %8s %8s %8s | %6s %8s %8s\n", "program", "nodes", "check", "lift", "fuse", "emit",
              "explain", "total", "launch", "unfused", "total");
  std::printf("%-16s %8s %8s %8s %8s %8s %8s %8s | %6s %8s %8s\n", "", "(IR)", "+lower", "", "", "", "", "", "", "lift+emit",
              "unfused");
}

void generated(const std::string& name, const std::string& text, const std::string& write_dir) {
  if (!write_dir.empty()) std::ofstream(write_dir + "/" + name + ".lg") << text;
  lg::lang::CheckOutcome out;
  const double front = seconds([&] { out = lg::lang::check_source(name + ".lg", text, lg::test::deep_config(), {}); });
  if (!out.ok) {
    std::printf("%-16s check failed:\n%s\n", name.c_str(), out.rendered.substr(0, 2000).c_str());
    return;
  }
  measure(name, out.report.graph, front);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t max_nodes = 65536;
  std::string write_dir, lg_file, config_file;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--max-nodes")) max_nodes = std::stoll(next());
    else if (!std::strcmp(argv[i], "--write")) write_dir = next();
    else if (!std::strcmp(argv[i], "--lg")) lg_file = next();
    else if (!std::strcmp(argv[i], "--config")) config_file = next();
    else if (!std::strcmp(argv[i], "--repeat")) repeat = std::max(1, std::stoi(next()));
    else {
      std::fprintf(stderr, "usage: compile_time_bench [--max-nodes N] [--write DIR] [--repeat R] | --lg FILE --config FILE [--repeat R]\n");
      return 2;
    }
  }
  try {
    header();
    if (!lg_file.empty()) {
      std::ifstream in(config_file);
      if (!in) throw lg::Error("cannot read " + config_file);
      nlohmann::json config = nlohmann::json::parse(in);
      lg::lang::BindOptions bind;  // as lg compile: the model's context, at most 4096
      if (auto it = config.find("max_position_embeddings"); it != config.end() && it->is_number_integer())
        bind.max_seq = std::min<int64_t>(it->get<int64_t>(), 4096);
      lg::ir::Graph g;
      const double front = seconds([&] { g = lg::lang::lower_file(lg_file, config, bind); });
      measure(std::filesystem::path(lg_file).stem().string(), g, front);
      return 0;
    }
    if (!write_dir.empty()) {
      std::filesystem::create_directories(write_dir);
      std::ofstream(write_dir + "/config.json") << lg::test::deep_config().dump(1) << "\n";
    }
    for (int levels = 10; (int64_t{1} << levels) <= max_nodes; ++levels) {
      const int64_t n = int64_t{1} << levels;
      generated("chain-" + std::to_string(n), lg::test::chain(n + 1), write_dir);
      generated("fns-" + std::to_string(n), lg::test::fn_tower(levels), write_dir);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
