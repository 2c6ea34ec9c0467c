#include "grammar/state_shapes.h"

#include <algorithm>
#include <string_view>

#include "grammar/compiled_grammar.h"
#include "grammar/state_table.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {
namespace {

// Origins nested deeper than this are not followed (a long counter's blocks nest one per block): the
// state gets no shape and its runs are searched as before.
constexpr uint32_t kMaxDepth = 128;

bool has_text_byte(const ByteSet& set) {
  for (int b = 0; b < 256; ++b)
    if (set.test(b) && (b >= 0x80 || VocabTrie::plain(static_cast<uint8_t>(b)))) return true;
  return false;
}

}  // namespace

StateShapes::StateShapes(const CompiledGrammar& grammar) : blocked_(grammar.n_positions(), 0) {
  // Backwards through each alternative: the rest from a position holds a byte set text cannot take.
  for (uint32_t p = grammar.n_positions(); p-- > 0;) {
    const FlatSymbol& sym = grammar.symbol(p);
    if (sym.kind == FlatSymbol::Kind::kEnd) continue;
    const bool here = sym.kind == FlatSymbol::Kind::kBytes && !has_text_byte(grammar.byte_set(sym.index));
    blocked_[p] = here || blocked_[p + 1] != 0 ? 1 : 0;
  }
}

uint32_t StateShapes::shape(const StateTable& table, uint32_t s, uint32_t depth) {
  if (s < shape_of_.size() && shape_of_[s] != kUnset) return shape_of_[s];
  if (depth > kMaxDepth) return kNoShape;
  const std::string_view key = table.key(s);
  std::vector<uint64_t> words(key.size() / sizeof(uint64_t));
  std::copy(key.begin(), key.end(), reinterpret_cast<char*>(words.data()));
  uint32_t anchor = kNoAnchor;
  bool ok = true;
  auto merge = [&](uint32_t a) {
    if (a == kNoAnchor) return;
    if (anchor == kNoAnchor) anchor = a;
    ok = ok && anchor == a;
  };
  for (uint64_t& w : words) {
    if ((w >> 63) != 0) continue;  // a root's tag, the flags: kept as they are
    const auto pos = static_cast<uint32_t>(w >> 32), origin = static_cast<uint32_t>(w);
    uint32_t part = kAnyOrigin;
    if (blocked_[pos] != 0) {
      merge(origin);
    } else {
      part = shape(table, origin, depth + 1);
      if (part == kNoShape) {
        ok = false;
        break;
      }
      merge(anchor_of_[origin]);
    }
    w = static_cast<uint64_t>(pos) << 32 | part;
  }
  uint32_t id = kNoShape;
  if (ok) {
    std::sort(words.begin(), words.end());
    std::string k(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint64_t));
    auto [it, inserted] = ids_.try_emplace(std::move(k), static_cast<uint32_t>(ids_.size()));
    if (inserted) {
      key_bytes_ += it->first.size() + sizeof(std::string) + 3 * sizeof(void*);
      runs_.push_back(0);
    }
    id = it->second;
  } else if (depth > kMaxDepth / 2) {
    return kNoShape;  // maybe cut short by the depth: not remembered, a shallower call may succeed
  }
  if (shape_of_.size() <= s) {
    shape_of_.resize(s + 1, kUnset);
    anchor_of_.resize(s + 1, kNoAnchor);
  }
  shape_of_[s] = id;
  anchor_of_[s] = anchor;
  return id;
}

uint8_t StateShapes::known(const StateTable& table, uint32_t s) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t id = shape(table, s, 0);
  const uint8_t v = id == kNoShape ? 0 : runs_[id];
  hits_ += v != 0;
  return v;
}

void StateShapes::note(const StateTable& table, uint32_t s, uint8_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t id = shape(table, s, 0);
  if (id == kNoShape) return;
  uint8_t& v = runs_[id];
  v = std::max(v, value);
}

size_t StateShapes::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  // blocked_ is grammar-sized, counted with the grammar (TokenMaskCache); this is what states add.
  return (shape_of_.capacity() + anchor_of_.capacity()) * sizeof(uint32_t) + key_bytes_ + runs_.capacity();
}

}  // namespace keel::grammar
