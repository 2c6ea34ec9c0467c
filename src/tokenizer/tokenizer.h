// Tokenizers: byte-level BPE (GPT-2 / Llama-3 / Qwen / SmolLM / DeepSeek style, pre-tokenizer regex
// chosen per model) and SentencePiece BPE (Llama-2 / Mistral style). Built from a VocabSpec, which
// comes from GGUF metadata (tokenizer/gguf_vocab.cc) or an HF tokenizer.json (tokenizer/hf_json.cc).
// Immutable after construction: any thread may encode/decode concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace keel::format {
class GgufFile;
}

namespace keel::tokenizer {

enum class Algorithm { kByteLevelBpe, kSentencePieceBpe };

// GGUF's token_type numbering.
enum class TokenType : uint8_t { kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// One pre-tokenizer step: split every piece on the regex's matches, keeping matches and the text
// between them as pieces (HF's Split(behavior="isolated"); Digits is "\\p{N}" or "\\p{N}+").
struct PreTokenizeStep {
  std::string regex;
};

// An added token's whitespace handling from tokenizer.json (GGUF has none).
struct AddedTokenStrip {
  int32_t id = -1;
  bool lstrip = false;  // absorb white space before the token
  bool rstrip = false;  // absorb white space after it
};

struct VocabSpec {
  Algorithm algorithm = Algorithm::kByteLevelBpe;
  std::string pre_tokenizer;          // GGUF tokenizer.ggml.pre name: "llama-bpe", "qwen2", "smollm", "gpt-2", ...
  std::vector<std::string> tokens;    // as stored (byte-level BPE: GPT-2 byte-to-unicode form; SPM: with U+2581)
  std::vector<float> scores;          // SPM merge priorities (empty for BPE)
  std::vector<TokenType> types;       // [n_vocab]
  std::vector<std::string> merges;    // BPE merges "left right", highest priority first
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  std::vector<int32_t> eog_ids;       // every end-of-generation token (eos, <|eot_id|>, <|im_end|>, ...)
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;      // SPM: prepend U+2581 to the text
  std::string chat_template;          // Jinja source, if the file carries one

  // Details a tokenizer.json states and GGUF implies (from_gguf derives them from the pre name).
  std::vector<PreTokenizeStep> pre_steps;  // when non-empty, used instead of `pre_tokenizer`
  bool ignore_merges = false;              // BPE: a pre-token already in the vocab is one token (Llama 3)
  bool space_prefix_every_segment = false; // SPM: HF's Prepend normalizer (every text segment gets U+2581)
                                           // instead of Metaspace prepend_scheme="first"
  bool spm_split_on_space = false;         // SPM: Metaspace split=true (words start at each U+2581)
  bool byte_fallback = true;               // SPM: unknown characters become <0xXX> tokens
  int32_t decode_strip_leading_spaces = 0; // SPM decode: spaces stripped from the start (HF Strip decoder)
  std::vector<AddedTokenStrip> added_strips;
};

struct EncodeOptions {
  bool add_special = true;    // add BOS/EOS as the vocabulary asks
  bool parse_special = true;  // recognise special/added tokens written in the text
};

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(VocabSpec spec);
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const format::GgufFile& file);
  // tokenizer.json text, plus tokenizer_config.json text (may be empty) for bos/eos/chat_template.
  static Result<std::unique_ptr<Tokenizer>> from_hf_json(std::string_view tokenizer_json,
                                                         std::string_view tokenizer_config_json);

  virtual ~Tokenizer() = default;

  // Invalid UTF-8 in `text` is first replaced by U+FFFD (utf8_lossy): HF only sees text as str.
  virtual std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opts) const = 0;
  // Concatenated bytes of the tokens (control tokens included unless skip_special; user-defined
  // tokens like <think> always stay, as in HF). May contain invalid UTF-8 if the ids split a
  // character (HF replaces those with U+FFFD: utf8_lossy of this); use IncrementalDetokenizer for streams.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special) const = 0;
  // The raw bytes one token stands for (what decode of that one id gives, specials included).
  virtual const std::string& token_bytes(int32_t id) const = 0;

  virtual const VocabSpec& spec() const = 0;
  int32_t n_vocab() const { return static_cast<int32_t>(spec().tokens.size()); }
  bool is_eog(int32_t id) const;
  bool is_special(int32_t id) const;  // control / user-defined tokens
};

// Streams text for a growing token sequence, emitting only complete UTF-8 (a character split over
// tokens waits for its last byte; invalid bytes become U+FFFD once they cannot complete). One per
// stream; not thread-safe.
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok, bool skip_special = true)
      : tok_(tok), skip_special_(skip_special) {}
  // Text that became final with this token (possibly empty).
  std::string push(int32_t id);
  // Remaining bytes at end of stream (an incomplete tail becomes U+FFFD).
  std::string flush();

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::string pending_;
  int32_t strip_left_ = -1;  // leading spaces still to strip (SPM); -1 until the first token

};

}  // namespace keel::tokenizer
