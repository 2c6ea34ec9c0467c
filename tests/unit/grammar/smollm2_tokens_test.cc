// The matcher with SmolLM2's real vocabulary (tests/golden/grammar/smollm2_vocab.txt, dumped by the
// gguf package): valid MaskBench instances are accepted token by token under three tokenizations —
// HF transformers' canonical BPE (smollm2_tokenizations.jsonl), greedy longest match and a seeded
// random segmentation — each next token is in the mask, EOS is allowed exactly at the end, and on a
// sample of steps the mask equals a brute-force check of all 49,152 tokens.
#include <fstream>
#include <random>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

std::shared_ptr<const VocabTrie> smollm2_vocab() {
  static std::shared_ptr<const VocabTrie> trie = [] {
    std::ifstream f(keel::test::golden_dir() + "/grammar/smollm2_vocab.txt");
    EXPECT_TRUE(f.good()) << "missing tests/golden/grammar/smollm2_vocab.txt (gen_smollm2_vocab.py)";
    Vocabulary v;
    std::string word;
    int32_t eos = -1;
    f >> word >> eos;
    v.eos_ids.push_back(eos);
    int32_t id, type;
    std::string hex;
    while (f >> id >> type) {
      std::getline(f, hex);
      hex.erase(0, std::min(hex.find_first_not_of(' '), hex.size()));
      std::string bytes;
      for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
      v.token_bytes.push_back(bytes);
      if (type == 3 && id != eos) v.special_ids.push_back(id);
    }
    return std::make_shared<const VocabTrie>(std::move(v));
  }();
  return trie;
}

bool mask_has(const std::vector<uint32_t>& mask, int32_t id) { return (mask[id >> 5] >> (id & 31)) & 1; }

std::vector<int32_t> greedy_tokens(const VocabTrie& trie, const std::string& text) {
  std::vector<int32_t> out;
  for (size_t pos = 0; pos < text.size();) {
    int32_t best = -1;
    size_t best_len = 0;
    const auto& nodes = trie.nodes();
    for (uint32_t i = 0; i < nodes.size();) {  // walk the matching path of the trie
      const auto& n = nodes[i];
      if (pos + n.depth - 1 >= text.size() || static_cast<uint8_t>(text[pos + n.depth - 1]) != n.byte) {
        i = n.subtree_end;
        continue;
      }
      if (n.tok_end > n.tok_begin) best = trie.token_ids()[n.tok_begin], best_len = n.depth;
      ++i;
    }
    out.push_back(best);
    pos += best_len;
  }
  return out;
}

std::vector<int32_t> random_tokens(const VocabTrie& trie, const std::string& text, std::mt19937& rng) {
  std::vector<int32_t> out;
  for (size_t pos = 0; pos < text.size();) {
    std::vector<std::pair<int32_t, size_t>> options;
    const auto& nodes = trie.nodes();
    for (uint32_t i = 0; i < nodes.size();) {
      const auto& n = nodes[i];
      if (pos + n.depth - 1 >= text.size() || static_cast<uint8_t>(text[pos + n.depth - 1]) != n.byte) {
        i = n.subtree_end;
        continue;
      }
      for (uint32_t t = n.tok_begin; t < n.tok_end; ++t) options.emplace_back(trie.token_ids()[t], n.depth);
      ++i;
    }
    auto [id, len] = options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
    out.push_back(id);
    pos += len;
  }
  return out;
}

void expect_mask_exact(GrammarMatcher& m, const CompiledGrammar& g, const VocabTrie& trie, const std::string& prefix,
                       const std::vector<uint32_t>& mask) {
  EarleyParser p(g);
  ASSERT_TRUE(p.push_bytes(prefix));
  int wrong = 0;
  for (int32_t t = 0; t < trie.vocab().n_vocab(); ++t) {
    bool want;
    if (trie.is_eos(t)) {
      want = p.can_end();
    } else if (std::find(trie.vocab().special_ids.begin(), trie.vocab().special_ids.end(), t) !=
               trie.vocab().special_ids.end()) {
      want = false;
    } else {
      const std::string& b = trie.vocab().token_bytes[t];
      want = p.push_bytes(b);
      if (want) p.pop_bytes(b.size());
    }
    if (want != mask_has(mask, t) && ++wrong <= 3) ADD_FAILURE() << "after '" << prefix << "' token " << t;
  }
  (void)m;
}

TEST(SmolLM2Tokens, ValidInstancesAcceptedTokenByToken) {
  auto trie = smollm2_vocab();
  ASSERT_EQ(trie->vocab().n_vocab(), 49152);
  std::ifstream f(keel::test::golden_dir() + "/grammar/smollm2_tokenizations.jsonl");
  ASSERT_TRUE(f.good()) << "missing smollm2_tokenizations.jsonl (gen_smollm2_tokenizations.py)";
  std::mt19937 rng(1234);
  std::string line;
  int n_lines = 0, n_checked = 0, n_exact = 0;
  while (std::getline(f, line)) {
    ++n_lines;
    Json rec = Json::parse(line);
    const std::string text = rec["text"];
    std::vector<int32_t> hf = rec["ids"].get<std::vector<int32_t>>();
    std::string joined;
    for (int32_t id : hf) joined += trie->vocab().token_bytes[id];
    ASSERT_EQ(joined, text) << "vocabulary and tokenization goldens disagree";
    Json schema = load_json(shared_data_dir() + "/maskbench-dev/" + rec["file"].get<std::string>())["schema"];
    auto g = json_schema_grammar(schema, {});
    if (!g.ok()) continue;
    auto cg = std::make_shared<const CompiledGrammar>(std::move(g).value());
    if (!accepts(*cg, text)) continue;  // counted as a false reject by the corpus test
    ++n_checked;
    auto cache = std::make_shared<TokenMaskCache>(cg, trie);
    const bool check_masks = n_checked % 8 == 1;
    std::vector<uint32_t> mask(cache->n_mask_words());
    for (const auto& tokens : {hf, greedy_tokens(*trie, text), random_tokens(*trie, text, rng)}) {
      GrammarMatcher m(cache);
      std::string prefix;
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (check_masks) {
          m.fill_mask(mask);
          ASSERT_TRUE(mask_has(mask, tokens[i])) << rec["file"] << " step " << i << " token " << tokens[i];
          EXPECT_FALSE(mask_has(mask, trie->vocab().eos_ids[0]));
          if (i % 7 == 3 && n_exact < 40) {
            expect_mask_exact(m, *cg, *trie, prefix, mask);
            ++n_exact;
          }
        }
        ASSERT_TRUE(m.accept_token(tokens[i])) << rec["file"] << " step " << i << " after '" << prefix << "'";
        prefix += trie->vocab().token_bytes[tokens[i]];
      }
      m.fill_mask(mask);
      EXPECT_TRUE(mask_has(mask, trie->vocab().eos_ids[0])) << rec["file"];
      EXPECT_TRUE(m.accept_token(trie->vocab().eos_ids[0]));
    }
  }
  std::printf("SmolLM2 token-by-token: %d instances, %d checked under 3 tokenizations, %d exact masks\n", n_lines,
              n_checked, n_exact);
  EXPECT_GT(n_checked, 100);
  EXPECT_GT(n_exact, 20);
}

}  // namespace
}  // namespace keel::grammar::test
