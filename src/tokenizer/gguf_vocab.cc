// Tokenizer::from_gguf: a VocabSpec from llama.cpp's tokenizer.ggml.* metadata keys.
#include <algorithm>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_defaults.h"

namespace keel::tokenizer {

namespace {

// An optional key: absent is `fallback`; present with the wrong type is an error.
Result<int64_t> optional_int(const format::GgufFile& f, std::string_view key, int64_t fallback) {
  if (!f.has(key)) return fallback;
  return f.get_int(key);
}

Result<bool> optional_bool(const format::GgufFile& f, std::string_view key, bool fallback) {
  if (!f.has(key)) return fallback;
  return f.get_bool(key);
}

Result<int32_t> token_id(const format::GgufFile& f, std::string_view key, size_t n_vocab) {
  KEEL_ASSIGN_OR_RETURN(int64_t id, optional_int(f, key, -1));
  // Some converters write ids past the vocabulary for "none"; treat them as absent.
  if (id < 0 || id >= static_cast<int64_t>(n_vocab)) return -1;
  return static_cast<int32_t>(id);
}

bool is_llama3_family(std::string_view pre) {
  return pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "smaug-bpe" || pre == "dbrx";
}

Status read_ids(const format::GgufFile& f, VocabSpec& spec) {
  const size_t n = spec.tokens.size();
  KEEL_ASSIGN_OR_RETURN(spec.bos_id, token_id(f, "tokenizer.ggml.bos_token_id", n));
  KEEL_ASSIGN_OR_RETURN(spec.eos_id, token_id(f, "tokenizer.ggml.eos_token_id", n));
  KEEL_ASSIGN_OR_RETURN(spec.unk_id, token_id(f, "tokenizer.ggml.unknown_token_id", n));
  KEEL_ASSIGN_OR_RETURN(spec.pad_id, token_id(f, "tokenizer.ggml.padding_token_id", n));
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    KEEL_ASSIGN_OR_RETURN(int32_t id, token_id(f, key, n));
    if (id >= 0) spec.eog_ids.push_back(id);
  }
  return Status::ok_status();
}

Status read_vocab(const format::GgufFile& f, VocabSpec& spec) {
  KEEL_ASSIGN_OR_RETURN(spec.tokens, f.get_string_array("tokenizer.ggml.tokens"));
  const size_t n = spec.tokens.size();
  if (f.has("tokenizer.ggml.token_type")) {
    KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> types, f.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != n) return make_error(ErrorCode::kCorruptFile, "token_type has {} entries for {} tokens", types.size(), n);
    spec.types.reserve(n);
    for (int64_t t : types) {
      spec.types.push_back(t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kNormal);
    }
  } else {
    spec.types.assign(n, TokenType::kNormal);
  }
  if (f.has("tokenizer.ggml.scores")) {
    KEEL_ASSIGN_OR_RETURN(spec.scores, f.get_float_array("tokenizer.ggml.scores"));
    if (spec.scores.size() != n) return make_error(ErrorCode::kCorruptFile, "scores has {} entries for {} tokens", spec.scores.size(), n);
  }
  if (f.has("tokenizer.ggml.merges")) {
    KEEL_ASSIGN_OR_RETURN(spec.merges, f.get_string_array("tokenizer.ggml.merges"));
  }
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const format::GgufFile& f) {
  KEEL_ASSIGN_OR_RETURN(std::string model, f.get_string("tokenizer.ggml.model"));
  VocabSpec spec;
  if (model == "gpt2") {
    spec.algorithm = Algorithm::kByteLevelBpe;
  } else if (model == "llama") {
    spec.algorithm = Algorithm::kSentencePieceBpe;
  } else {
    return make_error(ErrorCode::kUnsupported, "unsupported tokenizer model '{}' (tokenizer.ggml.model)", model);
  }
  std::string arch;
  if (f.has("general.architecture")) {
    KEEL_ASSIGN_OR_RETURN(arch, f.get_string("general.architecture"));
  }
  if (f.has("tokenizer.ggml.pre")) {
    KEEL_ASSIGN_OR_RETURN(spec.pre_tokenizer, f.get_string("tokenizer.ggml.pre"));
  } else {
    spec.pre_tokenizer = "default";
  }
  KEEL_RETURN_IF_ERROR(read_vocab(f, spec));
  if (spec.algorithm == Algorithm::kByteLevelBpe && spec.merges.empty()) {
    return make_error(ErrorCode::kCorruptFile, "byte-level BPE vocabulary without tokenizer.ggml.merges");
  }
  KEEL_RETURN_IF_ERROR(read_ids(f, spec));

  const bool spm = spec.algorithm == Algorithm::kSentencePieceBpe;
  // Defaults as llama.cpp applies them: SentencePiece and Llama 3 vocabularies start with BOS.
  KEEL_ASSIGN_OR_RETURN(spec.add_bos, optional_bool(f, "tokenizer.ggml.add_bos_token", spm || is_llama3_family(spec.pre_tokenizer)));
  KEEL_ASSIGN_OR_RETURN(spec.add_eos, optional_bool(f, "tokenizer.ggml.add_eos_token", false));
  KEEL_ASSIGN_OR_RETURN(spec.add_space_prefix, optional_bool(f, "tokenizer.ggml.add_space_prefix", spm));
  if (spm) {
    spec.space_prefix_every_segment = arch == "phi3";  // as transformers' GGUF converter builds Phi-3
    spec.decode_strip_leading_spaces = spec.add_space_prefix ? 1 : 0;
  } else {
    spec.ignore_merges = is_llama3_family(spec.pre_tokenizer);  // Llama 3's tokenizer.json sets it
  }
  if (f.has("tokenizer.chat_template")) {
    KEEL_ASSIGN_OR_RETURN(spec.chat_template, f.get_string("tokenizer.chat_template"));
  }
  add_named_eog_ids(spec);
  return create(std::move(spec));
}

}  // namespace keel::tokenizer
