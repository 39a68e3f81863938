// read_text_input and getline_capped: a stream up to the cap is read whole, one byte more is an
// error naming the input and the cap, and an endless stream stops at the cap.
#include "support/text_input.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "support/error.h"

namespace lg {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TextInput, ReadsUpToTheCapAndNamesTheInputPastIt) {
  std::istringstream exact(std::string(100, 'x'));
  EXPECT_EQ(read_text_input(exact, "exact.json", 100), std::string(100, 'x'));
  std::istringstream empty("");
  EXPECT_EQ(read_text_input(empty, "empty.json", 100), "");
  std::istringstream over(std::string(101, 'x'));
  EXPECT_EQ(error_of([&] { read_text_input(over, "over.json", 100); }),
            "over.json: larger than 100 bytes, the most lanegraph reads of a program, JSON or text file");
  std::istringstream big(std::string(200000, 'x'));  // past one 64 KiB read
  EXPECT_EQ(read_text_input(big, "big.lg", 200000).size(), 200000u);
}

TEST(TextInput, DevZeroStopsAtTheDefaultCap) {
  std::ifstream zero("/dev/zero", std::ios::binary);
  if (!zero) GTEST_SKIP() << "no /dev/zero";
  EXPECT_EQ(error_of([&] { read_text_input(zero, "/dev/zero"); }),
            "/dev/zero: larger than 64 MiB, the most lanegraph reads of a program, JSON or text file");
  EXPECT_EQ(kMaxTextInputBytes, size_t{64} << 20);
}

TEST(TextInput, GetlineCappedSplitsAsGetlineAndCapsEachLine) {
  std::istringstream in("a\n\nbc\nlast");
  std::string line;
  std::vector<std::string> lines;
  for (size_t n = 1; getline_capped(in, line, "req.jsonl", n, 4); ++n) lines.push_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "", "bc", "last"}));
  std::istringstream ends("a\n");
  ASSERT_TRUE(getline_capped(ends, line, "req.jsonl", 1, 4));
  EXPECT_FALSE(getline_capped(ends, line, "req.jsonl", 2, 4)) << "no empty line after the last newline";
  std::istringstream longer("ok\ntoolong\n");
  ASSERT_TRUE(getline_capped(longer, line, "req.jsonl", 1, 4));
  EXPECT_EQ(error_of([&] { getline_capped(longer, line, "req.jsonl", 2, 4); }),
            "req.jsonl: line 2 is larger than 4 bytes, the most lanegraph reads of one line");
  // Past the refused line: its end within the cap, then the next line as usual; none within it.
  EXPECT_TRUE(skip_line_capped(longer, 4));
  EXPECT_FALSE(getline_capped(longer, line, "req.jsonl", 3, 4)) << "the refused line was the last";
  std::istringstream after("toolong\nnext\n");
  EXPECT_THROW(getline_capped(after, line, "req.jsonl", 1, 4), Error);
  EXPECT_TRUE(skip_line_capped(after, 4));
  ASSERT_TRUE(getline_capped(after, line, "req.jsonl", 2, 4));
  EXPECT_EQ(line, "next");
  std::istringstream endless("waytoolongforthecap");
  EXPECT_THROW(getline_capped(endless, line, "req.jsonl", 1, 4), Error);
  EXPECT_FALSE(skip_line_capped(endless, 4));
}

}  // namespace
}  // namespace lg
