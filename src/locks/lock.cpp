#include "locks/lock.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <nlohmann/json.hpp>

#include "runtime/finite_logits.h"
#include "runtime/kv_blocks.h"
#include "runtime/solo_sequence.h"
#include "support/error.h"
#include "support/json_file.h"

namespace lg::locks {

namespace {

using nlohmann::json;

template <class T>
T field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw Error(where + ": missing field '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(where + ": field '" + key + "' has the wrong type");
  }
}

/// A case's id array, each id checked as read: an integer in [0, 2^31) (a negative one reached the
/// lane's embedding gather and failed there, naming no case; a float or a number past int32 would
/// be cut to another id). `at` names the array: "FILE: cases[i].prompt_ids".
std::vector<int32_t> id_array(const json& v, const std::string& at) {
  if (!v.is_array()) throw Error(at + " must be an array of token ids, got " + v.type_name());
  std::vector<int32_t> ids;
  for (size_t k = 0; k < v.size(); ++k) {
    const json& e = v[k];
    const bool in_range = e.is_number_unsigned() ? e.get<uint64_t>() <= INT32_MAX
                                                 : e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() <= INT32_MAX;
    if (!in_range)
      throw Error(at + "[" + std::to_string(k) + "] is " + e.dump() + ", not a token id (an integer >= 0)");
    ids.push_back(e.get<int32_t>());
  }
  return ids;
}

/// Top-1 index (lowest id wins a tie, as torch.argmax) and top-1 minus top-2 value.
std::pair<int32_t, float> top2(const std::vector<float>& logits) {
  int32_t best = 0;
  float v1 = -std::numeric_limits<float>::infinity(), v2 = v1;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (x > v1) {
      v2 = v1;
      v1 = x;
      best = static_cast<int32_t>(i);
    } else if (x > v2) {
      v2 = x;
    }
  }
  return {best, v1 - v2};
}

}  // namespace

Lock read_lock(const std::filesystem::path& file) {
  const std::string where = file.string();
  const json j = read_json_file(file);
  Lock lock;
  if (field<std::string>(j, "format", where) != "lanegraph-lock/1")
    throw Error(where + ": field 'format' must be \"lanegraph-lock/1\"");
  lock.model = field<std::string>(j, "model", where);
  lock.weights_hash = field<std::string>(j, "weights_hash", where);
  lock.new_tokens = field<int64_t>(j, "new_tokens", where);
  // A lock of zero tokens checks nothing and would pass any lane.
  if (lock.new_tokens < 1)
    throw Error(where + ": field 'new_tokens' must be at least 1, got " + std::to_string(lock.new_tokens));
  if (j.contains("made_by") && !j["made_by"].is_null()) lock.made_by = field<std::string>(j, "made_by", where);
  if (j.contains("program") && !j["program"].is_null()) lock.program = field<std::string>(j, "program", where);
  const auto cases = field<json>(j, "cases", where);
  if (!cases.is_array() || cases.empty()) throw Error(where + ": field 'cases' must be a non-empty array");
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string cw = where + ": cases[" + std::to_string(i) + "]";
    const std::string at = where + ": cases[" + std::to_string(i) + "].";
    LockCase c;
    c.prompt_ids = id_array(field<json>(cases[i], "prompt_ids", cw), at + "prompt_ids");
    c.tokens = id_array(field<json>(cases[i], "tokens", cw), at + "tokens");
    c.margins = field<std::vector<float>>(cases[i], "margins", cw);
    if (c.prompt_ids.empty()) throw Error(cw + ": 'prompt_ids' is empty");
    if (static_cast<int64_t>(c.tokens.size()) != lock.new_tokens || c.margins.size() != c.tokens.size())
      throw Error(cw + ": 'tokens' and 'margins' must each hold new_tokens (" +
                  std::to_string(lock.new_tokens) + ") entries");
    // A negative margin is below every threshold: it would excuse any token at that step.
    for (size_t k = 0; k < c.margins.size(); ++k)
      if (!(c.margins[k] >= 0))
        throw Error(at + "margins[" + std::to_string(k) + "] is " + json(c.margins[k]).dump() +
                    ", not a top-1 minus top-2 logit margin (>= 0)");
    lock.cases.push_back(std::move(c));
  }
  return lock;
}

