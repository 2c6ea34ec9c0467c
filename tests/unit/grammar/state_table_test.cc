// The memoised-state machinery behind fast masks (state_table.h, state_walker.h, shared_classes.h):
// string bodies converge to a few interned states, masks stay equal to a brute-force check where the
// plain-run shortcut applies (bounded and unbounded runs), and classifications shared across grammars
// give the same masks as a cache of one's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"

namespace keel::grammar {
namespace {

std::shared_ptr<const VocabTrie> vocab() {
  Vocabulary v;
  for (int c = 0x20; c < 0x7f; ++c) v.token_bytes.push_back(std::string(1, static_cast<char>(c)));
  for (const char* t : {"ab", "abc", "abcd", "abcde", "abcdef", "abcdefghij", "xyz uvw", "a\"", "ab\"", "ab\",",
                        "\"}", "\",\"", "{\"", "\":\"", "\":", "é", "\xc3", "\xa9", "aé", "\\n", "12", "1.5", "<eos>"})
    v.token_bytes.push_back(t);
  v.eos_ids = {static_cast<int32_t>(v.token_bytes.size()) - 1};
  return std::make_shared<VocabTrie>(std::move(v));
}

std::shared_ptr<const CompiledGrammar> schema(const std::string& text) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = text});
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return *g;
}

// Every token at every byte of `text` against a plain parser (no table, no caches).
void expect_masks_exact(const std::shared_ptr<TokenMaskCache>& cache, const std::string& text) {
  const CompiledGrammar& g = cache->grammar();
  const VocabTrie& trie = cache->trie();
  GrammarMatcher m(cache);
  std::vector<uint32_t> mask(cache->n_mask_words());
  for (size_t i = 0; i <= text.size(); ++i) {
    m.fill_mask(mask);
    EarleyParser p(g);
    ASSERT_TRUE(p.push_bytes(text.substr(0, i)));
    for (int32_t t = 0; t < trie.vocab().n_vocab(); ++t) {
      bool want = false;
      if (trie.is_eos(t)) {
        want = p.can_end();
      } else if (p.push_bytes(trie.vocab().token_bytes[t])) {
        want = true;
        p.pop_bytes(trie.vocab().token_bytes[t].size());
      }
      ASSERT_EQ(((mask[t >> 5] >> (t & 31)) & 1) != 0, want)
          << "after '" << text.substr(0, i) << "' token '" << trie.vocab().token_bytes[t] << "'";
    }
    if (i < text.size()) {
      ASSERT_TRUE(m.accept_bytes(text.substr(i, 1)));
    }
  }
}

TEST(StateTable, StringBodyConverges) {
  auto cache = std::make_shared<TokenMaskCache>(schema(R"({"type":"string"})"), vocab());
  EarleyParser p(cache->grammar(), &cache->states());
  ASSERT_TRUE(p.push_bytes("\"ab"));
  const StateTable::State s = p.state();
  ASSERT_NE(s, StateTable::kNone);
  const size_t n = cache->states().size();
  for (char c : std::string("some longer text, 12 words")) {
    ASSERT_TRUE(p.push_byte(static_cast<uint8_t>(c)));
    EXPECT_EQ(p.state(), s) << c;
  }
  EXPECT_EQ(cache->states().size(), n);
  ASSERT_TRUE(p.push_bytes("\\n"));
  EXPECT_EQ(p.state(), s);  // an escape returns to the body state
  ASSERT_TRUE(p.push_byte('"'));
  EXPECT_NE(p.state(), s);
  EXPECT_TRUE(p.can_end());
}

TEST(StateTable, MasksExactWithPlainRuns) {
  auto trie = vocab();
  for (const char* s : {R"({"type":"string"})", R"({"type":"string","maxLength":5})",
                        R"({"type":"string","minLength":2,"maxLength":40})", R"({"type":"string","pattern":"^a[b-d]*$"})",
                        R"({"type":"object","properties":{"k":{"type":"string","maxLength":3}},"required":["k"]})"}) {
    SCOPED_TRACE(s);
    auto cache = std::make_shared<TokenMaskCache>(schema(s), trie);
    const std::string text = std::string(s).find("object") != std::string::npos ? R"({"k":"ab"})"
                             : std::string(s).find("pattern") != std::string::npos ? R"("abcd")"
                                                                                    : R"("abc")";
    expect_masks_exact(cache, text);
    expect_masks_exact(cache, text);  // again: finished masks and transitions now come from the cache
  }
}

