// Walks that skip rejected siblings through the trie's sibling words (VocabTrie::sibling_words,
// StateWalker::skip_rejected) and finished masks loaded into a buffer nobody cleared
// (GrammarMatcher::fill_mask): the sibling words list exactly each parent's children, and every mask
// of MaskBench instances — cold, from caches of their own (nothing shared, so every kernel position is
// classified by a skipping walk and every uncertain subtree walked), then warm into a buffer filled
// with ones — equals the plain Earley walk of the vocabulary trie (mask_reference.h) with SmolLM2's
// and Llama 3's tokenizers.
#include <memory>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

// Each node's word, then its later siblings' words in order, then its parent's subtree end; checked
// against the parent links.
void check_sibling_words(const VocabTrie& trie) {
  const auto& nodes = trie.nodes();
  const auto& words = trie.sibling_words();
  ASSERT_FALSE(words.empty());
  size_t n_groups_ends = 0;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const uint32_t k = trie.sibling_slot(i);
    ASSERT_LT(k, words.size());
    ASSERT_EQ(words[k], i << 9 | nodes[i].byte) << "node " << i;
    const uint32_t next = nodes[i].subtree_end;
    const bool has_next = next < nodes.size() && trie.parent(next) == trie.parent(i);
    if (has_next) {
      ASSERT_EQ(words[k + 1], next << 9 | nodes[next].byte) << "node " << i;
    } else {
      // The last child: the group ends with the parent's subtree end (the whole trie's for the root).
      const uint32_t p = trie.parent(i);
      const uint32_t end = p == VocabTrie::kNoParent ? static_cast<uint32_t>(nodes.size()) : nodes[p].subtree_end;
      ASSERT_EQ(words[k + 1], end << 9 | 0x100) << "node " << i;
      ASSERT_EQ(end, next) << "node " << i;
      ++n_groups_ends;
    }
  }
  EXPECT_EQ(words.size(), nodes.size() + n_groups_ends) << "one word per node and one per parent";
}

TEST(VocabTrie, SiblingWordsListEachParentsChildren) {
  Vocabulary v;
  v.token_bytes = {"a", "ab", "abc", "abd", "b", "ba", "\"", "\",", "\":", "\"a", "z"};
  VocabTrie trie(std::move(v));
  check_sibling_words(trie);
  // The root's children come first: a, b, ", z by byte order of the trie.
  const auto& words = trie.sibling_words();
  std::string first;
  for (size_t k = 0; (words[k] & 0x100) == 0; ++k) first += static_cast<char>(words[k] & 0xff);
  EXPECT_EQ(first, "\"abz");
  RealVocab llama = load_real_vocab("llama-bpe");
  ASSERT_NE(llama.trie, nullptr);
  check_sibling_words(*llama.trie);
}

// MaskBench schemas whose columns reject most siblings: key literals and structure (every schema),
// enums, formats, long string counters.
const char* const kFiles[] = {"Github_easy---o9955.json", "Github_medium---o83167.json",
                              "Kubernetes---kb_132_Normalized.json", "Glaiveai2K---book_flight_3fb7d6e6.json"};

void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  int n_compared = 0, n_instances = 0;
  for (const char* file : kFiles) {
    const Json doc = load_json(shared_data_dir() + "/maskbench-dev/" + file);
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = doc["schema"].dump()});
    ASSERT_TRUE(g.ok()) << file << ": " << g.status().to_string();
    auto masks = std::make_shared<TokenMaskCache>(std::move(g).value(), v.trie);  // nothing shared
    for (const Json& t : doc.value("tests", Json::array())) {
      if (!t.value("valid", false)) continue;
      const std::string text = t["data"].dump();
      if (!accepts(masks->grammar(), text)) continue;
      const std::vector<int32_t> ids = v.tok->encode(text, {.add_special = false, .parse_special = false});
      ++n_instances;
      std::vector<uint32_t> mask(masks->n_mask_words() + 3);  // words past the vocabulary's must come back clear
      for (int pass = 0; pass < 2; ++pass) {  // cold, then warm (finished masks loaded)
        GrammarMatcher m(masks);
        std::string prefix;
        for (size_t i = 0; i <= ids.size(); ++i) {
          std::fill(mask.begin(), mask.end(), ~0u);  // a buffer nobody cleared
          m.fill_mask(mask);  // every step, so caches fill as in serving; compared at a sample (the
                              // reference walk costs up to ~0.1 s at 128k tokens)
          if (!(pass == 0 ? i < 32 || i % 3 == 0 : i % 5 == 0) && i != ids.size()) {
            ASSERT_TRUE(m.accept_token(ids[i])) << file << " step " << i;
            prefix += v.trie->vocab().token_bytes[ids[i]];
            continue;
          }
          for (size_t w = masks->n_mask_words(); w < mask.size(); ++w) ASSERT_EQ(mask[w], 0u) << file << " word " << w;
          std::vector<uint32_t> got(mask.begin(), mask.begin() + static_cast<ptrdiff_t>(masks->n_mask_words()));
          const int diff = count_differences(got, reference_mask(masks->grammar(), *v.trie, prefix));
          ++n_compared;
          ASSERT_EQ(diff, 0) << name << " " << file << " pass " << pass << " step " << i << " after '" << prefix << "'";
          if (i == ids.size()) break;
          ASSERT_TRUE(m.accept_token(ids[i])) << file << " step " << i;
          prefix += v.trie->vocab().token_bytes[ids[i]];
        }
      }
      break;  // one instance per schema
    }
  }
  std::printf("%s: %d instances, %d masks equal the reference walk\n", name.c_str(), n_instances, n_compared);
  EXPECT_EQ(n_instances, static_cast<int>(std::size(kFiles)));
}

TEST(SiblingSkip, MasksEqualParserWalkSmolLM2) { check_vocabulary("smollm"); }

TEST(SiblingSkip, MasksEqualParserWalkLlama3) { check_vocabulary("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
