// Randomized ragged-batch schedules against runs alone (issue 12's acceptance): sequences join
// at random steps, are prefilled in random chunks, decode, and leave; their blocks come from a
// pool whose free list was shuffled, so block tables are scattered and interleaved. At every
// step that completes a sequence's prompt or decodes a token, the logits of that sequence must
// equal those of the same sequence run alone (relative error < 1e-5: the same fp32 arithmetic,
// except that a GEMM over more rows may sum in another order inside BLAS), and so must its
// argmax wherever the alone run's top-2 margin leaves room for that rounding.
//
// The lane-agnostic driver: `Run` gets a lane and a seed; the caller supplies the alphabet of
// valid token ids. Used for the cpu lane in CI and for the GPU lanes on the device (with a
// tolerance given there).
//
// With a `reference` lane (the fp32 CPU reference), a batched row's logits are held to the
// reference instead of to the row alone: relative error < `tol` from the reference. A bf16 lane
// takes another precision class batched than alone (its decode token alone is a GEMV over fp32
// activations; batched, a row of GEMMs over bf16 activations, as a prompt is), so for a trained
// model the two can differ by more than either differs from fp32; the argmax rule against the
// row alone is the fine check then, and `tol` a bound on gross errors (a row that reads another
// sequence's K/V or a wrong position is off by the size of the logits themselves). The direct
// batched-against-alone error is still reported as worst_rel.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/kv_blocks.h"
#include "runtime/lane.h"
#include "runtime/solo_sequence.h"

namespace lg::testing {

/// The gap between the two largest logits: below the locks' margin, a differing argmax is a near
/// tie (docs/locks.md), not an error.
inline float top2_margin(const std::vector<float>& logits) {
  std::vector<float> top(logits);
  std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<float>());
  return top[0] - top[1];
}

/// Puts every block of `blocks` back on its free list in random order, so the tables it hands
/// out afterwards are scattered over the pool and interleaved between sequences.
template <class Rng>
void shuffle_free_list(runtime::BlockManager& blocks, Rng& rng) {
  std::vector<int32_t> all;
  if (!blocks.grow(all, blocks.num_blocks() * blocks.block_size())) ADD_FAILURE() << "the pool is not all free";
  std::shuffle(all.begin(), all.end(), rng);
  for (int32_t b : all) {
    std::vector<int32_t> one{b};
    blocks.release(one);
  }
}

/// For a mixture of experts: the first position of a sequence's tokens (`feed`, the prompt and
/// then its greedy tokens) where the reference's router ranks two experts across the top-k
/// boundary within a near tie, or feed.size() when it never does. Rows at and after it are not
/// compared: a lane whose bf16 arithmetic crosses that tie runs another expert for the token, and
/// every later position reads that token's K/V, so the logits part by more than any precision
/// bound while both runs compute what the program says.
using FirstRouterTie = std::function<int64_t(const std::vector<int32_t>& feed)>;

struct ScheduleStats {
  int64_t compared = 0;      ///< logits rows compared
  int64_t past_tie = 0;      ///< rows not compared: at or after their sequence's first router near tie
  int64_t argmax_compared = 0;
  int64_t steps = 0;         ///< batched steps run
  int64_t max_batch = 0;     ///< most sequences in one step
  double worst_rel = 0;      ///< largest relative error seen, batched against alone
  double worst_alone_ref = 0;    ///< with a reference: largest error of a row run alone from it
  double worst_batched_ref = 0;  ///< ... and of a batched row
};

inline double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  double d = 0, n = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    const double e = static_cast<double>(got[k]) - ref[k];
    d += e * e;
    n += static_cast<double>(ref[k]) * ref[k];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

