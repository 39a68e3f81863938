// The hand-written lane on ragged batches over its paged KV pool (GPU; skipped without one):
//   - randomized schedules (tests/common/batch_schedules.h): sequences join, are prefilled in
//     random chunks, decode and leave, their blocks scattered over the pool; at every step that
//     ends a prompt or decodes, each sequence's logits must agree with its run alone;
//   - the decode graph follows the block table of whichever sequence it runs (two sequences
//     decoding in turn, one token each, give what each gives alone);
//   - limits() says what the buffers hold, and what it refuses is refused with a message.
//
// Tolerance of the schedules: 5e-2 norm-wise relative error of the logits. A sequence alone and
// in a batch may take different paths for the same token: alone, a decode token is the graph's
// GEMVs and split-KV decode attention and a prompt the tensor-core flash attention with bf16 q
// and P; in a batch of several, the same token is a row of cuBLASLt GEMMs (another fp32
// summation order) and of the ragged attention (fp32 q and P). Activations are rounded to bf16
// between the ops (2^-9 relative), so an fp32 difference in the last bit can move a value to the
// neighbouring bf16 and that difference flows through the later layers: the paths agree to
// bf16's precision, not fp32's. Each path is within the lane's distance from the fp32 reference,
// measured at most 0.025 on the lock prompts (bench/RESULTS.md, `lg lock check --compare-logits`),
// so two paths are within 2 x 0.025 of each other (triangle inequality). That holds for the tiny
// fixtures (about 1e-2 seen); the 22M model on random prompts goes past it and is held to the
// fp32 reference instead (Pycode22m below, batch_schedules.h). Argmaxes must agree
// wherever the alone run's top-2 margin is above 0.1 (docs/locks.md, the bf16 lanes' margin).
// A sequence that reads another's rows, a wrong position or a stale block table changes its
// attention in every layer, far beyond 5e-2; the worst error seen is printed so a GPU log shows
// the headroom.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <filesystem>
#include <random>
#include <vector>

#include "common/batch_schedules.h"
#include "lanes/factory.h"
#include "lanes/qwen/handwritten_lane.h"
#include "model/model_dir.h"
#include "runtime/solo_sequence.h"
#include "support/error.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen;
using namespace lg::qwen::test;
namespace fs = std::filesystem;

namespace {

constexpr double kPathTolerance = 5e-2;  // see the top of the file
constexpr double kBf16Margin = 0.1;      // docs/locks.md
// A row that reads another sequence's K/V, a wrong position or a stale block table is off by about
// the logits' own size (relative error 1.5 to 17.6 seen from a broken compiled lane); the bf16
// paths of the 22M model stay below 0.14 of fp32 (measured on the H200).
constexpr double kGrossError = 0.25;

/// `n` seeded schedules on `lane`; prints what they covered and the worst error (the headroom).
void run_schedules(Lane& lane, const std::string& what, int32_t vocab, uint64_t first_seed, int n,
                   Lane* reference = nullptr, double tol = kPathTolerance) {
  lg::testing::run_seeded_schedules(lane, what, vocab, first_seed, n, tol, kBf16Margin, reference);
}

}  // namespace

class TinyBatch : public ::testing::TestWithParam<std::string> {};

// The default limits (blocks of 16, a token budget above any schedule's prompts) and tight ones
// (blocks of 4, steps of at most 3 sequences and 24 tokens, a pool just big enough), where
// prompts are cut into chunks and sequences wait for room in the step.
TEST_P(TinyBatch, RandomSchedulesAgreeWithRunsAlone) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "fixtures" / GetParam());
  const auto vocab = static_cast<int32_t>(md.config.vocab_size);
  {
    auto lane = make_handwritten_lane(md, {.max_seq = 128});
    run_schedules(*lane, GetParam() + " (default limits)", vocab, 1000, 40);
  }
  {
    // 6 sequences of at most 40 + 12 positions: 6 x 13 blocks of 4.
    auto lane = make_handwritten_lane(md, {.max_seq = 64, .kv_tokens = 6 * 52, .max_batch = 3, .max_tokens = 24,
                                           .block_size = 4});
    EXPECT_EQ(lane->limits().block_size, 4);
    EXPECT_EQ(lane->limits().max_batch, 3);
    EXPECT_EQ(lane->limits().max_tokens, 24);
    run_schedules(*lane, GetParam() + " (blocks of 4, 3 x 24)", vocab, 2000, 40);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TinyBatch, ::testing::Values("tiny-qwen3", "tiny-qwen3-untied-mqa", "tiny-qwen2"));

