// `lg check` end to end: the shipped programs against the 22M model and every fixture config
// (exit 0, the checkpoint's shapes listed), and a bad program (exit 1, diagnostics on stderr).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

namespace {

const std::string kSource = LG_SOURCE_DIR;
const std::string kShared = LG_SHARED_DIR;

struct CliRun {
  int code;
  std::string out;
};

CliRun run(const std::string& args) {
  std::string cmd = std::string(LG_BINARY) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  int status = pclose(pipe.release());
  return {WEXITSTATUS(status), out};
}

TEST(CheckCli, Qwen3Pycode22m) {
  CliRun r = run("check " + kSource + "/models/qwen3.lg --config " + kShared + "/models/qwen3-pycode-22m/config.json");
  ASSERT_EQ(r.code, 0) << r.out;
  for (int l = 0; l < 8; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".self_attn.";
    std::string n = "l" + std::to_string(l) + ".";
    EXPECT_NE(r.out.find(n + "wq      bf16[512, 128]     " + p + "q_proj.weight"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(n + "wk      bf16[256, 128]     " + p + "k_proj.weight"), std::string::npos);
    EXPECT_NE(r.out.find(n + "q_norm  bf16[128]          " + p + "q_norm.weight"), std::string::npos);
  }
  EXPECT_EQ(r.out.find("model.layers.8."), std::string::npos);
  EXPECT_NE(r.out.find("T <= 4096 (runtime)"), std::string::npos);
  EXPECT_NE(r.out.find("head       bf16[151936, 128]  model.embed_tokens.weight"), std::string::npos);
  EXPECT_NE(r.out.find("return     f32[T, 151936]"), std::string::npos);
  // The IR's one output (the logits) is "1 output": every lg check said "1 outputs".
  EXPECT_NE(r.out.find(" params, 2 states, 1 output\n"), std::string::npos) << r.out;
}

TEST(CheckCli, EveryFixtureWithItsProgram) {
  const std::pair<const char*, const char*> cases[] = {
      {"qwen3.lg", "tiny-qwen3"}, {"qwen3.lg", "tiny-qwen3-untied-mqa"}, {"qwen2.lg", "tiny-qwen2"}};
  for (auto [lg, dir] : cases) {
    CliRun r = run("check " + kSource + "/models/" + lg + " --config " + kShared + "/fixtures/" + dir);
    EXPECT_EQ(r.code, 0) << dir << "\n" << r.out;
  }
  CliRun mqa = run("check " + kSource + "/models/qwen3.lg --config " + kShared + "/fixtures/tiny-qwen3-untied-mqa");
  EXPECT_NE(mqa.out.find("lm_head.weight"), std::string::npos);
  EXPECT_NE(mqa.out.find("f32[16, 64]"), std::string::npos) << mqa.out;  // k_proj: 1 KV head of 16
  CliRun q2 = run("check " + kSource + "/models/qwen2.lg --config " + kShared + "/fixtures/tiny-qwen2");
  EXPECT_NE(q2.out.find("model.layers.2.self_attn.v_proj.bias"), std::string::npos);
  EXPECT_NE(q2.out.find("Dh = 16"), std::string::npos) << q2.out;  // hidden 64 / 4 heads
}

TEST(CheckCli, BadProgramExitsOneWithDiagnostics) {
  std::string path = ::testing::TempDir() + "/bad_check.lg";
  std::ofstream(path) << "model m {\n  dims { D = config.hidden_size }\n  forward(t: i32[T]) -> f32[T, D] {\n"
                         "    return t @ t\n  }\n}\n";
  CliRun r = run("check " + path + " --config " + kShared + "/fixtures/tiny-qwen3");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bad_check.lg:4:12: error: wrong rank: '@' needs operands of rank 2 or more"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" 4 |     return t @ t"), std::string::npos);
}

/// 1-based line of the first line of `path` holding `needle` (0 if none).
int line_of(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(needle) != std::string::npos) return n;
  return 0;
}

// Each shipped program declares the config model_type it implements; a config of another
// architecture is refused at that `require`, naming the file and line (qwen2.lg used to accept
// a qwen3 config: same tensor names, but no q/k norm and a bias the checkpoint lacks).
TEST(CheckCli, AProgramRefusesAConfigOfAnotherModelType) {
  const std::pair<const char*, const char*> cases[] = {{"qwen2", "tiny-qwen3"}, {"qwen3", "tiny-qwen2"}};
  for (auto [name, fixture] : cases) {
    const std::string file = kSource + "/models/" + name + ".lg";
    const int line = line_of(file, "require (config.model_type");
    ASSERT_GT(line, 0) << file << " declares no model_type";
    CliRun r = run("check " + file + " --config " + kShared + "/fixtures/" + fixture);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find(std::string(name) + ".lg:" + std::to_string(line) + ":3: error: requirement failed: " + name +
                         ".lg is the forward of config model_type \"" + name + "\""),
              std::string::npos)
        << r.out;
  }
}

// What `lg run`'s config reader refuses, `lg check` refuses too: a Qwen3 config without head_dim
// where Qwen3Config's default (128) and hidden_size / num_attention_heads disagree. The 22M model
// (hidden 128, 4 heads, head_dim 128) is such a config once head_dim is dropped; with hidden 512
// the two agree and the program checks.
TEST(CheckCli, Qwen3WithoutHeadDimIsRefusedWhenTheConventionsDisagree) {
  std::ifstream in(kShared + "/models/qwen3-pycode-22m/config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto drop = [&](const std::string& json, const std::string& key) {
    const size_t at = json.find("\"" + key + "\"");
    EXPECT_NE(at, std::string::npos) << key;
    const size_t end = json.find_first_of(",}", at);
    return json.substr(0, at) + json.substr(json[end] == ',' ? end + 1 : end);
  };
  const std::string dir = ::testing::TempDir();
  const std::string bad = dir + "/lg_nohd.json", good = dir + "/lg_nohd512.json";
  std::string no_hd = drop(text, "head_dim");
  std::ofstream(bad) << no_hd;
  std::string wide = drop(no_hd, "hidden_size");
  wide.insert(wide.find('{') + 1, "\"hidden_size\": 512, ");
  std::ofstream(good) << wide;
  const std::string file = kSource + "/models/qwen3.lg";
  CliRun r = run("check " + file + " --config " + bad);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("qwen3.lg:" + std::to_string(line_of(file, "require (config.head_dim")) +
                       ":3: error: requirement failed: config.json has no head_dim"),
            std::string::npos)
      << r.out;
  CliRun ok = run("check " + file + " --config " + good);
  EXPECT_EQ(ok.code, 0) << ok.out;
}

TEST(CheckCli, HelpAndUsage) {
  CliRun h = run("check --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--config"), std::string::npos);
  CliRun missing = run("check " + kSource + "/models/qwen3.lg");
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.out.find("--config is required"), std::string::npos) << missing.out;
}

}  // namespace
