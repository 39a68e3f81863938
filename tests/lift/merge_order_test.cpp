// The merging passes keep the program in order as they merge (StageMerger) and ask again only the
// stages a merge may have changed (passes/merge_while.h), instead of normalising the program and
// asking every stage after each merge. These tests hold them to that definition:
//   - StageMerger: after every merge of random pairs of stages (neighbours, and stages far apart)
//     of long random programs, the program and its stage graph are those merge_stages + normalize
//     give, but for the emptied stages; each of its three ways (the merged stage in the first
//     place, in the second, renumbering) is taken;
//   - every pass of the pipeline, on long random programs and on the models' programs at more
//     layers, as written and batched, makes the program FuseOptions::renormalize_every_merge makes.
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "ir/batch.h"
#include "lang/lower.h"
#include "lift/passes/merge_while.h"
#include "lift/stage_graph.h"
#include "lift/stage_merger.h"
#include "random_programs.h"

namespace lg::lift::test {
namespace {

std::string list(const std::vector<ir::ValueId>& v) {
  std::string s;
  for (ir::ValueId x : v) s += " " + std::to_string(x);
  return s;
}

// The first difference between `got` (which may hold emptied stages) and the normalised `want`,
// numbering got's stages as normalize() would once the emptied ones are dropped; "" if none.
std::string difference(const StagedProgram& got, const StagedProgram& want) {
  std::vector<int32_t> number(got.stages.size(), -1);
  std::vector<const Stage*> live;
  for (size_t s = 0; s < got.stages.size(); ++s)
    if (!got.stages[s].nodes.empty()) {
      number[s] = static_cast<int32_t>(live.size());
      live.push_back(&got.stages[s]);
    }
  if (live.size() != want.stages.size())
    return std::to_string(live.size()) + " stages, want " + std::to_string(want.stages.size());
  for (size_t i = 0; i < live.size(); ++i) {
    const Stage& a = *live[i];
    const Stage& b = want.stages[i];
    if (a.kind != b.kind) return "stage " + std::to_string(i) + ": kind " + stage_kind_name(a.kind);
    if (a.nodes != b.nodes) return "stage " + std::to_string(i) + ": nodes" + list(a.nodes) + ", want" + list(b.nodes);
    if (a.stores != b.stores)
      return "stage " + std::to_string(i) + ": stores" + list(a.stores) + ", want" + list(b.stores);
  }
  for (size_t v = 0; v < got.stage_of.size(); ++v) {
    const int32_t s = got.stage_of[v];
    if ((s < 0 ? -1 : number[static_cast<size_t>(s)]) != want.stage_of[v]) return "stage_of node " + std::to_string(v);
  }
  if (got.is_inline != want.is_inline) return "inline nodes";
  return "";
}

// The same for two normalised programs, launches included.
std::string full_difference(const StagedProgram& got, const StagedProgram& want) {
  const std::string d = difference(got, want);
  if (!d.empty()) return d;
  if (got.launches.size() != want.launches.size()) return "launch count";
  for (size_t l = 0; l < got.launches.size(); ++l)
    if (got.launches[l].stages != want.launches[l].stages) return "launch " + std::to_string(l);
  return "";
}

// The merger's dependencies of every live stage against a fresh StageGraph of `want`.
std::string deps_difference(const StagedProgram& got, StageGraph& g, const StagedProgram& want) {
  std::vector<int32_t> number(got.stages.size(), -1);
  int32_t n = 0;
  for (size_t s = 0; s < got.stages.size(); ++s)
    if (!got.stages[s].nodes.empty()) number[s] = n++;
  StageGraph fresh(want);
  for (size_t s = 0; s < got.stages.size(); ++s) {
    if (number[s] < 0) continue;
    std::vector<int32_t> deps, dependents;
    for (int32_t d : g.deps(static_cast<int32_t>(s))) deps.push_back(number[static_cast<size_t>(d)]);
    for (int32_t d : g.dependents(static_cast<int32_t>(s))) dependents.push_back(number[static_cast<size_t>(d)]);
    if (deps != fresh.deps(number[s])) return "deps of stage " + std::to_string(number[s]);
    if (dependents != fresh.dependents(number[s])) return "dependents of stage " + std::to_string(number[s]);
  }
  return "";
}

TEST(MergeOrder, MergerKeepsTheProgramNormalizeMakes) {
  std::array<int, 3> ways{};  // merged stage in the first place, in the second, renumbered
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const RandomProgram rp = random_program(seed, 15);
    StagedProgram p = lift(rp.graph);
    StagedProgram want = p;
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    StageMerger merger(p);
    for (int attempt = 0; attempt < 300; ++attempt) {
      std::vector<int32_t> live;
      for (size_t s = 0; s < p.stages.size(); ++s)
        if (!p.stages[s].nodes.empty()) live.push_back(static_cast<int32_t>(s));
      if (live.size() < 2) break;
      StageGraph& g = merger.graph();
      const int32_t a = live[pick(live.size())];
      int32_t b = live[pick(live.size())];
      std::vector<int32_t> next = g.deps(a);
      next.insert(next.end(), g.dependents(a).begin(), g.dependents(a).end());
      if (!next.empty() && pick(3) != 0) b = next[pick(next.size())];
      if (a == b || g.merge_makes_cycle(a, b)) continue;
      const ir::ValueId na = p.stages[static_cast<size_t>(a)].nodes.front();
      const ir::ValueId nb = p.stages[static_cast<size_t>(b)].nodes.front();
      merge_stages(want, want.stage_of[static_cast<size_t>(na)], want.stage_of[static_cast<size_t>(nb)]);
      normalize(want);
      const StageMerger::Merged m = merger.merge(a, b);
      ++ways[m.renumbered ? 2 : m.stage == std::min(a, b) ? 0 : 1];
      ASSERT_EQ(difference(p, want), "") << "seed " << seed << ", merge " << attempt << "\nrecipe:\n" << rp.recipe;
      ASSERT_EQ(deps_difference(p, merger.graph(), want), "") << "seed " << seed << ", merge " << attempt;
    }
    merger.finish();
    ASSERT_EQ(full_difference(p, want), "") << "seed " << seed << " after finish";
  }
  EXPECT_GT(ways[0], 0);
  EXPECT_GT(ways[1], 0);
  EXPECT_GT(ways[2], 0);
  std::printf("merges: %d in the first place, %d in the second, %d renumbered\n", ways[0], ways[1], ways[2]);
}

size_t size_of(const StagedProgram& p, int32_t s) { return p.stages[static_cast<size_t>(s)].nodes.size(); }

// Rules that read what the passes' rules read (a stage's readers, its producers, the other
// readers of what it reads), whose answers change as those stages grow: merge_while must ask
// again every stage whose answer a merge may have changed.
lift::detail::Merge join_reader(const StagedProgram& p, StageGraph& g, int32_t s) {
  for (int32_t c : g.readers_of_stage(s))
    if (c >= 0 && (size_of(p, s) + size_of(p, c)) % 3 != 0 && g.merge_is_safe(s, c)) return {{s, c}};
  return std::nullopt;
}
lift::detail::Merge join_producer(const StagedProgram& p, StageGraph& g, int32_t s) {
  for (int32_t t : g.deps(s))
    if ((size_of(p, s) + size_of(p, t)) % 3 != 0 && g.merge_is_safe(t, s)) return {{t, s}};
  return std::nullopt;
}
lift::detail::Merge join_co_reader(const StagedProgram& p, StageGraph& g, int32_t s) {
  const auto& in = g.inputs(s);
  if (in.empty()) return std::nullopt;
  for (int32_t b : g.readers(in.front()))
    if (b > s && (size_of(p, s) + size_of(p, b)) % 3 != 0 && g.merge_is_safe(s, b)) return {{s, b}};
  return std::nullopt;
}
// Every stage that reads what m reads or computes (a co-reader's answer looks past m's neighbours).
void co_readers(const StagedProgram& p, StageGraph& g, int32_t m, lift::detail::StagesToAsk& ask) {
  std::vector<ir::ValueId> values = g.inputs(m);
  const auto& own = p.stages[static_cast<size_t>(m)].nodes;
  values.insert(values.end(), own.begin(), own.end());
  for (ir::ValueId v : values)
    for (int32_t r : g.readers(v)) ask.push(r);
}

TEST(MergeOrder, MergeWhileAsksAgainWhatAMergeMayChange) {
  int merges = 0;
  for (uint32_t seed = 1; seed <= 80; ++seed) {
    const RandomProgram rp = random_program(seed, 10);
    const StagedProgram lifted = lift(rp.graph);
    for (int rule = 0; rule < 3; ++rule) {
      StagedProgram want = lifted, got = lifted;
      for (bool reference : {true, false}) {
        StagedProgram& p = reference ? want : got;
        if (rule == 0) lift::detail::merge_while(p, reference, join_reader);
        if (rule == 1) lift::detail::merge_while(p, reference, join_producer);
        if (rule == 2) lift::detail::merge_while(p, reference, join_co_reader, co_readers);
      }
      merges += static_cast<int>(lifted.stages.size() - want.stages.size());
      ASSERT_EQ(full_difference(got, want), "") << "seed " << seed << ", rule " << rule;
    }
  }
  EXPECT_GT(merges, 1000);
}

// Each pass of the pipeline from the same program both ways; the results must be equal.
void expect_passes_make_the_definitions_program(const ir::Graph& g, const std::string& what) {
  StagedProgram p = lift(g);
  FuseOptions reference;
  reference.renormalize_every_merge = true;
  for (const Pass& pass : fusion_passes()) {
    StagedProgram want = p;
    pass.run(want, reference);
    pass.run(p, FuseOptions{});
    ASSERT_EQ(full_difference(p, want), "") << what << ", after " << pass.name;
  }
}

TEST(MergeOrder, PassesMergeAsTheDefinitionOnRandomPrograms) {
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    const int more = seed % 3 == 0 ? 30 : 0;
    const RandomProgram rp = random_program(seed, more);
    expect_passes_make_the_definitions_program(rp.graph, "seed " + std::to_string(seed) + " (+" +
                                                             std::to_string(more) + " steps)\nrecipe:\n" + rp.recipe);
    if (HasFatalFailure()) return;
  }
}

