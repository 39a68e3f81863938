// The program tools as a user meets them: lg compile's sizing, summary and usage errors, lg
// check's notes on what the compiler would refuse, program errors naming the config they read,
// lg bench and lg serve --shape where there is no GPU, lg lock check's lane refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "common/model_copy.h"
#include "common/source_position.h"

namespace lg::cli_test {
namespace {

/// A program written to `name` in the test's temporary folder (`file`, for the positions messages
/// give) and `lg check`'s run of it against tiny-qwen3's config.
struct CheckedProgram {
  std::string file;
  CliRun run;
};
CheckedProgram check_program(const std::string& name, const std::string& text) {
  const std::string file = ::testing::TempDir() + "/" + name;
  std::ofstream(file) << text;
  return {file, run_lg("check " + file + " -c " + kTiny)};
}

/// qwen3.lg with its forward's logits typed `signature` (for "f32[T, V]") and returned as
/// `logits` (for "rms_norm(x, norm, eps) @ head.T").
std::string qwen3_with_logits(const std::string& signature, const std::string& logits) {
  std::ifstream in(kQwen3);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string old_sig = "-> f32[T, V]", old_ret = "return rms_norm(x, norm, eps) @ head.T";
  const size_t sig = text.find(old_sig);
  EXPECT_NE(sig, std::string::npos) << "qwen3.lg's forward signature moved";
  if (sig == std::string::npos) return text;
  text.replace(sig, old_sig.size(), "-> " + signature);
  const size_t ret = text.find(old_ret, sig);
  EXPECT_NE(ret, std::string::npos) << "qwen3.lg's return statement moved";
  if (ret != std::string::npos) text.replace(ret, old_ret.size(), "return " + logits);
  return text;
}

/// `lg check` of a program that checks clean passes with the note that no lane runs it, ending
/// in `forward_note`, and lg run refuses the program at load saying `refusal`.
void expect_noted_and_refused(const CheckedProgram& checked, const std::string& forward_note,
                              const std::string& refusal) {
  EXPECT_EQ(checked.run.code, 0) << checked.run.out;
  EXPECT_NE(checked.run.out.find("note: no lane would run this program as a model (lg run, serve and batch refuse it "
                                 "at load):\n  the forward " + forward_note),
            std::string::npos)
      << checked.run.out;
  const CliRun run = run_lg("run --lane cpu --model " + kTiny + " --program " + checked.file + " --prompt-ids 5 -n 1");
  EXPECT_EQ(run.code, 1) << run.out;
  EXPECT_NE(run.out.find(refusal), std::string::npos) << run.out;
}


TEST(CliUsage, CompileWithNothingToProduceIsAUsageError) {
  expect_usage_error("compile " + kQwen3 + " -c " + kTiny, "lg compile needs -o OUTDIR");
  EXPECT_NE(run_lg("compile " + kQwen3 + " -c " + kTiny).out.find("--help"), std::string::npos);
  // An empty -o (an unset shell variable) is refused, not a success that wrote nothing.
  expect_usage_error("compile " + kQwen3 + " -c " + kTiny + " -o ''", "-o,--out: needs a directory, got an empty path");
  expect_usage_error("compile " + kQwen3 + " -c " + kTiny + " --explain -o ''", "needs a directory");
  // lg lock new used to run every case and then fail the write.
  expect_usage_error("lock new --model " + kTiny + " --golden " + kTiny + "/golden.json -o ''",
                     "-o,--out: needs a lock file, got an empty path");
}

// lg lock new took --model only, where lg run, serve, batch and template take -m too: `-m DIR`
// said "--model is required". A lock file in a folder that does not exist was found only at the
// write after every case ran ("cannot write lock file", no reason); it is refused first. A
// --program that does not exist was an ERROR line for every lock in the folder (lg lock check);
// it is refused as lg run refuses it (found by a new-user pass).
TEST(CliUsage, LockNewTakesDashMAndRefusesAMissingFolderOrProgramFirst) {
  const std::string golden = kTiny + "/golden.json";
  expect_usage_error("lock new -m " + kTiny + " --golden " + golden + " -o /nonexistent-lg-folder/x.lock.json",
                     "-o,--out: /nonexistent-lg-folder/x.lock.json: no such folder /nonexistent-lg-folder");
  const std::string lock = (std::filesystem::temp_directory_path() / "lg_lock_new_dash_m.lock.json").string();
  std::filesystem::remove(lock);
  const CliRun made = run_lg("lock new -m " + kTiny + " --golden " + golden + " --new-tokens 2 -o " + lock);
  EXPECT_EQ(made.code, 0) << made.out;
  EXPECT_TRUE(std::filesystem::exists(lock)) << made.out;
  std::filesystem::remove(lock);
  for (const std::string& sub : {std::string("check"), std::string("update"), "new -m " + kTiny + " --golden " + golden + " -o /dev/null"})
    expect_usage_error("lock " + sub + " --program /nonexistent/x.lg", "--program: File does not exist: /nonexistent/x.lg");
}

// lg compile's --kv-tokens help said "default: the lane's; cpu: two contexts", lg run's text;
// lg compile has no lane and takes four contexts (KV pool 4096 at context 1024, below).
TEST(CliUsage, CompileHelpStatesItsOwnKvTokensDefault) {
  const CliRun help = run_lg("compile --help");
  EXPECT_EQ(help.code, 0) << help.out;
  EXPECT_NE(help.out.find("all sequences together (default: four contexts)"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("cpu: two contexts"), std::string::npos) << help.out;
  EXPECT_NE(run_lg("run --help").out.find("(default: the lane's; cpu: two contexts)"), std::string::npos);
}

// Without --max-seq, `lg compile` sizes the program for the model's context (as lg check binds
// S), at most 4096; a step holds at most min(S, 2048) tokens, at least the 256 sequences of the
// default --max-batch (--one-sequence: T = S); a program without layers says its launch count is
// not per layer.
TEST(CliUsage, CompileSizesForTheModelsContext) {
  const CliRun r = run_lg("compile " + kQwen3 + " -c " + kTiny + " --explain");  // max_position_embeddings 1024
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("at T = 1024, B = 256 (context 1024, KV pool 4096 tokens in blocks of 16)\n"), std::string::npos) << r.out;
  const CliRun one = run_lg("compile " + kQwen3 + " -c " + kTiny + " --explain --one-sequence");
  EXPECT_NE(one.out.find("at T = 1024\n"), std::string::npos) << one.out;
  // A Qwen3-sized context (40960) is capped at 4096.
  std::ifstream in(kTiny + "/config.json");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string field = "\"max_position_embeddings\": 1024";
  ASSERT_NE(config.find(field), std::string::npos);
  config.replace(config.find(field), field.size(), "\"max_position_embeddings\": 40960");
  const std::string big_config = ::testing::TempDir() + "/lg_compile_big_context.json";
  std::ofstream(big_config) << config;
  const CliRun big = run_lg("compile " + kQwen3 + " -c " + big_config + " --explain");
  EXPECT_NE(big.out.find("at T = 2048, B = 256 (context 4096, KV pool 16384 tokens in blocks of 16)\n"), std::string::npos) << big.out;
  const CliRun given = run_lg("compile " + kQwen3 + " -c " + kTiny + " --explain --max-seq 64");
  EXPECT_NE(given.out.find("at T = 256, B = 256 (context 64, KV pool 256 tokens in blocks of 16)\n"), std::string::npos) << given.out;
  EXPECT_EQ(given.out.find("warning"), std::string::npos) << given.out;
  // Past the model's context it still compiles (a compiler emits what it is asked), and says so.
  const CliRun past = run_lg("compile " + kQwen3 + " -c " + kTiny + " --explain --max-seq 2048");
  EXPECT_EQ(past.code, 0) << past.out;
  EXPECT_NE(past.out.find("warning: --max-seq 2048 is above the model's context of 1024 tokens"), std::string::npos)
      << past.out;
  // lg check and lg ir accept such a --max-seq too, and say the same (lg check said nothing); not
  // within the context.
  const std::string said = past.out.substr(past.out.find("lg compile: warning: ") + 21);
  const std::string line = said.substr(0, said.find('\n'));
  EXPECT_NE(line.find("lg run, serve and batch refuse it"), std::string::npos) << line;
  for (const std::string cmd : {"check", "ir"}) {
    const CliRun said_by = run_lg(cmd + " " + kQwen3 + " -c " + kTiny + " --max-seq 2048");
    EXPECT_EQ(said_by.code, 0) << said_by.out.substr(0, 2000);
    EXPECT_NE(said_by.out.find("lg " + cmd + ": warning: " + line + "\n"), std::string::npos) << said_by.out.substr(0, 2000);
    const CliRun within = run_lg(cmd + " " + kQwen3 + " -c " + kTiny + " --max-seq 1024");
    EXPECT_EQ(within.out.find("warning"), std::string::npos) << within.out.substr(0, 2000);
  }
  // GPT-2's context is its n_positions (no max_position_embeddings): positions past it index no
  // row of its position table, and the same warning names that key (it said nothing).
  const CliRun gpt2 = run_lg("check " + kSource + "/models/gpt2.lg -c " + kShared + "/fixtures/tiny-gpt2 --max-seq 2048");
  EXPECT_NE(gpt2.out.find("warning: --max-seq 2048 is above the model's context of 1024 tokens (n_positions)"),
            std::string::npos)
      << gpt2.out.substr(0, 2000);
  const CliRun mlp = run_lg("compile " + kSource + "/models/examples/cc_mlp.lg -c " + kTiny + " --explain");
  EXPECT_NE(mlp.out.find("launches per decode layer: 2\n"), std::string::npos) << mlp.out;
  const std::string flat = ::testing::TempDir() + "/lg_compile_no_layers.lg";
  std::ofstream(flat) << "model flat {\n  dims { D = config.hidden_size }\n  param w: f32[D] = \"w\"\n"
                         "  forward(tokens: i32[T], pos: i32[T]) -> f32[T, D] {\n"
                         "    return exp(pos.to(f32).unsqueeze(-1) * w)\n  }\n}\n";
  const CliRun none = run_lg("compile " + flat + " -c " + kTiny + " --explain");
  EXPECT_NE(none.out.find("(no launch repeats: one layer or none, every launch counted)"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("prefill forms"), std::string::npos) << none.out;  // no GEMM, no attention
  // A program with no state has no KV cache to pool: its summary names none.
  EXPECT_NE(none.out.find("B = 256 (context 1024)\n"), std::string::npos) << none.out;
}

// The summary names the launches that run another form at steps of many tokens: at the
// Qwen3-30B-A3B shape (bf16 weights) every layer's QKV, o_proj and router GEMMs on cuBLASLt (plus
// the LM head), its attention on the flash template, and its two experts launches as grouped
// tensor-core GEMMs from 64 tokens on.
TEST(CliUsage, CompileSummaryNamesThePrefillForms) {
  const CliRun moe = run_lg("compile " + kSource + "/models/qwen3_moe.lg -c " + kSource + "/bench/shapes/qwen3-30b-a3b "
                            "--explain --max-seq 256");
  EXPECT_EQ(moe.code, 0) << moe.out;
  EXPECT_NE(moe.out.find("prefill forms (T > 1): 145 GEMM launches on cuBLASLt, 48 attention launches on the flash "
                         "template, 96 experts launches as grouped tensor-core GEMMs (at T >= 64); 48 split-KV "
                         "attention launches take 8 query heads a block on the tensor cores at 64+ decode rows\n"),
            std::string::npos)
      << moe.out.substr(moe.out.size() > 600 ? moe.out.size() - 600 : 0);
  // Its GQA group of 8 gives the split-KV attention a wide form on the tensor cores (all 8 query
  // heads of a KV head a block, not 2), and a one-row form for one sequence's decode.
  EXPECT_NE(moe.out.find("one-row forms (one sequence's decode): 48 split-KV attention launches run 3 blocks an SM\n"),
            std::string::npos);
  // Gemma 3's head_dim 256 has no flash form: the summary says its attention stays split-KV, and why.
  const CliRun gemma = run_lg("compile " + kSource + "/models/gemma3_text.lg -c " + kSource +
                              "/bench/shapes/gemma-3-12b-text --explain --max-seq 256");
  EXPECT_EQ(gemma.code, 0) << gemma.out;
  EXPECT_NE(gemma.out.find("0 attention launches on the flash template; 48 attention launches stay on the split-KV "
                           "kernel at every T (the flash template takes head_dim 16, 32, 64 or 128)\n"),
            std::string::npos)
      << gemma.out.substr(gemma.out.size() > 600 ? gemma.out.size() - 600 : 0);
  // Its group of 2 fits one block: no one-row form.
  EXPECT_EQ(gemma.out.find("one-row forms"), std::string::npos);
  // No step of more than one row, no prefill form to name.
  const CliRun one = run_lg("compile " + kQwen3 + " -c " + kModel + " --explain --max-batch 1 --max-step-tokens 1");
  EXPECT_EQ(one.code, 0) << one.out;
  EXPECT_NE(one.out.find("at T = 1, B = 1"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("prefill forms"), std::string::npos) << one.out;
}

// `lg check` passes a well-typed program that no lane runs, since every lane runs batched steps and
// the batching rewrite cannot page it (a KV cache read other than whole by attention), and says
// so, naming the statement: it said nothing, and lg run, serve and batch then refused the program
// at load (found by a new-user pass). qwen3.lg with one statement that reads a row of the cache.
TEST(CliUsage, CheckNotesAProgramNoLaneCanBatch) {
  std::ifstream in(kQwen3);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string attention = "a = attention(q, kcache[l], vcache[l], pos)";
  const size_t at = text.find(attention);
  ASSERT_NE(at, std::string::npos) << "qwen3.lg's attention statement moved";
  text.replace(at, attention.size(), attention + " + vcache[l][:, 0:1, :].view(1, KV, Dh)[:, 0:1, :]");
  const auto [file, r] = check_program("lg_check_cache_row.lg", text);
  EXPECT_EQ(r.code, 0) << r.out;
  const auto line = std::count(text.begin(), text.begin() + static_cast<long>(at), '\n') + 1;
  EXPECT_NE(r.out.find("note: no lane would run this program (lg run, serve and batch refuse it at load):\n  "
                       "lg_check_cache_row.lg:" + std::to_string(line) + ":"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("it slices the position axis of a state"), std::string::npos) << r.out;
  // The refusal is real: lg batch refuses the program at load with the same message.
  const CliRun batch = run_lg("batch --model " + kTiny + " --program " + file + " -i - -o - -q < /dev/null");
  EXPECT_EQ(batch.code, 1) << batch.out;
  EXPECT_NE(batch.out.find("it slices the position axis of a state"), std::string::npos) << batch.out;
}

// Logits of a dtype other than f32 check as a program but no lane samples them: lg check says so,
// and lg run refuses the program at load (it read an i32 output as floats and crashed: a new-user
// pass).
TEST(CliUsage, CheckNotesLogitsThatAreNotF32) {
  expect_noted_and_refused(
      check_program("lg_check_int_logits.lg", qwen3_with_logits("i32[T, V]", "(rms_norm(x, norm, eps) @ head.T).to(i32)")),
      "returns i32[T,", "a model's forward returns the logits f32[T, V]");
}

// Logits narrower than config.json's vocab_size check as a program (the type is the program's
// own), but lg run refuses them at load: lg check said nothing, and lg compile wrote the program
// (found by a new-user pass). qwen3.lg returning the first 256 of tiny-qwen3's 512 columns.
TEST(CliUsage, CheckNotesLogitsNarrowerThanTheVocabulary) {
  expect_noted_and_refused(check_program("lg_check_narrow_logits.lg", qwen3_with_logits("f32[T, 256]",
                                                                                      "(rms_norm(x, norm, eps) @ head.T)[:, 0:256]")),
                           "returns logits [T, 256], but " + kTiny + "/config.json has vocab_size 512",
                           "the forward returns logits [T, 256], but");
}

// A lock whose longest case needs more positions than the program checks at (phi3.lg past a
// config's sliding_window) was refused with the program's advice alone, "give --max-seq at most
// the window", an option lg lock does not have (found by a new-user pass): the refusal says the
// length it lowered the program at, and that the cases make it.
TEST(CliUsage, LockNewPastWhatTheProgramChecksAtSaysWhatLengthItTried) {
  test::ModelCopy phi3(kShared + "/fixtures/tiny-phi3");
  phi3.edit_json("config.json", [](nlohmann::json& j) { j["sliding_window"] = 8; });
  const std::string golden = ::testing::TempDir() + "/lg_lock_phi3_window_golden.json";
  std::ofstream(golden) << R"({"cases": [{"prompt_ids": [5, 6, 7, 8, 9]}]})";
  const std::string lock = ::testing::TempDir() + "/lg_lock_phi3_window.lock.json";
  const std::string cmd = "lock new -m " + phi3.dir.string() + " --golden " + golden + " -o " + lock;
  const CliRun refused = run_lg(cmd + " --new-tokens 5");
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find("give --max-seq at most the window"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("note: lg lock lowers the program at 10 positions, what its longest case needs (the "
                             "prompt and the new tokens)"),
            std::string::npos)
      << refused.out;
  const CliRun made = run_lg(cmd + " --new-tokens 3");
  EXPECT_EQ(made.code, 0) << made.out;
  std::filesystem::remove(golden);
  std::filesystem::remove(lock);
}

// `lg check` passes a well-typed program the lifter refuses, and says the compiled lane would
// refuse it, naming the statement.
TEST(CliUsage, CheckNotesWhatTheCompilerWouldRefuse) {
  const auto [file, r] = check_program("lg_check_token_matmul.lg",
                                       "model tok {\n  dims { D = config.hidden_size }\n  param w: f32[D, D] = \"w\"\n"
                                       "  forward(tokens: i32[T], pos: i32[T]) -> f32[D, D] {\n"
                                       "    x = pos.to(f32).unsqueeze(-1) * w[0]\n    return x.T @ x\n  }\n}\n");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("note: the compiled lane would refuse this program"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lg_check_token_matmul.lg:6:5: cannot lift"), std::string::npos) << r.out;
  const CliRun q = run_lg("check " + kQwen3 + " -c " + kTiny);
  EXPECT_EQ(q.code, 0) << q.out;
  EXPECT_EQ(q.out.find("note:"), std::string::npos) << q.out;
  // The toy program's param "w" is in no checkpoint: with the config beside tiny-qwen3's
  // weights, a note says `lg run` would refuse it (new-user pass, session 22: a misspelt tensor
  // name checked clean).
  EXPECT_NE(r.out.find("note: the params do not fit the checkpoint in " + kTiny), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing tensor \"w\" (param w [64,64] at " + lg::test::source_position(file, "param w:") + ")"),
            std::string::npos)
      << r.out;
  // A config alone (no checkpoint beside it) gets no such note.
  const CliRun shape = run_lg("check " + kSource + "/models/qwen3_moe.lg -c " + kSource + "/bench/shapes/qwen3-30b-a3b");
  EXPECT_EQ(shape.code, 0) << shape.out;
  EXPECT_EQ(shape.out.find("do not fit the checkpoint"), std::string::npos) << shape.out;
}

// A statement nothing reads is noted, as a compiler notes an unused variable (the compiler leaves
// it out; new-user pass, session 46: nothing said so); one whose value is read is not.
TEST(CliUsage, CheckNotesAStatementNothingReads) {
  const auto [file, r] = check_program(
      "lg_check_unused.lg",
      "model unused {\n  dims { V = config.vocab_size\n D = config.hidden_size }\n"
      "  param embed: f32[V, D] = \"model.embed_tokens.weight\"\n"
      "  forward(tokens: i32[T], pos: i32[T]) -> f32[T, V] {\n"
      "    x = embed[tokens]\n    s = sum(x, axis=-1)\n    y = x * 2.0\n    return y @ embed.T\n  }\n}\n");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("note: line 7: `s` is never used"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("`x` is never used"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("`y` is never used"), std::string::npos) << r.out;
}

// A program's errors point at its own lines; check, ir and compile then name the config they read
// (a new user could not tell which config a failed `require` was about).
TEST(CliUsage, ProgramErrorsNameTheConfigTheyRead) {
  const std::string dir = ::testing::TempDir() + "/lg_bad_moe_config";
  std::filesystem::create_directories(dir);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(kShared + "/fixtures/tiny-qwen3-moe/config.json"));
  config["decoder_sparse_step"] = 0;
  std::ofstream(dir + "/config.json") << config.dump();
  for (const std::string cmd : {"check", "ir", "compile"}) {
    const CliRun r =
        run_lg(cmd + " " + kSource + "/models/qwen3_moe.lg -c " + dir + (cmd == "compile" ? " -o " + dir + "/out" : ""));
    EXPECT_NE(r.code, 0) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("decoder_sparse_step must be at least 1"), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("note: the config read is " + dir + "/config.json"), std::string::npos) << cmd << "\n" << r.out;
  }
}

// On a machine without a GPU, `lg bench --lane cpu` says what is missing and what to use instead.
TEST(CliUsage, BenchOfTheCpuLaneSaysWhatIsWrong) {
  const CliRun preset = run_lg("bench --lane cpu");
  EXPECT_EQ(preset.code, 1) << preset.out;
  EXPECT_NE(preset.out.find("--lane cpu needs a model directory as --shape"), std::string::npos) << preset.out;
  const CliRun dir = run_lg("bench --lane cpu --shape " + kTiny);
  if (dir.code == 0) GTEST_SKIP() << "a CUDA device is present: bench ran";
  EXPECT_EQ(dir.code, 1) << dir.out;
  EXPECT_NE(dir.out.find("lg run --lane cpu"), std::string::npos) << dir.out;
}

// A lane name lg does not have is refused as unknown before the shape or a device is looked at,
// as lg run refuses it: it was told it needed a model directory, or, given one, that "the bogus
// lane runs on a GPU".
TEST(CliUsage, BenchRefusesAnUnknownLaneByName) {
  for (const std::string& shape : {std::string(), " --shape " + kTiny}) {
    const CliRun r = run_lg("bench --lane bogus" + shape);
    EXPECT_EQ(r.code, 1) << shape << "\n" << r.out;
    EXPECT_NE(r.out.find("lg: error: unknown lane 'bogus' (this build has: cpu"), std::string::npos) << r.out;
  }
}

// An unknown preset is refused by name before a device is looked for (the presets are bench's own
// config.json values, not the hand-written lane's).
TEST(CliUsage, BenchNamesItsPresetShapes) {
  const CliRun r = run_lg("bench --shape qwen3-235b");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--shape 'qwen3-235b': known shapes are qwen3-0.6b, qwen3-8b, or a model directory"),
            std::string::npos)
      << r.out;
}

// `lg serve --shape` takes what `lg bench --shape` takes for random weights: a preset or a
// directory holding a config.json alone (bench/shapes/*). Random weights are made for the GPU
// lanes only, so on the cpu lane a shape directory gets as far as the lane's refusal (an unknown
// name is refused before it, by name); the directory's faults are named before any lane is.
TEST(CliUsage, ServeShapeTakesAConfigDirectoryAsBenchDoes) {
  const CliRun dir = run_lg("serve --lane cpu --shape " + kSource + "/bench/shapes/llama-3.1-8b");
  EXPECT_EQ(dir.code, 1) << dir.out;
  EXPECT_NE(dir.out.find("lg serve: --lane cpu runs on a checkpoint only (--model DIR): random weights at --shape"),
            std::string::npos)
      << dir.out;
  const CliRun name = run_lg("serve --lane cpu --shape qwen3-235b");
  EXPECT_EQ(name.code, 1) << name.out;
  EXPECT_NE(name.out.find("--shape 'qwen3-235b': known shapes are qwen3-0.6b, qwen3-8b, or a directory holding a "
                          "config.json alone (bench/shapes/*)"),
            std::string::npos)
      << name.out;
  const std::string empty = (std::filesystem::temp_directory_path() / "lg_serve_shape_no_config").string();
  std::filesystem::create_directories(empty);
  const CliRun none = run_lg("serve --shape " + empty);
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_NE(none.out.find("--shape '" + empty + "': this directory has no config.json"), std::string::npos) << none.out;
  std::filesystem::remove_all(empty);
  const CliRun checkpoint = run_lg("serve --shape " + kModel);
  EXPECT_EQ(checkpoint.code, 1) << checkpoint.out;
  EXPECT_NE(checkpoint.out.find("holds weights (*.safetensors): it is a checkpoint, not a shape; give it as --model"),
            std::string::npos)
      << checkpoint.out;
}

// A lane lg lock check cannot run is said once, before any lock's model loads, as lg run says it;
// it was an ERROR line per lock (ten with the repository's locks), then "10 locks failed".
TEST(CliUsage, LockCheckRefusesALaneItCannotRunOnceBeforeAnyLock) {
  const CliRun bogus = run_lg("lock check --lane bogus");
  EXPECT_EQ(bogus.code, 1) << bogus.out;
  EXPECT_NE(bogus.out.find("lg: error: unknown lane 'bogus' (this build has: cpu"), std::string::npos) << bogus.out;
  EXPECT_EQ(bogus.out.find(".lock.json"), std::string::npos) << bogus.out;
  const CliRun gpu = run_lg("lock check --lane compiled");
  if (gpu.out.find("no usable CUDA device") == std::string::npos)
    GTEST_SKIP() << "a CUDA device is present, or this build has no GPU lanes:\n" << gpu.out;
  EXPECT_EQ(gpu.code, 1) << gpu.out;
  EXPECT_NE(gpu.out.find("lg: error: lane 'compiled' runs on an NVIDIA GPU and this machine has no usable CUDA device"),
            std::string::npos)
      << gpu.out;
  EXPECT_EQ(gpu.out.find(".lock.json"), std::string::npos) << gpu.out;
}

// `lg lock check` away from the repository: a missing locks folder names --locks, and a lock
// whose model is not where its relative path points names the path it tried and --shared
// (both were bare "no such folder" messages; new-user pass, session 22).
TEST(CliUsage, LockCheckAwayFromTheRepoNamesLocksAndShared) {
  const CliRun none = run_lg("lock check --lane cpu --locks /nonexistent/locks");
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_NE(none.out.find("/nonexistent/locks: no such locks folder (--locks DIR"), std::string::npos) << none.out;
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "lg_moved_locks" / "locks";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kSource + "/locks/tiny-qwen3.lock.json", dir / "tiny-qwen3.lock.json",
                             std::filesystem::copy_options::overwrite_existing);
  const CliRun moved = run_lg("lock check --lane cpu --locks " + dir.string());
  EXPECT_NE(moved.code, 0) << moved.out;
  EXPECT_NE(moved.out.find("tiny-qwen3.lock.json: its model ../shared/fixtures/tiny-qwen3 is not at "), std::string::npos)
      << moved.out;
  EXPECT_NE(moved.out.find("--shared DIR replaces a leading ../shared/"), std::string::npos) << moved.out;
  // With --shared it runs.
  const CliRun shared = run_lg("lock check --lane cpu --locks " + dir.string() + " --shared " + kShared);
  EXPECT_EQ(shared.code, 0) << shared.out;
  EXPECT_NE(shared.out.find("ok   tiny-qwen3.lock.json"), std::string::npos) << shared.out;
  // lg lock update reads every lock before it rewrites one: beside a malformed lock (sorted after
  // it) the good one is left as it was (it was rewritten before the update stopped).
  std::ofstream(dir / "zz.lock.json") << R"({"bad": 1})";
  std::ifstream before_in(dir / "tiny-qwen3.lock.json");
  const std::string before((std::istreambuf_iterator<char>(before_in)), std::istreambuf_iterator<char>());
  const CliRun update = run_lg("lock update --locks " + dir.string() + " --shared " + kShared);
  EXPECT_EQ(update.code, 1) << update.out;
  EXPECT_NE(update.out.find("zz.lock.json: missing field 'format'"), std::string::npos) << update.out;
  std::ifstream after_in(dir / "tiny-qwen3.lock.json");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after_in)), std::istreambuf_iterator<char>()), before);
  EXPECT_NE(update.out.find("(no lock was updated)"), std::string::npos) << update.out;
  EXPECT_EQ(update.out.rfind("updated ", 0), std::string::npos) << update.out;
  // A well-formed lock whose prompt is past its model's vocabulary is found before any rewrite too.
  nlohmann::json bad = nlohmann::json::parse(before);
  bad["cases"][0]["prompt_ids"][0] = 99999;
  std::ofstream(dir / "zz.lock.json") << bad.dump();
  const CliRun past = run_lg("lock update --locks " + dir.string() + " --shared " + kShared);
  EXPECT_EQ(past.code, 1) << past.out;
  EXPECT_NE(past.out.find("is 99999, outside the model's vocabulary of 512 ids"), std::string::npos) << past.out;
  EXPECT_EQ(past.out.rfind("updated ", 0), std::string::npos) << past.out;
  std::filesystem::remove_all(dir.parent_path());
}

