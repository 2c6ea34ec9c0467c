// Bounded JSON numbers: every literal on a grid of integers and 1-2 digit decimals is accepted
// exactly when strtod's value lies within the bounds (exact for these values), for many bound kinds.
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/json_number.h"

namespace keel::grammar {
namespace {

CompiledGrammar number_grammar(bool integer, std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  GrammarBuilder b;
  RuleId root = b.add_rule("root");
  auto sym = number_symbol(b, integer, lo, hi);
  EXPECT_TRUE(sym.ok()) << sym.status().to_string();
  b.add_alt(root, {*sym});
  return CompiledGrammar(*b.finish(root));
}

bool accepts(const CompiledGrammar& g, const std::string& s) {
  EarleyParser p(g);
  return p.push_bytes(s) && p.can_end();
}

std::vector<std::string> literals() {
  std::vector<std::string> out;
  for (int i = -130; i <= 130; ++i) {
    out.push_back(std::to_string(i));
    for (const char* f : {".0", ".5", ".25", ".05", ".75", ".00", ".1", ".99"}) out.push_back(std::to_string(i) + f);
  }
  out.push_back("-0");
  out.push_back("-0.5");
  for (const char* bad : {"01", "1.", ".5", "+1", "--1", "1e5", "", "-"}) out.push_back(bad);
  return out;
}

bool is_json_number(const std::string& s, bool integer) {
  if (s.empty() || s == "-" || s.find('e') != std::string::npos) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  if (s[i] == '0' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) return false;
  size_t dot = s.find('.');
  if (dot != std::string::npos && (dot + 1 == s.size() || s[dot + 1] == '-')) return false;
  if (integer && dot != std::string::npos && s.find_first_not_of('0', dot + 1) != std::string::npos) return false;
  return s.find('+') == std::string::npos;
}

TEST(JsonNumber, BoundsMatchExactComparison) {
  const char* bounds[] = {"0", "1", "-1", "1.5", "-2.25", "100", "-100", "0.05", "99.99", "7"};
  std::vector<std::optional<NumberBound>> options{std::nullopt};
  for (const char* b : bounds)
    for (bool ex : {false, true}) options.push_back(NumberBound{b, ex});
  const auto lits = literals();
  int checked = 0;
  for (bool integer : {false, true}) {
    for (const auto& lo : options) {
      for (const auto& hi : options) {
        if (!lo && !hi) continue;
        if (lo && hi && std::stod(lo->text) > std::stod(hi->text) + 50) continue;  // keep the run short
        CompiledGrammar g = number_grammar(integer, lo, hi);
        for (const std::string& s : lits) {
          bool want = is_json_number(s, integer) && s != "-0" && s.rfind("-0.", 0) != 0;
          if (want) {
            double v = std::stod(s);
            if (lo) want = lo->exclusive ? v > std::stod(lo->text) : v >= std::stod(lo->text);
            if (hi && want) want = hi->exclusive ? v < std::stod(hi->text) : v <= std::stod(hi->text);
          }
          bool got = accepts(g, s);
          // keel never writes "-0…"; those may only be rejected.
          if (s == "-0" || s.rfind("-0.", 0) == 0) {
            if (got) {
              double v = std::stod(s);
              EXPECT_TRUE((!lo || (lo->exclusive ? v > std::stod(lo->text) : v >= std::stod(lo->text))) &&
                          (!hi || (hi->exclusive ? v < std::stod(hi->text) : v <= std::stod(hi->text))));
            }
            continue;
          }
          EXPECT_EQ(got, want) << s << " integer=" << integer << " lo=" << (lo ? lo->text : "-") << (lo && lo->exclusive ? "x" : "")
                               << " hi=" << (hi ? hi->text : "-") << (hi && hi->exclusive ? "x" : "");
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

TEST(JsonNumber, UnboundedAcceptsJsonSyntax) {
  CompiledGrammar num = number_grammar(false, std::nullopt, std::nullopt);
  for (const char* ok : {"0", "-0", "1.5", "1e5", "1E+5", "-2.5e-3", "123456789012345678901234567890"})
    EXPECT_TRUE(accepts(num, ok)) << ok;
  for (const char* bad : {"01", "1.", ".5", "+1", "1e", "--1", "0x10", "NaN", "Infinity"})
    EXPECT_FALSE(accepts(num, bad)) << bad;
}

TEST(JsonNumber, LargeAndScientificBounds) {
  CompiledGrammar g = number_grammar(true, NumberBound{"1e3"}, NumberBound{"1.5e3", true});
  EXPECT_TRUE(accepts(g, "1000"));
  EXPECT_TRUE(accepts(g, "1499"));
  EXPECT_FALSE(accepts(g, "1500"));
  EXPECT_FALSE(accepts(g, "999"));
  CompiledGrammar big = number_grammar(true, NumberBound{"-9223372036854775808"}, NumberBound{"18446744073709551615"});
  EXPECT_TRUE(accepts(big, "18446744073709551615"));
  EXPECT_FALSE(accepts(big, "18446744073709551616"));
  EXPECT_TRUE(accepts(big, "-9223372036854775808"));
  EXPECT_FALSE(accepts(big, "-9223372036854775809"));
}

}  // namespace
}  // namespace keel::grammar
