// `lg compile MODEL.lg --config config.json -o OUTDIR [--explain]`: lowers the program, makes it
// the program of batched steps the compiled lane runs (ir/batch.h; --one-sequence: the program
// as written), lifts it into stages, fuses them and emits the CUDA program. Writes program.cu, plan.json,
// provenance.json ({"kind": "Compiled"}) and stages.txt (every stage with the source lines it
// covers). --explain prints the stage listing and `launches per decode layer: N`.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/lane_options.h"
#include "cli/numeric_checks.h"
#include "cli/path_checks.h"
#include "cli/program_options.h"
#include "emit/cuda/compile.h"
#include "ir/batch.h"
#include "lang/lower.h"
#include "lift/explain.h"
#include "model/config.h"
#include "support/count_noun.h"
#include "support/error.h"
#include "support/startup_clock.h"

namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text)) throw lg::Error("cannot write " + path.string());
}

/// The largest S `lg compile` picks by itself (the arena holds every activation at T = S).
constexpr int64_t kDefaultMaxSeq = 4096;

/// One line naming the launches whose steps of many tokens take another form than decode's (the
/// compiled lane's LaunchPlan::Prefill): GEMMs on cuBLASLt, attention on the flash template,
/// experts on the grouped tensor-core GEMM, and the attention launches that have no flash form
/// (head_dim outside 16-128: Gemma 3's 256), and the split-KV attention launches with a wide form
/// (LaunchPlan::wide); empty when no step has two rows.
std::string prefill_forms(const lg::emit::cuda::CudaProgram& cuda) {
  if (cuda.max_t <= 1) return "";  // no step has more than one row (--max-step-tokens 1)
  int64_t gemm = 0, attention = 0, experts = 0, experts_min_t = 0, split_only = 0, wide = 0, wide_rows = 0,
          wide_heads = 0;
  bool wide_mma = false;
  for (const auto& l : cuda.launches) {
    if (l.wide) {
      ++wide;
      wide_rows = l.wide->min_rows;
      wide_heads = l.wide->split.heads_per_item;
      wide_mma = l.wide->split.tensor_cores;
    }
    if (!l.prefill) {
      split_only += l.split.has_value();
      continue;
    }
    if (l.prefill->experts) {
      ++experts;
      experts_min_t = l.prefill->min_t;
    } else if (l.prefill->t_tile > 0) {
      ++attention;
    } else {
      ++gemm;
    }
  }
  if (gemm + attention + experts + split_only == 0) return "";
  std::string line = "prefill forms (T > 1): " + std::to_string(gemm) + " GEMM launches on cuBLASLt, " +
                     std::to_string(attention) + " attention launches on the flash template";
  if (experts > 0)
    line += ", " + std::to_string(experts) + " experts launches as grouped tensor-core GEMMs (at T >= " +
            std::to_string(experts_min_t) + ")";
  if (split_only > 0)
    line += "; " + std::to_string(split_only) +
            " attention launches stay on the split-KV kernel at every T (the flash template takes head_dim 16, 32, "
            "64 or 128)";
  if (wide > 0)
    line += "; " + std::to_string(wide) + " split-KV attention launches take " + std::to_string(wide_heads) +
            " query heads a block" + (wide_mma ? " on the tensor cores" : "") + " at " + std::to_string(wide_rows) +
            "+ decode rows";
  return line + "\n";
}

/// The summary's line on the split-KV attention launches with a one-row form (LaunchPlan::one_row:
/// one sequence's decode steps run it); empty when none has.
std::string one_row_forms(const lg::emit::cuda::CudaProgram& cuda) {
  int64_t n = 0, blocks = 0;
  for (const auto& l : cuda.launches)
    if (l.one_row) {
      ++n;
      blocks = l.one_row->split.blocks_per_sm;
    }
  if (n == 0) return "";
  return "one-row forms (one sequence's decode): " + std::to_string(n) + " split-KV attention launches run " +
         lg::count_noun(blocks, "block") + " an SM\n";
}

/// ", KV pool N tokens in blocks of B" for --explain's summary; empty for a program with no state
/// (models/examples/cc_mlp.lg), which has no cache to pool.
std::string kv_pool_text(const lg::ir::Graph& graph) {
  if (graph.states.empty()) return "";
  return ", KV pool " + std::to_string(graph.batching.num_blocks * graph.batching.block_size) + " tokens in blocks of " +
         std::to_string(graph.batching.block_size);
}

}  // namespace

