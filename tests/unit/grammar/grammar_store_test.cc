// GrammarStore: one compilation per distinct spec (kind, options and source all count), least
// recently used entries evicted past the capacity, errors returned and not cached, and concurrent
// callers of one spec sharing the result.
#include "grammar/grammar_store.h"

#include <thread>

#include <gtest/gtest.h>

namespace keel::grammar {
namespace {

std::shared_ptr<const VocabTrie> small_trie() {
  Vocabulary v;
  for (const char* t : {"a", "b", "ab", "{", "}", "\"", "1", "</s>"}) v.token_bytes.push_back(t);
  v.eos_ids = {7};
  return std::make_shared<const VocabTrie>(std::move(v));
}

GrammarSpec regex(const std::string& source) { return {.kind = GrammarSpec::Kind::kRegex, .source = source}; }

TEST(GrammarStore, CachesBySpecAndEvictsLeastRecentlyUsed) {
  GrammarStore store(small_trie(), 2);
  auto a1 = store.get_or_compile(regex("a+"));
  ASSERT_TRUE(a1.ok());
  auto a2 = store.get_or_compile(regex("a+"));
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(a1.value(), a2.value()) << "same spec, same mask cache";
  EXPECT_EQ(store.n_hits(), 1u);
  EXPECT_EQ(store.n_misses(), 1u);

  GrammarSpec gbnf{.kind = GrammarSpec::Kind::kGbnf, .source = "root ::= \"a\"+"};
  auto other_kind = store.get_or_compile(gbnf);
  ASSERT_TRUE(other_kind.ok());
  EXPECT_NE(other_kind.value(), a1.value()) << "the kind is part of the key";
  GrammarSpec spaced{.kind = GrammarSpec::Kind::kJsonValue};
  spaced.json.whitespace = WhitespacePolicy::kBounded;
  ASSERT_TRUE(store.get_or_compile({.kind = GrammarSpec::Kind::kJsonValue}).ok());  // evicts "a+" (LRU)
  EXPECT_EQ(store.size(), 2u);
  auto spaced_masks = store.get_or_compile(spaced);
  ASSERT_TRUE(spaced_masks.ok());
  EXPECT_EQ(store.n_misses(), 4u) << "options are part of the key";
  auto again = store.get_or_compile(regex("a+"));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again.value(), a1.value()) << "evicted, so compiled anew";
  EXPECT_EQ(store.size(), 2u);
}

TEST(GrammarStore, ErrorsAreReturnedNotCached) {
  GrammarStore store(small_trie(), 4);
  for (int i = 0; i < 2; ++i) {
    auto bad = store.get_or_compile(regex("(a"));
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(store.size(), 0u);
  }
  EXPECT_EQ(store.n_misses(), 2u);
}

TEST(GrammarStore, ConcurrentCallersShareOneEntry) {
  GrammarStore store(small_trie(), 4);
  std::vector<std::shared_ptr<TokenMaskCache>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      auto r = store.get_or_compile(regex("(ab|b)*1"));
      if (r.ok()) got[i] = r.value();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store.size(), 1u);
  for (const auto& g : got) {
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g, store.get_or_compile(regex("(ab|b)*1")).value());
  }
}

}  // namespace
}  // namespace keel::grammar
