// Python string semantics the template interpreter relies on (expected values are what CPython 3.11
// prints for the same calls).
#include "tokenizer/template/py_text.h"

#include <gtest/gtest.h>

namespace keel::tokenizer::jinja {
namespace {

TEST(PyText, FloatReprMatchesPython) {
  EXPECT_EQ(py_float_repr(1.0), "1.0");
  EXPECT_EQ(py_float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(py_float_repr(1e-5), "1e-05");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(py_float_repr(123456789.125), "123456789.125");
  EXPECT_EQ(py_float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(py_float_repr(-0.0), "-0.0");
}

TEST(PyText, StrReprPicksQuotesAndEscapes) {
  EXPECT_EQ(py_str_repr("abc"), "'abc'");
  EXPECT_EQ(py_str_repr("it's"), "\"it's\"");
  EXPECT_EQ(py_str_repr("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(py_str_repr("é\n\t\x01\\"), "'é\\n\\t\\x01\\\\'");
  EXPECT_EQ(py_str_repr("\xC2\xA0"), "'\\xa0'");  // NBSP is not printable
}

TEST(PyText, JsonStringEscapes) {
  std::string out;
  append_json_string(out, "é\"\n\x01/😀", false);
  EXPECT_EQ(out, "\"é\\\"\\n\\u0001/😀\"");
  out.clear();
  append_json_string(out, "é😀", true);
  EXPECT_EQ(out, "\"\\u00e9\\ud83d\\ude00\"");
}

TEST(PyText, StripUsesUnicodeWhitespace) {
  EXPECT_EQ(py_strip("\u3000 a b\t\n\u2003", true, true), "a b");
  EXPECT_EQ(py_strip("  a  ", true, false), "a  ");
  EXPECT_EQ(py_strip_chars("xyaxy", "yx", true, true), "a");
  EXPECT_EQ(py_strip_chars("ééaé", "é", true, true), "a");
}

TEST(PyText, SplitLikePython) {
  EXPECT_EQ(py_split_whitespace("  a  b c ", -1), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(py_split_whitespace("  a  b c ", 1), (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(py_split("a,,b", ",", -1), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(py_rsplit("a,b,c", ",", 1), (std::vector<std::string>{"a,b", "c"}));
  EXPECT_EQ(py_splitlines("a\r\nb\rc\n\nd\n"), (std::vector<std::string>{"a", "b", "c", "", "d"}));
  EXPECT_EQ(py_replace("abc", "", "-", -1), "-a-b-c-");
  EXPECT_EQ(py_replace("aaaa", "a", "b", 2), "bbaa");
}

TEST(PyText, CodePointsAndInvalidBytes) {
  EXPECT_EQ(code_point_count("héllo 世界"), 8u);
  const std::string bad = "a\xFF" "b";
  EXPECT_EQ(code_point_count(bad), 3u);
  size_t pos = 1;
  std::string out;
  append_utf8(out, next_code_point(bad, pos));
  EXPECT_EQ(out, "\xFF");  // invalid bytes round-trip unchanged
  EXPECT_EQ(py_upper("straße àé"), "STRASSE ÀÉ");
  EXPECT_EQ(py_title("hello wORLD"), "Hello World");
}

}  // namespace
}  // namespace keel::tokenizer::jinja
