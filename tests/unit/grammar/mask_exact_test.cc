// Token masks from the fast path (GrammarStore: shared classifications, state table with byte-class
// transition filling, finished masks per state) equal an independent reference on MaskBench schemas
// with two real vocabularies: SmolLM2's 49,152 tokens and Llama 3's 128,256 (tokenizer.json files in
// the test data). The reference is the plain Earley recognizer alone (no StateTable, no mask cache):
// a depth-first walk of the vocabulary trie that pushes each node's byte and pops it on the way back,
// so a token is allowed exactly when the parser accepts all of its bytes after the prefix. Instances
// are fed with the real tokenizer's tokens; masks are compared at a sample of steps (cold: first
// visits of new positions; and again on a second pass over the same instance, warm).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "grammar/compile.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Vocab {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const VocabTrie> trie;
};

Vocab load_vocab(const std::string& name) {
  const std::string dir = keel::test::cache_dir() + "/testdata/tokenizer/" + name;
  auto tok = tokenizer::Tokenizer::from_hf_json(read_text(dir + "/tokenizer.json"), read_text(dir + "/tokenizer_config.json"));
  if (!tok.ok()) {
    ADD_FAILURE() << dir << ": " << tok.status().to_string() << " (scripts/fetch_test_data.sh)";
    return {};
  }
  Vocabulary v;
  for (int32_t id = 0; id < (*tok)->n_vocab(); ++id) {
    v.token_bytes.push_back((*tok)->token_bytes(id));
    if ((*tok)->is_eog(id)) {
      v.eos_ids.push_back(id);
    } else if ((*tok)->is_special(id)) {
      v.special_ids.push_back(id);
    }
  }
  return {std::move(tok).value(), std::make_shared<const VocabTrie>(std::move(v))};
}

// The reference mask after `prefix`: the parser alone, walked over the trie.
std::vector<uint32_t> reference_mask(const CompiledGrammar& g, const VocabTrie& trie, const std::string& prefix) {
  std::vector<uint32_t> mask((static_cast<size_t>(trie.vocab().n_vocab()) + 31) / 32, 0);
  EarleyParser p(g);
  EXPECT_TRUE(p.push_bytes(prefix));
  const auto& nodes = trie.nodes();
  std::vector<uint32_t> open;  // nodes whose byte the parser holds, outermost first
  for (uint32_t i = 0; i < nodes.size();) {
    while (!open.empty() && i >= nodes[open.back()].subtree_end) {
      p.pop_bytes(1);
      open.pop_back();
    }
    if (!p.push_byte(nodes[i].byte)) {
      i = nodes[i].subtree_end;
      continue;
    }
    open.push_back(i);
    for (uint32_t t = nodes[i].tok_begin; t < nodes[i].tok_end; ++t) {
      const int32_t id = trie.token_ids()[t];
      mask[id >> 5] |= 1u << (id & 31);
    }
    ++i;
  }
  p.pop_bytes(open.size());
  if (p.can_end())
    for (int32_t id : trie.vocab().eos_ids) mask[id >> 5] |= 1u << (id & 31);
  return mask;
}

int count_differences(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  int n = 0;
  for (size_t w = 0; w < a.size(); ++w) n += __builtin_popcount(a[w] ^ b[w]);
  return n;
}

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
  Vocab v = load_vocab(name);
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
