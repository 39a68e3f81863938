// Golden-token locks: greedy token sequences that the .lg forward (CPU reference lane, fp32)
// produced for a model, with the top-2 logit margin at every step. Hand-written lanes are not
// compiled from the .lg forward; locks hold every lane to it. See docs/locks.md for the rule
// that decides when a bf16 lane may differ from an fp32 lock.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/lane.h"

namespace lg::locks {

/// One prompt and what the reference produced from it.
struct LockCase {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> tokens;   ///< greedy tokens, one per step (exactly new_tokens of them)
  std::vector<float> margins;    ///< top-1 minus top-2 logit at each step (>= 0)
};

/// A lock file (JSON, locks/<name>.lock.json).
struct Lock {
  std::string model;         ///< model directory as written (relative paths: to the repo root)
  std::string weights_hash;  ///< model::Checkpoint::weights_hash() when the lock was made
  int64_t new_tokens = 0;
  std::string made_by;       ///< lane and provenance that produced it ("cpu / Reference")
  std::vector<LockCase> cases;
  /// The file name of the .lg program it was recorded with when that was `--program`'s, not the
  /// model's `<model_type>.lg`; empty otherwise (field `program`, absent then). `lg lock check`
  /// runs such a lock only with a --program of that name.
  std::string program;
};

/// Reads a lock file; lg::Error names the file and the field at fault ("FILE: cases[0].prompt_ids[2]
/// is -3, ..."): new_tokens < 1, an id that is not an integer in [0, 2^31), a negative margin, or
/// the file alone when it is not JSON or nests deeper than kMaxJsonFileDepth (support/json_file.h).
Lock read_lock(const std::filesystem::path& file);
/// Checks a lock against the model it is run on, before any lane runs it: every prompt id (and,
/// with `tokens`, every lock token: the ones fed back) below `vocab`, and every case's prompt plus
/// new_tokens within `context` positions. lg::Error names `file` and the case's field.
void check_lock_fits(const Lock& lock, const std::string& file, int64_t vocab, int64_t context, bool tokens = true);
/// Writes a lock file (pretty JSON, one case per block).
void write_lock(const std::filesystem::path& file, const Lock& lock);

/// Greedy generation with teacher forcing recorded as a lock case: runs `prompt` then
/// `new_tokens` decode steps on `lane`, recording argmax and top-2 margin of each step.
/// Throws lg::Error if new_tokens < 1 or the prompt is empty.
LockCase record_case(Lane& lane, const std::vector<int32_t>& prompt, int64_t new_tokens);

/// The rule of docs/locks.md: a lane may pick another token than the lock only at a step whose
/// recorded margin is below `margin_threshold` (a near tie that its arithmetic may flip).
struct CheckRule {
  float margin_threshold = 0.0f;
};

/// Outcome of checking one case.
struct CaseResult {
  int64_t steps_checked = 0;
  int64_t excused = 0;          ///< steps that differed at a margin below the threshold
  bool failed = false;
  int64_t fail_step = -1;       ///< first diverging step (0-based) when failed
  int32_t expected = -1, got = -1;
  float margin = 0;             ///< the lock's margin at fail_step
  /// With a reference lane: the largest |logit - reference logit| over every step, and the
  /// largest per-step ||logits - reference|| / ||reference||.
  float max_abs_logit_diff = 0;
  float max_rel_logit_err = 0;
};

/// How a case is run besides the rule.
struct CheckOptions {
  /// Random other sequences in every step of the case (joining, prefilling in chunks, decoding
  /// and leaving; their blocks interleaved with the case's): a lane must give the case the same
  /// tokens inside a batch as alone. 0: the case runs alone.
  int companions = 0;
  uint64_t seed = 0;  ///< the companions' prompts and lengths
};

/// Runs the lane over the case teacher-forced: the lock's tokens are fed back at every step, so
/// every step is compared even after an excused near-tie. Stops at the first failing step.
/// When `reference` is given (the CPU lane), it is run alongside (alone) on the same tokens and
/// the logit differences are measured: the numbers docs/locks.md's bf16 threshold rests on.
/// Throws lg::Error when the lane cannot run `options.companions + 1` sequences in a step.
CaseResult check_case(Lane& lane, const LockCase& c, const CheckRule& rule, Lane* reference = nullptr,
                      const CheckOptions& options = {});

/// Default margin thresholds (docs/locks.md justifies both): the fp32 CPU reference may only
/// differ where another fp32 summation order could flip the step; bf16 GPU lanes where bf16
/// rounding of activations could.
inline constexpr float kFp32MarginThreshold = 1e-3f;
inline constexpr float kBf16MarginThreshold = 0.1f;
float default_threshold(const std::string& lane_name);

}  // namespace lg::locks