void check_lock_fits(const Lock& lock, const std::string& file, int64_t vocab, int64_t context, bool tokens) {
  for (size_t i = 0; i < lock.cases.size(); ++i) {
    const LockCase& c = lock.cases[i];
    const std::string at = file + ": cases[" + std::to_string(i) + "].";
    auto ids_in_vocab = [&](const std::vector<int32_t>& ids, const char* key) {
      for (size_t k = 0; k < ids.size(); ++k)
        if (ids[k] >= vocab)
          throw Error(at + key + "[" + std::to_string(k) + "] is " + std::to_string(ids[k]) +
                      ", outside the model's vocabulary of " + std::to_string(vocab) + " ids (the width of its logits)");
    };
    ids_in_vocab(c.prompt_ids, "prompt_ids");
    if (tokens) ids_in_vocab(c.tokens, "tokens");
    const int64_t needs = static_cast<int64_t>(c.prompt_ids.size()) + lock.new_tokens;
    if (needs > context)
      throw Error(at + "prompt_ids holds " + std::to_string(c.prompt_ids.size()) + " ids; with new_tokens " +
                  std::to_string(lock.new_tokens) + " the case needs " + std::to_string(needs) +
                  " positions, more than the model's context of " + std::to_string(context));
  }
}

void write_lock(const std::filesystem::path& file, const Lock& lock) {
  json j;
  j["format"] = "lanegraph-lock/1";
  j["model"] = lock.model;
  j["weights_hash"] = lock.weights_hash;
  j["new_tokens"] = lock.new_tokens;
  j["made_by"] = lock.made_by;
  if (!lock.program.empty()) j["program"] = lock.program;
  j["cases"] = json::array();
  for (const auto& c : lock.cases) {
    std::vector<double> margins;
    for (float m : c.margins) margins.push_back(std::round(static_cast<double>(m) * 1e4) / 1e4);
    j["cases"].push_back({{"prompt_ids", c.prompt_ids}, {"tokens", c.tokens}, {"margins", margins}});
  }
  std::ofstream out(file);
  if (!out) throw Error(file.string() + ": cannot write lock file: " + std::strerror(errno));
  out << j.dump(1) << "\n";
}

LockCase record_case(Lane& lane, const std::vector<int32_t>& prompt, int64_t new_tokens) {
  if (new_tokens < 1)
    throw Error("a lock case needs at least 1 new token (--new-tokens), got " + std::to_string(new_tokens));
  if (prompt.empty()) throw Error("a lock case needs a non-empty prompt_ids");
  LockCase c;
  c.prompt_ids = prompt;
  runtime::SoloSequence seq(lane);
  SeqResult r = seq.feed(prompt, /*want_logits=*/true);
  for (int64_t i = 0; i < new_tokens; ++i) {
    const auto [tok, margin] = top2(r.logits);
    c.tokens.push_back(tok);
    c.margins.push_back(margin);
    if (i + 1 == new_tokens) break;
    const int32_t next[1] = {tok};
    r = seq.feed(next, true);
  }
  return c;
}

namespace {

/// Random sequences that share the lock case's steps (CheckOptions::companions): each has a
/// random prompt drawn from the case's own ids (valid for the model), prefilled in random chunks,
/// then decodes its own greedy tokens for a random length, then leaves and a new one joins.
class Companions {
 public:
  Companions(Lane& lane, runtime::BlockManager& blocks, const LockCase& c, int count, uint64_t seed)
      : lane_(lane), blocks_(blocks), rng_(seed) {
    alphabet_ = c.prompt_ids;
    alphabet_.insert(alphabet_.end(), c.tokens.begin(), c.tokens.end());
    for (int k = 0; k < count; ++k) seqs_.push_back(fresh());
  }

  /// Appends each companion's next chunk to `batch`, using at most `budget` tokens.
  void plan(std::vector<SeqStep>& batch, int64_t budget) {
    planned_.clear();
    for (auto& m : seqs_) {
      if (budget < 1) break;
      if (m->seq.position() + 1 > lane_.limits().max_seq || m->seq.position() >= m->leave_at) {
        m = fresh();
      }
      const int64_t left = static_cast<int64_t>(m->prompt.size()) - m->seq.position();
      std::span<const int32_t> part;
      if (left > 0) {
        const int64_t n = std::min<int64_t>({left, budget, std::uniform_int_distribution<int64_t>(1, left)(rng_)});
        part = std::span<const int32_t>(m->prompt.data() + m->seq.position(), static_cast<size_t>(n));
      } else {
        part = std::span<const int32_t>(&m->next, 1);
      }
      batch.push_back(m->seq.next(part, false));
      planned_.push_back({m.get(), static_cast<int64_t>(part.size())});
      budget -= static_cast<int64_t>(part.size());
    }
  }
  /// Takes the companions' results (batch entries from `first` on).
  void done(const std::vector<SeqResult>& results, size_t first) {
    for (size_t k = 0; k < planned_.size(); ++k) {
      planned_[k].first->seq.advance(planned_[k].second);
      planned_[k].first->next = results.at(first + k).argmax;
      if (planned_[k].first->next < 0) throw Error("a companion sequence's logits were not finite (a NaN or Inf)");
    }
  }

