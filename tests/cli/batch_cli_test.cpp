// `lg batch` as a user meets it (issue 12): a file of OpenAI requests runs together in batched
// steps, every request gets exactly the text transformers produced for its prompt, bad lines
// get error lines of their own while the others run, and batching pays: the same 32 requests
// cost well under half the CPU time of running them one at a time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "cli_run.h"
#include "common/model_copy.h"

namespace lg::cli_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json golden() {
  std::ifstream in(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  return json::parse(in);
}

/// Writes 32 greedy completion requests (the 8 golden prompts, 4 times each) and `extra` lines.
fs::path write_requests(const std::string& name, const std::vector<std::string>& extra) {
  const json g = golden();
  const fs::path p = fs::temp_directory_path() / (name + std::to_string(::getpid()) + ".jsonl");
  std::ofstream out(p);
  for (int k = 0; k < 32; ++k) {
    const auto& c = g["cases"][static_cast<size_t>(k % 8)];
    const json body = {{"prompt", c["prompt"]}, {"max_tokens", 48}, {"temperature", 0}};
    out << json{{"custom_id", "r" + std::to_string(k)}, {"method", "POST"}, {"url", "/v1/completions"}, {"body", body}}.dump()
        << "\n";
    if (k == 10)
      for (const auto& e : extra) out << e << "\n";  // bad lines in the middle: the rest still runs
  }
  return p;
}

std::vector<json> read_results(const fs::path& p) {
  std::vector<json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

/// The JSON lines of `lg batch -o -`'s standard output (its answers; log lines skipped).
std::vector<json> answer_lines(const CliRun& r) {
  std::vector<json> lines;
  std::istringstream ss(r.out);
  for (std::string line; std::getline(ss, line);)
    if (!line.empty() && line[0] == '{') lines.push_back(json::parse(line));
  return lines;
}

/// CPU seconds (user + system) of the children that finished since the last call.
double child_cpu_seconds() {
  static double seen = 0;
  rusage r{};
  getrusage(RUSAGE_CHILDREN, &r);
  const double now = static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
                     static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
  const double d = now - seen;
  seen = now;
  return d;
}

TEST(LgBatch, EveryRequestGetsTransformersTextAndBadLinesTheirOwnErrors) {
  const std::vector<std::string> bad = {
      "this is not json",
      R"({"custom_id": "u", "method": "POST", "url": "/v1/embeddings", "body": {}})",
      R"({"custom_id": "b", "method": "POST", "url": "/v1/completions", "body": {"prompt": 5}})",
      R"({"custom_id": "m", "method": "GET", "url": "/v1/completions", "body": {"prompt": "x"}})",
      R"({"method": "POST", "url": "/v1/completions", "body": {"prompt": "x"}})",
      R"({"custom_id": "s", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "stream": true}})",
      R"({"custom_id": "t", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "max_tokens": -3}})",
      R"([1, 2, 3])",
      // A bias outside OpenAI's range: refused naming the field, not clamped.
      R"({"custom_id": "lb", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "logit_bias": {"2643": -150}}})",
      // A stream that is not a boolean: the parser's 400 naming it (lg batch aborted on it before).
      R"({"custom_id": "sy", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "stream": "yes"}})",
      // Nested past the parser's limit: an error line (100,000 levels crashed lg batch copying it).
      R"({"custom_id": "deep", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "extra": )" +
          std::string(100000, '[') + std::string(100000, ']') + "}}",
      // More new tokens than the context (4096) leaves after the prompt: lg serve's 400, this line only.
      R"({"custom_id": "long", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "max_tokens": 4096}})"};
  const fs::path in = write_requests("lg_batch_in_", bad);
  const fs::path out = fs::temp_directory_path() / ("lg_batch_out_" + std::to_string(::getpid()) + ".jsonl");
  const CliRun r = run_lg("batch --model " + kSource + "/models/qwen3-pycode-22m -i " + in.string() + " -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto res = read_results(out);
  ASSERT_EQ(res.size(), 32 + bad.size());
  const json g = golden();
  size_t k = 0;
  for (size_t i = 0; i < res.size(); ++i) {
    const json& line = res[i];
    const bool is_bad = i >= 11 && i < 11 + bad.size();
    SCOPED_TRACE("output line " + std::to_string(i) + ": " + line.dump().substr(0, 300));
    if (is_bad) {
      const bool line_error = !line["error"].is_null();
      const bool http_error = line["response"].is_object() && line["response"]["status_code"] == 400;
      EXPECT_TRUE(line_error != http_error);
      continue;
    }
    ASSERT_EQ(line["custom_id"], "r" + std::to_string(k));
    ASSERT_EQ(line["response"]["status_code"], 200);
    EXPECT_EQ(line["response"]["body"]["choices"][0]["text"], g["cases"][k % 8]["fp32_cpu_text"]);
    EXPECT_EQ(line["response"]["body"]["usage"]["completion_tokens"], 48);
    ++k;
  }
  EXPECT_EQ(k, 32u);
  EXPECT_EQ(res[11]["error"]["code"], "invalid_json");
  // The line's number and the column within it, not nlohmann's id and "line 1".
  const std::string not_json = res[11]["error"]["message"];
  EXPECT_EQ(not_json.rfind("line 12: not JSON: parse error at column ", 0), 0u) << not_json;
  EXPECT_EQ(not_json.find("json.exception"), std::string::npos) << not_json;
  EXPECT_EQ(res[12]["error"]["code"], "invalid_url");
  EXPECT_EQ(res[13]["response"]["body"]["error"]["param"], "prompt");
  EXPECT_NE(res[15]["error"]["message"].get<std::string>().find("line 16: 'custom_id' is required"), std::string::npos)
      << res[15];
  EXPECT_EQ(res[19]["response"]["status_code"], 400);
  EXPECT_EQ(res[19]["response"]["body"]["error"]["param"], "logit_bias");
  EXPECT_EQ(res[20]["response"]["status_code"], 400);
  EXPECT_EQ(res[20]["response"]["body"]["error"]["param"], "stream");
  EXPECT_EQ(res[21]["error"]["code"], "invalid_json");
  EXPECT_EQ(res[21]["custom_id"], "deep");  // read before the nesting
  EXPECT_NE(res[21]["error"]["message"].get<std::string>().find("line 22: the JSON is nested more than 10000 levels"),
            std::string::npos)
      << res[21];
  EXPECT_EQ(res[22]["custom_id"], "long");
  EXPECT_EQ(res[22]["response"]["status_code"], 400);
  EXPECT_EQ(res[22]["response"]["body"]["error"]["param"], "max_tokens");
  EXPECT_EQ(res[22]["response"]["body"]["error"]["message"],
            "'max_tokens' is 4096 and the prompt has 1 token: together more than the context of 4096 tokens (at most "
            "4095 new tokens fit after this prompt)");
  EXPECT_NE(r.out.find("44 requests, 32 answered, 12 failed"), std::string::npos) << r.out;
  fs::remove(in);
  fs::remove(out);
}

// OpenAI's Batch API requires custom_id to be unique within a file: the first line with one runs,
// each later line with the same one gets an error line of its own (response null), naming its
// line and the first; the other lines still run.
// Penalised, min_p and plain requests in one batch, greedy and sampled, completions and chat: each
// line's answer is the one it gets in a batch of its own; a penalty out of range is that line's
// 400 naming it.
TEST(LgBatch, MixedPenaltiesGiveEachLineItsSoloAnswer) {
  const json g = golden();
  const auto prompt = [&](size_t k) { return g["cases"][k]["prompt"]; };
  const json chat = {{"role", "user"}, {"content", "def add(a, b):"}};
  const std::vector<std::pair<std::string, json>> lines = {
      {"/v1/completions", {{"prompt", prompt(0)}, {"max_tokens", 24}, {"temperature", 0}}},
      {"/v1/completions", {{"prompt", prompt(0)}, {"max_tokens", 24}, {"temperature", 0}, {"repetition_penalty", 1.3}}},
      {"/v1/completions",
       {{"prompt", prompt(1)}, {"max_tokens", 20}, {"temperature", 0}, {"presence_penalty", 0.8}, {"frequency_penalty", 0.6}}},
      {"/v1/completions", {{"prompt", prompt(1)}, {"max_tokens", 20}, {"temperature", 0}}},
      {"/v1/completions",
       {{"prompt", prompt(2)}, {"max_tokens", 20}, {"temperature", 0.9}, {"seed", 5}, {"min_p", 0.1}, {"repetition_penalty", 1.1}}},
      {"/v1/chat/completions", {{"messages", {chat}}, {"max_tokens", 12}, {"temperature", 0}, {"repetition_penalty", 1.2}}},
      {"/v1/completions", {{"prompt", prompt(3)}, {"max_tokens", 20}, {"repetition_penalty", 0}}},
  };
  const std::string model = kSource + "/models/qwen3-pycode-22m";
  const auto run = [&](const std::vector<size_t>& which) {
    const fs::path in = fs::temp_directory_path() / ("lg_batch_mixed_in_" + std::to_string(::getpid()));
    const fs::path out = fs::temp_directory_path() / ("lg_batch_mixed_out_" + std::to_string(::getpid()));
    {
      std::ofstream f(in);
      for (size_t i : which)
        f << json{{"custom_id", "r" + std::to_string(i)}, {"method", "POST"}, {"url", lines[i].first}, {"body", lines[i].second}}
                 .dump()
          << "\n";
    }
    const CliRun r = run_lg("batch -q --model " + model + " -i " + in.string() + " -o " + out.string());
    EXPECT_EQ(r.code, 0) << r.out;
    std::vector<json> res = read_results(out);
    fs::remove(in);
    fs::remove(out);
    return res;
  };
  std::vector<size_t> all(lines.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<json> together = run(all);
  ASSERT_EQ(together.size(), lines.size());
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    SCOPED_TRACE("line " + std::to_string(i) + ": " + lines[i].second.dump());
    const std::vector<json> alone = run({i});
    ASSERT_EQ(alone.size(), 1u);
    ASSERT_EQ(together[i]["response"]["status_code"], 200) << together[i];
    const json& a = alone[0]["response"]["body"];
    const json& t = together[i]["response"]["body"];
    EXPECT_EQ(t["choices"], a["choices"]);
    EXPECT_EQ(t["usage"], a["usage"]);
  }
  EXPECT_NE(together[0]["response"]["body"]["choices"], together[1]["response"]["body"]["choices"]);
  EXPECT_NE(together[2]["response"]["body"]["choices"], together[3]["response"]["body"]["choices"]);
  const json& bad = together.back()["response"];
  EXPECT_EQ(bad["status_code"], 400);
  EXPECT_EQ(bad["body"]["error"]["param"], "repetition_penalty");
  EXPECT_EQ(bad["body"]["error"]["message"], "'repetition_penalty' must be > 0, got 0");
}

TEST(LgBatch, ALaterLineWithACustomIdAlreadyUsedIsAnError) {
  const auto request = [](const std::string& id, const std::string& prompt) {
    return json{{"custom_id", id},
                {"method", "POST"},
                {"url", "/v1/completions"},
                {"body", {{"prompt", prompt}, {"max_tokens", 2}, {"temperature", 0}}}}
        .dump();
  };
  const fs::path in = fs::temp_directory_path() / ("lg_batch_dup_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(in) << request("a", "def f(") << "\n"
                    << request("b", "def g(") << "\n"
                    << request("a", "def h(") << "\n"
                    << "\n"  // a blank line is no request, and line numbers still count it
                    << request("a", "def f(") << "\n";
  const fs::path out = fs::temp_directory_path() / ("lg_batch_dup_out_" + std::to_string(::getpid()) + ".jsonl");
  const CliRun r = run_lg("batch --model " + kSource + "/models/qwen3-pycode-22m -i " + in.string() + " -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto res = read_results(out);
  fs::remove(in);
  fs::remove(out);
  ASSERT_EQ(res.size(), 4u) << r.out;
  EXPECT_NE(r.out.find("4 requests, 2 answered, 2 failed"), std::string::npos) << r.out;
  for (size_t i : {0, 1}) {
    EXPECT_EQ(res[i]["custom_id"], i == 0 ? "a" : "b");
    EXPECT_TRUE(res[i]["error"].is_null()) << res[i].dump();
    EXPECT_EQ(res[i]["response"]["status_code"], 200) << res[i].dump();
    EXPECT_EQ(res[i]["response"]["body"]["usage"]["completion_tokens"], 2) << res[i].dump();
  }
  const std::pair<size_t, std::string> dups[] = {{2, "line 3"}, {3, "line 5"}};
  for (const auto& [i, where] : dups) {
    SCOPED_TRACE(res[i].dump());
    EXPECT_EQ(res[i]["id"], "batch_req_" + std::to_string(i));
    EXPECT_EQ(res[i]["custom_id"], "a");
    EXPECT_TRUE(res[i]["response"].is_null());
    EXPECT_EQ(res[i]["error"]["code"], "duplicate_custom_id");
    EXPECT_EQ(res[i]["error"]["message"], where + ": 'custom_id' \"a\" is already the custom_id of line 1: custom_id "
                                                  "must be unique within the batch file");
  }
}

// A line strict JSON refuses keeps its custom_id in its error line when the id can still be read
// (a new-user pass found `1e400` in a body gave an error line with custom_id null): the number
// before or after the id, a line cut short after it. An id only inside the body, or after the
// point where the line breaks, cannot be told apart from the request's own data: null.
TEST(LgBatch, LinesThatAreNotJsonKeepTheirCustomId) {
  const fs::path in = fs::temp_directory_path() / ("lg_batch_overflow_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(in)
      << R"({"custom_id": "before", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "temperature": 1e400}})"
      << "\n"
      << R"({"method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "top_p": -1e400, "n": [2e999]}, "custom_id": "after"})"
      << "\n"
      << R"({"custom_id": "cut", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x")" << "\n"
      << R"({"method": "POST", "body": {"custom_id": "inner", "prompt": "x", "temperature": 1e400}})" << "\n"
      << R"({"custom_id": 7, "body": {"temperature": 1e400}})" << "\n"
      << R"({"custom_id": "ok", "method": "POST", "url": "/v1/completions", "body": {"prompt": "def f(", "max_tokens": 1}})"
      << "\n"
      // The recovered id is taken: a later line with it is a duplicate, as had its line parsed.
      << R"({"custom_id": "before", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "max_tokens": 1}})"
      << "\n"
      // A NUL byte ended nlohmann's input: the first request ran, the second was dropped unread.
      << R"({"custom_id": "nul", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x", "max_tokens": 1}})"
      << '\0' << R"({"custom_id": "hidden", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x"}})"
      << "\n";
  const fs::path out = fs::temp_directory_path() / ("lg_batch_overflow_out_" + std::to_string(::getpid()) + ".jsonl");
  const CliRun r = run_lg("batch --model " + kSource + "/models/qwen3-pycode-22m -i " + in.string() + " -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto res = read_results(out);
  fs::remove(in);
  fs::remove(out);
  ASSERT_EQ(res.size(), 8u) << r.out;
  const json want_ids[] = {"before", "after", "cut", nullptr, nullptr, "ok", "before", "nul"};
  for (size_t i = 0; i < res.size(); ++i) EXPECT_EQ(res[i]["custom_id"], want_ids[i]) << res[i].dump();
  for (size_t i : {0, 1, 2, 3, 4, 7}) EXPECT_EQ(res[i]["error"]["code"], "invalid_json") << res[i].dump();
  EXPECT_NE(res[7]["error"]["message"].get<std::string>().find("line 8: not JSON:"), std::string::npos) << res[7].dump();
  EXPECT_NE(res[7]["error"]["message"].get<std::string>().find("a NUL byte"), std::string::npos) << res[7].dump();
  EXPECT_NE(res[0]["error"]["message"].get<std::string>().find("line 1: not JSON: number overflow parsing '1e400'"),
            std::string::npos)
      << res[0].dump();
  EXPECT_EQ(res[5]["response"]["status_code"], 200) << res[5].dump();
  EXPECT_EQ(res[6]["error"]["code"], "duplicate_custom_id") << res[6].dump();
}

