#include "grammar/state_table.h"

#include <xxhash.h>

#include <algorithm>

#include "grammar/state_shapes.h"

namespace keel::grammar {

size_t StateTable::KeyHash::operator()(std::string_view s) const { return XXH3_64bits(s.data(), s.size()); }

StateTable::StateTable(uint32_t max_states)
    : max_states_(std::min<uint32_t>({max_states, kRowUnknown, kChunk * kMaxChunks})) {}

StateTable::~StateTable() = default;

void StateTable::attach_shapes(const CompiledGrammar& grammar) { shapes_ = std::make_unique<StateShapes>(grammar); }

std::string_view StateTable::key(State s) const {
  std::lock_guard<std::mutex> lock(mu_);
  return *keys_[s];
}

StateTable::State StateTable::intern(std::string_view key, uint8_t flags) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  const auto id = static_cast<State>(ids_.size());
  if (id >= max_states_) return kNone;
  if (id % kChunk == 0) {
    owned_.push_back(std::make_unique<Row[]>(kChunk));
    for (uint32_t i = 0; i < kChunk; ++i)
      for (auto& n : owned_.back()[i].next) n.store(kRowUnknown, std::memory_order_relaxed);
    chunks_[id / kChunk] = owned_.back().get();
    owned_flags_.push_back(std::make_unique<uint8_t[]>(kChunk));
    flag_chunks_[id / kChunk] = owned_flags_.back().get();
  }
  flag_chunks_[id / kChunk][id % kChunk] = flags;
  keys_.push_back(&ids_.emplace(std::string(key), id).first->first);
  key_bytes_ += key.size() + sizeof(std::string) + sizeof(State) + 3 * sizeof(void*);
  return id;
}

void StateTable::set_next(State s, uint8_t b, State n) {
  const uint16_t v = n == kDead ? kRowDead : static_cast<uint16_t>(n);
  row(s).next[b].store(v, std::memory_order_release);
}

void StateTable::fill_dead(State s, const std::bitset<256>& live) {
  Row& r = row(s);
  if (r.dead_filled.load(std::memory_order_acquire) != 0) return;
  for (int b = 0; b < 256; ++b)
    if (!live.test(b)) r.next[b].store(kRowDead, std::memory_order_release);
  r.dead_filled.store(1, std::memory_order_release);
}

size_t StateTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ids_.size();
}

size_t StateTable::memory_bytes() const {
  // The shapes' own lock is not taken under this one (StateShapes reads keys under its own).
  const size_t shapes = shapes_ != nullptr ? shapes_->memory_bytes() : 0;
  std::lock_guard<std::mutex> lock(mu_);
  return owned_.size() * kChunk * (sizeof(Row) + 1) + key_bytes_ + shapes;
}

}  // namespace keel::grammar