// Past the state bound new columns are not interned: walks from them step the parser, and masks
// stay exact (a bound of 3 states is full after the first few bytes).
TEST(StateTable, MasksExactPastTheStateBound) {
  auto trie = vocab();
  for (const char* s : {R"({"type":"string","maxLength":5})",
                        R"({"type":"object","properties":{"k":{"type":"string","maxLength":3}},"required":["k"]})"}) {
    SCOPED_TRACE(s);
    auto cache = std::make_shared<TokenMaskCache>(schema(s), trie, nullptr, 4 << 20, 3);
    const std::string text = std::string(s).find("object") != std::string::npos ? R"({"k":"ab"})" : R"("abc")";
    expect_masks_exact(cache, text);
    EXPECT_EQ(cache->states().size(), 3u);
    expect_masks_exact(cache, text);
  }
}

// The table's rows and keys count towards the cache's bytes (and so towards the GrammarStore's bound).
TEST(StateTable, MemoryCountsRowsAndKeys) {
  auto cache = std::make_shared<TokenMaskCache>(schema(R"({"type":"string","maxLength":300})"), vocab());
  const size_t before = cache->memory_bytes(), table_before = cache->states().memory_bytes();
  EXPECT_EQ(table_before, 0u);
  expect_masks_exact(cache, "\"" + std::string(280, 'x') + "\"");
  const size_t n = cache->states().size();
  ASSERT_GT(n, 256u) << "a 300-character counter needs more than one chunk of rows";
  const size_t table = cache->states().memory_bytes();
  EXPECT_GE(table, n * 512);  // each row holds 256 two-byte transitions
  EXPECT_GE(cache->memory_bytes(), before + table);
}

TEST(SharedClassifications, SameMasksAcrossGrammars) {
  GrammarStore store(vocab(), 8);
  const std::string a = R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})";
  const std::string b = R"({"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},
      "required":["city","n"]})";
  auto first = store.get_or_compile({.kind = GrammarSpec::Kind::kJsonSchema, .source = a});
  ASSERT_TRUE(first.ok());
  expect_masks_exact(*first, R"({"name":"ab é"})");
  const uint64_t hits = store.shared_classifications().n_hits();
  auto second = store.get_or_compile({.kind = GrammarSpec::Kind::kJsonSchema, .source = b});
  ASSERT_TRUE(second.ok());
  expect_masks_exact(*second, R"({"city":"xyz","n":12})");
  EXPECT_GT(store.shared_classifications().n_hits(), hits);  // the string body came from the first schema
}

TEST(SharedClassifications, KeysFollowTheSubGrammar) {
  auto g1 = schema(R"({"type":"string"})");
  auto g2 = schema(R"({"type":"object","properties":{"x":{"type":"string"}},"required":["x"]})");
  auto g3 = schema(R"({"type":"string","maxLength":4})");
  // Kernel positions' keys after `text`, each with its position.
  auto keys = [](const CompiledGrammar& g, const std::string& text) {
    EarleyParser p(g);
    EXPECT_TRUE(p.push_bytes(text));
    std::vector<uint32_t> pos;
    p.kernel_positions(pos);
    std::map<std::string, uint32_t> out;
    for (uint32_t q : pos)
      if (auto k = position_key(g, q, 1 << 20)) out.emplace(*k, q);
    return out;
  };
  auto body1 = keys(*g1, "\"ab");
  auto body2 = keys(*g2, "{\"x\":\"ab");
  auto body3 = keys(*g3, "\"ab");
  for (const auto& [k, q] : body1) EXPECT_TRUE(body2.contains(k));  // the same sub-grammar in both
  // A bounded body shares only the closing quote's position (`string ::= '"' body . '"'`: the same
  // symbols after the dot, so the same classification), not the body's.
  int apart = 0;
  for (const auto& [k, q] : body1) {
    if (!body3.contains(k)) {
      ++apart;
      continue;
    }
    EXPECT_EQ((*g1).symbol(q).kind, FlatSymbol::Kind::kBytes);
    EXPECT_EQ((*g1).symbol(q + 1).kind, FlatSymbol::Kind::kEnd);
  }
  EXPECT_GT(apart, 0);
}

}  // namespace
}  // namespace keel::grammar
