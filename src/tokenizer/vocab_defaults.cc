#include "tokenizer/vocab_defaults.h"

#include <array>

namespace keel::tokenizer {

void add_named_eog_ids(VocabSpec& spec) {
  static constexpr std::array<std::string_view, 12> kEogTexts = {
      "<|eot_id|>", "<|im_end|>",    "<|end|>",   "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
      "<EOT>",      "_<EOT>",        "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
      "<|return|>"};
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    const TokenType t = i < spec.types.size() ? spec.types[i] : TokenType::kNormal;
    if (t != TokenType::kControl && t != TokenType::kUserDefined) continue;
    for (std::string_view text : kEogTexts) {
      if (spec.tokens[i] == text) spec.eog_ids.push_back(static_cast<int32_t>(i));
    }
  }
}

int32_t find_token(const VocabSpec& spec, std::string_view text) {
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace keel::tokenizer
