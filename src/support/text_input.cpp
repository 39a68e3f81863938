#include "support/text_input.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "support/error.h"

namespace lg {

namespace {

/// "64 MiB" for the usual cap; bytes for another (tests pass small caps).
std::string cap_text(size_t cap) {
  return cap % (size_t{1} << 20) == 0 ? std::to_string(cap >> 20) + " MiB" : std::to_string(cap) + " bytes";
}

}  // namespace

std::ifstream open_text_input(const std::filesystem::path& path, const std::string& what) {
  namespace fs = std::filesystem;
  const std::string p = path.string();
  std::error_code ec;
  const fs::file_type type = fs::status(path, ec).type();
  if (type == fs::file_type::not_found) {
    if (fs::is_symlink(fs::symlink_status(path, ec))) throw Error(p + ": is a symbolic link to a missing file");
    throw Error(p + ": no such " + what + " (it does not exist)");
  }
  if (type == fs::file_type::directory) throw Error(p + ": is a directory, not a " + what);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw Error(p + ": cannot read the " + what + (err ? std::string(": ") + std::strerror(err) : std::string()));
  }
  return in;
}

std::string read_text_input(std::istream& in, const std::string& name, size_t cap) {
  std::string text;
  std::array<char, 1 << 16> buf{};
  // Read one byte past the cap to tell "exactly cap bytes" from "more".
  while (text.size() <= cap && in) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min(buf.size(), cap + 1 - text.size())));
    text.append(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (text.size() > cap)
    throw Error(name + ": larger than " + cap_text(cap) + ", the most lanegraph reads of a program, JSON or text file");
  return text;
}

bool getline_capped(std::istream& in, std::string& out, const std::string& name, size_t line, size_t cap) {
  out.clear();
  std::istream::sentry ok(in, /*noskipws=*/true);
  if (!ok) return false;
  std::streambuf& sb = *in.rdbuf();
  for (;;) {
    const int c = sb.sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(out.empty() ? std::ios::eofbit | std::ios::failbit : std::ios::eofbit);
      return !out.empty();
    }
    if (c == '\n') return true;
    if (out.size() == cap)
      throw Error(name + ": line " + std::to_string(line) + " is larger than " + cap_text(cap) +
                  ", the most lanegraph reads of one line");
    out.push_back(static_cast<char>(c));
  }
}

bool skip_line_capped(std::istream& in, size_t cap) {
  std::streambuf& sb = *in.rdbuf();
  for (size_t n = 0; n < cap; ++n) {
    const int c = sb.sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return true;
    }
    if (c == '\n') return true;
  }
  return false;
}

}  // namespace lg
