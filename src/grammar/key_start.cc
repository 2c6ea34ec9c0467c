#include "grammar/key_start.h"

#include <algorithm>
#include <cstdint>

#include "grammar/char_class.h"

namespace keel::grammar {
namespace {

constexpr uint32_t kNoNode = UINT32_MAX;

// The trie node spelling `bytes`, or kNoNode.
uint32_t find_node(const VocabTrie& trie, const std::string& bytes) {
  const auto& nodes = trie.nodes();
  uint32_t i = 0, end = static_cast<uint32_t>(nodes.size());
  for (size_t k = 0; k < bytes.size(); ++k) {
    const auto b = static_cast<uint8_t>(bytes[k]);
    while (i < end && nodes[i].byte != b) i = nodes[i].subtree_end;  // children in preorder
    if (i >= end) return kNoNode;
    if (k + 1 == bytes.size()) return i;
    end = nodes[i].subtree_end;
    ++i;
  }
  return kNoNode;
}

}  // namespace

std::optional<std::vector<std::string>> key_closers(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    std::string s;
    size_t pos = 0;
    uint32_t cp;
    while (pos < name.size()) {
      const size_t at = pos;
      if (!decode_utf8(name, &pos, &cp)) return std::nullopt;
      if (const std::string_view esc = json_short_escape(cp); !esc.empty()) {
        s += esc;
      } else if (cp < 0x20) {
        if ((cp & 15) >= 10) return std::nullopt;  // \u001A and \u001a: two spellings
        s += "\\u00";
        s += static_cast<char>('0' + (cp >> 4));
        s += static_cast<char>('0' + (cp & 15));
      } else {
        s.append(name, at, pos - at);
      }
    }
    s += '"';
    out.push_back(std::move(s));
  }
  return out;
}

PositionMask key_start_from_any_key(const PositionMask& any_key, const VocabTrie& trie,
                                    const std::vector<std::string>& closers) {
  PositionMask out = any_key;
  const auto& nodes = trie.nodes();
  const auto& ids = trie.token_ids();
  for (const std::string& closer : closers) {
    const uint32_t n = find_node(trie, closer);
    if (n == kNoNode) continue;
    // The tokens spelling exactly the closer: accepted by any key (its rule ends there), not by this one.
    for (uint32_t t = nodes[n].tok_begin; t < nodes[n].tok_end; ++t) {
      const int32_t id = ids[t];
      if (!out.accepted_bits.empty()) {
        out.accepted_bits[static_cast<uint32_t>(id) >> 5] &= ~(1u << (static_cast<uint32_t>(id) & 31));
      } else {
        auto it = std::lower_bound(out.accepted_ids.begin(), out.accepted_ids.end(), id);
        if (it != out.accepted_ids.end() && *it == id) out.accepted_ids.erase(it);
      }
    }
    // Below it: uncertain for any key (its rule has ended), rejected here.
    auto lo = std::upper_bound(out.uncertain.begin(), out.uncertain.end(), n);
    auto hi = std::lower_bound(lo, out.uncertain.end(), nodes[n].subtree_end);
    out.uncertain.erase(lo, hi);
  }
  return out;
}

}  // namespace keel::grammar
