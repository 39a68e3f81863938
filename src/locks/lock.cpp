#include "locks/lock.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "support/error.h"

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
  std::ifstream in(file);
  if (!in) throw Error(where + ": cannot open lock file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw Error(where + ": not valid JSON: " + e.what());
  }
  Lock lock;
  if (field<std::string>(j, "format", where) != "lanegraph-lock/1")
    throw Error(where + ": field 'format' must be \"lanegraph-lock/1\"");
  lock.model = field<std::string>(j, "model", where);
  lock.weights_hash = field<std::string>(j, "weights_hash", where);
  lock.new_tokens = field<int64_t>(j, "new_tokens", where);
  // A lock of zero tokens checks nothing and would pass any lane.
  if (lock.new_tokens < 1)
    throw Error(where + ": field 'new_tokens' must be at least 1, got " + std::to_string(lock.new_tokens));
  lock.made_by = j.value("made_by", "");
  const auto cases = field<json>(j, "cases", where);
  if (!cases.is_array() || cases.empty()) throw Error(where + ": field 'cases' must be a non-empty array");
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string cw = where + ": cases[" + std::to_string(i) + "]";
    LockCase c;
    c.prompt_ids = field<std::vector<int32_t>>(cases[i], "prompt_ids", cw);
    c.tokens = field<std::vector<int32_t>>(cases[i], "tokens", cw);
    c.margins = field<std::vector<float>>(cases[i], "margins", cw);
    if (c.prompt_ids.empty()) throw Error(cw + ": 'prompt_ids' is empty");
    if (static_cast<int64_t>(c.tokens.size()) != lock.new_tokens || c.margins.size() != c.tokens.size())
      throw Error(cw + ": 'tokens' and 'margins' must each hold new_tokens (" +
                  std::to_string(lock.new_tokens) + ") entries");
    lock.cases.push_back(std::move(c));
  }
  return lock;
}

void write_lock(const std::filesystem::path& file, const Lock& lock) {
  json j;
  j["format"] = "lanegraph-lock/1";
  j["model"] = lock.model;
  j["weights_hash"] = lock.weights_hash;
  j["new_tokens"] = lock.new_tokens;
  j["made_by"] = lock.made_by;
  j["cases"] = json::array();
  for (const auto& c : lock.cases) {
    std::vector<double> margins;
    for (float m : c.margins) margins.push_back(std::round(static_cast<double>(m) * 1e4) / 1e4);
    j["cases"].push_back({{"prompt_ids", c.prompt_ids}, {"tokens", c.tokens}, {"margins", margins}});
  }
  std::ofstream out(file);
  if (!out) throw Error(file.string() + ": cannot write lock file");
  out << j.dump(1) << "\n";
}

LockCase record_case(Lane& lane, const std::vector<int32_t>& prompt, int64_t new_tokens) {
  if (new_tokens < 1)
    throw Error("a lock case needs at least 1 new token (--new-tokens), got " + std::to_string(new_tokens));
  if (prompt.empty()) throw Error("a lock case needs a non-empty prompt_ids");
  LockCase c;
  c.prompt_ids = prompt;
  lane.reset();
  StepResult r = lane.step(prompt, 0, /*want_logits=*/true);
  int64_t pos = static_cast<int64_t>(prompt.size());
  for (int64_t i = 0; i < new_tokens; ++i) {
    const auto [tok, margin] = top2(r.logits);
    c.tokens.push_back(tok);
    c.margins.push_back(margin);
    if (i + 1 == new_tokens) break;
    const int32_t next[1] = {tok};
    r = lane.step(next, pos++, true);
  }
  return c;
}

CaseResult check_case(Lane& lane, const LockCase& c, const CheckRule& rule, Lane* reference) {
  CaseResult res;
  const bool compare = reference != nullptr;
  auto measure = [&](const StepResult& got, const StepResult& want) {
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
  lane.reset();
  if (compare) reference->reset();
  StepResult r = lane.step(c.prompt_ids, 0, compare);
  if (compare) measure(r, reference->step(c.prompt_ids, 0, true));
  int64_t pos = static_cast<int64_t>(c.prompt_ids.size());
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
    r = lane.step(next, pos, compare);
    if (compare) measure(r, reference->step(next, pos, true));
    ++pos;
  }
  return res;
}

float default_threshold(const std::string& lane_name) {
  return lane_name == "cpu" ? kFp32MarginThreshold : kBf16MarginThreshold;
}

}  // namespace lg::locks