// A fixture's config with `layers` layers (layer_types repeated as they go).
nlohmann::json with_layers(const std::string& dir, int layers) {
  std::ifstream f(std::string(LG_SHARED_DIR) + "/fixtures/" + dir + "/config.json");
  nlohmann::json c = nlohmann::json::parse(f);
  c[c.contains("n_layer") ? "n_layer" : "num_hidden_layers"] = layers;
  if (c.contains("layer_types")) {
    const nlohmann::json types = c["layer_types"];
    c["layer_types"] = nlohmann::json::array();
    for (int l = 0; l < layers; ++l) c["layer_types"].push_back(types[static_cast<size_t>(l) % types.size()]);
  }
  return c;
}

TEST(MergeOrder, PassesMergeAsTheDefinitionOnTheModels) {
  const std::vector<std::pair<std::string, std::string>> models = {
      {"qwen3.lg", "tiny-qwen3"},          {"qwen2.lg", "tiny-qwen2"},   {"llama.lg", "tiny-llama3"},
      {"mistral.lg", "tiny-mistral"},      {"phi3.lg", "tiny-phi3"},     {"gpt2.lg", "tiny-gpt2"},
      {"gemma3_text.lg", "tiny-gemma3"},   {"qwen3_moe.lg", "tiny-qwen3-moe"}};
  for (const auto& [lg, dir] : models) {
    ir::Graph g =
        lang::lower_file(std::string(LG_SOURCE_DIR) + "/models/" + lg, with_layers(dir, 10), lang::BindOptions{64});
    expect_passes_make_the_definitions_program(g, lg + " on " + dir + ", 10 layers");
    ir::make_batched(g, {16, 16, 8, 64});
    expect_passes_make_the_definitions_program(g, lg + " on " + dir + ", 10 layers, batched");
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace lg::lift::test
