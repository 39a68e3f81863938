// Encode throughput of lg::tokenizer on a few MB of mixed text, one thread (not a test).
//
// The corpus is assembled deterministically from files on the machine, in sorted path order:
//   python  ~2.0 MB  the repo's *.py files, then /usr/lib/python3*/ *.py
//   prose   ~0.6 MB  /usr/share/common-licenses/*, then the English msgids of the gettext
//                    catalogs (.mo) of /usr/share/locale/{zh_CN,ja,ko}
//   cjk     ~0.8 MB  the Chinese, Japanese and Korean msgstrs of the same catalogs
//   emoji   ~0.2 MB  generated: English words with emoji, ZWJ sequences, skin tones and flags
//                    from a fixed-seed generator
// Other machines have other files, so the corpus is written to a file (--write-corpus) and both
// benchmarks (this one and hf_tokenizer_bench.py) read that file (--corpus).
//
// Usage: tokenizer_bench [--tokenizer tokenizer.json] [--corpus FILE | --write-corpus FILE]
//                        [--ids-out FILE] [--repeats N]
// Prints MB/s (1 MB = 10^6 bytes): whole corpus in one encode call (first pass with a cold
// cache, then the median of the warm passes), the corpus as ~2 KB documents one call each, and
// each section in one call.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "support/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<fs::path> sorted_files(const fs::path& root, const std::string& ext, bool recursive) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  auto add = [&](const fs::directory_entry& e) {
    if (e.is_regular_file(ec) && (ext.empty() || e.path().extension() == ext)) out.push_back(e.path());
  };
  if (recursive) {
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      add(*it);
    }
  } else {
    for (const auto& e : fs::directory_iterator(root, ec)) add(e);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Appends files until `budget` bytes; skips files that are not valid UTF-8.
void take(std::string& out, const std::vector<fs::path>& files, size_t budget) {
  const size_t start = out.size();
  for (const auto& f : files) {
    if (out.size() - start >= budget) break;
    std::string s = read_file(f);
    if (lg::tokenizer::utf8::first_invalid(s) != std::string_view::npos) continue;
    out += s.substr(0, budget - (out.size() - start));
    // Cutting may have split a character: drop the partial tail.
    while (!out.empty() && lg::tokenizer::utf8::first_invalid(out.substr(start)) != std::string_view::npos)
      out.pop_back();
    out += '\n';
  }
}

// The strings of a GNU gettext .mo catalog: msgids (original) or msgstrs (translations).
std::vector<std::string> mo_strings(const fs::path& p, bool translations) {
  const std::string b = read_file(p);
  auto u32 = [&](size_t off) {
    uint32_t v = 0;
    if (off + 4 <= b.size()) std::memcpy(&v, b.data() + off, 4);
    return v;
  };
  std::vector<std::string> out;
  if (b.size() < 28 || u32(0) != 0x950412deu) return out;  // little-endian catalogs only
  const uint32_t n = u32(8), table = u32(translations ? 16 : 12);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t len = u32(table + 8ull * i), off = u32(table + 8ull * i + 4);
    if (len == 0 || size_t(off) + len > b.size()) continue;
    std::string s = b.substr(off, len);
    std::replace(s.begin(), s.end(), '\0', '\n');  // plural forms are NUL-separated
    if (lg::tokenizer::utf8::first_invalid(s) == std::string_view::npos) out.push_back(std::move(s));
  }
  return out;
}

struct Section {
  std::string name;
  std::string text;
};

