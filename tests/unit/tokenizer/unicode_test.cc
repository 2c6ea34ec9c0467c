#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace keel::tokenizer {
namespace {

TEST(Utf8Lossy, ReplacesEachMaximalInvalidSubsequenceOnce) {
  EXPECT_EQ(utf8_lossy("abc"), "abc");
  EXPECT_EQ(utf8_lossy("a\xFF" "b"), "a\uFFFDb");
  EXPECT_EQ(utf8_lossy("\xE4\xB8"), "\uFFFD");                   // truncated 3-byte sequence: one U+FFFD
  EXPECT_EQ(utf8_lossy("\xE4\xB8" "A"), "\uFFFDA");
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), "\uFFFD\uFFFD");             // overlong: each byte invalid
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");   // surrogate
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), "\uFFFD\uFFFD\uFFFD\uFFFD");  // past U+10FFFF
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80"), "\U0001F600");
}

TEST(Utf8IncompleteTail, CountsOnlyBytesThatCanStillComplete) {
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE4"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE4\xB8"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("\xE4\xB8\xAD"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("\xFF"), 0u);        // never valid
  EXPECT_EQ(utf8_incomplete_tail("\xE0\x80"), 0u);    // overlong start: cannot complete
}

TEST(ByteAlphabet, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string spelled = to_byte_level(all);
  EXPECT_EQ(from_byte_level(spelled), all);
  EXPECT_EQ(to_byte_level(" hello\n"), "\xC4\xA0hello\xC4\x8A");  // "Ġhello Ċ"
  // A token with characters outside the alphabet stands for its own UTF-8 (added tokens).
  EXPECT_EQ(from_byte_level("<\xEF\xBD\x9C" "end\xEF\xBD\x9C>"), "<\xEF\xBD\x9C" "end\xEF\xBD\x9C>");
}

}  // namespace
}  // namespace keel::tokenizer