TEST(HandwrittenBatch, Pycode22mRandomSchedulesAgreeWithRunsAlone) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(source_dir()) / "models" / "qwen3-pycode-22m");
  auto lane = make_handwritten_lane(md, {.max_seq = 256});
  // A trained model on random ids of its vocabulary. Measured on the H200 (bench/RESULTS.md, these
  // 20 seeds): rows alone are within 1.34e-1 of the fp32 reference, rows batched within 1.16e-1,
  // and the two 1.05e-1 apart: past the tiny models' 5e-2 (a decode token alone is GEMVs over fp32
  // activations, batched a row of GEMMs over bf16 ones, as a prompt's rows are). So the rule here
  // is docs/locks.md's (argmaxes equal where the alone margin is above 0.1), with logits within
  // kGrossError of the fp32 reference (batch_schedules.h): what a misrouted row breaks (the tiny
  // models above hold the fine bound on the same kernels).
  auto reference = make_lane("cpu", md, {.max_seq = 256});
  run_schedules(*lane, "qwen3-pycode-22m", static_cast<int32_t>(md.config.vocab_size), 3000, 20, reference.get(),
                kGrossError);
}

// Two sequences decoding in turn, one token per step: every step is the decode graph, each time
// with the other sequence's block table (scattered blocks of 4, so the tables also grow every 4
// tokens). Each must give what it gives decoding alone on the same lane: the same kernels over
// the same values in other rows, so to fp32 roundoff (in practice bit for bit).
TEST(HandwrittenBatch, DecodeGraphFollowsEachSequencesBlockTable) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "fixtures" / "tiny-qwen3");
  auto lane = make_handwritten_lane(md, {.max_seq = 128, .kv_tokens = 512, .block_size = 4});
  auto rng = fresh_rng();
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(md.config.vocab_size - 1));
  std::vector<std::vector<int32_t>> prompts(2);
  for (auto& p : prompts) {
    p.resize(static_cast<size_t>(std::uniform_int_distribution<int>(3, 20)(rng)));
    for (auto& t : p) t = tok(rng);
  }
  const int kDecodes = 30;
  // Alone: each sequence from position 0, its logits after every decode token.
  std::vector<std::vector<std::vector<float>>> alone(2);
  std::vector<std::vector<int32_t>> fed(2);
  for (size_t i = 0; i < 2; ++i) {
    runtime::SoloSequence s(*lane);
    SeqResult r = s.feed(prompts[i], false);
    for (int k = 0; k < kDecodes; ++k) {
      fed[i].push_back(r.argmax);
      r = s.feed(std::span<const int32_t>(&fed[i].back(), 1), true);
      alone[i].push_back(r.logits);
    }
  }
  // In turn, with blocks from one manager whose free list was shuffled.
  runtime::BlockManager blocks(lane->limits().num_blocks, lane->limits().block_size);
  lg::testing::shuffle_free_list(blocks, rng);
  std::vector<std::unique_ptr<runtime::SoloSequence>> seqs;
  for (size_t i = 0; i < 2; ++i) {
    seqs.push_back(std::make_unique<runtime::SoloSequence>(*lane, &blocks));
    seqs[i]->feed(prompts[i], false);
  }
  for (int k = 0; k < kDecodes; ++k)
    for (size_t i = 0; i < 2; ++i) {
      SeqResult r = seqs[i]->feed(std::span<const int32_t>(&fed[i][static_cast<size_t>(k)], 1), true);
      EXPECT_LT(rel_err(r.logits, alone[i][static_cast<size_t>(k)]), 1e-6) << "sequence " << i << " decode " << k;
    }
}

