// Golden-token locks: recording, the margin rule, the file format's errors, and (once the CPU
// lane exists) `lg lock check` over the repo's locks/ as CI's proof that the .lg forward still
// produces the recorded tokens.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "locks/lock.h"
#include "common/per_sequence_lane.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace lg::locks {
namespace {

/// A deterministic toy lane: logits are a fixed random function of (last token, position), so
/// recording and checking can be tested without a model.
class ToyLane : public lg::testing::PerSequenceLane {
 public:
  /// flip_pos: at that position the lane answers argmax+1, as a lane whose arithmetic flipped a
  /// near tie would.
  explicit ToyLane(uint32_t seed, int64_t flip_pos = -1) : PerSequenceLane(1024), seed_(seed), flip_pos_(flip_pos) {}
  std::string name() const override { return "toy"; }
  Provenance provenance() const override { return Reference{}; }
  SeqResult step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) override {
    const int64_t pos = start_pos + static_cast<int64_t>(tokens.size()) - 1;
    std::mt19937 rng(seed_ ^ static_cast<uint32_t>(tokens.back() * 7919 + pos * 104729));
    std::normal_distribution<float> n;
    SeqResult r;
    std::vector<float> logits(kVocab);
    for (auto& x : logits) x = n(rng);
    r.argmax = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (pos == flip_pos_) r.argmax = (r.argmax + 1) % kVocab;
    if (want_logits) r.logits = std::move(logits);
    return r;
  }
  static constexpr int kVocab = 64;

 private:
  uint32_t seed_;
  int64_t flip_pos_;
};

TEST(Lock, RecordedCaseChecksClean) {
  ToyLane lane(std::random_device{}());
  const auto c = record_case(lane, {3, 1, 4}, 20);
  ASSERT_EQ(c.tokens.size(), 20u);
  for (float m : c.margins) EXPECT_GE(m, 0.0f);
  const auto r = check_case(lane, c, {0.0f});
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(r.steps_checked, 20);
  EXPECT_EQ(r.excused, 0);
}

TEST(Lock, AlteredTokenFailsAtItsStep) {
  ToyLane lane(std::random_device{}());
  auto c = record_case(lane, {5, 9}, 16);
  const size_t step = 7;
  c.tokens[step] = (c.tokens[step] + 1) % ToyLane::kVocab;
  c.margins[step] = 1.0f;  // a clear decision: no excuse
  const auto r = check_case(lane, c, {0.1f});
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.fail_step, static_cast<int64_t>(step));
  EXPECT_EQ(r.expected, c.tokens[step]);
  EXPECT_NE(r.got, r.expected);
}

TEST(Lock, FlipAtAClearMarginFails) {
  const uint32_t seed = std::random_device{}();
  ToyLane reference(seed);
  auto c = record_case(reference, {2, 7}, 12);
  c.margins[6] = 0.5f;
  ToyLane flipped(seed, /*flip_pos=*/1 + 6);
  const auto r = check_case(flipped, c, {0.1f});
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.fail_step, 6);
  EXPECT_FLOAT_EQ(r.margin, 0.5f);
}

TEST(Lock, NearTieDifferenceIsExcusedAndCheckingGoesOn) {
  const uint32_t seed = std::random_device{}();
  ToyLane reference(seed);
  auto c = record_case(reference, {2}, 12);
  c.margins[4] = 0.05f;  // below the threshold: arithmetic may flip it
  ToyLane flipped(seed, /*flip_pos=*/0 + 4);  // step i is predicted at position prompt_len - 1 + i
  const auto r = check_case(flipped, c, {0.1f});
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(r.excused, 1);
  EXPECT_EQ(r.steps_checked, 12);  // teacher forcing: later steps still compared
}

/// Wraps a lane and moves logit 3 by `shift`: a lane whose arithmetic differs by a known amount.
class ShiftedLane : public ToyLane {
 public:
  ShiftedLane(uint32_t seed, float shift) : ToyLane(seed), shift_(shift) {}
  SeqResult step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) override {
    SeqResult r = ToyLane::step_one(tokens, start_pos, true);
    r.logits[3] += shift_;
    if (!want_logits) r.logits.clear();
    return r;
  }

 private:
  float shift_;
};

