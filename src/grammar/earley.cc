#include "grammar/earley.h"

#include <algorithm>

#include "base/check.h"

namespace keel::grammar {
namespace {

uint64_t item_key(uint32_t pos, uint32_t origin) { return (static_cast<uint64_t>(pos) << 32) | origin; }

size_t hash_slot(uint64_t key, size_t mask) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return static_cast<size_t>(key) & mask;
}

}  // namespace

void EarleyParser::ItemSet::clear() {
  count_ = 0;
  if (++gen_ == 0) {
    std::fill(gens_.begin(), gens_.end(), 0);
    gen_ = 1;
  }
}

bool EarleyParser::ItemSet::insert(uint64_t key) {
  if ((count_ + 1) * 2 > keys_.size()) grow();
  size_t mask = keys_.size() - 1;
  for (size_t h = hash_slot(key, mask);; h = (h + 1) & mask) {
    if (gens_[h] != gen_) {
      gens_[h] = gen_;
      keys_[h] = key;
      ++count_;
      return true;
    }
    if (keys_[h] == key) return false;
  }
}

void EarleyParser::ItemSet::grow() {
  std::vector<uint64_t> old_keys = std::move(keys_);
  std::vector<uint32_t> old_gens = std::move(gens_);
  size_t cap = std::max<size_t>(64, old_keys.size() * 2);
  keys_.assign(cap, 0);
  gens_.assign(cap, 0);
  uint32_t g = gen_;
  gen_ = 1;
  count_ = 0;
  for (size_t i = 0; i < old_keys.size(); ++i)
    if (old_gens[i] == g) insert(old_keys[i]);
}

EarleyParser::EarleyParser(const CompiledGrammar& g, StateTable* states)
    : g_(g), predicted_(g.n_rules(), UINT32_MAX), pos_seen_(g.n_positions(), UINT32_MAX), states_(states) {
  col_begin_.push_back(0);
  waiting_begin_.push_back(0);
  begin_column();
  for (uint32_t p : g_.alt_starts(g_.start_rule())) add(p, 0);
  close_column(0);
}

EarleyParser::EarleyParser(const CompiledGrammar& g, uint32_t seed_pos, StateTable* states)
    : g_(g), predicted_(g.n_rules(), UINT32_MAX), pos_seen_(g.n_positions(), UINT32_MAX), base_(1), states_(states) {
  seed(seed_pos);
}

void EarleyParser::reseed(uint32_t seed_pos) {
  items_.clear();
  col_begin_.clear();
  flags_.clear();
  waiting_.clear();
  waiting_begin_.clear();
  col_state_.clear();
  base_ = 1;
  seed(seed_pos);
}

void EarleyParser::seed(uint32_t seed_pos) {
  KEEL_CHECK(seed_pos < g_.n_positions() && g_.symbol(seed_pos).kind != FlatSymbol::Kind::kEnd,
             "seed must be a position before a symbol");
  // Column 0 stands for the column where the seed's rule started: it holds only that rule's
  // left-recursive alternatives (A ::= A ...), which is what lets the rule loop after completing.
  uint32_t rule = seed_pos;
  while (g_.symbol(rule).kind != FlatSymbol::Kind::kEnd) ++rule;
  rule = g_.symbol(rule).index;
  col_begin_.push_back(0);
  waiting_begin_.push_back(0);
  for (uint32_t p : g_.alt_starts(rule)) {
    if (g_.symbol(p).kind == FlatSymbol::Kind::kRule && g_.symbol(p).index == rule) {
      waiting_.emplace_back(rule, static_cast<uint32_t>(items_.size()));
      items_.push_back({p, 0});
    }
  }
  col_begin_.push_back(static_cast<uint32_t>(items_.size()));
  waiting_begin_.push_back(static_cast<uint32_t>(waiting_.size()));
  flags_.push_back(0);
  // The virtual column's state is named by its rule (its content is a function of the rule).
  col_state_.push_back(StateTable::kNone);
  if (states_ != nullptr) {
    const uint64_t tag = (1ULL << 63) | (1ULL << 62) | rule;
    col_state_.back() = states_->intern({reinterpret_cast<const char*>(&tag), sizeof tag}, 0);
  }
  // Column 1: the seed (origin 0) and its closure.
  begin_column();
  const size_t first = items_.size();
  add(seed_pos, 0);
  close_column(first);
}