/// One randomized schedule on `lane` (its pool must hold every sequence at once; its limits
/// bound the chunks). `tol`: the relative logits error allowed; `tie`: the alone run's top-2
/// margin below which differing argmaxes are excused; prompts of 1 .. `max_prompt` tokens.
inline ScheduleStats run_random_schedule(Lane& lane, uint64_t seed, int32_t lo_id, int32_t hi_id, double tol,
                                         double tie, int64_t max_prompt = 40, Lane* reference = nullptr,
                                         const FirstRouterTie& first_tie = nullptr) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  const LaneLimits lim = lane.limits();
  struct Seq {
    std::vector<int32_t> prompt, feed;          // feed: the prompt, then the alone run's greedy tokens
    std::vector<std::vector<float>> want;       // logits alone: after the prompt, after each decode
    std::vector<std::vector<float>> ref;        // the same on `reference`, when given
    std::vector<float> margin;                  // the alone run's top-2 margin at each of those
    std::vector<int32_t> table;
    int64_t done = 0;                           // tokens fed
    int64_t join_at = 0;                        // the step it joins at
    int64_t until = INT64_MAX;                  // rows from this position on are not compared (first_tie)
  };
  const int64_t nseq = uni(1, std::min<int64_t>(6, lim.max_batch));
  std::vector<Seq> seqs(static_cast<size_t>(nseq));
  // Alone first: a fresh allocator, each sequence by itself from position 0.
  for (auto& s : seqs) {
    s.prompt.resize(static_cast<size_t>(uni(1, std::min<int64_t>(max_prompt, lim.max_seq - 13))));
    for (auto& t : s.prompt) t = static_cast<int32_t>(uni(lo_id, hi_id));
    const int64_t decodes = uni(0, 12);
    runtime::SoloSequence alone(lane);
    auto record = [&](const SeqResult& r) {
      s.want.push_back(r.logits);
      s.margin.push_back(top2_margin(r.logits));
    };
    SeqResult r = alone.feed(s.prompt, true);
    record(r);
    s.feed = s.prompt;
    for (int64_t k = 0; k < decodes; ++k) {
      s.feed.push_back(r.argmax);
      r = alone.feed(std::span<const int32_t>(&s.feed.back(), 1), true);
      record(r);
    }
    s.join_at = uni(0, 6);
    if (first_tie) s.until = first_tie(s.feed);
    if (reference) {
      runtime::SoloSequence ref(*reference);
      const auto plen = static_cast<int64_t>(s.prompt.size());
      s.ref.push_back(ref.feed(s.prompt, true).logits);
      for (size_t k = static_cast<size_t>(plen); k < s.feed.size(); ++k)
        s.ref.push_back(ref.feed(std::span<const int32_t>(&s.feed[k], 1), true).logits);
    }
  }
  // A pool whose free list is in random order: tables come out scattered and interleaved.
  runtime::BlockManager blocks(lim.num_blocks, lim.block_size);
  shuffle_free_list(blocks, rng);
  ScheduleStats st;
  for (int64_t step = 0;; ++step) {
    std::vector<SeqStep> batch;
    std::vector<size_t> who;
    std::vector<int64_t> fed;
    int64_t budget = lim.max_tokens;
    bool left = false;
    for (size_t i = 0; i < seqs.size(); ++i) {
      Seq& s = seqs[i];
      if (s.done == static_cast<int64_t>(s.feed.size())) continue;
      left = true;
      if (step < s.join_at || uni(0, 3) == 0 || budget < 1 || static_cast<int64_t>(batch.size()) >= lim.max_batch)
        continue;  // not yet joined, or sits this step out
      const auto plen = static_cast<int64_t>(s.prompt.size());
      int64_t n = s.done < plen ? std::min(uni(1, plen - s.done), budget) : 1;
      if (!blocks.grow(s.table, s.done + n)) ADD_FAILURE() << "pool too small for the schedule";
      SeqStep q;
      q.tokens = std::span<const int32_t>(s.feed.data() + s.done, static_cast<size_t>(n));
      q.start_pos = s.done;
      q.blocks = s.table;
      q.want_logits = true;
      batch.push_back(q);
      who.push_back(i);
      fed.push_back(n);
      budget -= n;
    }
    if (!left) break;
    if (batch.empty()) continue;
    const std::vector<SeqResult> out = lane.step(batch);
    ++st.steps;
    st.max_batch = std::max<int64_t>(st.max_batch, static_cast<int64_t>(batch.size()));
    for (size_t k = 0; k < batch.size(); ++k) {
      Seq& s = seqs[who[k]];
      s.done += fed[k];
      const auto plen = static_cast<int64_t>(s.prompt.size());
      if (s.done < plen) continue;  // a chunk inside the prompt: no logits to compare
      const auto at = static_cast<size_t>(s.done - plen);
      if (s.done - 1 >= s.until) {
        ++st.past_tie;
        if (s.done == static_cast<int64_t>(s.feed.size())) blocks.release(s.table);  // it leaves
        continue;
      }
      const double e = rel_err(out[k].logits, s.want[at]);
      st.worst_rel = std::max(st.worst_rel, e);
      if (reference) {
        const double alone = rel_err(s.want[at], s.ref[at]), batched = rel_err(out[k].logits, s.ref[at]);
        st.worst_alone_ref = std::max(st.worst_alone_ref, alone);
        st.worst_batched_ref = std::max(st.worst_batched_ref, batched);
        EXPECT_LT(batched, tol) << "seed " << seed << " step " << step << ": sequence " << who[k] << " at position "
                                << s.done - 1 << ", alone " << alone << " from the reference";
      } else {
        EXPECT_LT(e, tol) << "seed " << seed << " step " << step << ": sequence " << who[k] << " at position "
                          << s.done - 1;
      }
      ++st.compared;
      if (s.margin[at] > tie) {
        const auto want = static_cast<int32_t>(std::max_element(s.want[at].begin(), s.want[at].end()) - s.want[at].begin());
        EXPECT_EQ(out[k].argmax, want) << "seed " << seed << " sequence " << who[k] << " at position " << s.done - 1;
        ++st.argmax_compared;
      }
      if (s.done == static_cast<int64_t>(s.feed.size())) blocks.release(s.table);  // it leaves
    }
  }
  EXPECT_EQ(blocks.used_blocks(), 0) << "blocks leaked";
  return st;
}