std::vector<Section> assemble(const fs::path& repo) {
  std::vector<Section> sections;
  {
    std::string py;
    take(py, sorted_files(repo, ".py", true), 200'000);
    std::vector<fs::path> libs;
    for (const auto& e : fs::directory_iterator("/usr/lib"))
      if (e.path().filename().string().rfind("python3", 0) == 0) libs.push_back(e.path());
    std::sort(libs.begin(), libs.end());
    for (const auto& lib : libs) take(py, sorted_files(lib, ".py", false), 2'000'000 - std::min<size_t>(py.size(), 2'000'000));
    sections.push_back({"python", py});
  }
  std::vector<fs::path> catalogs;
  for (const char* lang : {"zh_CN", "ja", "ko"})
    for (const auto& f : sorted_files(fs::path("/usr/share/locale") / lang / "LC_MESSAGES", ".mo", false))
      catalogs.push_back(f);
  {
    std::string prose;
    take(prose, sorted_files("/usr/share/common-licenses", "", false), 400'000);
    for (const auto& c : catalogs) {
      if (prose.size() >= 600'000) break;
      for (const auto& s : mo_strings(c, false)) prose += s + "\n";
    }
    prose.resize(std::min<size_t>(prose.size(), 600'000));
    while (lg::tokenizer::utf8::first_invalid(prose) != std::string_view::npos) prose.pop_back();
    sections.push_back({"prose", prose});
  }
  {
    std::string cjk;
    // Round-robin over the three languages so that each is represented.
    std::vector<std::vector<std::string>> per_lang(3);
    size_t li = 0;
    for (const char* lang : {"zh_CN", "ja", "ko"}) {
      for (const auto& f : sorted_files(fs::path("/usr/share/locale") / lang / "LC_MESSAGES", ".mo", false))
        for (auto& s : mo_strings(f, true)) per_lang[li].push_back(std::move(s));
      ++li;
    }
    for (size_t i = 0; cjk.size() < 800'000; ++i) {
      bool any = false;
      for (auto& v : per_lang)
        if (i < v.size()) {
          cjk += v[i] + "\n";
          any = true;
        }
      if (!any) break;
    }
    sections.push_back({"cjk", cjk});
  }
  {
    static const char* words[] = {"the", "model", "token", "great", "party", "love", "launch", "cat", "and",
                                  "with", "today", "GPU", "fast", "ok", "yes", "wow"};
    static const char* emoji[] = {"\U0001F600", "\U0001F44D", "\U0001F44D\U0001F3FD", "\U0001F389", "\U0001F680",
                                  "\u2764\uFE0F", "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
                                  "\U0001F1EB\U0001F1F7", "\U0001F1EF\U0001F1F5", "\U0001F525", "\U0001F914",
                                  "\U0001F9D1\u200D\U0001F4BB", "\u2728", "\U0001F602\U0001F602\U0001F602"};
    std::mt19937 rng(20261129);
    std::string e;
    while (e.size() < 200'000) {
      const int n = std::uniform_int_distribution<int>(3, 12)(rng);
      for (int i = 0; i < n; ++i) {
        if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
          e += emoji[std::uniform_int_distribution<size_t>(0, std::size(emoji) - 1)(rng)];
        else
          e += words[std::uniform_int_distribution<size_t>(0, std::size(words) - 1)(rng)];
        e += ' ';
      }
      e += '\n';
    }
    sections.push_back({"emoji", e});
  }
  return sections;
}

// The corpus file: sections concatenated; a small index file beside it records the section
// boundaries so both benchmarks can report per section.
void write_corpus(const fs::path& path, const std::vector<Section>& sections) {
  std::ofstream out(path, std::ios::binary);
  std::ofstream index(path.string() + ".sections");
  for (const auto& s : sections) {
    out << s.text;
    index << s.name << " " << s.text.size() << "\n";
  }
}

std::vector<Section> read_corpus(const fs::path& path) {
  const std::string all = read_file(path);
  std::ifstream index(path.string() + ".sections");
  std::vector<Section> sections;
  std::string name;
  size_t size = 0, at = 0;
  while (index >> name >> size) {
    sections.push_back({name, all.substr(at, size)});
    at += size;
  }
  if (sections.empty()) sections.push_back({"all", all});
  return sections;
}

// The corpus as documents of about 2 KB: whole lines, each chunk closed once it reaches 2,000
// bytes. hf_tokenizer_bench.py cuts the same way; encoding them one call each is how a server
// sees text (HF's cost per call differs from one giant call).
std::vector<std::string_view> documents(std::string_view all) {
  std::vector<std::string_view> docs;
  size_t start = 0, at = 0;
  while (at < all.size()) {
    size_t nl = all.find('\n', at);
    at = nl == std::string_view::npos ? all.size() : nl + 1;
    if (at - start >= 2000 || at == all.size()) {
      docs.push_back(all.substr(start, at - start));
      start = at;
    }
  }
  return docs;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  fs::path tokenizer_json = fs::path(LG_SOURCE_DIR) / "models/qwen3-pycode-22m/tokenizer.json";
  fs::path corpus, write, ids_out;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--tokenizer") tokenizer_json = argv[i + 1];
    else if (a == "--corpus") corpus = argv[i + 1];
    else if (a == "--write-corpus") write = argv[i + 1];
    else if (a == "--ids-out") ids_out = argv[i + 1];
    else if (a == "--repeats") repeats = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  try {
    std::vector<Section> sections;
    if (!corpus.empty()) {
      sections = read_corpus(corpus);
    } else {
      sections = assemble(LG_SOURCE_DIR);
      if (!write.empty()) write_corpus(write, sections);
    }
    std::string all;
    for (const auto& s : sections) all += s.text;
    uint64_t h = 1469598103934665603ull;  // FNV-1a, to tell corpora apart
    for (const unsigned char c : all) h = (h ^ c) * 1099511628211ull;
    std::printf("corpus: %zu bytes, fnv1a %016llx;", all.size(), static_cast<unsigned long long>(h));
    for (const auto& s : sections) std::printf(" %s %zu", s.name.c_str(), s.text.size());
    std::printf("\n");

    auto t0 = std::chrono::steady_clock::now();
    const auto tok = lg::tokenizer::Tokenizer::from_file(tokenizer_json);
    std::printf("load tokenizer.json: %.3f s\n", seconds_since(t0));

    t0 = std::chrono::steady_clock::now();
    const auto ids = tok.encode(all);
    const double cold = seconds_since(t0);
    std::vector<double> warm;
    for (int r = 0; r < repeats; ++r) {
      t0 = std::chrono::steady_clock::now();
      const auto again = tok.encode(all);
      warm.push_back(seconds_since(t0));
      if (again != ids) throw lg::Error("encode is not deterministic");
    }
    std::sort(warm.begin(), warm.end());
    const double mb = static_cast<double>(all.size()) / 1e6;
    std::printf("whole corpus: %zu tokens; cold %.2f MB/s, warm median %.2f MB/s = %.0f tokens/s (%d runs)\n",
                ids.size(), mb / cold, mb / warm[warm.size() / 2],
                static_cast<double>(ids.size()) / warm[warm.size() / 2], repeats);
    {
      const auto docs = documents(all);
      std::vector<double> t;
      size_t tokens = 0;
      for (int r = 0; r < repeats; ++r) {
        tokens = 0;
        t0 = std::chrono::steady_clock::now();
        for (const auto d : docs) tokens += tok.encode(d).size();
        t.push_back(seconds_since(t0));
      }
      std::sort(t.begin(), t.end());
      std::printf("documents: %zu of ~2 KB, %zu tokens; warm median %.2f MB/s = %.0f tokens/s\n", docs.size(),
                  tokens, mb / t[t.size() / 2], static_cast<double>(tokens) / t[t.size() / 2]);
    }
    for (const auto& s : sections) {
      std::vector<double> t;
      for (int r = 0; r < repeats; ++r) {
        t0 = std::chrono::steady_clock::now();
        const auto part = tok.encode(s.text);
        t.push_back(seconds_since(t0));
      }
      std::sort(t.begin(), t.end());
      std::printf("  %-7s %8.2f MB/s warm median\n", s.name.c_str(), static_cast<double>(s.text.size()) / 1e6 / t[t.size() / 2]);
    }
    if (!ids_out.empty()) {
      std::ofstream out(ids_out, std::ios::binary);
      out.write(reinterpret_cast<const char*>(ids.data()), static_cast<std::streamsize>(ids.size() * sizeof(int32_t)));
    }
  } catch (const lg::Error& e) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