// A line past the 64 MiB a line may hold is that line's error (as any bad line's), under the
// custom_id its first 64 MiB name: the lines before and after it run. (An endless line, `-i
// /dev/zero`, still fails the command: CliUsage.)
TEST(LgBatch, ALineLargerThanTheCapIsItsOwnErrorAndTheRestRun) {
  const fs::path in = fs::temp_directory_path() / ("lg_batch_huge_" + std::to_string(::getpid()) + ".jsonl");
  const std::string ok = R"({"custom_id": "ID", "method": "POST", "url": "/v1/completions", "body": {"prompt": "def f(", "max_tokens": 1}})";
  {
    std::ofstream f(in, std::ios::binary);
    f << std::string(ok).replace(ok.find("ID"), 2, "first") << "\n";
    f << R"({"custom_id": "huge", "body": {"prompt": ")" << std::string((size_t{64} << 20) + 10, 'a') << "\"}}\n";
    f << std::string(ok).replace(ok.find("ID"), 2, "last") << "\n";
  }
  const fs::path out = fs::temp_directory_path() / ("lg_batch_huge_out_" + std::to_string(::getpid()) + ".jsonl");
  const CliRun r = run_lg("batch -q --model " + kSource + "/models/qwen3-pycode-22m -i " + in.string() + " -o " + out.string());
  const auto res = read_results(out);
  fs::remove(in);
  fs::remove(out);
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(res.size(), 3u) << r.out;
  EXPECT_EQ(res[0]["custom_id"], "first");
  EXPECT_EQ(res[0]["response"]["status_code"], 200) << res[0].dump();
  EXPECT_EQ(res[1]["custom_id"], "huge");  // read from the line's first 64 MiB
  EXPECT_NE(res[1]["error"]["message"].get<std::string>().find("line 2 is larger than 64 MiB"), std::string::npos)
      << res[1].dump();
  EXPECT_EQ(res[2]["custom_id"], "last");
  EXPECT_EQ(res[2]["response"]["status_code"], 200) << res[2].dump();
}

