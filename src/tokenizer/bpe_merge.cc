#include "tokenizer/bpe_merge.h"

#include <queue>

namespace keel::tokenizer {

void BpeMerges::add(int32_t left, int32_t right, int32_t merged) {
  table_.try_emplace(key(left, right), Merge{static_cast<int32_t>(table_.size()), merged});
}

const BpeMerges::Merge* BpeMerges::find(int32_t left, int32_t right) const {
  auto it = table_.find(key(left, right));
  return it == table_.end() ? nullptr : &it->second;
}

namespace {

struct Candidate {
  int32_t rank;
  int32_t pos;     // index of the left symbol (stable for the merged symbol)
  int32_t merged;
  // std::priority_queue pops the largest: invert so the lowest rank, then lowest position, wins.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

}  // namespace

void BpeMerges::merge(std::span<const int32_t> symbols, std::vector<int32_t>& out) const {
  const auto n = static_cast<int32_t>(symbols.size());
  if (n <= 1) {
    out.insert(out.end(), symbols.begin(), symbols.end());
    return;
  }
  std::vector<Symbol> sym(symbols.size());
  for (int32_t i = 0; i < n; ++i) sym[i] = Symbol{symbols[i], i - 1, i + 1 < n ? i + 1 : -1, true};

  std::vector<Candidate> heap_storage;
  heap_storage.reserve(symbols.size());
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(heap_storage));
  auto push_pair = [&](int32_t left_pos) {
    const int32_t right_pos = sym[left_pos].next;
    if (right_pos < 0) return;
    if (const Merge* m = find(sym[left_pos].id, sym[right_pos].id)) queue.push({m->rank, left_pos, m->merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = sym[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[left.next];
    const Merge* m = find(left.id, right.id);
    if (m == nullptr || m->merged != top.merged || m->rank != top.rank) continue;  // stale entry
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace keel::tokenizer