LG_COMMAND("compile", [](CLI::App& app) {
  struct Opts {
    std::string file, config, out;
    int64_t max_seq = 0;  // 0: the model's context, at most kDefaultMaxSeq
    bool explain = false, no_fuse = false, one_sequence = false;
    lg::LaneOptions lane;
  };
  auto opts = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("compile", "Compile an .lg program into a CUDA program (stages, kernels, launch plan)");
  lg::cli::add_program_options(sub, opts->file, opts->config);
  auto* out_opt = sub->add_option("-o,--out", opts->out, "output directory (created)");
  sub->add_option("--max-seq", opts->max_seq,
                  "S, the KV-cache capacity and largest T (default: config max_position_embeddings, at most 4096)")
      ->check(lg::cli::context_length());
  auto* explain_flag = sub->add_flag("--explain", opts->explain, "print the stages, the source lines each covers, and launches per layer");
  sub->add_flag("--no-fuse", opts->no_fuse, "lift without fusion (one stage per compute node)");
  auto* one = sub->add_flag("--one-sequence", opts->one_sequence,
                            "the program as written, for one sequence (no batched steps, no paged cache, f32 state)");
  // The lane sizes its pool from the free device memory; a compile without one takes 4 contexts.
  lg::cli::add_lane_options(sub, opts->lane, "four contexts");
  for (const char* o : {"--kv-tokens", "--max-batch", "--max-step-tokens", "--block-size"}) one->excludes(sub->get_option(o));
  // Neither output asked for is a usage error (exit 2 with "Run with --help"), raised while
  // parsing like CLI11's own, not an lg::Error about the program (exit 1).
  sub->callback([out_opt, explain_flag, opts] {
    if (out_opt->count() == 0 && explain_flag->count() == 0)
      throw CLI::ValidationError("lg compile needs -o OUTDIR (write the CUDA program) and/or --explain (print the stages)");
    // `-o ""` (an unset shell variable) would otherwise compile, write nothing and exit 0.
    lg::cli::refuse_empty_path(out_opt, opts->out, "a directory");
  });
  return [opts]() -> int {
    nlohmann::json config = lg::model::read_config_json(opts->config);
    lg::lang::BindOptions bind;
    bind.max_seq = opts->max_seq;
    // As lg serve and lg run size their caches: the model's context, capped (a Qwen3 config's
    // 40960 would size the program's arena for T = 40960). Without max_position_embeddings the
    // binder takes the program's own `S = ...` (GPT-2's n_positions) or says what is missing.
    if (auto it = config.find("max_position_embeddings"); it != config.end() && it->is_number_integer() && it->get<int64_t>() > 0) {
      const int64_t context = it->get<int64_t>();
      if (bind.max_seq == 0) bind.max_seq = std::min<int64_t>(context, kDefaultMaxSeq);
    }
    // A compiler emits what it is asked for; lg run, serve and batch refuse such a context.
    if (const std::string w = lg::cli::max_seq_past_context(config, bind.max_seq); !w.empty())
      std::cerr << "lg compile: warning: " << w << "\n";
    lg::StartupClock clock("lg compile");  // LG_STARTUP_TIMES=1: the time of each phase on stderr
    lg::ir::Graph graph =
        lg::cli::lower_naming_config(opts->config, [&] { return lg::lang::lower_file(opts->file, config, bind); });
    clock.mark("lower", std::to_string(graph.nodes.size()) + " nodes");
    if (!opts->one_sequence) {
      // The compiled lane sizes its pool from the free device memory; here 4 contexts unless asked.
      const int64_t S = graph.symbols.at(0).max;
      const lg::LaneLimits l = lg::resolve_limits(opts->lane, S, 4 * S);
      lg::ir::make_batched(graph, {l.block_size, l.num_blocks, l.max_batch, l.max_tokens});
    }
    lg::emit::cuda::CompileOptions copts;
    copts.fuse = !opts->no_fuse;
    copts.emit.bf16_states = !opts->one_sequence;
    copts.clock = &clock;
    const lg::emit::cuda::Compilation comp = lg::emit::cuda::compile(graph, copts);
    const lg::lift::StagedProgram& prog = comp.staged;
    const lg::emit::cuda::CudaProgram& cuda = comp.program;
    std::string listing = lg::lift::explain(prog, /*with_source=*/true);
    clock.mark("explain");
    const auto [per_layer, layers] = lg::emit::cuda::layer_launches(comp);
    std::string summary = "stages: " + std::to_string(prog.stages.size()) +
                          "  launches: " + std::to_string(prog.launches.size()) +
                          "  kernels: " + std::to_string(cuda.kernels.size()) +
                          "  arena: " + std::to_string(cuda.arena_bytes) + " bytes at T = " +
                          std::to_string(cuda.max_t) +
                          (opts->one_sequence ? ""
                                              : ", B = " + std::to_string(cuda.max_b) + " (context " +
                                                    std::to_string(graph.batching.max_seq) + kv_pool_text(graph) + ")") +
                          "\nlaunches per decode layer: " + std::to_string(per_layer) +
                          (layers == 0 ? " (no launch repeats: one layer or none, every launch counted)" : "") + "\n" +
                          prefill_forms(cuda) + one_row_forms(cuda);
    if (!opts->out.empty()) {
      std::filesystem::path dir(opts->out);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) throw lg::Error("cannot create " + dir.string() + ": " + ec.message());
      write_file(dir / "program.cu", cuda.source());
      write_file(dir / "plan.json", cuda.plan_json());
      write_file(dir / "provenance.json", lg::to_json(cuda.provenance) + "\n");
      write_file(dir / "stages.txt", listing + summary);
      clock.mark("write");
    }
    if (opts->explain) std::cout << listing;
    std::cout << summary;
    return 0;
  };
});
