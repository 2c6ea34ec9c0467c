#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

namespace {

bool skipped(const Tokenizer& tok, int32_t id) {
  const TokenType t = tok.spec().types[id];
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

}  // namespace

std::string IncrementalDetokenizer::push(int32_t id) {
  if (id < 0 || id >= tok_.n_vocab()) return {};
  if (skip_special_ && skipped(tok_, id)) return {};
  pending_ += tok_.token_bytes(id);
  // Tokenizer::decode strips leading spaces of the whole text (SPM); strip them from the stream's
  // start, waiting while the stream is still empty.
  if (strip_left_ < 0) strip_left_ = tok_.spec().decode_strip_leading_spaces;
  while (strip_left_ > 0 && !pending_.empty()) {
    if (pending_[0] != ' ') {
      strip_left_ = 0;
      break;
    }
    pending_.erase(0, 1);
    --strip_left_;
  }
  if (strip_left_ > 0) return {};
  const size_t keep = utf8_incomplete_tail(pending_);
  std::string out = utf8_lossy(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out = utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace keel::tokenizer
