#include "grammar/shared_classes.h"

#include <cstring>

namespace keel::grammar {

size_t PositionMask::bytes() const {
  return sizeof(*this) + accepted_bits.size() * sizeof(uint32_t) + accepted_ids.size() * sizeof(int32_t) +
         uncertain.size() * sizeof(uint32_t);
}

namespace {

constexpr uint32_t kNoLocal = UINT32_MAX;

// Whether rule has an alternative that starts with itself (A ::= A ...): only those are held by a
// seeded parser's virtual origin column (earley.cc), so only then does the part of the rule before
// the dot, and its other alternatives, bear on the classification.
bool left_recursive(const CompiledGrammar& g, uint32_t rule) {
  for (uint32_t p : g.alt_starts(rule))
    if (g.symbol(p).kind == FlatSymbol::Kind::kRule && g.symbol(p).index == rule) return true;
  return false;
}

}  // namespace

std::optional<std::string> position_key(const CompiledGrammar& g, uint32_t pos, size_t max_bytes) {
  uint32_t end = pos;
  while (g.symbol(end).kind != FlatSymbol::Kind::kEnd) ++end;
  const uint32_t rule = g.symbol(end).index;
  // Each rule's number in order of first reference, in a per-thread table indexed by rule (reset
  // for the rules used before returning): a hash map per key cost more than the key's text.
  thread_local std::vector<uint32_t> local;
  thread_local std::vector<uint32_t> queue;
  if (local.size() < g.n_rules()) local.resize(g.n_rules(), kNoLocal);
  queue.clear();
  struct Reset {
    ~Reset() {
      for (uint32_t r : queue) local[r] = kNoLocal;
    }
  } reset;
  std::string out;
  out.reserve(256);
  auto put32 = [&](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto number = [&](uint32_t r) {
    if (local[r] == kNoLocal) {
      local[r] = static_cast<uint32_t>(queue.size());
      queue.push_back(r);
    }
    return local[r];
  };
  // One sequence of symbols: byte sets by content, rules by their number in order of first reference.
  auto put_symbols = [&](uint32_t from) {
    for (uint32_t p = from;; ++p) {
      const FlatSymbol& s = g.symbol(p);
      if (s.kind == FlatSymbol::Kind::kEnd) {
        out += 'e';
        return;
      }
      if (s.kind == FlatSymbol::Kind::kBytes) {
        // A single byte (key literals, structure: most sets) as itself, any other set as its
        // storage as it is (keys are only compared within this process).
        static_assert(sizeof(ByteSet) == 32);
        const ByteSet& set = g.byte_set(s.index);
        if (set.count() == 1) {
          out += 'c';
          out += static_cast<char>(set._Find_first());
        } else {
          out += 'b';
          out.append(reinterpret_cast<const char*>(&set), sizeof(ByteSet));
        }
      } else {
        out += 'r';
        put32(number(s.index));
      }
    }
  };
  if (left_recursive(g, rule)) {
    // The whole rule: where the dot is (alternative index and offset in it), then every alternative.
    out += 'L';
    const auto& seed_alts = g.alt_starts(rule);
    for (uint32_t a = 0; a < seed_alts.size(); ++a) {
      if (seed_alts[a] <= pos && pos < (a + 1 < seed_alts.size() ? seed_alts[a + 1] : end + 1)) {
        put32(a);
        put32(pos - seed_alts[a]);
        break;
      }
    }
    number(rule);
  } else {
    // Only what follows the dot: the seed item is then the only item of origin 0, so the walk (and
    // when the seed's rule ends) is a function of it. `exactly[c] ::= exactly[c-1] . x` for every c,
    // and a counter's positions in any rule with the same items left, share one classification.
    out += 'T';
    put_symbols(pos);
    if (out.size() > max_bytes) return std::nullopt;
  }
  // Rules in order of first reference; each as its alternatives' symbols.
  for (size_t q = 0; q < queue.size(); ++q) {
    const auto& alts = g.alt_starts(queue[q]);
    out += 'R';
    put32(static_cast<uint32_t>(alts.size()));
    for (uint32_t start : alts) {
      put_symbols(start);
      if (out.size() > max_bytes) return std::nullopt;
    }
  }
  // The synthetic start rule also sets the can-end flag; keep it apart from a look-alike rule.
  out += rule == g.start_rule() ? 'S' : 'N';
  return out;
}

std::shared_ptr<const PositionMask> SharedClassifications::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  ++n_hits_;
  return it->second;
}

void SharedClassifications::insert(std::string key, std::shared_ptr<const PositionMask> mask) {
  const size_t size = key.size() + mask->bytes();
  if (size > budget_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto [at, inserted] = map_.try_emplace(std::move(key), std::move(mask));
  if (!inserted) return;
  order_.push_back(&at->first);
  bytes_ += size;
  while (bytes_ > budget_) {  // the oldest first; never the one just added (size <= budget_)
    auto it = map_.find(*order_.front());
    bytes_ -= it->first.size() + it->second->bytes();
    order_.pop_front();
    map_.erase(it);
  }
}

uint64_t SharedClassifications::n_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_hits_;
}

}  // namespace keel::grammar
