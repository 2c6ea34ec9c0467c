// GrammarMatcher on a small hand-made vocabulary: the mask equals a brute-force check of every token
// at every step, rollback restores the exact state, jump-forward returns the forced bytes, and EOS
// is allowed exactly where the grammar may end.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/compile.h"
#include "grammar/matcher.h"

namespace keel::grammar {
namespace {

std::shared_ptr<const VocabTrie> small_vocab() {
  Vocabulary v;
  for (int c = 0x20; c < 0x7f; ++c) v.token_bytes.push_back(std::string(1, static_cast<char>(c)));
  for (const char* t : {"{\"", "\":", "\",\"", "\"}", "ab", "true", "false", "null", "1.", "e+", "\n", "  ", "\":\"",
                        "name", "age", "\"name", "\"age\":", "12", "},{", "[{", "}]", "\\n", "\\u00", "é", "\xc3", "\xa9",
                        "<eos>", "<ctl>", "yes\"", "\"yes\"", "\",", "nulls"})
    v.token_bytes.push_back(t);
  v.eos_ids = {static_cast<int32_t>(v.token_bytes.size()) - 6};
  v.special_ids = {static_cast<int32_t>(v.token_bytes.size()) - 5};
  return std::make_shared<VocabTrie>(std::move(v));
}

std::shared_ptr<const CompiledGrammar> schema(const char* text) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = text});
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return *g;
}

// Token t is allowed after `prefix` iff the parser takes its bytes (or it is EOS and the grammar may end).
std::vector<bool> brute_force(const CompiledGrammar& g, const VocabTrie& trie, const std::string& prefix) {
  EarleyParser p(g);
  EXPECT_TRUE(p.push_bytes(prefix));
  std::vector<bool> out(trie.vocab().token_bytes.size());
  for (size_t t = 0; t < out.size(); ++t) {
    const auto id = static_cast<int32_t>(t);
    if (trie.is_eos(id)) {
      out[t] = p.can_end();
    } else if (std::find(trie.vocab().special_ids.begin(), trie.vocab().special_ids.end(), id) ==
               trie.vocab().special_ids.end()) {
      const std::string& b = trie.vocab().token_bytes[t];
      out[t] = p.push_bytes(b);
      if (out[t]) p.pop_bytes(b.size());
    }
  }
  return out;
}

void expect_masks_exact(const char* schema_text, const std::string& text) {
  auto g = schema(schema_text);
  auto trie = small_vocab();
  auto cache = std::make_shared<TokenMaskCache>(g, trie);
  GrammarMatcher m(cache);
  std::vector<uint32_t> mask(cache->n_mask_words());
  for (size_t i = 0; i <= text.size(); ++i) {
    m.fill_mask(mask);
    std::vector<bool> want = brute_force(*g, *trie, text.substr(0, i));
    for (size_t t = 0; t < want.size(); ++t) {
      bool got = (mask[t >> 5] >> (t & 31)) & 1;
      ASSERT_EQ(got, want[t]) << schema_text << " after '" << text.substr(0, i) << "' token '"
                              << trie->vocab().token_bytes[t] << "'";
    }
    if (i < text.size()) {
      ASSERT_TRUE(m.accept_bytes(text.substr(i, 1))) << text.substr(0, i + 1);
    }
  }
}

TEST(Matcher, MaskEqualsBruteForce) {
  expect_masks_exact(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},
      "required":["name"],"additionalProperties":false})",
                     R"({"name":"ab\né","age":12})");
  expect_masks_exact(R"({"type":"array","items":{"enum":["yes","no",null,true]},"minItems":1,"maxItems":3})",
                     R"(["yes",null,true])");
  expect_masks_exact(R"({"anyOf":[{"type":"string","pattern":"^a+b?$"},{"type":"number","exclusiveMaximum":1.5}]})",
                     R"("aab")");
  expect_masks_exact(R"({"type":"object","additionalProperties":{"type":"boolean"}})", R"({"name":true,"nam":false})");
}