// Steps where every sequence decodes one token (the batched decode graphs): up to 7 sequences,
// some with a few hundred positions (several splits of the decode attention), each decoding its
// own number of tokens, so the batch shrinks through the buckets (8, 4, 2) down to one sequence
// (the single-sequence graph). Every decode's logits must agree with the sequence's run alone
// within kPathTolerance (the top of the file: batched, a token is a row of cuBLASLt GEMMs, alone
// the GEMVs), and its argmax wherever the alone margin is above kBf16Margin. The sequences' blocks
// come from one shuffled free list, so a row that reads a neighbour's table or the pad rows' block
// changes its attention far beyond the tolerance.
TEST(HandwrittenBatch, BatchedDecodeGraphsAgreeWithRunsAlone) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "fixtures" / "tiny-qwen3");
  auto lane = make_handwritten_lane(md, {.max_seq = 1024, .kv_tokens = 7 * 1024, .max_batch = 8, .block_size = 16});
  auto rng = fresh_rng();
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  const auto vocab = static_cast<int32_t>(md.config.vocab_size);
  const int n = 7;
  struct Seq {
    std::vector<int32_t> prompt, decoded;  // decoded: the alone run's greedy tokens, fed in both runs
    std::vector<std::vector<float>> want;  // logits alone after each decoded token
    std::vector<float> margin;
  };
  std::vector<Seq> seqs(n);
  for (int i = 0; i < n; ++i) {
    Seq& q = seqs[static_cast<size_t>(i)];
    q.prompt.resize(static_cast<size_t>(i % 2 ? uni(300, 900) : uni(2, 40)));
    for (auto& t : q.prompt) t = uni(0, vocab - 1);
    runtime::SoloSequence alone(*lane);
    SeqResult r = alone.feed(q.prompt, false);
    const int decodes = uni(3, 24);
    for (int k = 0; k < decodes; ++k) {
      q.decoded.push_back(r.argmax);
      r = alone.feed(std::span<const int32_t>(&q.decoded.back(), 1), true);
      q.want.push_back(r.logits);
      q.margin.push_back(lg::testing::top2_margin(r.logits));
    }
  }
  runtime::BlockManager blocks(lane->limits().num_blocks, lane->limits().block_size);
  lg::testing::shuffle_free_list(blocks, rng);
  std::vector<std::unique_ptr<runtime::SoloSequence>> live;
  for (int i = 0; i < n; ++i) {
    live.push_back(std::make_unique<runtime::SoloSequence>(*lane, &blocks));
    live.back()->feed(seqs[static_cast<size_t>(i)].prompt, false);
  }
  double worst = 0;
  int compared = 0, batched_steps = 0;
  for (size_t k = 0;; ++k) {
    std::vector<SeqStep> batch;
    std::vector<int> who;
    for (int i = 0; i < n; ++i)
      if (k < seqs[static_cast<size_t>(i)].decoded.size()) {
        batch.push_back(live[static_cast<size_t>(i)]->next(
            std::span<const int32_t>(&seqs[static_cast<size_t>(i)].decoded[k], 1), true));
        who.push_back(i);
      }
    if (batch.empty()) break;
    batched_steps += batch.size() > 1;
    const std::vector<SeqResult> got = lane->step(batch);
    for (size_t j = 0; j < who.size(); ++j) {
      const Seq& q = seqs[static_cast<size_t>(who[j])];
      live[static_cast<size_t>(who[j])]->advance(1);
      const double e = rel_err(got[j].logits, q.want[k]);
      worst = std::max(worst, e);
      ++compared;
      EXPECT_LT(e, kPathTolerance) << "sequence " << who[j] << " (prompt " << q.prompt.size() << "), decode " << k
                                   << " in a step of " << batch.size();
      if (q.margin[k] > kBf16Margin) {
        EXPECT_EQ(got[j].argmax, std::max_element(q.want[k].begin(), q.want[k].end()) - q.want[k].begin())
            << "sequence " << who[j] << ", decode " << k;
      }
    }
  }
  EXPECT_GT(batched_steps, 2);
  std::printf("batched decode graphs: %d logits compared over %d batched steps, worst relative error %.3g\n", compared,
              batched_steps, worst);
}