/// `n` seeded schedules (seeds first_seed, first_seed + 1, ...) on `lane`, prompts of ids below
/// `vocab`, stopping at the first failure; prints what they covered and the worst errors, so a GPU
/// log shows the headroom. Expects at least one step to batch several sequences (when none failed).
/// Failures recorded so far in the running test (its earlier parts' too).
inline int failures_so_far() {
  const ::testing::TestResult* r = ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int n = 0;
  for (int i = 0; i < r->total_part_count(); ++i) n += r->GetTestPartResult(i).failed();
  return n;
}

inline ScheduleStats run_seeded_schedules(Lane& lane, const std::string& what, int32_t vocab, uint64_t first_seed,
                                          int n, double tol, double tie, Lane* reference = nullptr,
                                          const FirstRouterTie& first_tie = nullptr) {
  ScheduleStats all;
  // Stop at this call's first failure, not at one an earlier call in the same test made (a test
  // that runs two lanes would otherwise run one schedule of the second and never batch).
  const int failed_before = failures_so_far();
  bool failed = false;
  for (int i = 0; i < n; ++i) {
    const auto st = run_random_schedule(lane, first_seed + static_cast<uint64_t>(i), 0, vocab - 1, tol, tie, 40,
                                        reference, first_tie);
    all.compared += st.compared;
    all.past_tie += st.past_tie;
    all.argmax_compared += st.argmax_compared;
    all.steps += st.steps;
    all.max_batch = std::max(all.max_batch, st.max_batch);
    all.worst_rel = std::max(all.worst_rel, st.worst_rel);
    all.worst_alone_ref = std::max(all.worst_alone_ref, st.worst_alone_ref);
    all.worst_batched_ref = std::max(all.worst_batched_ref, st.worst_batched_ref);
    if (failures_so_far() > failed_before) {
      failed = true;
      break;
    }
  }
  std::printf("%s: %d schedules, %lld steps (up to %lld sequences), %lld logits rows compared (%lld argmaxes), "
              "worst relative error %.2e (tolerance %.2g)\n",
              what.c_str(), n, static_cast<long long>(all.steps), static_cast<long long>(all.max_batch),
              static_cast<long long>(all.compared), static_cast<long long>(all.argmax_compared), all.worst_rel, tol);
  if (reference)
    std::printf("%s: against the fp32 reference, worst relative error alone %.2e, batched %.2e\n", what.c_str(),
                all.worst_alone_ref, all.worst_batched_ref);
  if (first_tie) {
    std::printf("%s: %lld rows at or after their sequence's first router near tie not compared\n", what.c_str(),
                static_cast<long long>(all.past_tie));
    EXPECT_GT(all.compared, 0) << what << ": every row came at or after a router near tie: nothing was compared";
  }
  if (!failed) {
    EXPECT_GT(all.max_batch, 1) << what << ": no step batched several sequences";
  }
  return all;
}

}  // namespace lg::testing