// Files it cannot use are errors before any request runs (exit 1), never a silent exit 0: the
// input named as the output too (opening the output would truncate the input first), a directory
// as input or as output, an output that cannot be written (/dev/full takes the open, fails the write).
TEST(LgBatch, FilesItCannotUseAreErrors) {
  const std::string model = kSource + "/models/qwen3-pycode-22m";
  const fs::path in = fs::temp_directory_path() / ("lg_batch_same_" + std::to_string(::getpid()) + ".jsonl");
  const std::string line =
      R"({"custom_id": "a", "method": "POST", "url": "/v1/completions", "body": {"prompt": "def f(", "max_tokens": 2}})";
  std::ofstream(in) << line << "\n";
  const CliRun same = run_lg("batch --model " + model + " -i " + in.string() + " -o " + in.string());
  EXPECT_EQ(same.code, 1) << same.out;
  EXPECT_NE(same.out.find("is the input file"), std::string::npos) << same.out;
  std::ifstream kept(in);
  std::string first;
  std::getline(kept, first);
  EXPECT_EQ(first, line) << "the input was overwritten";
  const CliRun dir = run_lg("batch --model " + model + " -i " + fs::temp_directory_path().string() + " -o -");
  EXPECT_EQ(dir.code, 1) << dir.out;
  EXPECT_NE(dir.out.find("is a directory"), std::string::npos) << dir.out;
  // An output directory said only "cannot write", after the model had loaded (a new user's pass).
  const CliRun out_dir = run_lg("batch --model " + model + " -i " + in.string() + " -o " + fs::temp_directory_path().string());
  EXPECT_EQ(out_dir.code, 1) << out_dir.out;
  EXPECT_NE(out_dir.out.find(fs::temp_directory_path().string() + ": is a directory; -o takes the results file"),
            std::string::npos)
      << out_dir.out;
  // A file in a folder that does not exist: named before the model loads (it said "cannot write").
  const std::string nowhere = (fs::temp_directory_path() / "lg_no_such_folder" / "out.jsonl").string();
  const CliRun no_folder = run_lg("batch --model " + model + " -i " + in.string() + " -o " + nowhere);
  EXPECT_EQ(no_folder.code, 1) << no_folder.out;
  EXPECT_NE(no_folder.out.find(nowhere + ": no such folder "), std::string::npos) << no_folder.out;
  if (fs::exists("/dev/full")) {
    const CliRun full = run_lg("batch --model " + model + " -i " + in.string() + " -o /dev/full");
    EXPECT_EQ(full.code, 1) << full.out;
    EXPECT_NE(full.out.find("write failed"), std::string::npos) << full.out;
  }
  fs::remove(in);
}

// A requests file that does not exist said "X: cannot read", as an unreadable one did (found by a
// new-user pass). Each way of failing is said differently, before the model loads: missing, a
// directory, a dangling symbolic link, and a file the system refuses to open (a name too long:
// root reads a file without permission, so the test cannot use that).
TEST(LgBatch, AnInputFileThatCannotBeReadSaysWhy) {
  const std::string model = kSource + "/models/qwen3-pycode-22m";
  const fs::path tmp = fs::temp_directory_path() / ("lg_batch_in_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const fs::path link = tmp / "dangling.jsonl";
  fs::create_symlink(tmp / "gone.jsonl", link);
  const fs::path too_long = tmp / (std::string(300, 'x') + ".jsonl");
  for (const auto& [input, message] : {
           std::pair{(tmp / "nonexist.jsonl").string(), ": no such requests file (it does not exist)"},
           std::pair{tmp.string(), ": is a directory, not a requests file"},
           std::pair{link.string(), ": is a symbolic link to a missing file"},
           std::pair{too_long.string(), ": cannot read the requests file: File name too long"}}) {
    const CliRun r = run_lg("batch --model " + model + " -i " + input + " -o " + (tmp / "x.jsonl").string());
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find(input + message), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(tmp / "x.jsonl")) << "the output is not opened";
  }
  fs::remove_all(tmp);
}

// An empty -o or -i (an unset shell variable) said ": cannot write" / ": cannot read", naming no
// path (found by a new-user pass); it is a usage error naming the option, as lg compile's -o ''.
TEST(LgBatch, EmptyPathIsAUsageErrorNamingTheOption) {
  const std::string model = kSource + "/models/qwen3-pycode-22m";
  for (const auto& [args, message] :
       {std::pair<std::string, std::string>{"-i - -o ''", "-o,--output: needs a results file or '-', got an empty path"},
        {"-i '' -o -", "-i,--input: needs a requests file or '-', got an empty path"}}) {
    const CliRun r = run_lg("batch --model " + model + " " + args + " </dev/null");
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("lg: error:"), std::string::npos) << "refused while parsing, before the model loads\n" << r.out;
  }
}

