#include "grammar/mask_cache.h"

#include <algorithm>
#include <utility>

#include "grammar/earley.h"
#include "grammar/key_start.h"
#include "grammar/state_walker.h"

namespace keel::grammar {

TokenMaskCache::TokenMaskCache(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const VocabTrie> trie,
                               std::shared_ptr<SharedClassifications> shared, size_t mask_budget_bytes,
                               uint32_t max_states)
    : grammar_(std::move(grammar)),
      trie_(std::move(trie)),
      states_(max_states),
      // Without a vocabulary's store, a private one: positions of this grammar with one key (a
      // counter's, shared_classes.cc) still share a classification.
      shared_(shared != nullptr ? std::move(shared) : std::make_shared<SharedClassifications>(16 << 20)),
      max_finished_(mask_budget_bytes / (std::max<size_t>(1, n_mask_words()) * sizeof(uint32_t))) {
  states_.attach_shapes(*grammar_);
  const Grammar& g = grammar_->grammar();
  grammar_bytes_ = g.byte_sets.size() * sizeof(ByteSet) + g.n_symbols() * sizeof(Symbol) +
                   g.rules.size() * sizeof(Rule) +
                   // + 1: the states' shapes mark each position (StateShapes, counted here as grammar-sized)
                   grammar_->n_positions() * (sizeof(FlatSymbol) + sizeof(uint32_t) + 1) +
                   grammar_->n_rules() * (sizeof(std::vector<uint32_t>) + 1);
  for (const KeyComplement& k : g.key_complements)
    key_starts_.try_emplace(grammar_->alt_starts(k.key)[0] + 1, grammar_->alt_starts(k.any_key)[0] + 1, &k.closers);
}

const PositionMask& TokenMaskCache::get(uint32_t pos) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = masks_.find(pos);
    if (it != masks_.end()) return *it->second;
  }
  // Looked up or classified outside the lock; if two threads race, the first insert wins.
  std::optional<std::string> key;
  std::shared_ptr<const PositionMask> mask;
  if (shared_ != nullptr) {
    key = position_key(*grammar_, pos, shared_->max_key_bytes());
    if (key) mask = shared_->find(*key);
  }
  if (mask == nullptr) {
    auto ks = key_starts_.find(pos);
    mask = std::make_shared<const PositionMask>(
        ks != key_starts_.end() ? key_start_from_any_key(get(ks->second.first), *trie_, *ks->second.second) : classify(pos));
    if (key) shared_->insert(std::move(*key), mask);
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Counted here even when the classification is shared with other grammars: an upper bound.
  const size_t bytes = mask->bytes() + 4 * sizeof(void*);  // + map node
  auto [it, inserted] = masks_.try_emplace(pos, std::move(mask));
  if (inserted) mask_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return *it->second;
}

void TokenMaskCache::put(uint32_t pos, std::shared_ptr<const PositionMask> mask) {
  const size_t bytes = mask->bytes() + 4 * sizeof(void*);  // + map node, as get() counts
  std::lock_guard<std::mutex> lock(mu_);
  if (masks_.try_emplace(pos, std::move(mask)).second) mask_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

bool TokenMaskCache::classified(uint32_t pos) {
  std::lock_guard<std::mutex> lock(mu_);
  return masks_.contains(pos);
}

bool TokenMaskCache::load_mask(StateTable::State s, std::span<uint32_t> out) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<uint32_t>* mask = finished_.find(s);
  if (mask == nullptr) return false;
  std::copy(mask->begin(), mask->end(), out.begin());
  return true;
}

void TokenMaskCache::store_mask(StateTable::State s, std::span<const uint32_t> mask) {
  const size_t bytes = n_mask_words() * sizeof(uint32_t) + 4 * sizeof(void*);
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_.contains(s)) return;
  count(finished_.insert(s, std::vector<uint32_t>(mask.begin(), mask.begin() + static_cast<ptrdiff_t>(n_mask_words())),
                         bytes, max_finished_ * bytes));
}

std::shared_ptr<const TokenMaskCache::Ranges> TokenMaskCache::load_subtree(StateTable::State s, uint32_t node) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto* ranges = subtrees_.find(static_cast<uint64_t>(s) << 32 | node);
  return ranges == nullptr ? nullptr : *ranges;
}

void TokenMaskCache::store_subtree(StateTable::State s, uint32_t node, std::shared_ptr<const Ranges> ranges) {
  const size_t bytes = ranges->size() * sizeof((*ranges)[0]) + sizeof(Ranges) + 6 * sizeof(void*);
  std::lock_guard<std::mutex> lock(mu_);
  count(subtrees_.insert(static_cast<uint64_t>(s) << 32 | node, std::move(ranges), bytes, kSubtreeBudget));
}

std::shared_ptr<const TokenMaskCache::FirstByteMask> TokenMaskCache::load_first_byte(StateTable::State t) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto* mask = first_byte_.find(t);
  return mask == nullptr ? nullptr : *mask;
}