// Mixed steps (the rows path with B > 1): sequences decoding one token each at up to a few hundred
// positions while two others are prefilled in random chunks (1 to 48 tokens: a chunk of one takes
// the decode attention too), the prefilling ones in the middle of the batch, so the decode
// attention's entries (row map, block-table rows of their own order) and the ragged kernel's
// token list both skip rows. Every decode's logits must agree with the sequence's run alone
// within kPathTolerance, and its argmax wherever the alone margin is above kBf16Margin; so must
// each prefilled prompt's last logits (alone: the prompt in one step, the flash kernel). Blocks
// from one shuffled free list, as above.
TEST(HandwrittenBatch, MixedStepsAgreeWithRunsAlone) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "fixtures" / "tiny-qwen3");
  auto lane = make_handwritten_lane(md, {.max_seq = 1024, .kv_tokens = 8 * 1024, .max_batch = 8, .block_size = 16});
  auto rng = fresh_rng();
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  const auto vocab = static_cast<int32_t>(md.config.vocab_size);
  const int n = 7;
  auto prefilling = [](int i) { return i == 1 || i == 4; };
  struct Seq {
    std::vector<int32_t> prompt, decoded;  // decoded: the alone run's greedy tokens, fed in both runs
    std::vector<std::vector<float>> want;  // alone: logits after each decoded token (prefilling: after the prompt)
    std::vector<float> margin;
  };
  auto keep = [](Seq& q, const SeqResult& r) {
    std::vector<float> top(r.logits);
    std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<float>());
    q.want.push_back(r.logits);
    q.margin.push_back(top[0] - top[1]);
  };
  std::vector<Seq> seqs(n);
  for (int i = 0; i < n; ++i) {
    Seq& q = seqs[static_cast<size_t>(i)];
    q.prompt.resize(static_cast<size_t>(prefilling(i) ? uni(100, 300) : i == 0 ? uni(2, 40) : uni(200, 700)));
    for (auto& t : q.prompt) t = uni(0, vocab - 1);
    runtime::SoloSequence alone(*lane);
    SeqResult r = alone.feed(q.prompt, prefilling(i));
    if (prefilling(i)) {
      keep(q, r);
      continue;
    }
    const int decodes = uni(8, 24);
    for (int k = 0; k < decodes; ++k) {
      q.decoded.push_back(r.argmax);
      r = alone.feed(std::span<const int32_t>(&q.decoded.back(), 1), true);
      keep(q, r);
    }
  }
  runtime::BlockManager blocks(lane->limits().num_blocks, lane->limits().block_size);
  {
    std::vector<int32_t> all;
    ASSERT_TRUE(blocks.grow(all, lane->limits().pool_tokens()));
    std::shuffle(all.begin(), all.end(), rng);
    for (int32_t b : all) {
      std::vector<int32_t> one{b};
      blocks.release(one);
    }
  }
  std::vector<std::unique_ptr<runtime::SoloSequence>> live;
  for (int i = 0; i < n; ++i) {
    live.push_back(std::make_unique<runtime::SoloSequence>(*lane, &blocks));
    if (!prefilling(i)) live.back()->feed(seqs[static_cast<size_t>(i)].prompt, false);
  }
  std::vector<size_t> done(n, 0);  // decodes fed, or prompt tokens fed
  double worst = 0;
  int compared = 0, mixed_steps = 0;
  for (;;) {
    std::vector<SeqStep> batch;
    std::vector<int> who;
    bool any_decode = false, any_chunk = false;
    for (int i = 0; i < n; ++i) {
      const Seq& q = seqs[static_cast<size_t>(i)];
      const size_t at = done[static_cast<size_t>(i)];
      if (prefilling(i) && at < q.prompt.size()) {
        const size_t len = std::min<size_t>(static_cast<size_t>(uni(1, 48)), q.prompt.size() - at);
        batch.push_back(live[static_cast<size_t>(i)]->next(std::span<const int32_t>(q.prompt.data() + at, len),
                                                           at + len == q.prompt.size()));
        any_chunk = true;
      } else if (!prefilling(i) && at < q.decoded.size()) {
        batch.push_back(live[static_cast<size_t>(i)]->next(std::span<const int32_t>(&q.decoded[at], 1), true));
        any_decode = true;
      } else {
        continue;
      }
      who.push_back(i);
    }
    if (batch.empty()) break;
    mixed_steps += any_decode && any_chunk;
    const std::vector<SeqResult> got = lane->step(batch);
    for (size_t j = 0; j < who.size(); ++j) {
      const int i = who[j];
      const Seq& q = seqs[static_cast<size_t>(i)];
      const size_t fed = batch[j].tokens.size();
      live[static_cast<size_t>(i)]->advance(static_cast<int64_t>(fed));
      size_t& at = done[static_cast<size_t>(i)];
      at += fed;
      size_t k = at - 1;  // the decode just fed
      if (prefilling(i)) {
        if (at < q.prompt.size()) continue;  // the prompt's last logits only
        k = 0;
      }
      const double e = rel_err(got[j].logits, q.want[k]);
      worst = std::max(worst, e);
      ++compared;
      EXPECT_LT(e, kPathTolerance) << "sequence " << i << " (prompt " << q.prompt.size() << "), "
                                   << (prefilling(i) ? "its prompt" : "decode " + std::to_string(k)) << " in a step of "
                                   << batch.size();
      if (q.margin[k] > kBf16Margin) {
        EXPECT_EQ(got[j].argmax, std::max_element(q.want[k].begin(), q.want[k].end()) - q.want[k].begin())
            << "sequence " << i << ", result " << k;
      }
    }
  }
  EXPECT_GT(mixed_steps, 2);
  std::printf("mixed steps: %d logits compared, %d steps mixing prompt chunks and decodes, worst relative error %.3g\n",
              compared, mixed_steps, worst);
}