TEST(Matcher, RollbackRestoresState) {
  auto g = schema(R"({"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]})");
  auto trie = small_vocab();
  auto cache = std::make_shared<TokenMaskCache>(g, trie);
  GrammarMatcher m(cache);
  auto id = [&](const std::string& s) {
    const auto& tb = trie->vocab().token_bytes;
    return static_cast<int32_t>(std::find(tb.begin(), tb.end(), s) - tb.begin());
  };
  std::vector<uint32_t> before(cache->n_mask_words()), after(cache->n_mask_words());
  ASSERT_TRUE(m.accept_token(id("{\"")));
  m.fill_mask(before);
  ASSERT_TRUE(m.accept_token(id("age")));
  ASSERT_TRUE(m.accept_token(id("\":")));
  ASSERT_TRUE(m.accept_token(id("12")));
  EXPECT_FALSE(m.accept_token(id("ab")));
  EXPECT_EQ(m.n_steps(), 4u);
  m.rollback(3);
  m.fill_mask(after);
  EXPECT_EQ(before, after);
  ASSERT_TRUE(m.accept_token(id("age")));
  ASSERT_TRUE(m.accept_token(id("\":")));
  ASSERT_TRUE(m.accept_token(id("1")));
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_token(trie->vocab().eos_ids[0]));
  ASSERT_TRUE(m.accept_token(id("}")));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.accept_token(trie->vocab().special_ids[0]));
  ASSERT_TRUE(m.accept_token(trie->vocab().eos_ids[0]));
  EXPECT_TRUE(m.is_terminated());
  m.fill_mask(after);
  EXPECT_TRUE(std::all_of(after.begin(), after.end(), [](uint32_t w) { return w == 0; }));
  m.rollback(1);
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.can_end());
}

TEST(Matcher, JumpForwardReturnsForcedBytes) {
  auto g = schema(R"({"type":"object","properties":{"name":{"type":"string"},"nickname":{"const":"bob"}},
      "required":["name","nickname"],"additionalProperties":false})");
  auto cache = std::make_shared<TokenMaskCache>(g, small_vocab());
  GrammarMatcher m(cache);
  EXPECT_EQ(m.jump_forward(), "{\"name\":\"");
  EXPECT_EQ(m.n_steps(), 0u);
  ASSERT_TRUE(m.accept_bytes("{\"name\":\"x\""));
  EXPECT_EQ(m.jump_forward(), ",\"nickname\":\"bob\"}");
  ASSERT_TRUE(m.accept_bytes(m.jump_forward()));
  EXPECT_TRUE(m.can_end());
  EXPECT_EQ(m.jump_forward(), "");
}

TEST(Matcher, CacheSharesCompiledGrammars) {
  GrammarCache cache(2);
  GrammarSpec a{.kind = GrammarSpec::Kind::kRegex, .source = "a+"};
  GrammarSpec b{.kind = GrammarSpec::Kind::kGbnf, .source = "root ::= \"b\"\n"};
  GrammarSpec c{.kind = GrammarSpec::Kind::kJsonValue};
  auto a1 = cache.get_or_compile(a);
  auto a2 = cache.get_or_compile(a);
  ASSERT_TRUE(a1.ok() && a2.ok());
  EXPECT_EQ(a1->get(), a2->get());
  EXPECT_TRUE(cache.get_or_compile(b).ok());
  EXPECT_TRUE(cache.get_or_compile(c).ok());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.hits(), 1u);
  GrammarSpec bad{.kind = GrammarSpec::Kind::kJsonSchema, .source = "{\"type\": \"object\", "};
  auto r = cache.get_or_compile(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  GrammarSpec ws{.kind = GrammarSpec::Kind::kJsonValue, .json = {.whitespace = WhitespacePolicy::kBounded}};
  EXPECT_NE(ws.content_hash(), c.content_hash());
}

}  // namespace
}  // namespace keel::grammar