// phi3.lg binds only where config.sliding_window covers the context (Phi-3-mini-4k: a window of
// 2047 positions of its 4096) and asks for --max-seq at most the window. lg run, serve and batch
// lower it at their --max-seq; lg lock lowered it at the config's context only and reported every
// such model's lock as an error. It now lowers at the positions the lock's cases need (tiny-phi3's
// lock: 64 + 24), as lg run does at a --max-seq: a tiny-phi3 copy with a window of 512 (the same
// weights, so the same hash and tokens) checks ok, and lg lock new records it.
TEST(CliLock, AProgramThatBindsOnlyBelowTheConfigsContextIsCheckedAtTheLocksLength) {
  test::ModelCopy phi3(kShared + "/fixtures/tiny-phi3");
  phi3.edit_json("config.json", [](nlohmann::json& j) { j["sliding_window"] = 512; });
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "lg_window_locks" / "locks";
  std::filesystem::create_directories(dir);
  nlohmann::json lock = nlohmann::json::parse(std::ifstream(kSource + "/locks/tiny-phi3.lock.json"));
  lock["model"] = phi3.dir.string();
  std::ofstream(dir / "tiny-phi3-window.lock.json") << lock.dump(2);
  const CliRun check = run_lg("lock check --lane cpu --locks " + dir.string());
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_NE(check.out.find("ok   tiny-phi3-window.lock.json: 4 cases"), std::string::npos) << check.out;
  const std::filesystem::path out = dir.parent_path() / "new.lock.json";
  const CliRun made = run_lg("lock new --model " + phi3.dir.string() + " --golden " + kShared +
                             "/fixtures/tiny-phi3/golden.json -o " + out.string());
  ASSERT_EQ(made.code, 0) << made.out;
  const nlohmann::json fresh = nlohmann::json::parse(std::ifstream(out));
  ASSERT_EQ(fresh["cases"].size(), lock["cases"].size());
  for (size_t i = 0; i < lock["cases"].size(); ++i)
    EXPECT_EQ(fresh["cases"][i]["tokens"], lock["cases"][i]["tokens"]) << "case " << i;
  std::filesystem::remove_all(dir.parent_path());
}

