// Regex front end checked against PCRE2 as the independent engine: for each pattern, every string
// over a small alphabet up to length 4 (plus samples) must be accepted by keel's grammar exactly
// when PCRE2 matches it — whole-string matches and JSON Schema's unanchored search alike.
#include <pcre2.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/regex.h"

namespace keel::grammar {
namespace {

class Pcre {
 public:
  Pcre(const std::string& pattern, bool anchored) {
    int err;
    PCRE2_SIZE off;
    uint32_t flags = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX | (anchored ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0);
    re_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &err, &off, nullptr);
    md_ = re_ ? pcre2_match_data_create_from_pattern(re_, nullptr) : nullptr;
  }
  ~Pcre() {
    pcre2_match_data_free(md_);
    pcre2_code_free(re_);
  }
  bool ok() const { return re_ != nullptr; }
  bool match(const std::string& s) const {
    return pcre2_match(re_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md_, nullptr) >= 0;
  }

 private:
  pcre2_code* re_ = nullptr;
  pcre2_match_data* md_ = nullptr;
};

CompiledGrammar compile(const std::string& pattern, bool search) {
  GrammarBuilder b;
  RuleId root = b.add_rule("root");
  auto sym = regex_to_symbol(b, pattern, {.encoding = CharEncoding::kUtf8, .search = search});
  EXPECT_TRUE(sym.ok()) << pattern << ": " << sym.status().to_string();
  b.add_alt(root, {sym.ok() ? *sym : b.never()});
  return CompiledGrammar(*b.finish(root));
}

bool accepts(const CompiledGrammar& g, const std::string& s) {
  EarleyParser p(g);
  return p.push_bytes(s) && p.can_end();
}

std::vector<std::string> strings_over(const std::string& alphabet, size_t max_len) {
  std::vector<std::string> out{""};
  for (size_t start = 0, len = 0; len < max_len; ++len) {
    size_t end = out.size();
    for (size_t i = start; i < end; ++i)
      for (char c : alphabet) out.push_back(out[i] + c);
    start = end;
  }
  return out;
}

const char* kPatterns[] = {
    "abc", "a|b|", "a*b+c?", "(ab)*", "(?:a|bc){2,3}", "a{3}", "a{2,}", "[a-c]+", "[^ab]", "a.b", "\\d{2}-\\d",
    "^a", "b$", "^a|b$", "^(a|b)+$", "\\w+", "\\s", "[\\d.]+", "[-a]", "[a-]", "x{0}", "a??b*?", "(a|ab)(c|bcd)",
    "[^-]*", "\\.", "a{1,2}b{0,1}", "^-?\\d+(\\.\\d+)?$", "^[a-z0-9_-]{1,3}$", "\\x61", "\\u0062", "[\\x30-\\x32]",
    "^$", "", "a{,2}", "}", "]",
};
// Anchored with an unbounded repetition of a body that can be empty: determinised like the unanchored
// ones (regex.cc); and nested ones that keep their rules.
const char* kNestedPatterns[] = {"^(a?[b-]*)*c$",    "^(?:a*|b)+$",  "^(a*)*$",
                                 "^(-?[a.]*)+\\.?$", "^(a[b-]*)*c$", "^(/[^/]+)*$"};

// keel's whole-text and search forms of `pat` accept exactly what PCRE2 matches, on every input (the
// first 3 mismatches of each form are reported).
void expect_matches_pcre2(const char* pat, const std::vector<std::string>& inputs) {
  for (bool search : {false, true}) {
    Pcre pcre(pat, !search);
    ASSERT_TRUE(pcre.ok()) << pat;
    CompiledGrammar g = compile(pat, search);
    int mismatches = 0;
    for (const std::string& s : inputs) {
      if (accepts(g, s) != pcre.match(s) && ++mismatches <= 3)
        ADD_FAILURE() << "/" << pat << "/ search=" << search << " on '" << s << "': keel " << accepts(g, s);
    }
  }
}

TEST(Regex, MatchesPcre2OnAllShortStrings) {
  const std::vector<std::string> inputs = strings_over("ab-.1c ", 4);
  for (const char* pat : kPatterns) {
    expect_matches_pcre2(pat, inputs);
  }
  for (const char* pat : kNestedPatterns) {
    expect_matches_pcre2(pat, inputs);
  }
}

// Counted repetitions large enough that the search form skips the DFA (regex_search_dfa: NFA over
// twice the DFA bound) and takes the padded form: the language is PCRE2's all the same.
TEST(Regex, LargeCountedRepetitionsMatchPcre2) {
  const std::vector<std::string> inputs = strings_over("ab-.1c ", 4);
  for (const char* pat : {"a{2,600}", "[ab]{3,700}", "(?:a|b-){2,400}c?"}) {
    expect_matches_pcre2(pat, inputs);
  }
}

// A pattern intersected with a length range (JSON Schema pattern + minLength/maxLength): PCRE2's
// verdict and the length, on every short string, for every pattern and several ranges.
TEST(Regex, WithLengthMatchesPcre2AndTheLength) {
  const std::vector<std::string> inputs = strings_over("ab-.1c ", 4);
  const std::pair<int64_t, int64_t> ranges[] = {{0, 0}, {0, 2}, {1, 3}, {2, -1}, {3, 4}, {4, 4}, {0, -1}};
  for (const char* pat : kPatterns) {
    for (bool search : {false, true}) {
      Pcre pcre(pat, !search);
      for (auto [lo, hi] : ranges) {
        GrammarBuilder b;
        RuleId root = b.add_rule("root");
        auto sym = regex_with_length(b, pat, {.encoding = CharEncoding::kUtf8, .search = search}, lo, hi);
        ASSERT_TRUE(sym.ok()) << pat << ": " << sym.status().to_string();
        b.add_alt(root, {*sym});
        CompiledGrammar g(*b.finish(root));
        int mismatches = 0;
        for (const std::string& s : inputs) {
          const auto n = static_cast<int64_t>(s.size());
          const bool want = pcre.match(s) && n >= lo && (hi < 0 || n <= hi);
          if (accepts(g, s) != want && ++mismatches <= 3)
            ADD_FAILURE() << "/" << pat << "/ search=" << search << " len " << lo << ".." << hi << " on '" << s
                          << "': keel " << !want;
        }
      }
    }
  }
  // Characters are counted, not bytes.
  GrammarBuilder b;
  RuleId root = b.add_rule("root");
  b.add_alt(root, {*regex_with_length(b, "^[é-ü]+$", {.encoding = CharEncoding::kUtf8}, 2, 2)});
  CompiledGrammar g(*b.finish(root));
  EXPECT_TRUE(accepts(g, "éü"));
  EXPECT_FALSE(accepts(g, "é"));
  EXPECT_FALSE(accepts(g, "éüé"));
}

// Keys by pattern (patternProperties next to additionalProperties): the pattern's matches minus
// listed names, and the strings matching neither, against PCRE2 on every short string.
TEST(Regex, KeySetsMatchPcre2) {
  const std::vector<std::string> inputs = strings_over("ab-.1c ", 4);
  const std::vector<std::string> names = {"a", "ab", "c c", ""};
  for (const char* pat : kPatterns) {
    Pcre pcre(pat, false);
    for (KeySet which : {KeySet::kPatternMinusNames, KeySet::kNeither}) {
      GrammarBuilder b;
      RuleId root = b.add_rule("root");
      auto sym = regex_key_set(b, pat, names, which, CharEncoding::kUtf8);
      ASSERT_TRUE(sym.ok()) << pat << ": " << sym.status().to_string();
      b.add_alt(root, {*sym});
      CompiledGrammar g(*b.finish(root));
      int mismatches = 0;
      for (const std::string& s : inputs) {
        const bool named = std::find(names.begin(), names.end(), s) != names.end();
        const bool want = !named && (which == KeySet::kPatternMinusNames ? pcre.match(s) : !pcre.match(s));
        if (accepts(g, s) != want && ++mismatches <= 3)
          ADD_FAILURE() << "/" << pat << "/ " << static_cast<int>(which) << " on '" << s << "': keel " << !want;
      }
    }
  }
}

TEST(Regex, MatchesEverythingOnlyWhenItDoes) {
  for (const char* pat : {"", ".*", "a*", "^a*", "a?$", "x|.*", "(ab)*"}) EXPECT_TRUE(regex_matches_everything(pat)) << pat;
  // "^.*$" fails on "a\nb" ('.' is not a line terminator); the others on "" or on "b".
  for (const char* pat : {"^.*$", ".+", "^a*$", "a", "^$", "(", "(?=a)"}) EXPECT_FALSE(regex_matches_everything(pat)) << pat;
  Pcre newline("^.*$", false);
  EXPECT_FALSE(newline.match("a\nb"));
}

TEST(Regex, UnicodeClassesAsUtf8) {
  for (const char* pat : {"[é-ü]", "[^a]", ".", "[\\u0100-\\uFFFF]+", "😀|x"}) {
    Pcre pcre(pat, true);
    CompiledGrammar g = compile(pat, false);
    for (const std::string s : {"é", "ü", "ö", "a", "b", "ā", "中", "😀", "x", "\n", "\xc3", "\xff", "ab", "ĀĀ"}) {
      EXPECT_EQ(accepts(g, s), pcre.match(s)) << "/" << pat << "/ on '" << s << "'";
    }
  }
}

TEST(Regex, JsonStringEncodingEscapes) {
  GrammarBuilder b;
  RuleId root = b.add_rule("root");
  b.add_alt(root, {*regex_to_symbol(b, "^[a\"\\\\\\n\\x01]+$", {.encoding = CharEncoding::kJsonString, .search = true})});
  CompiledGrammar g(*b.finish(root));
  EXPECT_TRUE(accepts(g, "a\\\"\\\\\\n"));  // a \" \\ \n
  EXPECT_FALSE(accepts(g, "\""));
  EXPECT_FALSE(accepts(g, "\n"));
  // One spelling per character: \n only as "\n", other controls as \u00XX (either hex case).
  EXPECT_FALSE(accepts(g, "\\u000a"));
  EXPECT_TRUE(accepts(g, "\\u0001"));
  EXPECT_FALSE(accepts(g, "\x01"));
}

TEST(Regex, UnsupportedConstructsAreNamedErrors) {
  for (const char* pat : {"(?=a)", "(?!a)", "(?<=a)b", "\\1", "\\bword", "\\p{L}", "(?i)a", "a(^b)"}) {
    GrammarBuilder b;
    auto r = regex_to_symbol(b, pat, {});
    ASSERT_FALSE(r.ok()) << pat;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported) << pat << ": " << r.status().to_string();
  }
  for (const char* pat : {"(a", "a)", "[a", "*a", "a{2,1}", "\\"}) {
    GrammarBuilder b;
    auto r = regex_to_symbol(b, pat, {});
    ASSERT_FALSE(r.ok()) << pat;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << pat << ": " << r.status().to_string();
  }
}

}  // namespace
}  // namespace keel::grammar
