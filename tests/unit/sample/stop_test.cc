#include "sample/stop.h"

#include <gtest/gtest.h>

#include <random>

namespace keel::sample {
namespace {

// Feeds `text` in the given piece sizes and returns (emitted text, stopped).
std::pair<std::string, bool> run(const std::vector<std::string>& stops, const std::string& text, std::mt19937& rng) {
  StopMatcher m(stops);
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t n = std::min<size_t>(text.size() - i, 1 + rng() % 4);
    auto step = m.push(std::string_view(text).substr(i, n));
    out += step.text;
    i += n;
    if (step.stopped) return {out, true};
  }
  return {out + m.flush(), false};
}

TEST(StopMatcher, StopsBeforeTheStopStringAcrossPieceBoundaries) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    auto [out, stopped] = run({"END", "\n\n"}, "hello wor ENd? no END yes", rng);
    EXPECT_TRUE(stopped);
    EXPECT_EQ(out, "hello wor ENd? no ");
  }
}

TEST(StopMatcher, EarliestStopWins) {
  std::mt19937 rng(2);
  auto [out, stopped] = run({"bc", "abcd"}, "xxabcdyy", rng);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "xxa");
}

TEST(StopMatcher, NoStopReleasesEverything) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    auto [out, stopped] = run({"STOP"}, "a STO b ST", rng);
    EXPECT_FALSE(stopped);
    EXPECT_EQ(out, "a STO b ST");
  }
}

TEST(StopMatcher, HoldsOnlyPossiblePrefixes) {
  StopMatcher m({"<|end|>"});
  EXPECT_EQ(m.push("abc<|e").text, "abc");
  EXPECT_EQ(m.push("x").text, "<|ex");
  auto s = m.push("<|end|>tail");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
}

TEST(StopMatcher, MultiByteStopStrings) {
  std::mt19937 rng(4);
  auto [out, stopped] = run({"。"}, "日本語です。次", rng);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "日本語です");
}

}  // namespace
}  // namespace keel::sample