// A window of zero or less gets its own refusal: it got "give --max-seq at most the window", which
// no --max-seq (at least 1) can follow; mistral.lg and gemma3_text.lg already said so.
TEST(CliRun, Phi3WindowThatIsNotPositiveIsRefusedAsSuch) {
  for (const int window : {0, -4}) {
    test::ModelCopy phi3(kShared + "/fixtures/tiny-phi3");
    phi3.edit_json("config.json", [&](nlohmann::json& j) { j["sliding_window"] = window; });
    const CliRun r = run_lg("run --lane cpu -m " + phi3.dir.string() + " --prompt-ids 5,12,7 -n 1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("phi3.lg: config.sliding_window must be positive or null"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--max-seq"), std::string::npos) << r.out;
  }
}

// A lock recorded with --program names the program's file, and is run only with that program: a
// check without it printed a lane's FAIL at its first difference (the default program's tokens
// are other tokens), and an update would have made it the default program's lock silently.
TEST(CliLock, ALockRecordedWithAProgramRunsOnlyWithThatProgram) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "lg_program_locks";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "locks");
  // llama.lg with the final norm's epsilon far off: another program, other tokens.
  std::ifstream in(kSource + "/models/llama.lg");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string final_norm = "rms_norm(x, norm, eps)";
  const size_t at = text.find(final_norm);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, final_norm.size(), "rms_norm(x * 0.5 + 1.0, norm, eps)");
  const std::filesystem::path program = dir / "shifted.lg";
  std::ofstream(program) << text;
  const std::filesystem::path lock = dir / "locks" / "shifted.lock.json";
  const CliRun made = run_lg("lock new --model " + kShared + "/fixtures/tiny-llama3 --golden " + kShared +
                             "/fixtures/tiny-llama3/golden.json --new-tokens 8 --program " + program.string() + " -o " +
                             lock.string());
  ASSERT_EQ(made.code, 0) << made.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(lock))["program"], "shifted.lg");
  const CliRun with = run_lg("lock check --lane cpu --locks " + (dir / "locks").string() + " --program " + program.string());
  EXPECT_EQ(with.code, 0) << with.out;
  EXPECT_NE(with.out.find("ok   shifted.lock.json"), std::string::npos) << with.out;
  const CliRun without = run_lg("lock check --lane cpu --locks " + (dir / "locks").string());
  EXPECT_NE(without.code, 0) << without.out;
  EXPECT_EQ(without.out.find("FAIL"), std::string::npos) << "not a lane's failure: " << without.out;
  EXPECT_NE(without.out.find("recorded with --program shifted.lg; run it with that program"), std::string::npos)
      << without.out;
  const std::string before = nlohmann::json::parse(std::ifstream(lock)).dump();
  const CliRun update = run_lg("lock update --locks " + (dir / "locks").string());
  EXPECT_NE(update.code, 0) << update.out;
  EXPECT_NE(update.out.find("recorded with --program shifted.lg"), std::string::npos) << update.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(lock)).dump(), before) << "the update left the lock as it was";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lg::cli_test
