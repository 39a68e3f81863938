// `lg lock check` end to end, as CI runs it: the CPU reference lane passes every lock in the
// repo's locks/; a lock with an altered token fails at that step and prints it; a lock whose
// weights hash is not the model's refuses to run.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace fs = std::filesystem;

namespace {

struct CliRun {
  int status;
  std::string output;
};

CliRun run_lg(const std::string& args) {
  const std::string cmd = std::string(LG_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

const fs::path kLocks = fs::path(LG_SOURCE_DIR) / "locks";
const std::string kShared = LG_SHARED_DIR;

/// A temp folder holding one lock from locks/, with its model path made absolute.
fs::path copy_lock(const std::string& name, nlohmann::json& lock) {
  std::ifstream in(kLocks / name);
  lock = nlohmann::json::parse(in);
  std::string model = lock["model"];
  if (model.rfind("../shared/", 0) == 0) model = kShared + "/" + model.substr(10);
  else model = (fs::path(LG_SOURCE_DIR) / model).string();
  lock["model"] = model;
  const fs::path dir = fs::temp_directory_path() / ("lg_lock_cli_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  return dir;
}

TEST(LockCli, CpuLanePassesEveryLock) {
  const CliRun r = run_lg("lock check --lane cpu --locks " + kLocks.string() + " --shared " + kShared);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("provenance Reference"), std::string::npos) << r.output;
  size_t oks = 0;
  for (size_t at = 0; (at = r.output.find("\nok ", at)) != std::string::npos; ++at) ++oks;
  size_t files = 0;
  for (auto& e : fs::directory_iterator(kLocks)) files += e.path().string().ends_with(".lock.json");
  EXPECT_GE(files, 4u) << "the repo keeps a lock per fixture model and one for qwen3-pycode-22m";
  EXPECT_EQ(oks, files) << r.output;
}

TEST(LockCli, AlteredTokenFailsWithTheStepPrinted) {
  nlohmann::json lock;
  const fs::path dir = copy_lock("tiny-qwen3.lock.json", lock);
  // Alter a step whose recorded margin is clear, so no rule may excuse it.
  auto& c = lock["cases"][1];
  size_t step = 0;
  while (c["margins"][step].get<double>() < 0.05) ++step;
  const int tok = c["tokens"][step];
  c["tokens"][step] = (tok + 1) % 512;
  std::ofstream(dir / "altered.lock.json") << lock.dump();
  const CliRun r = run_lg("lock check --lane cpu --locks " + dir.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL altered.lock.json case 1 step " + std::to_string(step) + ": lock token " +
                          std::to_string((tok + 1) % 512)),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("gave " + std::to_string(tok)), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(LockCli, WeightsHashMismatchRefusesToRun) {
  nlohmann::json lock;
  const fs::path dir = copy_lock("tiny-qwen2.lock.json", lock);
  lock["weights_hash"] = "xxh3:0000000000000000";
  std::ofstream(dir / "other.lock.json") << lock.dump();
  const CliRun r = run_lg("lock check --lane cpu --locks " + dir.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("does not match the lock's xxh3:0000000000000000"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\nok "), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// A lock from before the xxHash weights hash (a bare FNV-1a hash) is refused with what to do,
// naming the hash the lock would need, which `lg inspect --hash` prints too.
TEST(LockCli, AnOlderLocksFnvHashSaysHowToUpdateIt) {
  nlohmann::json lock;
  const fs::path dir = copy_lock("tiny-qwen2.lock.json", lock);
  const std::string now = lock["weights_hash"];
  lock["weights_hash"] = "15cb0d648f85a901";
  std::ofstream(dir / "old.lock.json") << lock.dump();
  const CliRun r = run_lg("lock check --lane cpu --locks " + dir.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("15cb0d648f85a901 is an older lanegraph's (FNV-1a)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(" + now + " if the weights"), std::string::npos) << r.output;
  const CliRun h = run_lg("inspect --hash " + (fs::path(kShared) / "fixtures" / "tiny-qwen2").string());
  EXPECT_NE(h.output.find("weights hash: " + now), std::string::npos) << h.output;
  fs::remove_all(dir);
}

// A malformed lock is an ERROR naming the case and field, never a lane's FAIL or an error from
// inside the lane: a negative prompt id (was an IR gather message), a token past the vocabulary
// (was "FAIL ... step 3"), a prompt longer than the model's context (named no case).
TEST(LockCli, AMalformedLockNamesTheCaseAndField) {
  nlohmann::json lock;
  const fs::path dir = copy_lock("tiny-qwen3.lock.json", lock);  // vocabulary 512, context 1024
  nlohmann::json negative = lock, outside = lock, long_prompt = lock;
  negative["cases"][0]["prompt_ids"] = {-3};
  outside["cases"][0]["tokens"][3] = 99999;
  long_prompt["cases"][2]["prompt_ids"] = std::vector<int>(1010, 7);
  for (const auto& [name, j, message] :
       {std::tuple{"negative", negative, "cases[0].prompt_ids[0] is -3, not a token id"},
        std::tuple{"outside", outside, "cases[0].tokens[3] is 99999, outside the model's vocabulary of 512 ids"},
        std::tuple{"long", long_prompt,
                   "cases[2].prompt_ids holds 1010 ids; with new_tokens 24 the case needs 1034 positions, more than "
                   "the model's context of 1024"}}) {
    SCOPED_TRACE(name);
    const fs::path file = dir / (std::string(name) + ".lock.json");
    std::ofstream(file) << j.dump();
    const CliRun r = run_lg("lock check --lane cpu --locks " + dir.string());
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("ERROR " + file.filename().string() + ": " + file.string() + ": " + message),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
    fs::remove(file);
  }
  fs::remove_all(dir);
}

// One lock that cannot be checked (its model directory is gone) or fails does not stop the
// others: each is reported under its name, and the exit status says some failed.
TEST(LockCli, AMissingModelDirectoryIsReportedAndTheOtherLocksStillRun) {
  nlohmann::json lock;
  const fs::path dir = copy_lock("tiny-qwen3.lock.json", lock);
  std::ofstream(dir / "b_good.lock.json") << lock.dump();
  lock["model"] = (dir / "no-such-model").string();
  std::ofstream(dir / "a_gone.lock.json") << lock.dump();
  nlohmann::json altered;
  fs::remove_all(copy_lock("tiny-qwen2.lock.json", altered));  // only its JSON, the model path made absolute
  auto& c = altered["cases"][0];
  size_t step = 0;
  while (c["margins"][step].get<double>() < 0.05) ++step;
  c["tokens"][step] = (c["tokens"][step].get<int>() + 1) % 512;
  std::ofstream(dir / "c_altered.lock.json") << altered.dump();
  const CliRun r = run_lg("lock check --lane cpu --locks " + dir.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("ERROR a_gone.lock.json: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no-such-model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ok   b_good.lock.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAIL c_altered.lock.json case 0 step " + std::to_string(step)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 locks failed"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(LockCli, RelativeModelPathResolvesWithATrailingSlashOnTheLocksFolder) {
  // A relative model path is relative to the locks folder's parent; `--locks DIR/` (as a shell
  // completes it) resolved it inside DIR instead.
  nlohmann::json lock;
  const fs::path dir = copy_lock("tiny-qwen3.lock.json", lock);
  fs::create_directories(dir / "locks");
  fs::create_directory_symlink(fs::path(kShared) / "fixtures", dir / "fixtures");
  lock["model"] = "fixtures/tiny-qwen3";
  std::ofstream(dir / "locks" / "tiny.lock.json") << lock.dump();
  for (const std::string locks : {"locks", "locks/", "locks/."}) {
    const CliRun r = run_lg("lock check --lane cpu --locks " + (dir / locks).string());
    EXPECT_EQ(r.status, 0) << locks << ": " << r.output;
    EXPECT_NE(r.output.find("ok   tiny.lock.json"), std::string::npos) << locks << ": " << r.output;
  }
  fs::remove_all(dir);
}

// `lg lock new` reads its golden file with the limit of every JSON file lanegraph reads: 100,000
// nested arrays as a prompt's ids overflowed the stack printing them into an error.
TEST(LockCli, AGoldenFileWithoutCasesWritesNoLock) {
  // `lg lock new` wrote a lock of no cases, which `lg lock check` then refused ("field 'cases'
  // must be a non-empty array"): a lock that checks nothing is refused before it is written.
  const fs::path dir = fs::temp_directory_path() / ("lg_lock_cli_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const fs::path golden = dir / "golden.json";
  std::ofstream(golden) << R"({"cases": []})";
  const CliRun r = run_lg("lock new --model " + kShared + "/fixtures/tiny-qwen3 --golden " + golden.string() + " -o " +
                          (dir / "out.lock.json").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("lg: error: " + golden.string() + ": 'cases' is empty"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out.lock.json"));
  fs::remove_all(dir);
}

TEST(LockCli, AGoldenFileNestedPastTheLimitIsAnErrorNamingIt) {
  const fs::path dir = fs::temp_directory_path() / ("lg_lock_cli_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const fs::path golden = dir / "golden.json";
  std::ofstream(golden) << R"({"cases": [{"prompt_ids": [)" << std::string(100000, '[') << std::string(100000, ']')
                        << "]}]}";
  const CliRun r = run_lg("lock new --model " + kShared + "/fixtures/tiny-qwen3 --golden " + golden.string() + " -o " +
                          (dir / "out.lock.json").string());
  EXPECT_EQ(r.status, 1) << r.output.substr(0, 300);
  EXPECT_NE(r.output.find("lg: error: " + golden.string() + ": the JSON is nested more than 10000 levels deep"),
            std::string::npos)
      << r.output.substr(0, 300);
  EXPECT_FALSE(fs::exists(dir / "out.lock.json"));
  fs::remove_all(dir);
}

}  // namespace
