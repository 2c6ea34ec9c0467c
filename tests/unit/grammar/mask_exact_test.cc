// Token masks from the fast path (GrammarStore: shared classifications, state table with byte-class
// transition filling, finished masks per state) equal an independent reference on MaskBench schemas
// with two real vocabularies: SmolLM2's 49,152 tokens and Llama 3's 128,256 (tokenizer.json files in
// the test data). The reference is the plain Earley recognizer alone (no StateTable, no mask cache):
// a depth-first walk of the vocabulary trie that pushes each node's byte and pops it on the way back,
// so a token is allowed exactly when the parser accepts all of its bytes after the prefix. Instances
// are fed with the real tokenizer's tokens; masks are compared at a sample of steps (cold: first
// visits of new positions; and again on a second pass over the same instance, warm). The reference
// and vocabulary loading live in mask_reference.h.
#include <algorithm>
#include <filesystem>
#include <memory>

#include "grammar/compile.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

// Schemas whose first masks were the slowest in the 128k benchmark (new string-like positions:
// unanchored patterns, long maxLength counters, key complements), then every 45th MaskBench file.
std::vector<std::string> schema_files() {
  std::vector<std::string> out = {"Github_medium---o21852.json", "Github_easy---o66329.json",
                                  "Github_easy---o9955.json",    "Github_easy---o9783.json",
                                  "Github_medium---o83167.json", "Snowplow---sp_418_Normalized.json"};
  std::vector<std::string> all;
  for (const auto& e : std::filesystem::directory_iterator(shared_data_dir() + "/maskbench-dev"))
    if (e.path().extension() == ".json") all.push_back(e.path().filename().string());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); i += 45) out.push_back(all[i]);
  return out;
}

void check_vocabulary(const std::string& name, int32_t n_vocab) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  ASSERT_EQ(v.trie->vocab().n_vocab(), n_vocab);
  GrammarStore store(v.trie, 64);
  int n_schemas = 0, n_compared = 0;
  for (const std::string& file : schema_files()) {
    const Json doc = load_json(shared_data_dir() + "/maskbench-dev/" + file);
    GrammarSpec spec{.kind = GrammarSpec::Kind::kJsonSchema, .source = doc["schema"].dump()};
    auto masks = store.get_or_compile(spec);
    if (!masks.ok()) continue;
    for (const Json& t : doc.value("tests", Json::array())) {
      if (!t.value("valid", false)) continue;
      const std::string text = t["data"].dump();
      if (!accepts((*masks)->grammar(), text)) continue;
      const std::vector<int32_t> ids = v.tok->encode(text, {.add_special = false, .parse_special = false});
      ++n_schemas;
      std::vector<uint32_t> mask((*masks)->n_mask_words());
      for (int pass = 0; pass < 2; ++pass) {  // cold, then warm (tables and finished masks built)
        GrammarMatcher m(*masks);
        std::string prefix;
        for (size_t i = 0; i <= ids.size(); ++i) {
          m.fill_mask(mask);  // every step, so caches fill as in serving
          const bool sample = pass == 0 ? (i < 24 || i % 5 == 0) && i % 3 == 0 : i % 11 == 7;
          if (sample || i == ids.size()) {
            const int diff = count_differences(mask, reference_mask((*masks)->grammar(), *v.trie, prefix));
            EXPECT_EQ(diff, 0) << name << " " << file << " pass " << pass << " step " << i << " after '" << prefix
                               << "'";
            ++n_compared;
            if (diff != 0) return;
          }
          if (i == ids.size()) break;
          ASSERT_TRUE(mask[ids[i] >> 5] >> (ids[i] & 31) & 1u) << file << " step " << i;
          ASSERT_TRUE(m.accept_token(ids[i])) << file << " step " << i;
          prefix += v.trie->vocab().token_bytes[ids[i]];
        }
      }
      break;  // one instance per schema
    }
  }
  std::printf("%s: %d schemas, %d masks equal the reference walk\n", name.c_str(), n_schemas, n_compared);
  EXPECT_GT(n_schemas, 30);
  EXPECT_GT(n_compared, 300);
}

TEST(MaskExact, SmolLM2MasksEqualParserWalk) { check_vocabulary("smollm", 49152); }

TEST(MaskExact, Llama3MasksEqualParserWalk) { check_vocabulary("llama-bpe", 128256); }

}  // namespace
}  // namespace keel::grammar::test