void TokenMaskCache::store_first_byte(StateTable::State t, std::shared_ptr<const FirstByteMask> mask) {
  const size_t bytes = n_mask_words() * sizeof(uint32_t) + sizeof(FirstByteMask) + 6 * sizeof(void*);
  std::lock_guard<std::mutex> lock(mu_);
  count(first_byte_.insert(t, std::move(mask), bytes, 4 * max_finished_ * bytes));
}

uint32_t TokenMaskCache::note_first_byte_target(StateTable::State t, StateTable::State from) {
  std::lock_guard<std::mutex> lock(mu_);
  if (first_byte_targets_.size() >= 4096) first_byte_targets_.clear();  // a bound, not a policy
  auto [it, inserted] = first_byte_targets_.try_emplace(t, from, 0);
  // The same column again (a later request, or its finished mask dropped) is not another column.
  if (it->second.first != from) it->second = {from, it->second.second + 1};
  return it->second.second;
}

PositionMask TokenMaskCache::classify(uint32_t pos) {
  const auto& nodes = trie_->nodes();
  AcceptedRanges accepted;
  PositionMask out;
  std::unique_ptr<EarleyParser> seeded = take_parser(pos);
  EarleyParser& parser = *seeded;
  // rule_ended[d]: the seeded rule completed somewhere within the first d bytes.
  std::vector<uint8_t> rule_ended(1, static_cast<uint8_t>(parser.seed_completed()));
  {
    StateWalker walk(parser, states_);
    for (uint32_t i = 0; i < nodes.size();) {
      const VocabTrie::Node& node = nodes[i];
      const uint32_t d = node.depth - 1;
      // The next sibling is where a skip lands, far away in the trie: start loading it now (the walk
      // of a string state is mostly skips, and each one waited for that node).
      __builtin_prefetch(&nodes[std::min<size_t>(node.subtree_end, nodes.size() - 1)]);
      if (const uint32_t e = walk.accepted_until(*trie_, i, static_cast<uint32_t>(nodes.size())); e != i) {
        accepted.add(node.tok_begin, trie_->tok_begin_at(e));
        i = e;
        continue;
      }
      const StateWalker::Step step = walk.step(d, node.byte);
      if (step.state == StateTable::kDead) {
        if (rule_ended[d] && trie_->subtree_tok_begin(i) < trie_->subtree_tok_end(i)) {
          out.uncertain.push_back(i);
          i = node.subtree_end;
        } else {
          // Rejected siblings are rejected outright while the rule has not ended: skipped by byte.
          i = walk.skip_rejected(*trie_, i, d);
        }
        continue;
      }
      if (rule_ended.size() <= node.depth) rule_ended.resize(node.depth + 1);
      rule_ended[node.depth] = rule_ended[d] | static_cast<uint8_t>((step.flags & StateTable::kSeedEnd) != 0);
      accepted.add(node.tok_begin, node.tok_end);
      ++i;
    }
  }
  give_back(std::move(seeded));  // the walker has popped what it pushed
  accepted.store(*trie_, n_mask_words(), out);
  return out;
}

void AcceptedRanges::store(const VocabTrie& trie, size_t n_words, PositionMask& out) const {
  const auto& ids = trie.token_ids();
  if (2 * n_ > ids.size()) {
    // Most tokens accepted (a string or key body): clear the few gaps from the set of every trie
    // token instead of setting each accepted one.
    out.accepted_bits = trie.token_bits();
    uint32_t prev = 0;
    for (auto [b, e] : ranges_) {
      trie.mark_tokens(out.accepted_bits, prev, b, /*set=*/false);
      prev = e;
    }
    trie.mark_tokens(out.accepted_bits, prev, static_cast<uint32_t>(ids.size()), /*set=*/false);
  } else if (n_ >= n_words) {
    out.accepted_bits.assign(n_words, 0);
    for (auto [b, e] : ranges_) trie.mark_tokens(out.accepted_bits, b, e);
  } else {
    out.accepted_ids.reserve(n_);
    for (auto [b, e] : ranges_)
      for (uint32_t t = b; t < e; ++t) out.accepted_ids.push_back(ids[t]);
    std::sort(out.accepted_ids.begin(), out.accepted_ids.end());
  }
}

std::unique_ptr<EarleyParser> TokenMaskCache::take_parser(uint32_t pos) {
  std::unique_ptr<EarleyParser> parser;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spare_parsers_.empty()) {
      parser = std::move(spare_parsers_.back());
      spare_parsers_.pop_back();
    }
  }
  if (parser == nullptr) return std::make_unique<EarleyParser>(*grammar_, pos, &states_);
  parser->reseed(pos);
  return parser;
}

void TokenMaskCache::give_back(std::unique_ptr<EarleyParser> parser) {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_parsers_.size() < kMaxSpareParsers) spare_parsers_.push_back(std::move(parser));
}

}  // namespace keel::grammar