void EarleyParser::begin_column() {
  cur_col_ = static_cast<uint32_t>(flags_.size());
  // Stamps only ever meet the current one; a parser reused for long wraps them around safely.
  if (++stamp_ == UINT32_MAX) {
    std::fill(predicted_.begin(), predicted_.end(), UINT32_MAX);
    std::fill(pos_seen_.begin(), pos_seen_.end(), UINT32_MAX);
    stamp_ = 0;
  }
  seen_.clear();
}

void EarleyParser::add(uint32_t pos, uint32_t origin) {
  // Items born in this column (predictions, the bulk) dedup by position stamp; the rest by hash.
  if (origin == cur_col_) {
    if (pos_seen_[pos] == stamp_) return;
    pos_seen_[pos] = stamp_;
    items_.push_back({pos, origin});
  } else if (seen_.insert(item_key(pos, origin))) {
    items_.push_back({pos, origin});
  }
}

bool EarleyParser::push_byte(uint8_t b) {
  const size_t first = items_.size();
  begin_column();
  for (uint32_t i = col_begin_[col_begin_.size() - 2], e = col_begin_.back(); i < e; ++i) {
    EarleyItem it = items_[i];
    const FlatSymbol& s = g_.symbol(it.pos);
    if (s.kind == FlatSymbol::Kind::kBytes && g_.byte_set(s.index).test(b)) add(it.pos + 1, it.origin);
  }
  if (items_.size() == first) return false;
  close_column(first);
  return true;
}

void EarleyParser::close_column(size_t first_item) {
  const uint32_t col = cur_col_;
  uint8_t flags = 0;
  for (size_t i = first_item; i < items_.size(); ++i) {
    const EarleyItem it = items_[i];
    const FlatSymbol& s = g_.symbol(it.pos);
    switch (s.kind) {
      case FlatSymbol::Kind::kBytes: break;
      case FlatSymbol::Kind::kRule:
        if (predicted_[s.index] != stamp_) {
          predicted_[s.index] = stamp_;
          for (uint32_t p : g_.alt_starts(s.index)) add(p, col);
        }
        if (g_.nullable(s.index)) add(it.pos + 1, it.origin);
        break;
      case FlatSymbol::Kind::kEnd:
        if (it.origin == 0) flags |= (s.index == g_.start_rule() ? kCanEnd : 0) | kSeedEnd;
        if (it.origin != col) complete(s.index, it.origin);
        break;
    }
  }
  col_begin_.push_back(static_cast<uint32_t>(items_.size()));
  flags_.push_back(flags);
  const size_t w0 = waiting_.size();
  for (size_t i = first_item; i < items_.size(); ++i) {
    const FlatSymbol& s = g_.symbol(items_[i].pos);
    if (s.kind == FlatSymbol::Kind::kRule) waiting_.emplace_back(s.index, static_cast<uint32_t>(i));
  }
  std::sort(waiting_.begin() + static_cast<ptrdiff_t>(w0), waiting_.end());
  waiting_begin_.push_back(static_cast<uint32_t>(waiting_.size()));
  col_state_.push_back(intern_column());
}