// limits() is what the lane was made with and what its buffers hold: a step at every limit at
// once runs (and agrees with the sequences alone), one past any limit is refused, naming the
// sequence where there is one.
TEST(HandwrittenBatch, LimitsAreWhatTheStepAccepts) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "fixtures" / "tiny-qwen2");
  auto lane = make_handwritten_lane(md, {.max_seq = 40, .kv_tokens = 100, .max_batch = 3, .max_tokens = 10,
                                         .block_size = 8});
  const LaneLimits& lim = lane->limits();
  EXPECT_EQ(lim.max_seq, 40);
  EXPECT_EQ(lim.block_size, 8);
  EXPECT_EQ(lim.num_blocks, 13);  // 100 positions rounded up to blocks of 8
  EXPECT_EQ(lim.max_batch, 3);
  EXPECT_EQ(lim.max_tokens, 10);

  // Three sequences, ten tokens, the last one ending at position 39 in the pool's last block.
  const std::vector<int32_t> a{1, 2, 3, 4}, b{5, 6, 7, 8, 9}, c{10};
  const std::vector<int32_t> ta{0}, tb{1}, tc{12, 7, 3, 11, 2};  // tc: block 12 is the pool's last
  std::vector<SeqStep> batch(3);
  batch[0] = SeqStep{a, 0, ta, true, {}};
  batch[1] = SeqStep{b, 0, tb, true, {}};
  batch[2] = SeqStep{c, 39, tc, true, {}};
  // Sequence 2 attends to positions 0..38 too: write them first, alone, through its table.
  std::vector<int32_t> prefix(39);
  for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = static_cast<int32_t>(i % 50);
  for (size_t at = 0; at < prefix.size(); at += 10) {
    const size_t n = std::min<size_t>(10, prefix.size() - at);
    SeqStep p{std::span<const int32_t>(prefix.data() + at, n), static_cast<int64_t>(at), tc, false, {}};
    lane->step(std::span<const SeqStep>(&p, 1));
  }
  const std::vector<SeqResult> together = lane->step(batch);
  ASSERT_EQ(together.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const SeqResult alone = lane->step(std::span<const SeqStep>(&batch[i], 1)).at(0);
    EXPECT_LT(rel_err(together[i].logits, alone.logits), kPathTolerance) << "sequence " << i;
  }

  std::vector<SeqStep> four(batch);
  four.push_back(SeqStep{c, 0, std::span<const int32_t>(ta), false, {}});
  EXPECT_THROW(lane->step(four), Error);  // 4 sequences
  const std::vector<int32_t> eleven(11, 1);
  const std::vector<int32_t> two_blocks{0, 1};
  SeqStep big{eleven, 0, two_blocks, false, {}};
  EXPECT_THROW(lane->step(std::span<const SeqStep>(&big, 1)), Error);  // 11 tokens
  const std::vector<int32_t> outside{13};
  SeqStep off{a, 0, outside, false, {}};
  EXPECT_THROW(lane->step(std::span<const SeqStep>(&off, 1)), Error);  // block 13 is past the pool
  const std::vector<int32_t> bad{1, static_cast<int32_t>(md.config.vocab_size)};
  std::vector<SeqStep> with_bad{batch[0], SeqStep{bad, 0, tb, false, {}}};
  try {
    lane->step(with_bad);
    ADD_FAILURE() << "a token outside the vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 1"), std::string::npos) << e.what();
  }
  // Two sequences writing one block in one step would race.
  std::vector<SeqStep> shared{SeqStep{a, 0, ta, false, {}}, SeqStep{b, 0, ta, false, {}}};
  EXPECT_THROW(lane->step(shared), Error);
}

TEST(HandwrittenBatch, RefusesWhatItCannotHold) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "fixtures" / "tiny-qwen3");
  EXPECT_THROW(make_handwritten_lane(md, {.max_seq = 64, .block_size = 12}), Error);  // not a power of two
  // The default pool: at least one context, at most max_batch contexts.
  auto lane = make_handwritten_lane(md, {.max_seq = 64, .max_batch = 5});
  EXPECT_GE(lane->limits().pool_tokens(), 64);
  EXPECT_LE(lane->limits().pool_tokens(), 5 * 64 + lane->limits().block_size);
}
