// `lg run` as a user meets it: the built binary on the shipped 22M model, and its messages and
// exit codes for bad input (prompt longer than the context or filling it, empty prompt, an
// architecture no .lg program covers).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>

namespace {

namespace fs = std::filesystem;
const std::string kSource = LG_SOURCE_DIR;
const std::string kShared = LG_SHARED_DIR;
const std::string kModel = kSource + "/models/qwen3-pycode-22m";

struct Result {
  int code;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Single-quotes an argument for /bin/sh.
std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs a shell command line (redirections and all) and returns its exit code and what it wrote to
/// the pipe (its stdout, with whatever the line sends there).
std::pair<int, std::string> shell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

Result run_lg(const std::vector<std::string>& args) {
  const fs::path dir = fs::temp_directory_path() / ("lg_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string cmd = quote(LG_BINARY);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote((dir / "out").string()) + " 2>" + quote((dir / "err").string());
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

TEST(LgRun, GreedyTextOfThe22mModelMatchesTransformers) {
  std::ifstream in(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  const auto golden = nlohmann::json::parse(in);
  const auto& cs = golden["cases"][0];
  const Result r = run_lg({"run", "--model", kModel, "--prompt", cs["prompt"].get<std::string>(), "--max-tokens", "48"});
  ASSERT_EQ(r.code, 0) << r.err;
  // stdout is the prompt and the text, byte for byte: no newline added.
  EXPECT_EQ(r.out, cs["prompt"].get<std::string>() + cs["fp32_cpu_text"].get<std::string>());
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("time to first token"), std::string::npos) << r.err;
}

// A prompt from a file, from stdin, or without the echo: what a llama.cpp user reaches for first
// (a prompt over 128 KB cannot be an argument at all).
TEST(LgRun, PromptFromAFileOrStdinAndWithoutEcho) {
  std::ifstream in(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  const auto golden = nlohmann::json::parse(in);
  const std::string prompt = golden["cases"][1]["prompt"].get<std::string>();
  const std::string text = golden["cases"][1]["fp32_cpu_text"].get<std::string>();
  const fs::path file = fs::temp_directory_path() / ("lg_prompt_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(file, std::ios::binary) << prompt;
  const Result f = run_lg({"run", "--model", kModel, "-f", file.string(), "--max-tokens", "48", "--no-echo"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, text);
  // stdin through the shell (run_lg quotes every argument).
  const std::string cmd = quote(LG_BINARY) + " run --model " + quote(kModel) + " -p - --max-tokens 48 <" +
                          quote(file.string()) + " 2>/dev/null";
  const auto [code, out] = shell(cmd);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, prompt + text);
  const Result both = run_lg({"run", "--model", kModel, "-f", file.string(), "--prompt", "x"});
  EXPECT_EQ(both.code, 2) << both.err;
  const Result none = run_lg({"run", "--model", kModel});
  EXPECT_NE(none.code, 0);
  EXPECT_NE(none.err.find("needs a prompt"), std::string::npos) << none.err;
  const Result missing = run_lg({"run", "--model", kModel, "-f", "/nonexistent/prompt.txt"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/prompt.txt: no such prompt file (it does not exist)"), std::string::npos) << missing.err;
  fs::remove(file);
}

// A prompt file that is a directory, or holds bytes that are not UTF-8, is refused naming the
// path (a directory read as nothing and was reported as an empty prompt; the UTF-8 error named
// no file).
TEST(LgRun, PromptFileThatIsADirectoryOrNotTextIsRefusedNamingIt) {
  const auto dir = std::filesystem::temp_directory_path() / "lg_prompt_dir_test";
  std::filesystem::create_directories(dir);
  const Result d = run_lg({"run", "--model", kModel, "-f", dir.string(), "--max-tokens", "4"});
  EXPECT_EQ(d.code, 1) << d.err;
  EXPECT_NE(d.err.find(dir.string() + ": is a directory, not a prompt file"), std::string::npos) << d.err;
  const auto bin = std::filesystem::temp_directory_path() / "lg_prompt_binary_test.bin";
  {
    std::ofstream f(bin, std::ios::binary);
    const char bytes[] = {'\xff', '\xfe', '\x00', '\x80', 'a'};
    f.write(bytes, sizeof(bytes));
  }
  const Result b = run_lg({"run", "--model", kModel, "-f", bin.string(), "--max-tokens", "4"});
  EXPECT_EQ(b.code, 1) << b.err;
  EXPECT_NE(b.err.find("lg: error: " + bin.string() + ": "), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("UTF-8"), std::string::npos) << b.err;
  // The same bytes from standard input or as --prompt's text name their source too (they named
  // nothing: "lg: error: tokenizer: the text is not valid UTF-8 at byte 0").
  const std::string cmd = quote(LG_BINARY) + " run --model " + quote(kModel) + " -p - --max-tokens 4 <" +
                          quote(bin.string()) + " 2>&1";
  const auto [in_code, in_err] = shell(cmd);
  EXPECT_EQ(in_code, 1) << in_err;
  EXPECT_NE(in_err.find("lg: error: the prompt on standard input: "), std::string::npos) << in_err;
  const Result arg = run_lg({"run", "--model", kModel, "--prompt", std::string("ok \xff"), "--max-tokens", "4"});
  EXPECT_EQ(arg.code, 1) << arg.err;
  EXPECT_NE(arg.err.find("lg: error: --prompt: "), std::string::npos) << arg.err;
  EXPECT_NE(arg.err.find("UTF-8"), std::string::npos) << arg.err;
  std::filesystem::remove(bin);
  std::filesystem::remove(dir);
}

// stdout that cannot be written (a full disk, a closed stdout) is an error, exit 1, as lg batch's
// failed write of its results is: lg run exited 0 with the text lost.
TEST(LgRun, AFailedWriteOfTheTextIsAnError) {
  for (const std::string redirect : {">/dev/full", ">&-"}) {
    const std::string cmd = quote(LG_BINARY) + " run --model " + quote(kModel) + " -p 'def f(' --max-tokens 8 2>&1 " +
                            redirect;
    const auto [code, err] = shell(cmd);
    EXPECT_EQ(code, 1) << redirect << ": " << err;
    EXPECT_NE(err.find("lg: error: standard output: write failed"), std::string::npos) << redirect << ": " << err;
  }
}

TEST(LgRun, VersionFlag) {
  const Result r = run_lg({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("lg ", 0), 0u) << r.out;
}

TEST(LgRun, PromptLongerThanTheContextIsAnError) {
  std::string prompt;
  for (int k = 0; k < 20; ++k) prompt += "def f" + std::to_string(k) + "(x):\n";
  const Result r = run_lg({"run", "--model", kModel, "--prompt", prompt, "--max-seq", "16"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("lg: error: the prompt has"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than the context of 16 tokens"), std::string::npos) << r.err;
}

// A prompt that fills the whole context leaves no room for a completion: lg run refuses it as
// lg serve and lg batch do (it used to run and print one token), with the same message naming
// both sizes. "def f(x):" is 4 tokens for the 22M model's tokenizer (no BOS for Qwen).
TEST(LgRun, PromptAsLongAsTheContextIsAnError) {
  const Result r = run_lg({"run", "--model", kModel, "--prompt", "def f(x):", "--max-seq", "4", "-n", "3"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");  // refused before the prompt is echoed
  EXPECT_NE(r.err.find("lg: error: the prompt has 4 tokens, the whole context of 4 tokens: no room is left for a "
                       "completion"),
            std::string::npos)
      << r.err;
  // One token of room gives exactly one token (from the prefill), however many -n asks for.
  const Result ok = run_lg({"run", "--model", kModel, "--prompt", "def f(x):", "--max-seq", "5", "-n", "3", "--lane", "cpu"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out.rfind("def f(x):", 0), 0u) << ok.out;
  EXPECT_NE(ok.err.find("prefill 4 tokens"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("decode 0 tokens"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("stop: context"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("lg: warning: --max-tokens is 3 and the prompt has 4 tokens: together more than the context of "
                        "5 tokens (at most 1 new token fits after this prompt); generation stops at the end of the "
                        "context (--max-seq)"),
            std::string::npos)
      << ok.err;
}

// Prompt and generated tokens together stay within the context (as lg serve and vLLM): the first
// token comes from the prefill, so a 3-token prompt at --max-seq 16 gives 13 tokens, 12 of them
// decoded. lg run used to decode 13 (17 tokens in a context of 16). Greedy "def f():" does not
// reach eos that early on the 22M model, and with room left -n decides. An -n past the context
// is said (lg serve answers such a max_tokens 400); -n's default, and an -n that fits, are not.
TEST(LgRun, PromptAndGeneratedTokensFillTheContextExactly) {
  const Result r = run_lg({"run", "--model", kModel, "--prompt", "def f():", "-n", "50", "--max-seq", "16", "--lane", "cpu"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("prefill 3 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decode 12 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stop: context"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lg: warning: --max-tokens is 50 and the prompt has 3 tokens: together more than the context of "
                       "16 tokens (at most 13 new tokens fit after this prompt)"),
            std::string::npos)
      << r.err;
  const Result by_default = run_lg({"run", "--model", kModel, "--prompt", "def f():", "--max-seq", "16", "--lane", "cpu"});
  ASSERT_EQ(by_default.code, 0) << by_default.err;
  EXPECT_NE(by_default.err.find("stop: context"), std::string::npos) << by_default.err;
  EXPECT_EQ(by_default.err.find("warning"), std::string::npos) << by_default.err;
  const Result n = run_lg({"run", "--model", kModel, "--prompt", "def f():", "-n", "13", "--max-seq", "16", "--lane", "cpu"});
  ASSERT_EQ(n.code, 0) << n.err;
  EXPECT_NE(n.err.find("decode 12 tokens"), std::string::npos) << n.err;
  EXPECT_NE(n.err.find("stop: max_tokens"), std::string::npos) << n.err;
  EXPECT_EQ(n.err.find("warning"), std::string::npos) << n.err;
  const Result few = run_lg({"run", "--model", kModel, "--prompt", "def f():", "-n", "5", "--max-seq", "16", "--lane", "cpu"});
  ASSERT_EQ(few.code, 0) << few.err;
  EXPECT_NE(few.err.find("decode 4 tokens"), std::string::npos) << few.err;
  EXPECT_NE(few.err.find("stop: max_tokens"), std::string::npos) << few.err;
}

// The largest -n the option takes is a bound like any other past the context: prompt plus -n was
// summed, and at 2^63 - 1 it wrapped to a negative KV size ("max sequence length must be >= 0").
TEST(LgRun, MaxTokensNear2To63StopsAtTheContext) {
  for (const char* n : {"9223372036854775807", "9223372036854775806"}) {
    const Result r = run_lg({"run", "--model", kModel, "--prompt", "def f():", "-n", n, "--max-seq", "16", "--lane", "cpu"});
    ASSERT_EQ(r.code, 0) << n << "\n" << r.err;
    EXPECT_NE(r.err.find("decode 12 tokens"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("stop: context"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(std::string("lg: warning: --max-tokens is ") + n), std::string::npos) << r.err;
  }
}

TEST(LgRun, EmptyPromptIsAnError) {
  const Result r = run_lg({"run", "--model", kModel, "--prompt", ""});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("lg: error: the prompt is empty"), std::string::npos) << r.err;
}

TEST(LgRun, UsageErrorsExit2AndHelpExits0) {
  EXPECT_EQ(run_lg({}).code, 2);
  EXPECT_EQ(run_lg({"run", "--prompt", "x"}).code, 2);  // --model missing
  const Result zero = run_lg({"run", "--model", kModel, "--prompt", "x", "--max-tokens", "0"});
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.err.find("--max-tokens"), std::string::npos) << zero.err;
  EXPECT_EQ(run_lg({"run", "--model", kModel, "--prompt", "x", "--no-such-flag"}).code, 2);
  const Result help = run_lg({"run", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--prompt"), std::string::npos) << help.out;
}

TEST(LgRun, PromptIdOutsideTheVocabularyIsAnError) {
  // The 512-id tiny fixture with the 22M model's 151k-id tokenizer: the prompt's ids do not fit
  // the embedding table. It used to surface as an IR gather error after the prompt was printed.
  const fs::path dir = fs::temp_directory_path() / ("lg_vocab_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::create_symlink(fs::path(kShared) / "fixtures/tiny-qwen3" / f, dir / f);
  fs::create_symlink(fs::path(kModel) / "tokenizer.json", dir / "tokenizer.json");
  const Result r = run_lg({"run", "--model", dir.string(), "--prompt", "def fibonacci", "-n", "2"});
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("outside the model's vocabulary of 512 ids"), std::string::npos) << r.err;
}

TEST(LgRun, BadSamplingFlagsAreErrorsBeforeAnyOutput) {
  // They were checked by the sampler, after the model loaded and the prompt was printed; a
  // negative --top-k other than the unset -1 was silently taken as unset. Now they are usage
  // errors while the options are read (exit 2, as --seed -1), naming the option and the value.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--temperature", "-1"}, {"--temperature", "nan"}, {"--top-p", "0"}, {"--top-p", "1.5"}, {"--top-k", "-5"}};
  for (const auto& [flag, value] : bad) {
    const Result r = run_lg({"run", "--model", kModel, "--prompt", "def ", "-n", "2", flag, value});
    EXPECT_EQ(r.code, 2) << flag << " " << value;
    EXPECT_EQ(r.out, "") << flag << " " << value;
    EXPECT_NE(r.err.find(flag + ": must be"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("got " + value), std::string::npos) << r.err;
  }
}

// A sampled run without --seed drew the same seed (0) every time, so every run of a prompt gave
// the same "random" text, where llama.cpp, vLLM and lg serve draw one. The speed line names the
// seed a sampled run used, and --seed with it repeats the run's text; a greedy run names none.
TEST(LgRun, SampledRunsDrawTheirSeedAndNameIt) {
  auto seed_of = [](const std::string& err) -> std::string {
    const size_t at = err.find("| seed ");
    if (at == std::string::npos) return "";
    const size_t from = at + 7;
    return err.substr(from, err.find_first_not_of("0123456789", from) - from);
  };
  const std::vector<std::string> sampled = {"run", "--model", kModel, "--prompt", "def f(x):", "-n", "16",
                                            "--temperature", "1.0"};
  const Result a = run_lg(sampled), b = run_lg(sampled);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const std::string seed = seed_of(a.err);
  ASSERT_FALSE(seed.empty()) << a.err;
  EXPECT_NE(seed, seed_of(b.err)) << "two runs drew the same 64-bit seed";
  std::vector<std::string> again = sampled;
  again.insert(again.end(), {"--seed", seed});
  const Result c = run_lg(again);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, a.out) << "--seed " << seed << " did not repeat the run";
  EXPECT_EQ(seed_of(c.err), seed);
  const Result greedy = run_lg({"run", "--model", kModel, "--prompt", "def f(x):", "-n", "4"});
  ASSERT_EQ(greedy.code, 0) << greedy.err;
  EXPECT_EQ(seed_of(greedy.err), "") << greedy.err;
}

// Ctrl-C ends generation at the next token with the speed line printed ("stop: interrupted"), as
// llama.cpp prints its timings, and exit status 130 (it died of the signal, with no line).
TEST(LgRun, SigintStopsWithTheSpeedLine) {
  const fs::path dir = fs::temp_directory_path() / ("lg_run_sigint_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    // 'def add(' runs greedy to 3,000 tokens without an eos (~27 s here): the signal comes first.
    const std::string cmd = "exec " + quote(LG_BINARY) + " run -q -m " + quote(kModel) +
                            " -p 'def add(' -n 3000 --temperature 0 >" + quote((dir / "out").string()) + " 2>" +
                            quote((dir / "err").string());
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (slurp(dir / "out").size() < 40 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string err = slurp(dir / "err"), out = slurp(dir / "out");
  fs::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal; stderr: " << err;
  EXPECT_EQ(WEXITSTATUS(status), 130) << err;
  EXPECT_NE(err.find("stop: interrupted (SIGINT)"), std::string::npos) << err;
  EXPECT_EQ(err.find("decode 2999 tokens"), std::string::npos) << err;
  EXPECT_EQ(out.rfind("def add(", 0), 0u) << out;  // the text so far was written
}

TEST(LgRun, ArchitectureWithoutAnLgProgramIsNamed) {
  const fs::path dir = fs::temp_directory_path() / ("lg_falcon_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ifstream in(kModel + "/config.json");
  auto config = nlohmann::json::parse(in);
  config["model_type"] = "falcon";  // no models/falcon.lg
  config["architectures"] = {"FalconForCausalLM"};
  std::ofstream(dir / "config.json") << config.dump(2);
  for (const char* f : {"model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    fs::create_symlink(fs::path(kModel) / f, dir / f);
  const Result r = run_lg({"run", "--model", dir.string(), "--prompt", "def "});
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("lg: error: no .lg program covers model_type 'falcon' (FalconForCausalLM)"), std::string::npos) << r.err;
}

}  // namespace
