// GrammarStore: one compilation per distinct spec (kind, options and source all count), least
// recently used entries evicted past the capacity, errors returned and not cached, and concurrent
// callers of one spec sharing the result; the byte bound counts token-mask classifications as they
// are made.
#include "grammar/grammar_store.h"

#include <thread>

#include <gtest/gtest.h>

#include "grammar/matcher.h"

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

TEST(GrammarStore, FindReturnsOnlyWhatIsCachedAndCountsHits) {
  GrammarStore store(small_trie(), 2);
  EXPECT_EQ(store.find(regex("a+")), nullptr);
  EXPECT_EQ(store.n_misses(), 0u) << "a find that misses compiles nothing and counts nothing";
  auto a = store.get_or_compile(regex("a+")).value();
  EXPECT_EQ(store.find(regex("a+")), a);
  EXPECT_EQ(store.find(regex("b+")), nullptr);
  EXPECT_EQ(store.n_hits(), 1u);
  ASSERT_TRUE(store.get_or_compile(regex("b")).ok());
  EXPECT_EQ(store.find(regex("a+")), a);               // most recent again, so
  ASSERT_TRUE(store.get_or_compile(regex("1")).ok());  // this evicts "b", not "a+"
  EXPECT_EQ(store.find(regex("a+")), a);
  EXPECT_EQ(store.find(regex("b")), nullptr);
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

TEST(GrammarStore, ByteBoundEvictsLeastRecentlyUsedAndCountsClassifications) {
  GrammarSpec json{.kind = GrammarSpec::Kind::kJsonValue};
  size_t bytes_a = 0, bytes_json = 0;
  {
    GrammarStore unbounded(small_trie(), 8);
    bytes_a = unbounded.get_or_compile(regex("a+")).value()->memory_bytes();
    bytes_json = unbounded.get_or_compile(json).value()->memory_bytes();
    EXPECT_EQ(unbounded.memory_bytes(), bytes_a + bytes_json);
  }
  ASSERT_GT(bytes_a, 0u);
  ASSERT_GT(bytes_json, 0u);

  // Room for both as compiled, not for more.
  GrammarStore store(small_trie(), 8, bytes_a + bytes_json + 8);
  auto a = store.get_or_compile(regex("a+")).value();
  auto j = store.get_or_compile(json).value();
  EXPECT_EQ(store.size(), 2u);
  // Classifying positions of the JSON grammar makes its entry grow past the bound...
  GrammarMatcher m(j);
  std::vector<uint32_t> mask(j->n_mask_words());
  m.fill_mask(mask);
  ASSERT_TRUE(m.accept_token(3));  // "{"
  m.fill_mask(mask);
  EXPECT_GT(j->memory_bytes(), bytes_json);
  // ...so the next use of the store drops the least recently used entry ("a+"), not the one in use.
  EXPECT_EQ(store.get_or_compile(json).value(), j);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.memory_bytes(), j->memory_bytes()) << "only the entry in use is left";
  EXPECT_NE(store.get_or_compile(regex("a+")).value(), a) << "evicted, so compiled anew";

  // An entry larger than the whole bound is still returned (and kept until the next insertion).
  GrammarStore tiny(small_trie(), 8, 1);
  ASSERT_TRUE(tiny.get_or_compile(json).ok());
  EXPECT_EQ(tiny.size(), 1u);
  ASSERT_TRUE(tiny.get_or_compile(regex("a+")).ok());
  EXPECT_EQ(tiny.size(), 1u);
}

}  // namespace
}  // namespace keel::grammar