// A model directory with no tokenizer.json takes token-id prompts (as `lg serve --shape` does):
// such a request is answered with ids, a text prompt gets an error line saying ids are needed.
// (It used to refuse the model as a whole, even for id prompts.)
TEST(LgBatch, ModelWithoutTokenizerTakesTokenIdPrompts) {
  const std::string in = ::testing::TempDir() + "/lg_batch_no_tokenizer.jsonl";
  std::ofstream(in) << R"({"custom_id": "ids", "method": "POST", "url": "/v1/completions", )"
                    << R"("body": {"prompt": [1, 2, 3], "max_tokens": 3, "temperature": 0}})" << "\n"
                    << R"({"custom_id": "text", "method": "POST", "url": "/v1/completions", )"
                    << R"("body": {"prompt": "hi", "max_tokens": 3}})" << "\n";
  const CliRun r = run_lg("batch --model " + kShared + "/fixtures/tiny-llama3 -i " + in + " -o - -q");
  EXPECT_EQ(r.code, 0) << r.out;
  const std::vector<json> lines = answer_lines(r);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0]["custom_id"], "ids");
  EXPECT_EQ(lines[0]["response"]["status_code"], 200) << lines[0].dump();
  EXPECT_EQ(lines[0]["response"]["body"]["choices"][0]["token_ids"].size(), 3u) << lines[0].dump();
  EXPECT_EQ(lines[1]["custom_id"], "text");
  EXPECT_EQ(lines[1]["response"]["status_code"], 400) << lines[1].dump();
  EXPECT_NE(lines[1].dump().find("must be token ids"), std::string::npos) << lines[1].dump();
  // lg serve of it with a chat template given: refused (there is no tokenizer to render it for).
  const CliRun s = run_lg("serve --model " + kShared + "/fixtures/tiny-llama3 --chat-template /dev/null --port 1");
  EXPECT_NE(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("--chat-template needs a tokenizer"), std::string::npos) << s.out;
}

