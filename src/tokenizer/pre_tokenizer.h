// Pre-tokenizers: split text into the pieces BPE merges within, as a sequence of steps applied to
// every piece in turn (HF tokenizers' Sequence of Split(..., "isolated") / Digits / ByteLevel).
// Regexes run on PCRE2 with Unicode properties (JIT where available). Built once per tokenizer by
// Tokenizer::create; immutable afterwards, so any thread may split concurrently.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace keel::tokenizer {

// The steps of a GGUF `tokenizer.ggml.pre` name; kUnsupported (naming it) for names keel lacks.
Result<std::vector<PreTokenizeStep>> pre_steps_for(std::string_view gguf_pre);

// GPT-2's regex, also HF's ByteLevel(use_regex=true) split.
extern const char* const kGpt2Regex;

class PreTokenizer {
 public:
  // Compiles every regex; a pattern PCRE2 rejects is kInvalidArgument with PCRE2's message.
  static Result<PreTokenizer> create(const std::vector<PreTokenizeStep>& steps);

  // Appends the pieces of `text` (valid UTF-8) to `out`, as views into `text`, in order; the
  // pieces concatenate back to `text`.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Compiled;
  std::vector<std::shared_ptr<const Compiled>> steps_;
};

}  // namespace keel::tokenizer
