#include "grammar/mask_cache.h"

#include <algorithm>

#include "grammar/earley.h"

namespace keel::grammar {

TokenMaskCache::TokenMaskCache(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const VocabTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {
  const Grammar& g = grammar_->grammar();
  grammar_bytes_ = g.byte_sets.size() * sizeof(ByteSet) + g.n_symbols() * sizeof(Symbol) + g.rules.size() * sizeof(Rule) +
                   grammar_->n_positions() * (sizeof(FlatSymbol) + sizeof(uint32_t)) +
                   grammar_->n_rules() * (sizeof(std::vector<uint32_t>) + 1);
}

const PositionMask& TokenMaskCache::get(uint32_t pos) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = masks_.find(pos);
    if (it != masks_.end()) return *it->second;
  }
  // Classified outside the lock; if two threads race, the first insert wins.
  auto mask = std::make_unique<PositionMask>(classify(pos));
  std::lock_guard<std::mutex> lock(mu_);
  const size_t bytes = sizeof(PositionMask) + mask->accepted.capacity() * sizeof(uint32_t) +
                      mask->uncertain.capacity() * sizeof(int32_t) + 4 * sizeof(void*);  // + map node
  auto [it, inserted] = masks_.try_emplace(pos, std::move(mask));
  if (inserted) mask_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return *it->second;
}

PositionMask TokenMaskCache::classify(uint32_t pos) const {
  PositionMask out;
  out.accepted.assign(n_mask_words(), 0);
  const auto& nodes = trie_->nodes();
  const auto& ids = trie_->token_ids();
  EarleyParser parser(*grammar_, pos);
  // rule_ended[d]: the seeded rule completed somewhere within the first d bytes.
  std::vector<uint8_t> rule_ended(1, static_cast<uint8_t>(parser.seed_completed()));
  const ByteSet first = parser.next_bytes();
  for (uint32_t i = 0; i < nodes.size();) {
    const VocabTrie::Node& node = nodes[i];
    if (node.depth == 1 && !first.test(node.byte)) {
      i = node.subtree_end;
      continue;
    }
    parser.pop_bytes(parser.n_bytes() - (node.depth - 1));
    if (!parser.push_byte(node.byte)) {
      if (rule_ended[node.depth - 1]) {
        for (uint32_t t = trie_->subtree_tok_begin(i); t < trie_->subtree_tok_end(i); ++t) out.uncertain.push_back(ids[t]);
      }
      i = node.subtree_end;
      continue;
    }
    rule_ended.resize(node.depth + 1);
    rule_ended[node.depth] = rule_ended[node.depth - 1] | static_cast<uint8_t>(parser.seed_completed());
    for (uint32_t t = node.tok_begin; t < node.tok_end; ++t) out.accepted[ids[t] >> 5] |= 1u << (ids[t] & 31);
    ++i;
  }
  std::sort(out.uncertain.begin(), out.uncertain.end());
  return out;
}

}  // namespace keel::grammar