// A batch file written for a server that names its model ("model": "Qwen/Qwen3-0.6B") runs under
// that name with --served-model-name, and chat lines render --chat-template, as lg serve takes
// both (new-user pass: both flags were refused, every such line a 404).
TEST(LgBatch, ServedModelNameAndChatTemplateAreServesOptions) {
  const std::string in = ::testing::TempDir() + "/lg_batch_named.jsonl", tmpl = ::testing::TempDir() + "/lg_batch.jinja";
  std::ofstream(tmpl) << "def {{ messages[0]['content'] }}(a, b):";
  std::ofstream(in) << R"({"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions", "body": {"model": )"
                    << R"("Qwen/Qwen3-0.6B", "messages": [{"role": "user", "content": "add"}], "max_tokens": 8, "temperature": 0}})"
                    << "\n"
                    << R"({"custom_id": "plain", "method": "POST", "url": "/v1/completions", "body": {"model": )"
                    << R"("Qwen/Qwen3-0.6B", "prompt": "def add(a, b):", "max_tokens": 8, "temperature": 0}})" << "\n";
  const auto named = answer_lines(run_lg("batch --model " + kModel + " -i " + in + " -o - -q --served-model-name Qwen/Qwen3-0.6B "
                                    "--chat-template " + tmpl));
  ASSERT_EQ(named.size(), 2u);
  ASSERT_EQ(named[0]["response"]["status_code"], 200) << named[0].dump();
  ASSERT_EQ(named[1]["response"]["status_code"], 200) << named[1].dump();
  EXPECT_EQ(named[1]["response"]["body"]["model"], "Qwen/Qwen3-0.6B") << named[1].dump();
  // The template made the chat's prompt the completion's: the same greedy text.
  EXPECT_EQ(named[0]["response"]["body"]["choices"][0]["message"]["content"],
            named[1]["response"]["body"]["choices"][0]["text"])
      << named[0].dump() << "\n" << named[1].dump();
  const auto unnamed = answer_lines(run_lg("batch --model " + kModel + " -i " + in + " -o - -q"));
  ASSERT_EQ(unnamed.size(), 2u);
  EXPECT_EQ(unnamed[1]["response"]["status_code"], 404) << unnamed[1].dump();
  EXPECT_NE(unnamed[1].dump().find("--served-model-name"), std::string::npos) << unnamed[1].dump();
  const CliRun twice = run_lg("batch --model " + kModel + " -i " + in + " -o - --served-model-name a a");
  EXPECT_EQ(twice.code, 2) << twice.out;
}

