// Key starts classified from any key's classification (key_start.h): for objects whose extra keys
// must be none of the listed names — names that are prefixes of each other, hold escapes, non-ASCII
// or control characters, the empty name, names whose spelling with the closing quote is a token —
// (1) each key-start classification derived from any key's equals the one its own seeded walk makes
// (the same grammar with the key complements dropped), token for token and subtree for subtree, and
// (2) the masks at key starts, cold from caches of their own, equal the plain Earley walk of the
// vocabulary trie (mask_reference.h), with SmolLM2's and Llama 3's tokenizers.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/key_start.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

std::vector<std::vector<std::string>> name_sets() {
  return {
      {"a", "ab", "abc", "name", "names"},
      {"", "id"},
      // Escapes, some of whose closers are tokens (`\\"`, `\""`, `\n"`).
      {"q\"x", "back\\slash", "tab\tx", "nl\n", "\x01", "\\", "\"", "\n"},
      {"ok", "\x1f"},  // \u001F has two spellings: the key start keeps its own walk
      {"caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80"},
      {",", ":", "}", " ", "\",", "type", "properties"},  // closers that are common tokens (`,"` `:"` ...)
  };
}

std::string schema_for(const std::vector<std::string>& names) {
  Json props = Json::object();
  for (const std::string& n : names) props[n] = Json{{"type", "integer"}};
  return Json{{"type", "object"}, {"properties", props}, {"additionalProperties", Json{{"type", "integer"}}}}.dump();
}

std::set<int32_t> accepted(const PositionMask& m, int32_t n_vocab) {
  std::set<int32_t> out(m.accepted_ids.begin(), m.accepted_ids.end());
  if (!m.accepted_bits.empty())
    for (int32_t id = 0; id < n_vocab; ++id)
      if ((m.accepted_bits[static_cast<uint32_t>(id) >> 5] >> (id & 31)) & 1u) out.insert(id);
  return out;
}

void check_vocabulary(const std::string& vocab) {
  RealVocab v = load_real_vocab(vocab);
  ASSERT_NE(v.trie, nullptr);
  int n_derived = 0, n_masks = 0;
  for (const auto& names : name_sets()) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = schema_for(names)});
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    std::shared_ptr<const CompiledGrammar> with = std::move(g).value();
    Grammar copy = with->grammar();
    const bool all_spelled = names.back() != "\x1f";  // the fallback set
    ASSERT_EQ(copy.key_complements.size(), all_spelled ? 1u : 0u) << schema_for(names);
    copy.key_complements.clear();
    auto without = std::make_shared<const CompiledGrammar>(std::move(copy));
    // (1) Derived classification vs the position's own walk; caches of their own, nothing shared.
    auto derived = std::make_shared<TokenMaskCache>(with, v.trie);
    auto walked = std::make_shared<TokenMaskCache>(without, v.trie);
    for (const KeyComplement& k : with->grammar().key_complements) {
      const uint32_t pos = with->alt_starts(k.key)[0] + 1;
      const PositionMask& a = derived->get(pos);
      const PositionMask& b = walked->get(pos);
      EXPECT_EQ(accepted(a, v.trie->vocab().n_vocab()), accepted(b, v.trie->vocab().n_vocab())) << schema_for(names);
      EXPECT_EQ(a.uncertain, b.uncertain) << schema_for(names);
      ++n_derived;
    }
    // (2) Masks at the first and a later key start vs the plain-parser walk.
    for (const std::string& prefix : {std::string("{\""), std::string("{\"zz\":1,\""), std::string("{\"a\":-2,\"")}) {
      GrammarMatcher m(derived);
      const std::vector<int32_t> ids = v.tok->encode(prefix, {.add_special = false, .parse_special = false});
      std::string fed;
      bool ok = true;
      for (int32_t id : ids) {
        ok = ok && m.accept_token(id);
        fed += v.trie->vocab().token_bytes[id];
      }
      if (!ok) continue;  // "a" is not listed in every set: its value is then any integer anyway
      std::vector<uint32_t> mask(derived->n_mask_words());
      m.fill_mask(mask);
      ASSERT_EQ(count_differences(mask, reference_mask(*with, *v.trie, fed)), 0) << vocab << " " << schema_for(names) << " after '" << fed << "'";
      ++n_masks;
    }
  }
  std::printf("%s: %d derived classifications equal their walks, %d key-start masks equal the reference\n",
              vocab.c_str(), n_derived, n_masks);
  EXPECT_EQ(n_derived, 5);
  EXPECT_GE(n_masks, 10);
}

TEST(KeyStart, ClosersAreCanonicalSpellings) {
  auto c = key_closers({"", "a\"b", "\\", "\n\t", "\x01", "caf\xc3\xa9"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (std::vector<std::string>{"\"", "a\\\"b\"", "\\\\\"", "\\n\\t\"", "\\u0001\"", "caf\xc3\xa9\""}));
  EXPECT_FALSE(key_closers({"ok", "\x1a"}).has_value()) << "\\u001A and \\u001a";
  EXPECT_FALSE(key_closers({"\xff"}).has_value()) << "not UTF-8";
}

TEST(KeyStart, DerivedEqualsWalkAndParserSmolLM2) { check_vocabulary("smollm"); }

TEST(KeyStart, DerivedEqualsWalkAndParserLlama3) { check_vocabulary("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
