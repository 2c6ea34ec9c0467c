#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe_tokenizer.h"

namespace keel::tokenizer {

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(VocabSpec spec) {
  const auto n = static_cast<int32_t>(spec.tokens.size());
  if (spec.eos_id >= 0 && std::find(spec.eog_ids.begin(), spec.eog_ids.end(), spec.eos_id) == spec.eog_ids.end()) {
    spec.eog_ids.push_back(spec.eos_id);
  }
  for (int32_t id : spec.eog_ids) {
    if (id < 0 || id >= n) return make_error(ErrorCode::kCorruptFile, "end-of-generation id {} outside the vocabulary", id);
  }
  std::sort(spec.eog_ids.begin(), spec.eog_ids.end());
  spec.eog_ids.erase(std::unique(spec.eog_ids.begin(), spec.eog_ids.end()), spec.eog_ids.end());
  if (spec.algorithm == Algorithm::kSentencePieceBpe && !spec.scores.empty() && spec.scores.size() != spec.tokens.size()) {
    return make_error(ErrorCode::kCorruptFile, "scores ({}) and tokens ({}) differ in count", spec.scores.size(),
                      spec.tokens.size());
  }
  return BpeTokenizer::build(std::move(spec));
}

bool Tokenizer::is_eog(int32_t id) const {
  const std::vector<int32_t>& eog = spec().eog_ids;
  return std::binary_search(eog.begin(), eog.end(), id);
}

bool Tokenizer::is_special(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return false;
  const TokenType t = spec().types[id];
  return t == TokenType::kControl || t == TokenType::kUserDefined;
}

}  // namespace keel::tokenizer
