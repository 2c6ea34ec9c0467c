// GBNF front end: llama.cpp's own example grammars (json, arithmetic, lists) parse and accept /
// reject as llama.cpp documents; syntax errors and undefined rules are errors with the line.
#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/gbnf.h"

namespace keel::grammar {
namespace {

// llama.cpp grammars/json.gbnf (as published).
constexpr const char* kJsonGbnf = R"gbnf(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf";

CompiledGrammar compile(const char* src) {
  auto g = gbnf_grammar(src);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return CompiledGrammar(g.ok() ? std::move(g).value() : *gbnf_grammar("root ::= \"\""));
}

bool accepts(const CompiledGrammar& g, const std::string& s) {
  EarleyParser p(g);
  return p.push_bytes(s) && p.can_end();
}

TEST(Gbnf, LlamaCppJsonGrammar) {
  CompiledGrammar g = compile(kJsonGbnf);
  for (const char* ok : {"{}", "{\"a\": 1}", "{\"a\":[1, 2.5e3, \"x\\n\"], \"b\": {\"c\": null}}", "{\"é\": true}"})
    EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"[]", "{", "{\"a\" 1}", "{\"a\":01}", "{\"a\":\"\x01\"}", "{'a':1}"})
    EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(Gbnf, ArithmeticWithLeftRecursionAndComments) {
  CompiledGrammar g = compile(R"gbnf(
# left-recursive expression grammar (llama.cpp rejects this; Earley does not mind)
root ::= expr
expr ::= expr "+" term | expr "-" term | term
term ::= term "*" factor | factor
factor ::= [0-9]+ | "(" expr ")"
)gbnf");
  for (const char* ok : {"1", "1+2*3", "(1+2)*3-4", "((7))"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"", "1+", "(1", "1**2", "a"}) EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(Gbnf, RepetitionsClassesAndEscapes) {
  CompiledGrammar g = compile(R"gbnf(root ::= "x"{2,3} [^a-c\n]? "\u00e9" . "\x41"* ("ab")+ [\]\-]{1}
)gbnf");
  EXPECT_TRUE(accepts(g, "xxdézab]"));
  EXPECT_TRUE(accepts(g, "xxxé中AAAabab-"));
  EXPECT_FALSE(accepts(g, "xéz" "ab]"));
  EXPECT_FALSE(accepts(g, "xxaézab]"));
  EXPECT_FALSE(accepts(g, "xxéz"));
}

TEST(Gbnf, ErrorsNameTheProblem) {
  struct Case {
    const char* src;
    const char* needle;
  };
  for (const Case& c : {Case{"root ::= foo\n", "'foo'"}, Case{"rot ::= \"a\"\n", "root"},
                        Case{"root ::= \"a\n", "unterminated"}, Case{"root ::= [a\n", "unterminated"},
                        Case{"root := \"a\"\n", "::="}, Case{"root ::= *\n", "preceding"},
                        Case{"root ::= \"a\" )\n", "newline"}, Case{"root ::= \"\\q\"\n", "escape"},
                        Case{"root ::= \"a\"\nroot ::= \"b\"\n", "twice"}, Case{"root ::= (\"a\"\n", "')'"}}) {
    auto g = gbnf_grammar(c.src);
    ASSERT_FALSE(g.ok()) << c.src;
    EXPECT_NE(g.status().message().find(c.needle), std::string::npos) << g.status().to_string();
  }
  auto tok = gbnf_grammar("root ::= <[1000]>\n");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace keel::grammar