// A chat line's objects keep their keys in the line's order, as lg serve reads a body: a template
// iterating a tool's parameters (Qwen3's and most templates dump them) saw them sorted in lg batch
// and made another prompt than the server's (new-user pass: sampled answers with tools differed).
TEST(LgBatch, ChatLinesKeepTheirKeysInTheLinesOrder) {
  const std::string in = ::testing::TempDir() + "/lg_batch_order.jsonl", tmpl = ::testing::TempDir() + "/lg_order.jinja";
  std::ofstream(tmpl) << "{% for k in tools[0]['function']['parameters']['properties'] %}{{ k }} {% endfor %}";
  std::ofstream(in) << R"({"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": )"
                    << R"([{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f", )"
                    << R"("parameters": {"type": "object", "properties": {"zeta": {}, "beta": {}, "alpha": {}}}}}], )"
                    << R"("max_tokens": 8, "temperature": 0}})" << "\n"
                    << R"({"custom_id": "plain", "method": "POST", "url": "/v1/completions", "body": {"prompt": )"
                    << R"("zeta beta alpha ", "max_tokens": 8, "temperature": 0}})" << "\n";
  const CliRun r = run_lg("batch --model " + kModel + " -i " + in + " -o - -q --chat-template " + tmpl);
  std::vector<json> lines = answer_lines(r);  // not const: a missing key reads as null
  ASSERT_EQ(lines.size(), 2u) << r.out;
  ASSERT_EQ(lines[0]["response"]["status_code"], 200) << lines[0].dump();
  ASSERT_EQ(lines[1]["response"]["status_code"], 200) << lines[1].dump();
  const json& chat = lines[0]["response"]["body"];
  const json& plain = lines[1]["response"]["body"];
  EXPECT_EQ(chat["usage"]["prompt_tokens"], plain["usage"]["prompt_tokens"]) << lines[0].dump();
  EXPECT_EQ(chat["choices"][0]["message"]["content"], plain["choices"][0]["text"]) << lines[0].dump();
}

