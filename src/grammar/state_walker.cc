#include "grammar/state_walker.h"

#include "base/check.h"

namespace keel::grammar {

StateWalker::StateWalker(EarleyParser& parser, StateTable& table)
    : parser_(parser), table_(table), state_(1, parser.state()) {}

StateWalker::~StateWalker() { parser_.pop_bytes(pushed_); }

StateWalker::Step StateWalker::step(uint32_t d, uint8_t b) {
  if (path_.size() <= d) {
    path_.resize(d + 1);
    state_.resize(d + 2);
  }
  path_[d] = b;
  if (synced_ > d) synced_ = d;
  const StateTable::State s = state_[d];
  if (s != StateTable::kNone) {
    const StateTable::State n = table_.next(s, b);
    if (n != StateTable::kUnknown) {
      state_[d + 1] = n;
      return {n, n == StateTable::kDead ? uint8_t{0} : table_.flags(n)};
    }
  }
  // Miss: bring the parser to path[0, d), then take b.
  parser_.pop_bytes(pushed_ - synced_);
  pushed_ = synced_;
  for (; pushed_ < d; ++pushed_) KEEL_CHECK(parser_.push_byte(path_[pushed_]), "walked path no longer parses");
  synced_ = d;
  Step out{StateTable::kDead, 0};
  if (parser_.push_byte(b)) {
    ++pushed_;
    ++synced_;
    out = {parser_.state(), parser_.flags()};
  }
  if (s != StateTable::kNone && out.state != StateTable::kNone) table_.set_next(s, b, out.state);
  state_[d + 1] = out.state;
  return out;
}

}  // namespace keel::grammar