 private:
  struct Member {
    runtime::SoloSequence seq;
    std::vector<int32_t> prompt;
    int64_t leave_at = 0;
    int32_t next = 0;
    Member(Lane& l, runtime::BlockManager& b) : seq(l, &b) {}
  };
  std::unique_ptr<Member> fresh() {
    auto m = std::make_unique<Member>(lane_, blocks_);
    const int64_t cap = std::max<int64_t>(1, std::min<int64_t>(64, lane_.limits().max_seq - 1));
    m->prompt.resize(static_cast<size_t>(std::uniform_int_distribution<int64_t>(1, cap)(rng_)));
    for (auto& t : m->prompt) t = alphabet_[std::uniform_int_distribution<size_t>(0, alphabet_.size() - 1)(rng_)];
    m->leave_at = static_cast<int64_t>(m->prompt.size()) + std::uniform_int_distribution<int64_t>(0, 32)(rng_);
    return m;
  }

  Lane& lane_;
  runtime::BlockManager& blocks_;
  std::mt19937_64 rng_;
  std::vector<int32_t> alphabet_;
  std::vector<std::unique_ptr<Member>> seqs_;
  std::vector<std::pair<Member*, int64_t>> planned_;
};

}  // namespace

CaseResult check_case(Lane& lane, const LockCase& c, const CheckRule& rule, Lane* reference,
                      const CheckOptions& options) {
  CaseResult res;
  const bool compare = reference != nullptr;
  auto measure = [&](const SeqResult& got, const SeqResult& want) {
    if (got.logits.size() != want.logits.size())
      throw Error("lane " + lane.name() + " returned " + std::to_string(got.logits.size()) +
                  " logits, the reference " + std::to_string(want.logits.size()));
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < got.logits.size(); ++i) {
      const double d = static_cast<double>(got.logits[i]) - want.logits[i];
      res.max_abs_logit_diff = std::max(res.max_abs_logit_diff, static_cast<float>(std::fabs(d)));
      diff2 += d * d;
      ref2 += static_cast<double>(want.logits[i]) * want.logits[i];
    }
    if (ref2 > 0) res.max_rel_logit_err = std::max(res.max_rel_logit_err, static_cast<float>(std::sqrt(diff2 / ref2)));
  };
  if (options.companions > 0 && lane.limits().max_batch < options.companions + 1)
    throw Error("lane " + lane.name() + " runs steps of at most " + std::to_string(lane.limits().max_batch) +
                " sequences; checking a lock among " + std::to_string(options.companions) + " others needs " +
                std::to_string(options.companions + 1));
  runtime::BlockManager blocks(lane.limits().num_blocks, lane.limits().block_size);
  runtime::SoloSequence seq(lane, &blocks);
  std::unique_ptr<runtime::SoloSequence> ref;
  if (compare) ref = std::make_unique<runtime::SoloSequence>(*reference);
  std::unique_ptr<Companions> others;
  if (options.companions > 0) others = std::make_unique<Companions>(lane, blocks, c, options.companions, options.seed);
  // The case's tokens at one step, with the companions' chunks beside them.
  // A row the lane found not finite (SeqResult::argmax -1) is an error, as a lane's throw is.
  auto step = [&](std::span<const int32_t> tokens) {
    const int64_t last = seq.position() + static_cast<int64_t>(tokens.size()) - 1;
    SeqResult r;
    if (!others) {
      r = seq.feed(tokens, compare);
    } else {
      std::vector<SeqStep> batch{seq.next(tokens, compare)};
      others->plan(batch, lane.limits().max_tokens - static_cast<int64_t>(tokens.size()));
      std::vector<SeqResult> out = lane.step(batch);
      seq.advance(static_cast<int64_t>(tokens.size()));
      others->done(out, 1);
      r = std::move(out[0]);
    }
    if (r.argmax < 0) runtime::throw_non_finite_logits(last, tokens.size() > 1 || last == 0, lane.name());
    return r;
  };
  SeqResult r = step(c.prompt_ids);
  if (compare) measure(r, ref->feed(c.prompt_ids, true));
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    ++res.steps_checked;
    if (r.argmax != c.tokens[i]) {
      if (c.margins[i] < rule.margin_threshold) {
        ++res.excused;
      } else {
        res.failed = true;
        res.fail_step = static_cast<int64_t>(i);
        res.expected = c.tokens[i];
        res.got = r.argmax;
        res.margin = c.margins[i];
        return res;
      }
    }
    if (i + 1 == c.tokens.size()) break;
    const int32_t next[1] = {c.tokens[i]};  // teacher forcing: continue from the lock's sequence
    r = step(next);
    if (compare) measure(r, ref->feed(next, true));
  }
  return res;
}

float default_threshold(const std::string& lane_name) {
  return lane_name == "cpu" ? kFp32MarginThreshold : kBf16MarginThreshold;
}

}  // namespace lg::locks
