// The one Tokenizer implementation: byte-level BPE (GPT-2 alphabet, regex pre-tokenizer, merges by
// rank) and SentencePiece-style BPE (U+2581 for space, merges from scores, <0xXX> byte fallback),
// both behind added-token matching. Made by Tokenizer::create; immutable afterwards except for its
// internally locked word cache, so any thread may encode/decode concurrently.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/word_cache.h"

namespace keel::tokenizer {

class BpeTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> build(VocabSpec spec);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opts) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override;
  const std::string& token_bytes(int32_t id) const override;
  const VocabSpec& spec() const override { return spec_; }

 private:
  explicit BpeTokenizer(VocabSpec spec) : spec_(std::move(spec)) {}
  Status load_merges();
  void derive_spm_merges();
  void encode_byte_level(std::string_view text, std::vector<int32_t>& out) const;
  void encode_spm(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  void encode_spm_word(std::string_view word, std::vector<int32_t>& out) const;
  int32_t lookup(std::string_view token) const;

  VocabSpec spec_;
  std::unordered_map<std::string, int32_t> vocab_;  // token as stored -> id
  std::vector<std::string> bytes_;                  // [n_vocab] what each token decodes to
  std::array<int32_t, 256> byte_ids_{};             // byte-level: one-char token per byte; SPM: <0xXX>
  BpeMerges merges_;
  std::optional<PreTokenizer> pre_;
  AddedTokenMatcher added_;
  WordCache cache_;
};

}  // namespace keel::tokenizer