TEST(Lock, ComparingWithAReferenceMeasuresTheLogitDifference) {
  const uint32_t seed = std::random_device{}();
  ToyLane reference(seed), same(seed);
  const auto c = record_case(reference, {1, 2, 3}, 10);
  const auto r0 = check_case(same, c, {0.1f}, &reference);
  EXPECT_EQ(r0.max_abs_logit_diff, 0.0f);
  EXPECT_EQ(r0.max_rel_logit_err, 0.0f);
  ShiftedLane shifted(seed, 1e-3f);
  const auto r1 = check_case(shifted, c, {0.1f}, &reference);
  EXPECT_NEAR(r1.max_abs_logit_diff, 1e-3f, 1e-6f);
  EXPECT_GT(r1.max_rel_logit_err, 0.0f);
}

TEST(Lock, FileRoundTripsAndBadFilesNameTheField) {
  const fs::path dir = fs::temp_directory_path() / ("lg_lock_test_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  Lock lock{"models/x", "0123456789abcdef", 2, "toy / Reference", {{{1, 2}, {3, 4}, {0.5f, 0.25f}}}, "variant.lg"};
  write_lock(dir / "a.lock.json", lock);
  const Lock back = read_lock(dir / "a.lock.json");
  EXPECT_EQ(back.model, lock.model);
  EXPECT_EQ(back.program, "variant.lg");
  EXPECT_EQ(back.cases.at(0).tokens, lock.cases[0].tokens);
  EXPECT_FLOAT_EQ(back.cases[0].margins[1], 0.25f);

  std::ofstream(dir / "b.lock.json") << R"({"format": "lanegraph-lock/1", "model": "m", "weights_hash": "h",
    "new_tokens": 3, "cases": [{"prompt_ids": [1], "tokens": [1, 2], "margins": [0, 0]}]})";
  try {
    read_lock(dir / "b.lock.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b.lock.json: cases[0]: 'tokens' and 'margins' must each hold new_tokens (3)"),
              std::string::npos) << e.what();
  }
  std::ofstream(dir / "c.lock.json") << R"({"format": "lanegraph-lock/1", "weights_hash": "h"})";
  try {
    read_lock(dir / "c.lock.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("c.lock.json: missing field 'model'"), std::string::npos) << e.what();
  }
  // An optional field of the wrong type is an error naming it too (it escaped as a JSON type error).
  std::ofstream(dir / "d.lock.json") << R"({"format": "lanegraph-lock/1", "model": "m", "weights_hash": "h",
    "new_tokens": 1, "made_by": 5, "cases": [{"prompt_ids": [1], "tokens": [1], "margins": [0]}]})";
  try {
    read_lock(dir / "d.lock.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("d.lock.json: field 'made_by' has the wrong type"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A malformed lock named no case: a negative prompt id failed in the lane's embedding gather, an
// id past the vocabulary was a lane FAIL at its step, a prompt longer than the context failed
// making the lane. Ids are checked as the file is read, and against the model before a lane runs.
TEST(Lock, MalformedIdsAndLengthsNameTheCaseAndField) {
  const fs::path dir = fs::temp_directory_path() / ("lg_lock_ids_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  auto read_error = [&](const std::string& c) {
    const fs::path f = dir / "m.lock.json";
    std::ofstream(f) << R"({"format": "lanegraph-lock/1", "model": "m", "weights_hash": "h", "new_tokens": 2, "cases": [)"
                     << R"({"prompt_ids": [1], "tokens": [1, 2], "margins": [0, 0]}, )" << c << "]}";
    try {
      read_lock(f);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  const std::string f = (dir / "m.lock.json").string();
  EXPECT_EQ(read_error(R"({"prompt_ids": [-3], "tokens": [1, 2], "margins": [0, 0]})"),
            f + ": cases[1].prompt_ids[0] is -3, not a token id (an integer >= 0)");
  EXPECT_EQ(read_error(R"({"prompt_ids": [4, 1.5], "tokens": [1, 2], "margins": [0, 0]})"),
            f + ": cases[1].prompt_ids[1] is 1.5, not a token id (an integer >= 0)");
  // 2^32 + 5 would have been cut to the id 5.
  EXPECT_EQ(read_error(R"({"prompt_ids": [1], "tokens": [1, 4294967301], "margins": [0, 0]})"),
            f + ": cases[1].tokens[1] is 4294967301, not a token id (an integer >= 0)");
  EXPECT_EQ(read_error(R"({"prompt_ids": [1], "tokens": 7, "margins": [0, 0]})"),
            f + ": cases[1].tokens must be an array of token ids, got number");
  EXPECT_EQ(read_error(R"({"prompt_ids": [1], "tokens": [1, 2], "margins": [0, -0.5]})"),
            f + ": cases[1].margins[1] is -0.5, not a top-1 minus top-2 logit margin (>= 0)");
  EXPECT_EQ(read_error(R"({"tokens": [1, 2], "margins": [0, 0]})"), f + ": cases[1]: missing field 'prompt_ids'");

  // Against the model: ids below its vocabulary, prompt + new_tokens within its context.
  const Lock lock{"m", "h", 2, "", {{{1, 2, 3}, {4, 5}, {0, 0}}, {{6, 7}, {8, 9}, {0, 0}}}, ""};
  auto fits_error = [&](int64_t vocab, int64_t context, bool tokens = true) {
    try {
      check_lock_fits(lock, "L.lock.json", vocab, context, tokens);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(fits_error(10, 5), "<no error>");
  EXPECT_EQ(fits_error(9, 5),
            "L.lock.json: cases[1].tokens[1] is 9, outside the model's vocabulary of 9 ids (the width of its logits)");
  EXPECT_EQ(fits_error(9, 5, /*tokens=*/false), "<no error>");  // lg lock update replaces the tokens
  EXPECT_EQ(fits_error(7, 5, false),
            "L.lock.json: cases[1].prompt_ids[1] is 7, outside the model's vocabulary of 7 ids (the width of its logits)");
  EXPECT_EQ(fits_error(10, 4),
            "L.lock.json: cases[0].prompt_ids holds 3 ids; with new_tokens 2 the case needs 5 positions, more than "
            "the model's context of 4");
  fs::remove_all(dir);
}

// 100,000 nested arrays as a lock's cases overflowed the stack copying them; now the file is named.
TEST(Lock, NestingPastTheLimitIsAnErrorNamingTheFile) {
  const fs::path dir = fs::temp_directory_path() / ("lg_lock_deep_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  std::ofstream(dir / "deep.lock.json") << R"({"format": "lanegraph-lock/1", "model": "m", "weights_hash": "h",
    "new_tokens": 1, "cases": )" << std::string(100000, '[') << std::string(100000, ']') << "}";
  try {
    read_lock(dir / "deep.lock.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "deep.lock.json").string() + ": the JSON is nested more than 10000 levels deep");
  }
  fs::remove_all(dir);
}

// A lock of zero new tokens checks nothing and passes any lane: recording one and reading one
// are both refused with the count in the message.
TEST(Lock, ZeroNewTokensIsRefused) {
  ToyLane lane(std::random_device{}());
  for (int64_t n : {0, -3}) {
    try {
      record_case(lane, {3, 1}, n);
      FAIL() << "expected an error for new_tokens " << n;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("at least 1 new token (--new-tokens), got " + std::to_string(n)),
                std::string::npos) << e.what();
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("lg_lock_zero_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  std::ofstream(dir / "z.lock.json") << R"({"format": "lanegraph-lock/1", "model": "m", "weights_hash": "h",
    "new_tokens": 0, "cases": [{"prompt_ids": [1], "tokens": [], "margins": []}]})";
  try {
    read_lock(dir / "z.lock.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("z.lock.json: field 'new_tokens' must be at least 1, got 0"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lg::locks
