// Usage errors of every subcommand: a numeric option out of range names the option, what it
// must be and what it got, and exits 2 like CLI11's own usage errors (not CLI11's bare
// "Value 0 not in range"). lg compile's, check's, bench's and lock's are in
// cli_program_tools_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace lg::cli_test {
namespace {


// An empty --lane is the same usage error (exit 2, naming the option) on every command that takes
// one: batch, bench and lock check said "unknown lane ''" (exit 1), and bench, whose default lane
// is now picked from the shape, would have taken the empty name as "the default".
TEST(CliUsage, AnEmptyLaneIsAUsageErrorOnEveryCommand) {
  const std::string empty = "needs a lane name (cpu, compiled, handwritten), got an empty one";
  for (const std::string& cmd : {"run -m " + kModel + " -p hi", "serve -m " + kModel, "batch -m " + kModel + " -i - -o /dev/null",
                                 std::string("bench"), std::string("lock check")})
    expect_usage_error(cmd + " --lane ''", empty);
}

TEST(CliUsage, NonPositiveCountsAreRefusedReadably) {
  expect_usage_error("run -m " + kModel + " -p hi --max-tokens 0", "--max-tokens: must be at least 1, got 0");
  expect_usage_error("run -m " + kModel + " -p hi -n -4", "--max-tokens: must be at least 1, got -4");
  expect_usage_error("run -m " + kModel + " -p hi --max-seq 0", "--max-seq: must be between 1 and 2147483647, got 0");
  expect_usage_error("lock new --model " + kTiny + " --golden " + kTiny + "/golden.json -o /dev/null --new-tokens 0",
                     "--new-tokens: must be at least 1, got 0");
  expect_usage_error("lock check --threshold=-0.5", "--threshold: must be a number >= 0, got -0.5");
  expect_usage_error("check " + kQwen3 + " -c " + kTiny + " --max-seq 0", "--max-seq: must be between 1 and 2147483647, got 0");
  expect_usage_error("check " + kQwen3 + " -c " + kTiny + " --max-seq abc",
                     "--max-seq: must be an integer between 1 and 2147483647, got 'abc'");
  expect_usage_error("ir " + kQwen3 + " -c " + kTiny + " --max-seq 0", "--max-seq: must be between 1 and 2147483647, got 0");
  expect_usage_error("compile " + kQwen3 + " -c " + kTiny + " --explain --max-seq 0", "--max-seq: must be between 1 and 2147483647, got 0");
  // Positions are int32: lg ir lowered a cache of 999999999999 positions and exited 0.
  for (const std::string cmd : {"ir", "check"})
    expect_usage_error(cmd + " " + kQwen3 + " -c " + kTiny + " --max-seq 999999999999",
                       "--max-seq: must be between 1 and 2147483647, got 999999999999");
  expect_usage_error("serve -m " + kModel + " --port 0", "--port: must be between 1 and 65535, got 0");
  // A context of 1 has no room for a completion: lg serve started and refused every request.
  for (const std::string& cmd : {"serve -m " + kModel, "batch -m " + kModel + " -i /dev/null -o /dev/null"})
    expect_usage_error(cmd + " --max-seq 1",
                       "--max-seq: must be between 2 and 2147483647, got 1 (a request needs a prompt token and a generated one)");
  expect_usage_error("serve -m " + kModel + " --max-waiting 0", "--max-waiting: must be at least 1, got 0");
  expect_usage_error("serve -m " + kModel + " --shutdown-timeout=-1", "--shutdown-timeout: must be a number >= 0, got -1");
  expect_usage_error("bench --decode-tokens 1", "--decode-tokens: must be between 2 and 1048576, got 1");
  expect_usage_error("bench --prompt-len 512,0", "--prompt-len: must be between 2 and 1048576, got 0");
}

// lg serve's CORS options are checked while parsing, before the model loads: an origin a browser
// never sends (a trailing '/', a path) would silently match nothing.
TEST(CliUsage, ServeCorsValuesAreRefusedReadably) {
  const std::string serve = "serve -m " + kModel + " ";
  expect_usage_error(serve + "--allowed-origins http://localhost:3000/",
                     "--allowed-origins: 'http://localhost:3000/' is not an origin: give scheme://host[:port] with no "
                     "path and no trailing '/'");
  expect_usage_error(serve + "--allowed-origins http://a.test http://b.test/app",
                     "--allowed-origins: 'http://b.test/app' is not an origin");
  // vLLM's JSON list: each element is checked unquoted (the first here is accepted).
  expect_usage_error(serve + "--allowed-origins '[\"http://a.test\", \"localhost\"]'",
                     "--allowed-origins: 'localhost' is not an origin");
  expect_usage_error(serve + "--allowed-methods 'GET POST'", "--allowed-methods: 'GET POST' is not an HTTP method");
  expect_usage_error(serve + "--allowed-headers 'X-Key:'", "--allowed-headers: 'X-Key:' is not a header name");
}

// --served-model-name with a name twice listed it twice in GET /v1/models; it and an empty name are
// refused while parsing, before the model loads, naming the name. The timeout ends a server that
// accepted them (it would serve until killed).
TEST(CliUsage, ServeServedModelNamesAreDistinctAndNonEmpty) {
  const std::string serve = "serve -m " + kModel + " --served-model-name ";
  const std::string bounded = "timeout 30 ";
  expect_usage_error(serve + "a a", "--served-model-name: 'a' is given twice", bounded);
  expect_usage_error(serve + "a b c b", "--served-model-name: 'b' is given twice", bounded);
  expect_usage_error(serve + "a ''", "--served-model-name: a served model name is empty", bounded);
}

// inf, nan and 1e30 used to be accepted as temperatures, and --seed -1 silently became 2^64-1.
// Every bad sampling value is the same usage error (exit 2, "--option: must be ..., got X"): a
// new-user pass found --seed -1 exit 2 but --top-k -3 exit 1 with another wording.
TEST(CliUsage, SamplingOptionsMustBeFiniteAndSeedsSixtyFourBit) {
  const std::string run = "run -m " + kModel + " -p hi -n 2 ";
  for (const std::string t : {"inf", "nan", "-1", "1e30", "1e400"})
    expect_usage_error(run + "--temperature=" + t, "--temperature: must be a number in [0, 1000], got " + t);
  expect_usage_error(run + "--temperature warm", "--temperature: must be a number in [0, 1000], got 'warm'");
  for (const std::string p : {"inf", "nan", "0", "1.5"})
    expect_usage_error(run + "--top-p " + p, "--top-p: must be a number in (0, 1], got " + p);
  // -1 stays the default's spelling (generation_config.json's top_k, as vLLM's -1 means none).
  expect_usage_error(run + "--top-k -3", "--top-k: must be at least -1, got -3");
  expect_usage_error(run + "--top-k many", "--top-k: must be an integer at least -1, got 'many'");
  expect_usage_error(run + "--device gpu", "--device: must be cpu or cuda, got 'gpu'");
  // The penalties and min_p in vLLM's ranges.
  for (const std::string r : {"0", "-1", "inf", "nan", "1e400"})
    expect_usage_error(run + "--repetition-penalty " + r, "--repetition-penalty: must be a finite number > 0, got " + r);
  expect_usage_error(run + "--repetition-penalty strong", "--repetition-penalty: must be a finite number > 0, got 'strong'");
  for (const std::string p : {"2.5", "-3", "nan"}) {
    expect_usage_error(run + "--presence-penalty " + p, "--presence-penalty: must be a number in [-2, 2], got " + p);
    expect_usage_error(run + "--frequency-penalty " + p, "--frequency-penalty: must be a number in [-2, 2], got " + p);
  }
  for (const std::string p : {"1.5", "-0.1"})
    expect_usage_error(run + "--min-p " + p, "--min-p: must be a number in [0, 1], got " + p);
  expect_usage_error("run -m " + kModel + " -p hi --seed 99999999999999999999999",
                     "--seed: must be an integer in [-2^63, 2^64), got 99999999999999999999999");
  expect_usage_error("run -m " + kModel + " -p hi --seed -9999999999999999999",
                     "--seed: must be an integer in [-2^63, 2^64), got -9999999999999999999");
  expect_usage_error("run -m " + kModel + " -p hi --seed x", "--seed: must be an integer, got 'x'");
  // A negative seed is its 64 bits, as a request's "seed" is (lg run refused -1 that serve took).
  const std::string sampled = "run -q -m " + kModel + " -p 'def add(' -n 12 --temperature 1.2 --seed ";
  const CliRun minus_one = run_lg(sampled + "-1"), top = run_lg(sampled + "18446744073709551615");
  EXPECT_EQ(minus_one.code, 0) << minus_one.out;
  auto text = [](const std::string& out) { return out.substr(0, out.find("lg: prefill")); };
  EXPECT_EQ(text(minus_one.out), text(top.out));
  EXPECT_FALSE(text(minus_one.out).empty()) << minus_one.out;
  EXPECT_NE(minus_one.out.find("seed 18446744073709551615"), std::string::npos) << minus_one.out;
}

// "prefill 1 tokens" / "decode 1 tokens" read wrong.
TEST(CliUsage, RunSpeedLineCountsInTheSingular) {
  const CliRun r = run_lg("run -q -m " + kModel + " -p def -n 2 --temperature 0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("lg: prefill 1 token in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| decode 1 token in "), std::string::npos) << r.out;
  const CliRun more = run_lg("run -q -m " + kModel + " -p 'def add(a, b):' -n 3 --temperature 0");
  ASSERT_EQ(more.code, 0) << more.out;
  EXPECT_NE(more.out.find("| decode 2 tokens in "), std::string::npos) << more.out;
}

// `--device cuda --lane cpu` ran on the CPU without a word; an unknown lane was refused only after
// the model had loaded and a line had announced it as the lane being run.
TEST(CliUsage, RunRefusesALaneThatContradictsTheDeviceOrDoesNotExist) {
  const CliRun cpu_on_cuda = run_lg("run -m " + kModel + " -p def -n 1 --lane cpu --device cuda");
  EXPECT_EQ(cpu_on_cuda.code, 1) << cpu_on_cuda.out;
  EXPECT_NE(cpu_on_cuda.out.find("lane 'cpu' runs on the CPU, not on --device cuda"), std::string::npos) << cpu_on_cuda.out;
  const CliRun bogus = run_lg("run -m " + kModel + " -p def -n 1 --lane bogus");
  EXPECT_EQ(bogus.code, 1) << bogus.out;
  EXPECT_NE(bogus.out.find("unknown lane 'bogus' (this build has: cpu"), std::string::npos) << bogus.out;
  EXPECT_EQ(bogus.out.find("on lane bogus"), std::string::npos) << "announced before it was refused\n" << bogus.out;
  const CliRun one = run_lg("run -m " + kModel + " -p def -n 1 --temperature 0");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_NE(one.out.find("on lane cpu, 1 prompt token\n"), std::string::npos) << one.out;
}

// `--device cuda` without --lane took the hand-written lane for every model, which then refused
// six of the eight families ("runs the Qwen2/Qwen3 family only"): it takes the model's GPU lane,
// as lg bench and lg serve --shape do (compiled for Llama). Here without a GPU the compiled lane
// then says there is none; on a GPU it runs.
TEST(CliUsage, RunOnCudaTakesTheModelsGpuLane) {
  const CliRun llama = run_lg("run -m " + kShared + "/fixtures/tiny-llama3 --prompt-ids 5,12,7 -n 1 --device cuda");
  if (llama.out.find("unknown lane 'compiled'") != std::string::npos) GTEST_SKIP() << "this build has no GPU lanes";
  EXPECT_NE(llama.out.find("on lane compiled, 3 prompt tokens"), std::string::npos) << llama.out;
  EXPECT_EQ(llama.out.find("Qwen2/Qwen3 family only"), std::string::npos) << llama.out;
  // A --program runs on the compiled lane (the hand-written lane runs none), a Qwen model too.
  const CliRun program = run_lg("run -m " + kModel + " -p def -n 1 --device cuda --program " + kSource +
                                "/models/qwen3.lg");
  EXPECT_NE(program.out.find("on lane compiled"), std::string::npos) << program.out;
  // A directory without config.json is still named so by the model's loading.
  const std::filesystem::path empty = std::filesystem::path(::testing::TempDir()) / "lg_no_config";
  std::filesystem::create_directories(empty);
  const CliRun none = run_lg("run -m " + empty.string() + " -p def -n 1 --device cuda");
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_NE(none.out.find("config.json"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("cannot open (missing or unreadable)"), std::string::npos) << none.out;
  std::filesystem::remove_all(empty);
}

// `--lane ""` (an unset shell variable) ran lg run and lg serve on their default lane without a
// word, cpu here, where lg batch refused it as an unknown lane; it is a usage error before the
// model loads. The timeout ends a server that accepted it (it would serve until killed).
TEST(CliUsage, AnEmptyLaneIsRefusedNotTakenAsTheDefault) {
  const std::string empty_lane = "--lane: needs a lane name (cpu, compiled, handwritten), got an empty one";
  expect_usage_error("run -m " + kModel + " -p def -n 1 --lane ''", empty_lane);
  expect_usage_error("run -m " + kModel + " -p def -n 1 --device cuda --lane ''", empty_lane);
  expect_usage_error("serve -m " + kModel + " --port 1 --lane ''", empty_lane, "timeout 30 ");
}

// An endless input (/dev/zero, a pipe that never closes) as the program, --config, a prompt, a
// requests file or stdin used to be read until memory ran out; reading stops at 64 MiB and the
// error names it. The memory limit keeps a regression from taking the machine's memory (it would
// then say "out of memory"), the timeout from hanging the test.
TEST(CliUsage, EndlessInputsStopAtTheCapNamingTheFile) {
  const std::string limit = "ulimit -v 1500000; timeout 60 ";
  for (const std::string& args :
       {"check /dev/zero --config " + kTiny, "check " + kQwen3 + " --config /dev/zero",
        "compile " + kQwen3 + " --config /dev/zero --explain", "run -q -m " + kModel + " -f /dev/zero -n 1"}) {
    const CliRun r = run_lg(args, limit);
    EXPECT_EQ(r.code, 1) << "lg " << args << "\n" << r.out;
    EXPECT_NE(r.out.find("lg: error: /dev/zero: larger than 64 MiB"), std::string::npos) << "lg " << args << "\n" << r.out;
  }
  const CliRun in = run_lg("tokenize --model " + kModel + " - </dev/zero", limit);
  EXPECT_EQ(in.code, 1) << in.out;
  EXPECT_NE(in.out.find("lg: error: standard input: larger than 64 MiB"), std::string::npos) << in.out;
  const CliRun batch = run_lg("batch -q -m " + kModel + " -i /dev/zero -o /dev/null", limit);
  EXPECT_EQ(batch.code, 1) << batch.out;
  EXPECT_NE(batch.out.find("lg: error: /dev/zero: line 1 is larger than 64 MiB"), std::string::npos) << batch.out;
  EXPECT_NE(batch.out.find("no line end within the next 64 MiB either"), std::string::npos) << batch.out;
  // The cap is not on tokenizer.json: Gemma 3's is 33 MB, and vocabularies grow.
  const CliRun gemma = run_lg("tokenize --ids --model " + kShared + "/fixtures/tokenizers/gemma3 'hello world'");
  EXPECT_EQ(gemma.code, 0) << gemma.out;
  EXPECT_EQ(gemma.out, "23391 1902\n");
}

// A --program that exists but is not a regular file (a character device; a directory, which
// `lg lock` takes unchecked) used to be called "no such .lg program"; the error now says what it is.
TEST(CliUsage, ProgramThatIsNotARegularFileIsNamedAsSuch) {
  const CliRun dev = run_lg("run -q -m " + kModel + " --program /dev/zero -p hi -n 1", "timeout 60 ");
  EXPECT_EQ(dev.code, 1) << dev.out;
  EXPECT_NE(dev.out.find("lg: error: /dev/zero: not a regular file, not a .lg program (--program)"), std::string::npos)
      << dev.out;
  EXPECT_EQ(dev.out.find("no such"), std::string::npos) << dev.out;
  const CliRun missing = run_lg("run -q -m " + kModel + " --program /nonexistent/x.lg -p hi -n 1");
  EXPECT_NE(missing.code, 0) << missing.out;
}

// --program's help said "in $LG_MODELS_DIR or models/", which a user reads as the working
// directory's models/; the folder is the source tree's the build was made from (found by a new-user
// pass). The help names the folders searched, as this lg resolves them.
TEST(CliUsage, ProgramHelpNamesTheFoldersSearched) {
  const std::string folder = kSource + "/models, then ";
  for (const std::string sub : {"run", "serve", "batch", "lock check"}) {
    const CliRun r = run_lg(sub + " --help");
    EXPECT_EQ(r.code, 0) << sub << "\n" << r.out;
    EXPECT_NE(r.out.find("looked for in $LG_MODELS_DIR when set, then " + folder), std::string::npos) << sub << "\n" << r.out;
    EXPECT_EQ(r.out.find("or models/)"), std::string::npos) << sub << "\n" << r.out;
  }
}

// Which program a run reads: its start-up line names a built-in one by its file name and any other
// by its path, and an LG_MODELS_DIR that is not a folder is a warning, not passed over in silence
// (new-user pass, session 46).
TEST(CliUsage, RunNamesTheProgramItReads) {
  const CliRun builtin = run_lg("run -m " + kModel + " --lane cpu -p hi -n 1");
  EXPECT_EQ(builtin.code, 0) << builtin.out;
  EXPECT_NE(builtin.out.find("(qwen3.lg, 22.6M params) on lane cpu"), std::string::npos) << builtin.out;
  const CliRun missing = run_lg("run -m " + kModel + " --lane cpu -p hi -n 1", "LG_MODELS_DIR=/nonexistent/lg ");
  EXPECT_EQ(missing.code, 0) << missing.out;
  EXPECT_NE(missing.out.find("lg: warning: LG_MODELS_DIR=/nonexistent/lg is not a folder; looking for qwen3.lg in the "
                             "built-in ones"),
            std::string::npos)
      << missing.out;
  const std::string own = ::testing::TempDir() + "/lg_own_programs";
  std::filesystem::create_directories(own);
  std::filesystem::copy_file(kSource + "/models/qwen3.lg", own + "/qwen3.lg",
                             std::filesystem::copy_options::overwrite_existing);
  const CliRun theirs = run_lg("run -m " + kModel + " --lane cpu -p hi -n 1", "LG_MODELS_DIR=" + own + " ");
  EXPECT_EQ(theirs.code, 0) << theirs.out;
  EXPECT_NE(theirs.out.find("(" + own + "/qwen3.lg, 22.6M params)"), std::string::npos) << theirs.out;
  std::filesystem::remove_all(own);
}

// An option that takes one value, given twice (under one spelling or two), is a usage error
// naming it, its spellings and what it got; CLI11 said "--prompt: At Most 1 required but received
// 2". Flags may repeat, and list options take their values from every time they are given.
// Output that cannot be written (stdout on a full disk, or closed) is an error, exit 1, in every
// command: tokenize, detokenize, template and ir exited 0 with their output lost, inspect and check
// called it an internal error (fmt's "cannot write to file").
TEST(CliUsage, AFailedWriteToStdoutIsAnErrorInEveryCommand) {
  const std::string messages = (std::filesystem::temp_directory_path() / "lg_stdout_messages.json").string();
  std::ofstream(messages) << R"([{"role":"user","content":"hi"}])";
  const std::string config = kModel + "/config.json";
  for (const std::string& args : {"tokenize --model " + kModel + " 'hello world'", "detokenize --model " + kModel + " 15 16",
                                  "template --model " + kModel + " --messages " + messages, "inspect " + kModel,
                                  "check " + kQwen3 + " --config " + config, "ir " + kQwen3 + " --config " + config}) {
    for (const std::string redirect : {">/dev/full", ">&-"}) {
      // template's Jinja renderer is a child process whose pipes take the closed descriptor 1.
      if (redirect == ">&-" && args.rfind("template", 0) == 0) continue;
      // stderr to the pipe first, then stdout away (run_lg adds 2>&1 last, which would follow it).
      FILE* p = popen((std::string(LG_BINARY) + " " + args + " 2>&1 " + redirect).c_str(), "r");
      ASSERT_NE(p, nullptr);
      std::string out;
      char buf[4096];
      while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
      const int st = pclose(p);
      EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 1) << "lg " << args << " " << redirect << "\n" << out;
      EXPECT_NE(out.find("lg: error: standard output: write failed"), std::string::npos)
          << "lg " << args << " " << redirect << "\n" << out;
    }
  }
  std::filesystem::remove(messages);
}

TEST(CliUsage, AnOptionGivenTwiceIsRefusedNamingIt) {
  expect_usage_error("run -m " + kModel + " --prompt a --prompt b",
                     "--prompt: given 2 times, as -p or --prompt ('a', 'b'); it takes one value: give it once");
  expect_usage_error("run -m " + kModel + " -p a --max-tokens=1 -n 2",
                     "--max-tokens: given 2 times, as -n or --max-tokens ('1', '2'); it takes one value");
  expect_usage_error("run -m " + kModel + " -p a --seed 1 --seed 2", "--seed: given 2 times ('1', '2');");
  EXPECT_EQ(run_lg("check " + kQwen3 + " -c " + kTiny + " -q -q").code, 0);
  // --batch 1 --batch 2 parses (then --lane cpu without a model directory is the command's own error).
  const CliRun list = run_lg("bench --lane cpu --batch 1 --batch 2");
  EXPECT_EQ(list.code, 1) << list.out;
  EXPECT_NE(list.out.find("lg: error: lg bench: --lane cpu needs a model directory"), std::string::npos) << list.out;
}

// --sample-penalties and --sample-params change the pick, so a greedy bench (--sample none) that
// names them is refused, and so is a value out of range, before any device is looked for.
TEST(CliUsage, BenchPenaltiesNeedASampledBench) {
  const CliRun r = run_lg("bench --shape qwen3-0.6b --sample-penalties 1.2,0,0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("lg bench: --sample-penalties needs --sample lane or host"), std::string::npos) << r.out;
  // So do --sample-params, and a value out of range is named before any device is looked for.
  const CliRun params = run_lg("bench --shape qwen3-0.6b --sample-params 0.7,20,0.9");
  EXPECT_NE(params.out.find("lg bench: --sample-params needs --sample lane or host"), std::string::npos) << params.out;
  const CliRun nan = run_lg("bench --shape qwen3-0.6b --sample lane --sample-params nan,20,0.9");
  EXPECT_EQ(nan.code, 1) << nan.out;
  EXPECT_NE(nan.out.find("lg bench: --sample-params nan,20,0.9"), std::string::npos) << nan.out;
  EXPECT_NE(nan.out.find("temperature must be >= 0"), std::string::npos) << nan.out;
  const CliRun rep = run_lg("bench --shape qwen3-0.6b --sample host --sample-penalties 0,0,0");
  EXPECT_NE(rep.out.find("repetition_penalty must be > 0"), std::string::npos) << rep.out;
}

// A mistyped command is named as such, with the command meant when one is close, and the list
// of commands; CLI11 said only "A subcommand is required", as if none had been given.
TEST(CliUsage, AnUnknownCommandIsNamedWithTheCommands) {
  expect_usage_error("serv --model " + kModel, "lg: 'serv' is not a command; did you mean 'serve'?");
  expect_usage_error("rnu -p hi", "did you mean 'run'?");
  expect_usage_error("Run -p hi", "did you mean 'run'?");
  const CliRun far = run_lg("frobnicate");
  EXPECT_EQ(far.code, 2) << far.out;
  EXPECT_NE(far.out.find("lg: 'frobnicate' is not a command (commands: "), std::string::npos) << far.out;
  EXPECT_EQ(far.out.find("did you mean"), std::string::npos) << far.out;
  for (const char* name : {"batch", "run", "serve", "inspect", "lock"})
    EXPECT_NE(far.out.find(name), std::string::npos) << name << "\n" << far.out;
  // No command at all keeps CLI11's message.
  expect_usage_error("", "A subcommand is required");
}

// The lane options size the batched program; the one-sequence program has none to size.
TEST(CliUsage, OneSequenceProgramTakesNoLaneOptions) {
  expect_usage_error("compile " + kQwen3 + " -c " + kTiny + " -o /tmp/x --one-sequence --kv-tokens 64",
                     "--one-sequence excludes --kv-tokens");
}

// lg run takes the lane options as lg serve and lg batch do; a pool below one context is refused.
TEST(CliUsage, RunTakesTheLaneOptions) {
  const CliRun ok = run_lg("run -m " + kModel + " -p 'def f(' -n 3 --max-seq 64 --kv-tokens 64 --block-size 8 "
                           "--max-batch 2 --max-step-tokens 16 -q");
  EXPECT_EQ(ok.code, 0) << ok.out;
  // lg run sizes the context to the prompt and --max-tokens (3 + 40 here), at most --max-seq.
  const CliRun small = run_lg("run -m " + kModel + " -p 'def f(' -n 40 --max-seq 64 --kv-tokens 32 -q");
  EXPECT_EQ(small.code, 1) << small.out;
  EXPECT_NE(small.out.find("--kv-tokens"), std::string::npos) << small.out;
}

}  // namespace
}  // namespace lg::cli_test
