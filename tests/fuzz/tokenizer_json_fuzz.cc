// Fuzzes Tokenizer::from_hf_json on arbitrary bytes (must return a Status, never crash), and
// encode/decode/stream of arbitrary bytes on small byte-level and SentencePiece vocabularies
// (decode must give back the lossy-UTF-8 input; the stream must equal the decode).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

using keel::tokenizer::Tokenizer;

std::unique_ptr<Tokenizer> small_byte_level() {
  keel::tokenizer::VocabSpec spec;
  spec.pre_tokenizer = "llama-bpe";
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(keel::tokenizer::to_byte_level(std::string(1, static_cast<char>(b))));
  for (const char* m : {"h e", "l l", "he ll", "Ġ t", "Ġt h", "i n", "Ġ a"}) {
    const std::string s = m;
    spec.merges.push_back(s);
    spec.tokens.push_back(s.substr(0, s.find(' ')) + s.substr(s.find(' ') + 1));
  }
  spec.types.assign(spec.tokens.size(), keel::tokenizer::TokenType::kNormal);
  spec.tokens.push_back("<|end|>");
  spec.types.push_back(keel::tokenizer::TokenType::kControl);
  spec.tokens.push_back("<think>");
  spec.types.push_back(keel::tokenizer::TokenType::kUserDefined);
  auto tok = Tokenizer::create(spec);
  if (!tok.ok()) std::abort();
  return std::move(tok).value();
}

std::unique_ptr<Tokenizer> small_spm() {
  keel::tokenizer::VocabSpec spec;
  spec.algorithm = keel::tokenizer::Algorithm::kSentencePieceBpe;
  spec.add_space_prefix = true;
  spec.decode_strip_leading_spaces = 1;
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.types = {keel::tokenizer::TokenType::kUnknown, keel::tokenizer::TokenType::kControl, keel::tokenizer::TokenType::kControl};
  spec.unk_id = 0;
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    spec.tokens.push_back(buf);
    spec.types.push_back(keel::tokenizer::TokenType::kByte);
  }
  for (const char* t : {"\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "a", "\xE2\x96\x81" "ab"}) {
    spec.tokens.push_back(t);
    spec.types.push_back(keel::tokenizer::TokenType::kNormal);
  }
  spec.scores.assign(spec.tokens.size(), 0.0f);
  for (size_t i = 0; i < spec.scores.size(); ++i) spec.scores[i] = -static_cast<float>(i);
  auto tok = Tokenizer::create(spec);
  if (!tok.ok()) std::abort();
  return std::move(tok).value();
}

void check_round_trip(const Tokenizer& tok, std::string_view text, bool spm) {
  const auto ids = tok.encode(text, {.add_special = false, .parse_special = true});
  const std::string decoded = tok.decode(ids, false);
  const std::string expected = keel::tokenizer::utf8_lossy(text);
  // SPM turns the text into U+2581-spaced form and strips the one leading space it added.
  if (!spm && decoded != expected) std::abort();
  keel::tokenizer::IncrementalDetokenizer detok(tok, false);
  std::string streamed;
  for (int32_t id : ids) streamed += detok.push(id);
  streamed += detok.flush();
  if (streamed != keel::tokenizer::utf8_lossy(decoded)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<Tokenizer> byte_level = small_byte_level();
  static const std::unique_ptr<Tokenizer> spm = small_spm();
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto tok = Tokenizer::from_hf_json(rest, "");
      if (tok.ok()) (void)(*tok)->encode(std::string_view("hello world 123"), {});
      break;
    }
    case 1: check_round_trip(*byte_level, rest, false); break;
    default: check_round_trip(*spm, rest, true); break;
  }
  return 0;
}