// phi3.lg binds only where config.sliding_window covers the context (Phi-3-mini-4k: a window of
// 2047 positions, max_position_embeddings 4096) and asks for --max-seq at most the window; lg
// batch, run and serve lowered the program at the config's context before reading --max-seq, so
// the advice could not be followed (found by a new-user pass). A copy of tiny-phi3 with a window
// of 512: at --max-seq 512 every golden prompt (64 + 24 positions at most, inside the window)
// gets transformers' greedy ids; without it the refusal names --max-seq.
TEST(LgBatch, AProgramThatBindsOnlyBelowTheConfigsContextRunsAtMaxSeq) {
  test::ModelCopy phi3(kShared + "/fixtures/tiny-phi3");
  phi3.edit_json("config.json", [](json& j) { j["sliding_window"] = 512; });
  const json g = json::parse(std::ifstream(kShared + "/fixtures/tiny-phi3/golden.json"));
  const fs::path in = fs::temp_directory_path() / ("lg_batch_phi3_window" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream out(in);
    for (size_t k = 0; k < g["cases"].size(); ++k) {
      const auto& c = g["cases"][k];
      const json body = {{"prompt", c["prompt_ids"]}, {"max_tokens", c["greedy_ids"].size()}, {"temperature", 0},
                         {"return_token_ids", true}};
      out << json{{"custom_id", "c" + std::to_string(k)}, {"method", "POST"}, {"url", "/v1/completions"}, {"body", body}}
                 .dump()
          << "\n";
    }
  }
  const CliRun r = run_lg("batch --model " + phi3.dir.string() + " --max-seq 512 -q -i " + in.string() + " -o -");
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream lines(r.out);
  size_t k = 0;
  for (std::string line; std::getline(lines, line); ++k) {
    ASSERT_LT(k, g["cases"].size()) << r.out;
    const json answer = json::parse(line)["response"]["body"];
    ASSERT_TRUE(answer.contains("choices")) << line;
    EXPECT_EQ(answer["choices"][0]["token_ids"], g["cases"][k]["greedy_ids"]) << "case " << k;
  }
  EXPECT_EQ(k, g["cases"].size()) << r.out;
  const CliRun refused = run_lg("batch --model " + phi3.dir.string() + " -q -i " + in.string() + " -o -");
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find("give --max-seq at most the window"), std::string::npos) << refused.out;
  fs::remove(in);
}

// A --max-seq past the model's context names where the context comes from: GPT-2's is the S
// gpt2.lg declares (its config's n_positions), and the message named max_position_embeddings,
// a key GPT-2's config.json does not have (found by a new-user pass); Llama's is that key.
TEST(LgBatch, AMaxSeqPastTheContextNamesWhereTheContextComesFrom) {
  const CliRun gpt2 = run_lg("batch --model " + kShared + "/fixtures/tiny-gpt2 --max-seq 2048 -i - -o - < /dev/null");
  EXPECT_EQ(gpt2.code, 1) << gpt2.out;
  EXPECT_NE(gpt2.out.find("--max-seq 2048 exceeds the model's context of 1024 tokens (the S that gpt2.lg declares)"),
            std::string::npos)
      << gpt2.out;
  EXPECT_EQ(gpt2.out.find("max_position_embeddings"), std::string::npos) << gpt2.out;
  const CliRun llama = run_lg("batch --model " + kShared + "/fixtures/tiny-llama3 --max-seq 2048 -i - -o - < /dev/null");
  EXPECT_EQ(llama.code, 1) << llama.out;
  EXPECT_NE(llama.out.find("--max-seq 2048 exceeds the model's context of 1024 tokens (max_position_embeddings in "
                           "config.json)"),
            std::string::npos)
      << llama.out;
}

// A KV cache smaller than one context is refused at start, naming the option: a request that
// grew past it used to preempt itself and run again forever (found by a new-user pass).
TEST(LgBatch, KvCacheSmallerThanAContextIsRefused) {
  const CliRun r = run_lg("batch --model " + kSource + "/models/qwen3-pycode-22m --max-seq 128 --kv-tokens 32 -i - -o - "
                          "< /dev/null");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--kv-tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("one context of 128 tokens"), std::string::npos) << r.out;
  const CliRun huge = run_lg("batch --model " + kSource + "/models/qwen3-pycode-22m --kv-tokens 9223372036854775807 "
                             "-i - -o - < /dev/null");
  EXPECT_EQ(huge.code, 1) << huge.out;
  EXPECT_NE(huge.out.find("--kv-tokens"), std::string::npos) << huge.out;
  const CliRun big = run_lg("batch --model " + kSource + "/models/qwen3-pycode-22m --kv-tokens 99999999999 "
                            "-i - -o - < /dev/null");
  EXPECT_EQ(big.code, 1) << big.out;
  EXPECT_NE(big.out.find("--kv-tokens"), std::string::npos) << big.out;
  // lg run sizes its context from the prompt and --max-tokens, so it names those, not --max-seq
  // (a new user followed "or a smaller --max-seq" and got a cut-short answer).
  const CliRun run = run_lg("run -m " + kSource + "/models/qwen3-pycode-22m --lane cpu -q -n 100 -p x --kv-tokens 50");
  EXPECT_EQ(run.code, 1) << run.out;
  EXPECT_NE(run.out.find("a KV cache of 50 tokens (--kv-tokens) holds less than this run needs: 100 positions for a "
                         "1-token prompt and up to 100 new tokens (--max-tokens)"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("--max-seq"), std::string::npos) << run.out;
  // A count of one is singular: "a KV cache of 1 tokens", "up to 1 new tokens" before.
  const CliRun one = run_lg("run -m " + kSource + "/models/qwen3-pycode-22m --lane cpu -q -n 1 -p 'def f(x):' "
                            "--kv-tokens 1");
  EXPECT_EQ(one.code, 1) << one.out;
  EXPECT_NE(one.out.find("a KV cache of 1 token (--kv-tokens) holds less than this run needs: 4 positions for a "
                         "4-token prompt and up to 1 new token (--max-tokens)"),
            std::string::npos)
      << one.out;
}

