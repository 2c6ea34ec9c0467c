// The pieces of a kernel position's first classification that session 9 made cheaper, each against
// an independent answer: a seeded parser reused for another position (EarleyParser::reseed, what
// TokenMaskCache's spare parsers do) behaves byte for byte like one constructed for that position;
// position keys (shared_classes.h) tell single-byte sets and wider sets apart; the shared store drops
// its oldest entries first and keeps the first classification stored under a key.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grammar/compile.h"
#include "grammar/earley.h"
#include "grammar/shared_classes.h"
#include "grammar/state_table.h"

namespace keel::grammar::test {
namespace {

const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 12}, "id": {"type": "integer"},
  "tags": {"type": "array", "items": {"enum": ["a", "bc", "\u00e9t\u00e9"]}, "maxItems": 3},
  "ok": {"type": "boolean"}, "when": {"type": "string", "format": "date"}},
  "required": ["name", "id"]})";

const char* kGbnf = R"(root ::= "[" loop "]" pair
loop ::= loop "a" | "a" | x
x ::= "" | "b" x
pair ::= "b" "a")";

// Byte strings to push from every position: every single byte, then pieces of JSON.
std::vector<std::string> probes() {
  std::vector<std::string> out;
  for (int b = 0; b < 256; ++b) out.emplace_back(1, static_cast<char>(b));
  for (const char* s : {"\"", "\"name\":\"", "\"id\":12,", "\"tags\":[\"bc\",\"\xc3\xa9t\xc3\xa9\"]", "12}", "ab]ba",
                        "aaab", "\"2024-02-29\"", "true,", "b]ba", "\\u00e9\"", "-0.5e3"})
    out.emplace_back(s);
  return out;
}

// Pushes `s` into both parsers byte by byte; every answer they give must agree.
void expect_same_walk(EarleyParser& fresh, EarleyParser& reused, const std::string& s, uint32_t pos) {
  size_t n = 0;
  for (char c : s) {
    const bool a = fresh.push_byte(static_cast<uint8_t>(c));
    ASSERT_EQ(a, reused.push_byte(static_cast<uint8_t>(c)))
        << "position " << pos << " after '" << s.substr(0, n) << "'";
    if (!a) break;
    ++n;
    ASSERT_EQ(fresh.state(), reused.state()) << "position " << pos;
    ASSERT_EQ(fresh.flags(), reused.flags()) << "position " << pos;
    ASSERT_EQ(fresh.next_bytes(), reused.next_bytes()) << "position " << pos;
    std::vector<uint32_t> kf, kr;
    fresh.kernel_positions(kf);
    reused.kernel_positions(kr);
    ASSERT_EQ(kf, kr) << "position " << pos;
  }
  ASSERT_EQ(fresh.n_bytes(), reused.n_bytes());
  fresh.pop_bytes(n);
  reused.pop_bytes(n);
}

