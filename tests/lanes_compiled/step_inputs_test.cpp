// The compiled lane's step-input mirror (src/lanes/compiled/step_inputs.h), on the host: the copies
// it plans, applied to a simulated device, leave the device holding exactly what the mirror says
// and what the step needs (the padded decode rows included), and they copy only what changed.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "lanes/compiled/step_inputs.h"
#include "runtime/step.h"
#include "support/error.h"

namespace lg::compiled {
namespace {

constexpr int64_t kMaxT = 24, kMaxB = 8, kMB = 6, kBs = 4;
constexpr int32_t kPad = 99;

/// The device buffers of the step inputs, written only by planned copies.
struct Device {
  std::array<std::vector<int32_t>, kStepInputCount> buf{
      std::vector<int32_t>(kMaxT, 0), std::vector<int32_t>(kMaxT, 0), std::vector<int32_t>(kMaxT, 0),
      std::vector<int32_t>(kMaxB * kMB, 0), std::vector<int32_t>(kMaxB, 0)};
  int64_t copied = 0;  // elements copied so far
  void apply(const std::vector<InputCopy>& copies, const std::vector<int32_t>& staging) {
    for (const InputCopy& c : copies)
      for (int64_t r = 0; r < c.height; ++r)
        for (int64_t w = 0; w < c.width; ++w) {
          buf[static_cast<size_t>(c.input)].at(static_cast<size_t>(c.dst + r * c.pitch + w)) =
              staging.at(static_cast<size_t>(c.src + r * c.width + w));
          ++copied;
        }
  }
};

/// One sequence per entry: its position and its blocks.
struct Seq {
  int32_t token, pos;
  std::vector<int32_t> blocks;
};

FlatBatch decode_step(const std::vector<Seq>& seqs) {
  std::vector<SeqStep> steps;
  for (const Seq& s : seqs) {
    SeqStep q;
    q.tokens = std::span<const int32_t>(&s.token, 1);
    q.start_pos = s.pos;
    q.blocks = s.blocks;
    steps.push_back(q);
  }
  LaneLimits lim;
  lim.max_seq = kMB * kBs;
  lim.block_size = kBs;
  lim.num_blocks = kPad;
  lim.max_batch = kMaxB;
  lim.max_tokens = kMaxT;
  return flatten(steps, lim);
}

/// The device holds what the mirror says, and the decode step's rows as the graph reads them.
void expect_decode_rows(const Device& d, const StepInputMirror& m, const std::vector<Seq>& seqs, int64_t bucket) {
  for (int k = 0; k < kStepInputCount; ++k)
    EXPECT_EQ(d.buf[static_cast<size_t>(k)], m.held(static_cast<StepInput>(k))) << "input " << k;
  for (int64_t b = 0; b < bucket; ++b) {
    const auto i = static_cast<size_t>(b);
    const bool pad = b >= static_cast<int64_t>(seqs.size());
    EXPECT_EQ(d.buf[kTokens][i], pad ? 0 : seqs[i].token);
    EXPECT_EQ(d.buf[kPos][i], pad ? 0 : seqs[i].pos);
    EXPECT_EQ(d.buf[kSeq][i], b);
    EXPECT_EQ(d.buf[kRows][i], b);
    if (pad) {
      EXPECT_EQ(d.buf[kBlockTable][i * kMB], kPad);
    } else {
      for (int32_t c = 0; c <= seqs[i].pos / kBs; ++c)
        EXPECT_EQ(d.buf[kBlockTable][i * kMB + static_cast<size_t>(c)], seqs[i].blocks[static_cast<size_t>(c)]);
    }
  }
}

TEST(StepInputMirror, DecodeStepsCopyOnlyWhatChanged) {
  StepInputMirror m(kMaxT, kMaxB, kMB);
  std::vector<int32_t> staging(static_cast<size_t>(m.staging_elems()));
  Device d;
  std::vector<Seq> seqs = {{5, 2, {7, 3}}, {6, 5, {1, 8, 2}}, {9, 0, {4}}};
  FlatBatch f = decode_step(seqs);
  d.apply(m.plan_decode(f, 4, kPad, kBs, staging), staging);
  expect_decode_rows(d, m, seqs, 4);

  // The same step again: nothing to copy.
  const int64_t before = d.copied;
  EXPECT_TRUE(m.plan_decode(f, 4, kPad, kBs, staging).empty());

  // Next positions, no new block: the tokens and positions only.
  for (Seq& s : seqs) ++s.pos, ++s.token;
  f = decode_step(seqs);
  auto copies = m.plan_decode(f, 4, kPad, kBs, staging);
  for (const InputCopy& c : copies) EXPECT_TRUE(c.input == kTokens || c.input == kPos) << c.input;
  d.apply(copies, staging);
  expect_decode_rows(d, m, seqs, 4);
  EXPECT_EQ(d.copied - before, 6);  // 3 tokens and 3 positions (the pad row's zeros are there already)

  // Sequence 2 enters its second block: one block-table entry is copied, as a 1 x 1 rectangle.
  seqs[2].pos = 4;
  seqs[2].blocks.push_back(6);
  f = decode_step(seqs);
  copies = m.plan_decode(f, 4, kPad, kBs, staging);
  int tables = 0;
  for (const InputCopy& c : copies)
    if (c.input == kBlockTable) {
      ++tables;
      EXPECT_EQ(c.dst, 2 * kMB + 1);
      EXPECT_EQ(c.width, 1);
      EXPECT_EQ(c.height, 1);
      EXPECT_EQ(c.pitch, kMB);
    }
  EXPECT_EQ(tables, 1);
  d.apply(copies, staging);
  expect_decode_rows(d, m, seqs, 4);

  // Fewer sequences in a bigger bucket, rows shuffled: rows 0 .. 7, five of them padding.
  std::vector<Seq> other = {seqs[1], seqs[0], seqs[2]};
  std::swap(other[0].blocks, other[2].blocks);  // different tables in different rows
  other[0].pos = 1;
  other[2].pos = 9;
  other[2].blocks = {4, 6, 11};
  f = decode_step(other);
  d.apply(m.plan_decode(f, 8, kPad, kBs, staging), staging);
  expect_decode_rows(d, m, other, 8);
}

// An eager step (a prefill chunk) between decode steps rewrites the inputs; the next decode step
// finds out from the mirror and puts back what its graph reads.
TEST(StepInputMirror, EagerStepsAndDecodeStepsShareTheMirror) {
  StepInputMirror m(kMaxT, kMaxB, kMB);
  std::vector<int32_t> staging(static_cast<size_t>(m.staging_elems()));
  Device d;
  std::vector<Seq> seqs = {{5, 6, {7, 3}}, {6, 5, {1, 8}}};
  d.apply(m.plan_decode(decode_step(seqs), 2, kPad, kBs, staging), staging);
  expect_decode_rows(d, m, seqs, 2);

  // A prompt of 5 tokens for a sequence in row 0 and one decode in row 1.
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5}, blocks0 = {2, 9}, one = {8};
  std::vector<SeqStep> steps(2);
  steps[0].tokens = prompt;
  steps[0].blocks = blocks0;
  steps[1].tokens = one;
  steps[1].start_pos = seqs[1].pos + 1;
  steps[1].blocks = seqs[1].blocks;
  LaneLimits lim{kMB * kBs, kBs, kPad, kMaxB, kMaxT};
  const FlatBatch f = flatten(steps, lim);
  d.apply(m.plan(f, staging), staging);
  for (int k = 0; k < kStepInputCount; ++k)
    EXPECT_EQ(d.buf[static_cast<size_t>(k)], m.held(static_cast<StepInput>(k))) << "input " << k;
  EXPECT_EQ(std::vector<int32_t>(d.buf[kTokens].begin(), d.buf[kTokens].begin() + 6), (std::vector<int32_t>{1, 2, 3, 4, 5, 8}));
  EXPECT_EQ(std::vector<int32_t>(d.buf[kSeq].begin(), d.buf[kSeq].begin() + 6), (std::vector<int32_t>{0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(d.buf[kRows][0], 4);
  EXPECT_EQ(d.buf[kBlockTable][1], 9);

  // The same two sequences decode next: seq, rows and the first table row go back.
  seqs[0] = {6, 5, blocks0};
  seqs[1].pos += 2;
  seqs[1].token = 3;
  d.apply(m.plan_decode(decode_step(seqs), 2, kPad, kBs, staging), staging);
  expect_decode_rows(d, m, seqs, 2);
}

TEST(StepInputMirror, RefusesWhatIsNotAPaddedDecodeStep) {
  StepInputMirror m(kMaxT, kMaxB, kMB);
  std::vector<int32_t> staging(static_cast<size_t>(m.staging_elems()));
  const std::vector<Seq> seqs = {{5, 2, {7}}, {6, 3, {1}}};
  const FlatBatch f = decode_step(seqs);
  EXPECT_THROW(m.plan_decode(f, 1, kPad, kBs, staging), Error);          // bucket below B
  EXPECT_THROW(m.plan_decode(f, kMaxB + 1, kPad, kBs, staging), Error);  // above max_batch
  FlatBatch prefill = f;
  prefill.T = 3;
  EXPECT_THROW(m.plan_decode(prefill, 2, kPad, kBs, staging), Error);
  std::vector<int32_t> small(3);
  EXPECT_THROW(m.plan_decode(f, 2, kPad, kBs, small), Error);
  EXPECT_THROW(StepInputMirror(0, 1, 1), Error);
}

}  // namespace
}  // namespace lg::compiled