// The 22M model's step is mostly its LM head (151,936 x 128): batched, the weights are read once
// for all sequences in a step. CPU time, not wall time, so that other tests running beside this
// one on the CI machine do not decide it; the cost of loading the model and the tokenizer (an
// empty batch file) is the same either way and is taken off both.
// Ctrl-C (SIGINT) or SIGTERM on a batch keeps what it finished: the request running then is cut at
// its next token and its line still written (finish_reason "abort", the tokens so far), the exit
// code 128 + the signal, as a shell reports it. Before, the process died at once and its output
// file, truncated when opened, held only the lines already written (none while the first one ran).
void expect_signal_cuts_the_running_line(int sig, const std::string& name) {
  const json g = golden();
  const std::string stem = "lg_batch_" + name + "_" + std::to_string(::getpid());
  const fs::path in = fs::temp_directory_path() / (stem + ".jsonl");
  const fs::path out = fs::temp_directory_path() / (stem + ".out");
  const fs::path log = fs::temp_directory_path() / (stem + ".log");
  {
    std::ofstream f(in);
    const std::string prompt = g["cases"][0]["prompt"];
    for (const auto& [id, n] : {std::pair{"short", 3}, std::pair{"long", 3000}}) {
      const json body = {{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}, {"ignore_eos", true}};
      f << json{{"custom_id", id}, {"method", "POST"}, {"url", "/v1/completions"}, {"body", body}}.dump() << "\n";
    }
  }
  fs::remove(out);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    std::vector<std::string> args = {LG_BINARY, "batch", "-m", kSource + "/models/qwen3-pycode-22m", "-i", in.string(),
                                     "-o", out.string(), "-q"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  // The first line is written once the short request is done: the long one is running then.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_results(out).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(::kill(pid, sig), 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream lf(log);
  const std::string err((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal; stderr: " << err;
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << err;
  EXPECT_NE(err.find("lg batch: " + name + ": cutting the requests still running"), std::string::npos) << err;
  const std::vector<json> r = read_results(out);
  ASSERT_EQ(r.size(), 2u) << err;
  EXPECT_EQ(r[0]["custom_id"], "short");
  EXPECT_EQ(r[0]["response"]["body"]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r[1]["custom_id"], "long");
  EXPECT_EQ(r[1]["response"]["status_code"], 200);
  EXPECT_EQ(r[1]["response"]["body"]["choices"][0]["finish_reason"], "abort");
  EXPECT_LT(r[1]["response"]["body"]["usage"]["completion_tokens"].get<int64_t>(), 3000);
  fs::remove(in);
  fs::remove(out);
  fs::remove(log);
}

TEST(LgBatch, SigintWritesEveryLineTheRunningOnesCut) { expect_signal_cuts_the_running_line(SIGINT, "SIGINT"); }

TEST(LgBatch, SigtermWritesEveryLineTheRunningOnesCut) { expect_signal_cuts_the_running_line(SIGTERM, "SIGTERM"); }

TEST(LgBatch, ThirtyTwoRequestsTogetherCostWellUnderHalfOfOneByOne) {
  const fs::path in = write_requests("lg_batch_time_", {});
  const fs::path none = fs::temp_directory_path() / ("lg_batch_none_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(none).close();
  const fs::path out = fs::temp_directory_path() / ("lg_batch_time_out_" + std::to_string(::getpid()) + ".jsonl");
  const std::string cmd = "batch --model " + kSource + "/models/qwen3-pycode-22m -q -o " + out.string() + " -i ";
  child_cpu_seconds();
  ASSERT_EQ(run_lg(cmd + none.string()).code, 0);
  const double load = child_cpu_seconds();
  ASSERT_EQ(run_lg(cmd + in.string() + " --max-batch 1").code, 0);
  const double alone = child_cpu_seconds() - load;
  ASSERT_EQ(run_lg(cmd + in.string()).code, 0);
  const double together = child_cpu_seconds() - load;
  std::cout << "[ lg batch ] loading: " << load << " CPU s; 32 requests one by one: " << alone
            << " CPU s; together: " << together << " CPU s (" << together / alone << "x)\n";
  EXPECT_LT(together, 0.5 * alone);
  fs::remove(in);
  fs::remove(none);
  fs::remove(out);
}

}  // namespace
}  // namespace lg::cli_test