// The column's state: its flags and its unfinished items that did not start here (pos, state of the
// origin column), sorted. Everything else in the column follows from those: items born here are their
// predictions (or steps over nullable predictions), and finished items completed what they could when
// the column was closed. Leaving finished items out is what makes loops converge: in `chars ::= chars
// char` the finished `char` item points at the previous column, which would make every column of a
// string body a new state. The first column of an unseeded parser is named by a tag of its own.
StateTable::State EarleyParser::intern_column() {
  if (states_ == nullptr) return StateTable::kNone;
  const uint32_t col = cur_col_;
  key_.clear();
  if (col == 0) {
    key_.push_back(1ULL << 63);
  } else {
    for (size_t i = col_begin_[col]; i < items_.size(); ++i) {
      const EarleyItem it = items_[i];
      // Predictions add nothing, and finished items have done their completing (what they still
      // say is in the flags).
      if (it.origin == col || g_.symbol(it.pos).kind == FlatSymbol::Kind::kEnd) continue;
      const StateTable::State o = col_state_[it.origin];
      if (o == StateTable::kNone) return StateTable::kNone;
      key_.push_back(static_cast<uint64_t>(it.pos) << 32 | o);
    }
    std::sort(key_.begin(), key_.end());
    key_.erase(std::unique(key_.begin(), key_.end()), key_.end());
    key_.push_back(1ULL << 63 | (1ULL << 61) | flags_.back());
  }
  return states_->intern({reinterpret_cast<const char*>(key_.data()), key_.size() * sizeof(uint64_t)}, flags_.back());
}

void EarleyParser::complete(uint32_t rule, uint32_t origin) {
  auto first = waiting_.begin() + waiting_begin_[origin];
  auto last = waiting_.begin() + waiting_begin_[origin + 1];
  auto it = std::lower_bound(first, last, std::make_pair(rule, 0u));
  for (; it != last && it->first == rule; ++it) {
    // Index-based: add() may grow items_ while we walk.
    const EarleyItem w = items_[it->second];
    add(w.pos + 1, w.origin);
  }
}

bool EarleyParser::push_bytes(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!push_byte(static_cast<uint8_t>(bytes[i]))) {
      pop_bytes(i);
      return false;
    }
  }
  return true;
}

void EarleyParser::pop_bytes(size_t n) {
  KEEL_CHECK(n <= n_bytes(), "pop {} of {} bytes", n, n_bytes());
  const size_t cols = flags_.size() - n;
  items_.resize(col_begin_[cols]);
  col_begin_.resize(cols + 1);
  waiting_.resize(waiting_begin_[cols]);
  waiting_begin_.resize(cols + 1);
  flags_.resize(cols);
  col_state_.resize(cols);
}

ByteSet EarleyParser::next_bytes() const {
  ByteSet out;
  for (uint32_t i = col_begin_[col_begin_.size() - 2], e = col_begin_.back(); i < e; ++i) {
    const FlatSymbol& s = g_.symbol(items_[i].pos);
    if (s.kind == FlatSymbol::Kind::kBytes) out |= g_.byte_set(s.index);
  }
  return out;
}

ByteSet EarleyParser::equivalent_bytes(uint8_t b) const {
  ByteSet out;
  out.set();
  for (uint32_t i = col_begin_[col_begin_.size() - 2], e = col_begin_.back(); i < e; ++i) {
    const FlatSymbol& s = g_.symbol(items_[i].pos);
    if (s.kind != FlatSymbol::Kind::kBytes) continue;
    const ByteSet& set = g_.byte_set(s.index);
    if (set.test(b)) {
      out &= set;
    } else {
      out &= ~set;
    }
  }
  return out;
}

void EarleyParser::kernel_positions(std::vector<uint32_t>& out) const {
  out.clear();
  const auto col = static_cast<uint32_t>(flags_.size() - 1);
  if (col == 0 && base_ == 0) {
    out = g_.alt_starts(g_.start_rule());
    return;
  }
  for (uint32_t i = col_begin_[col], e = col_begin_.back(); i < e; ++i) {
    if (items_[i].origin < col && g_.symbol(items_[i].pos).kind != FlatSymbol::Kind::kEnd) out.push_back(items_[i].pos);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace keel::grammar
