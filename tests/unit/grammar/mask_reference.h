// Helpers shared by the tests that compare keel's fast token masks with an independent reference on
// real vocabularies: loading a tokenizer.json from the test data as a grammar Vocabulary, and the
// reference mask — the plain Earley recognizer alone (no StateTable, no mask cache) walked depth-first
// over the vocabulary trie, pushing each node's byte and popping it on the way back, so a token is
// allowed exactly when the parser accepts all of its bytes after the prefix.
#pragma once

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_paths.h"
#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/shared_classes.h"
#include "grammar/vocab_trie.h"
#include "tokenizer/tokenizer.h"

namespace keel::grammar::test {

struct RealVocab {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const VocabTrie> trie;
};

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// name: a folder of testdata/tokenizer ("smollm", "llama-bpe").
inline RealVocab load_real_vocab(const std::string& name) {
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
inline std::vector<uint32_t> reference_mask(const CompiledGrammar& g, const VocabTrie& trie, const std::string& prefix) {
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

inline int count_differences(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  int n = 0;
  for (size_t w = 0; w < a.size(); ++w) n += __builtin_popcount(a[w] ^ b[w]);
  return n;
}

// The token ids a classification accepts outright, from its bitset or its id list.
inline std::set<int32_t> accepted(const PositionMask& m, const VocabTrie& trie) {
  std::set<int32_t> out(m.accepted_ids.begin(), m.accepted_ids.end());
  for (int32_t id = 0; id < trie.vocab().n_vocab(); ++id)
    if (!m.accepted_bits.empty() && (m.accepted_bits[id >> 5] >> (id & 31) & 1u)) out.insert(id);
  return out;
}

}  // namespace keel::grammar::test
