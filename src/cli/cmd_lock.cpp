// `lg lock new|update|check`: golden-token locks (src/locks, docs/locks.md).
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/lane_options.h"
#include "cli/numeric_checks.h"
#include "cli/path_checks.h"
#include "lanes/factory.h"
#include "locks/lock.h"
#include "model/model_dir.h"
#include "runtime/forward_graph.h"
#include "runtime/model_source.h"
#include "support/count_noun.h"
#include "support/error.h"
#include "support/json_file.h"

namespace fs = std::filesystem;

namespace lg::cli {
namespace {

struct LockOptions {
  std::string locks_dir = "locks";
  std::string shared_dir;  // remaps a lock's "../shared/..." model path (the GPU machine has none)
  std::string lane = "cpu";
  double threshold = -1;
  bool compare_logits = false;  // run the CPU reference alongside and report logit differences
  int companions = 0;           // --batch-with: random sequences in every step of a case
  // lock new
  std::string model, golden, out;
  std::string program;  // --program FILE.lg: run every lock's model with this program
  int64_t new_tokens = 24;
};

/// Where a lock's model lives: relative paths are relative to the repo root (the locks folder's
/// parent); `--shared` replaces a leading "../shared/".
fs::path resolve_model(const locks::Lock& lock, const LockOptions& o) {
  std::string m = lock.model;
  const std::string prefix = "../shared/";
  if (!o.shared_dir.empty() && m.rfind(prefix, 0) == 0) return fs::path(o.shared_dir) / m.substr(prefix.size());
  fs::path p(m);
  if (p.is_relative()) {
    // "locks/" has an empty last component: its parent_path() is "locks" itself, not the repo.
    fs::path locks = fs::absolute(o.locks_dir).lexically_normal();
    if (!locks.has_filename()) locks = locks.parent_path();
    p = locks.parent_path() / p;
  }
  return p;
}

/// Opens a model directory to run it with its program (or --program), refusing a checkpoint whose
/// tensors do not fit the program's params (a config.json from another size). `positions` is the
/// most a lock's case needs (prompt and new tokens): a program that does not check at its config's
/// context but does at that length is lowered there, as lg run lowers it at its --max-seq
/// (runtime::resolve_program): phi3.lg refuses an S past config.sliding_window (Phi-3-mini-4k: a
/// window of 2047 of its 4096 positions), and lg lock took every such model for broken.
model::ModelDir open_model(const fs::path& path, const LockOptions& o, int64_t positions) {
  auto dir = model::ModelDir::open(path);
  try {
    runtime::resolve_program(dir, o.program, positions);
  } catch (const Error& e) {
    // The program's own advice names lg run's --max-seq (phi3.lg: "give --max-seq at most the
    // window"), which lg lock has no use for: say what length it was lowered at, and why.
    if (positions <= 0 || std::string_view(e.what()).find("--max-seq") == std::string_view::npos) throw;
    throw Error(fmt::format("{}\nnote: lg lock lowers the program at {} positions, what its longest case needs (the "
                            "prompt and the new tokens): shorter cases, or fewer new tokens, need fewer",
                            e.what(), positions));
  }
  return dir;
}

/// lg lock check's --locks default: ./locks when there is one (the repository root), else the
/// locks/ beside the source tree's models/ this lg was built from (runtime::builtin_model_source_dirs),
/// so that it works from any directory; "locks" when neither is there (lock_files refuses it).
std::string default_locks_dir() {
  if (fs::is_directory("locks")) return "locks";
  for (const fs::path& models : runtime::builtin_model_source_dirs()) {
    const fs::path locks = models.parent_path() / "locks";
    if (!fs::is_directory(locks)) continue;
    fmt::print(stderr, "lg lock: no ./locks here: the locks of {}\n", locks.string());
    return locks.string();
  }
  return "locks";
}

std::vector<fs::path> lock_files(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw Error(dir + ": no such locks folder (--locks DIR; a relative path is taken from the current directory; the "
                      "default is ./locks, and for lg lock check else the source tree's locks/)");
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().string().ends_with(".lock.json")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error(dir + ": no *.lock.json files");
  return files;
}

int64_t needed_seq(const locks::Lock& lock) {
  size_t longest = 0;
  for (auto& c : lock.cases) longest = std::max(longest, c.prompt_ids.size());
  return static_cast<int64_t>(longest) + lock.new_tokens;
}

locks::Lock record(const model::ModelDir& dir, const std::string& model_field,
                   const std::vector<std::vector<int32_t>>& prompts, int64_t new_tokens, const std::string& program) {
  locks::Lock lock;
  lock.model = model_field;
  if (!program.empty()) lock.program = fs::path(program).filename().string();
  lock.weights_hash = dir.checkpoint.weights_hash();
  lock.new_tokens = new_tokens;
  size_t longest = 0;
  for (auto& p : prompts) longest = std::max(longest, p.size());
  auto lane = make_lane("cpu", dir, {.max_seq = static_cast<int64_t>(longest) + new_tokens});
  lock.made_by = lane->name() + " / " + to_string(lane->provenance());
  for (auto& p : prompts) lock.cases.push_back(locks::record_case(*lane, p, new_tokens));
  return lock;
}

/// The folder a lock file's relative model path is read from: its folder's parent.
fs::path lock_base(const std::string& out) { return fs::absolute(out).lexically_normal().parent_path().parent_path(); }

/// The model path a new lock records for `-m model` (read from the current directory, as every
/// command reads -m): an absolute one as given; a relative one rewritten relative to the lock
/// file's folder's parent, where lg lock check and update read it (resolve_model). Recorded as
/// typed, `lg lock new -m ../x -o deep/L/a.lock.json` wrote a lock that check could not find.
/// The path is rewritten as text (keeping a "../shared/" that --shared replaces), and kept only
/// when it names the same directory from there: through a symlink and "..", text and file system
/// disagree, and the canonical path relative to there is recorded instead.
std::string lock_model_path(const std::string& model, const std::string& out) {
  const fs::path m(model);
  if (m.is_absolute()) return model;
  const fs::path from = lock_base(out);
  const fs::path rel = fs::absolute(m).lexically_normal().lexically_relative(from);
  std::error_code ec;
  if (!rel.empty() && fs::equivalent(from / rel, m, ec)) return rel.generic_string();
  const fs::path real = fs::weakly_canonical(m, ec);
  const fs::path real_rel = real.lexically_relative(fs::weakly_canonical(from, ec));
  return real_rel.empty() ? real.generic_string() : real_rel.generic_string();
}

int run_new(const LockOptions& o) {
  const nlohmann::json g = read_json_file(o.golden);
  std::vector<std::vector<int32_t>> prompts;
  if (!g.contains("cases") || !g["cases"].is_array()) throw Error(o.golden + ": missing array 'cases'");
  // A lock of no cases checks nothing, and `lg lock check` refuses it: refused before it is written.
  if (g["cases"].empty()) throw Error(o.golden + ": 'cases' is empty: a lock needs at least one prompt");
  // The positions the longest case needs (its ids are checked below, once the model is open).
  size_t longest = 0;
  for (const auto& c : g["cases"])
    if (c.is_object() && c.contains("prompt_ids") && c["prompt_ids"].is_array())
      longest = std::max(longest, c["prompt_ids"].size());
  auto dir = open_model(o.model, o, static_cast<int64_t>(longest) + o.new_tokens);
  for (size_t i = 0; i < g["cases"].size(); ++i) {
    const auto& c = g["cases"][i];
    const std::string where = fmt::format("{}: cases[{}].prompt_ids", o.golden, i);
    if (!c.is_object() || !c.contains("prompt_ids")) throw Error(fmt::format("{}: cases[{}] has no 'prompt_ids'", o.golden, i));
    const auto& ids = c["prompt_ids"];
    if (!ids.is_array() || ids.empty()) throw Error(where + " must be a non-empty array of token ids");
    std::vector<int32_t> p;
    for (size_t k = 0; k < ids.size(); ++k) {
      // Checked as int64 first: a JSON number beyond int32 must not wrap into a valid id.
      if (!ids[k].is_number_integer())
        throw Error(fmt::format("{}[{}] is {}, not an integer token id", where, k, ids[k].dump()));
      const auto v = ids[k].get<int64_t>();
      if (v < 0 || v >= dir.vocab)
        throw Error(fmt::format("{}[{}] is {}, outside the model's vocabulary of {} ids (the width of its logits)",
                                where, k, v, dir.vocab));
      p.push_back(static_cast<int32_t>(v));
    }
    // Said here, naming the case: the lane made for the longest prompt would refuse the whole run.
    if (static_cast<int64_t>(p.size()) + o.new_tokens > dir.context)
      throw Error(fmt::format("{} holds {} ids; with --new-tokens {} the case needs {} positions, more than the "
                              "model's context of {}",
                              where, p.size(), o.new_tokens, static_cast<int64_t>(p.size()) + o.new_tokens,
                              dir.context));
    prompts.push_back(std::move(p));
  }
  const std::string model = lock_model_path(o.model, o.out);
  if (model != o.model)
    fmt::print("lg lock new: the lock records the model as {} (relative to {}, where lg lock check reads it)\n", model,
               lock_base(o.out).string());
  auto lock = record(dir, model, prompts, o.new_tokens, o.program);
  locks::write_lock(o.out, lock);
  fmt::print("wrote {}: {} case{} x {} token{}, weights {}\n", o.out, lock.cases.size(), lock.cases.size() == 1 ? "" : "s",
             lock.new_tokens, lock.new_tokens == 1 ? "" : "s", lock.weights_hash);
  return 0;
}

/// A lock recorded with --program X holds X's tokens: checked with another program its
/// differences would read as a lane's FAIL, and updated with one it would silently become that
/// program's lock. Throws lg::Error naming the lock and both programs.
void refuse_other_program(const locks::Lock& lock, const fs::path& file, const LockOptions& o) {
  const std::string running = o.program.empty() ? "" : fs::path(o.program).filename().string();
  if (!lock.program.empty() && lock.program != running)
    throw Error(file.string() + ": recorded with --program " + lock.program +
                (running.empty() ? "" : ", not " + running) + "; run it with that program (--program PATH/" +
                lock.program + ")");
}

int run_update(const LockOptions& o) {
  // Every lock is read, its model opened and its prompts checked against it before any lock is
  // rewritten: a malformed lock, a missing model or a prompt id past the vocabulary stopped the
  // update after it had rewritten the locks before it.
  struct Ready {
    fs::path file;
    locks::Lock lock;
    model::ModelDir dir;
  };
  std::vector<Ready> all;
  for (auto& file : lock_files(o.locks_dir)) {
    try {
      auto lock = locks::read_lock(file);
      refuse_other_program(lock, file, o);
      auto dir = open_model(resolve_model(lock, o), o, needed_seq(lock));
      // The prompts are run again; the old tokens are replaced, whatever they were.
      locks::check_lock_fits(lock, file.string(), dir.vocab, dir.context, /*tokens=*/false);
      all.push_back({file, std::move(lock), std::move(dir)});
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (no lock was updated)");
    }
  }
  for (auto& [file, old, dir] : all) {
    std::vector<std::vector<int32_t>> prompts;
    for (auto& c : old.cases) prompts.push_back(c.prompt_ids);
    auto lock = record(dir, old.model, prompts, old.new_tokens, o.program);
    locks::write_lock(file, lock);
    fmt::print("updated {}\n", file.string());
  }
  return 0;
}

/// One lock file checked on `o.lane` (run_check). Returns whether it failed; prints ok / FAIL /
/// skip. Throws lg::Error for a lock that cannot be checked at all (unreadable, its model missing,
/// other weights).
bool check_one(const fs::path& file, const LockOptions& o, float threshold, bool& printed_provenance) {
  auto lock = locks::read_lock(file);
  refuse_other_program(lock, file, o);
  const fs::path model_path = resolve_model(lock, o);
  if (!fs::is_directory(model_path))
    throw Error(file.string() + ": its model " + lock.model + " is not at " + model_path.string() +
                " (a relative model path is taken from the locks folder's parent; --shared DIR replaces a leading "
                "../shared/)");
  // With companions the lane also holds their sequences: a context of at least 128 positions
  // (their prompts reach 64) and a pool for all of them.
  const int64_t seq = o.companions > 0 ? std::max<int64_t>(needed_seq(lock), 128) : needed_seq(lock);
  auto dir = open_model(model_path, o, seq);
  // A malformed lock is reported as such, naming the case, not as a lane's failure at a step.
  locks::check_lock_fits(lock, file.string(), dir.vocab, dir.context);
  if (const auto why = lane_refuses(o.lane, dir)) {
    fmt::print("skip {}: {}\n", file.filename().string(), *why);
    return false;
  }
  const std::string hash = dir.checkpoint.weights_hash();
  if (hash != lock.weights_hash && !lock.weights_hash.starts_with(lg::model::kWeightsHashPrefix))
    throw Error(fmt::format("{}: its weights hash {} is an older lanegraph's (FNV-1a); this one hashes with "
                            "xxHash: re-record the lock with `lg lock update`, or set its weights_hash to "
                            "`lg inspect --hash {}`'s ({} if the weights are the ones it was made with)",
                            file.string(), lock.weights_hash, model_path.string(), hash));
  if (hash != lock.weights_hash)
    throw Error(fmt::format("{}: weights hash {} of {} does not match the lock's {}: the lock was made "
                            "from other weights (re-record it with `lg lock update`)",
                            file.string(), hash, model_path.string(), lock.weights_hash));
  auto lane = make_lane(o.lane, dir, {.max_seq = seq, .kv_tokens = seq * (o.companions + 1)});
  std::unique_ptr<Lane> reference;
  if (o.compare_logits) reference = make_lane("cpu", dir, {.max_seq = needed_seq(lock)});
  if (!printed_provenance) {
    fmt::print("lane {}: provenance {}; margin threshold {}\n", lane->name(), to_string(lane->provenance()),
               threshold);
    printed_provenance = true;
  }
  int64_t steps = 0, excused = 0;
  float max_abs = 0, max_rel = 0;
  for (size_t i = 0; i < lock.cases.size(); ++i) {
    const locks::CheckOptions run{o.companions, static_cast<uint64_t>(i)};
    auto r = locks::check_case(*lane, lock.cases[i], {threshold}, reference.get(), run);
    steps += r.steps_checked;
    excused += r.excused;
    max_abs = std::max(max_abs, r.max_abs_logit_diff);
    max_rel = std::max(max_rel, r.max_rel_logit_err);
    if (r.failed) {
      fmt::print("FAIL {} case {} step {}: lock token {} (margin {:.4f}), lane {} gave {}\n", file.filename().string(),
                 i, r.fail_step, r.expected, r.margin, lane->name(), r.got);
      return true;
    }
  }
  fmt::print("ok   {}: {}, {}, {} excused\n", file.filename().string(),
             count_noun(static_cast<int64_t>(lock.cases.size()), "case"), count_noun(steps, "step"),
             count_noun(excused, "near-tie step"));
  if (reference)
    fmt::print("     logits vs the cpu reference: max |diff| {:.4g}, max relative error {:.3g}\n", max_abs, max_rel);
  return false;
}

// Every lock is checked, whatever the ones before it gave: a failing or uncheckable lock (its
// model directory missing, other weights) is reported under its name and the run goes on, as a
// test runner does; the exit status is 1 when any lock failed.
int run_check(const LockOptions& o) {
  // A lane that cannot run here would fail every lock alike, each after loading its model: said
  // once instead, before any lock is read (as lg run refuses it before the model loads).
  check_lane_known(o.lane);
  check_gpu_present(o.lane, "; --lane cpu checks the CPU reference");
  const float threshold = o.threshold >= 0 ? static_cast<float>(o.threshold) : locks::default_threshold(o.lane);
  bool printed_provenance = false;
  int failures = 0;
  for (auto& file : lock_files(o.locks_dir)) {
    try {
      failures += check_one(file, o, threshold, printed_provenance);
    } catch (const Error& e) {
      fmt::print("ERROR {}: {}\n", file.filename().string(), e.what());
      ++failures;
    }
  }
  if (failures) fmt::print("{} lock{} failed\n", failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}

LG_COMMAND("lock", [](CLI::App& app) {
  auto o = std::make_shared<LockOptions>();
  auto* lock = app.add_subcommand("lock", "Golden-token locks: record them from the .lg forward, check lanes against them");
  lock->require_subcommand(1);
  auto* add = lock->add_subcommand("new", "Record a lock with the CPU reference lane from a golden.json's prompts");
  // -m as lg run, serve, batch and template take it: `lg lock new -m DIR` said "--model is required".
  add->add_option("--model,-m", o->model,
                  "model directory (a relative one is recorded relative to the lock's folder's parent, where lg lock "
                  "check reads it)")
      ->required();
  add->add_option("--golden", o->golden, "JSON file with cases[].prompt_ids")->required();
  add->add_option("--new-tokens", o->new_tokens, "greedy tokens per prompt")->capture_default_str()->check(at_least_one());
  auto* out = add->add_option("-o,--out", o->out, "lock file to write")->required();
  // Refused before the model runs every case, not at the write after it: an empty path, and a
  // file in a folder that does not exist (which used to fail after recording, with "cannot write
  // lock file" and no reason).
  add->callback([o, out] {
    refuse_empty_path(out, o->out, "a lock file");
    const fs::path parent = fs::path(o->out).parent_path();
    if (!parent.empty() && !fs::is_directory(parent))
      throw CLI::ValidationError(out->get_name(false, true) + ": " + o->out + ": no such folder " + parent.string() +
                                 " (lg lock new writes the file, it does not make its folder)");
  });
  auto* update = lock->add_subcommand("update", "Re-record every lock in the folder with the CPU reference lane");
  auto* check = lock->add_subcommand("check", "Run a lane over every lock; fail at the first diverging step");
  for (auto* sub : {add, update, check})
    // Checked as lg run's is: a missing file was an ERROR line for every lock in the folder.
    sub->add_option("--program", o->program, "the .lg program to run the model with " + lg::cli::program_default_help())
        ->check(CLI::ExistingFile);
  std::vector<CLI::Option*> locks_options;
  for (auto* sub : {update, check}) {
    locks_options.push_back(sub->add_option("--locks", o->locks_dir,
                                            sub == check ? "folder of *.lock.json (default: ./locks, else the source "
                                                           "tree's locks/)"
                                                         : "folder of *.lock.json (default: ./locks)"));
    sub->add_option("--shared", o->shared_dir, "folder that replaces a model path's leading ../shared/");
  }
  check->add_option("--lane", o->lane, "lane: cpu, compiled, handwritten")
      ->capture_default_str()
      ->check(lg::cli::lane_name());
  check->add_option("--batch-with", o->companions,
                    "run each case inside steps with N random other sequences (prefill chunks, decodes, joining and "
                    "leaving): the lane must give the case the same tokens as alone")
      ->check(CLI::Range(0, 1024));
  check->add_flag("--compare-logits", o->compare_logits,
                  "also run the CPU reference on the same tokens and report the largest logit differences");
  check->add_option("--threshold", o->threshold,
                    "margin below which a differing token is excused (default: by lane, docs/locks.md)")
      ->check(non_negative_number());
  return [o, add, update, check, locks_options]() {
    // Only check falls back to the source tree's locks: update rewrites them, which from an
    // unrelated directory is more likely a mistake than a wish.
    if (check->parsed() &&
        std::none_of(locks_options.begin(), locks_options.end(), [](const CLI::Option* l) { return l->count() > 0; }))
      o->locks_dir = default_locks_dir();
    if (add->parsed()) return run_new(*o);
    if (update->parsed()) return run_update(*o);
    if (check->parsed()) return run_check(*o);
    return 2;
  };
});

}  // namespace
}  // namespace lg::cli