void check_reseed(const GrammarSpec& spec, int min_positions) {
  auto g = compile_grammar(spec);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const CompiledGrammar& cg = **g;
  StateTable table;  // shared: a state is named by its column's content, so both must name the same
  std::unique_ptr<EarleyParser> reused;
  const std::vector<std::string> strings = probes();
  int n_positions = 0;
  for (uint32_t p = 0; p < cg.n_positions(); ++p) {
    if (cg.symbol(p).kind == FlatSymbol::Kind::kEnd) continue;
    ++n_positions;
    if (reused == nullptr) {
      reused = std::make_unique<EarleyParser>(cg, p, &table);
    } else {
      // Left as a classification may leave it: bytes of the last walk still pushed.
      reused->push_bytes("a");
      reused->push_bytes("\"");
      reused->reseed(p);
    }
    EarleyParser fresh(cg, p, &table);
    ASSERT_EQ(fresh.n_bytes(), reused->n_bytes());
    ASSERT_EQ(fresh.state(), reused->state()) << "position " << p;
    ASSERT_EQ(fresh.seed_completed(), reused->seed_completed()) << "position " << p;
    ASSERT_EQ(fresh.next_bytes(), reused->next_bytes()) << "position " << p;
    for (const std::string& s : strings) {
      expect_same_walk(fresh, *reused, s, p);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_GE(n_positions, min_positions);
}

TEST(ParserReuse, ReseededParserWalksLikeAFreshOneJsonSchema) {
  check_reseed({.kind = GrammarSpec::Kind::kJsonSchema, .source = kSchema}, 50);
}

TEST(ParserReuse, ReseededParserWalksLikeAFreshOneGbnf) {
  check_reseed({.kind = GrammarSpec::Kind::kGbnf, .source = kGbnf}, 13);
}

// The position after a rule's first symbol, by rule name.
uint32_t after_first(const CompiledGrammar& g, const std::string& rule) {
  const Grammar& ir = g.grammar();
  for (uint32_t r = 0; r < ir.rules.size(); ++r)
    if (ir.rules[r].name == rule) return g.alt_starts(r)[0] + 1;
  ADD_FAILURE() << "no rule " << rule;
  return 0;
}

// Single bytes are written as themselves and wider sets by their 256 bits: different keys whenever
// the sets differ, one key for the same set however the grammar spells it.
TEST(PositionKey, SingleBytesAndWiderSetsAreToldApart) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kGbnf, .source = R"(root ::= a b c d e
a ::= "x" "q" "-"
b ::= "x" [qr] "-"
c ::= "x" "r" "-"
d ::= "x" [q] "-"
e ::= "x" [q-r] "-")"});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto key = [&](const char* rule) {
    auto k = position_key(**g, after_first(**g, rule), 4096);
    EXPECT_TRUE(k.has_value()) << rule;
    return k.value_or("");
  };
  EXPECT_NE(key("a"), key("b"));
  EXPECT_NE(key("a"), key("c"));
  EXPECT_NE(key("b"), key("c"));
  EXPECT_EQ(key("a"), key("d"));
  EXPECT_EQ(key("b"), key("e"));
  // Too large for the bound: no key (not shared).
  EXPECT_FALSE(position_key(**g, after_first(**g, "b"), 8).has_value());
}

std::shared_ptr<const PositionMask> mask_of(int32_t id) {
  auto m = std::make_shared<PositionMask>();
  m->accepted_ids.assign(10, id);
  return m;
}

TEST(SharedClassifications, DropsTheOldestFirstAndKeepsTheFirstStored) {
  const size_t entry = std::string("key-0").size() + mask_of(0)->bytes();
  SharedClassifications store(entry * 5 / 2);  // room for two entries
  store.insert("key-0", mask_of(0));
  store.insert("key-1", mask_of(1));
  store.insert("key-1", mask_of(7));  // a second classification under a key held: the first stays
  ASSERT_NE(store.find("key-0"), nullptr);
  ASSERT_NE(store.find("key-1"), nullptr);
  EXPECT_EQ(store.find("key-1")->accepted_ids[0], 1);
  store.insert("key-2", mask_of(2));
  EXPECT_EQ(store.find("key-0"), nullptr);  // the oldest went
  ASSERT_NE(store.find("key-1"), nullptr);
  ASSERT_NE(store.find("key-2"), nullptr);
  store.insert("key-3", mask_of(3));
  EXPECT_EQ(store.find("key-1"), nullptr);
  EXPECT_NE(store.find("key-2"), nullptr);
  EXPECT_NE(store.find("key-3"), nullptr);
  // An entry larger than the whole budget is not kept and drops nothing.
  auto big = std::make_shared<PositionMask>();
  big->accepted_ids.assign(1000, 9);
  store.insert("big", big);
  EXPECT_EQ(store.find("big"), nullptr);
  EXPECT_NE(store.find("key-2"), nullptr);
  EXPECT_NE(store.find("key-3"), nullptr);
}

}  // namespace
}  // namespace keel::grammar::test
