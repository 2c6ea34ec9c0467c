#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include <string>

namespace keel::tokenizer {

const char* const kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kDigitsIndividual = R"(\p{N})";
constexpr const char* kNewline = "[\r\n]";
constexpr const char* kCjkDeepseek = "[一-龥ࠀ-一가-퟿]+";
// DeepSeek LLM's "letters" class: Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, ... as its
// tokenizer.json lists them.
constexpr const char* kDeepseekLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\\x{1F7D}ᾀ-ᾴᾶ-ᾼ\\x{1FBE}ῂ-ῄῆ-ῌ\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\\x{2126}ℨ\\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
constexpr const char* kDeepseekPunct = "\\s?[!-/:-~！-／：-～‘-‟　-。]+";
constexpr const char* kDeepseekV3Cjk = "[一-龥぀-ゟ゠-ヿ]+";
constexpr const char* kDeepseekV3Main =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

std::vector<PreTokenizeStep> steps(std::initializer_list<const char*> patterns) {
  std::vector<PreTokenizeStep> out;
  for (const char* p : patterns) out.push_back(PreTokenizeStep{.regex = p});
  return out;
}

// HF tokenizers' regexes (Oniguruma) and Rust's char::is_whitespace count U+0085 (NEL) as white
// space; PCRE2's \s under PCRE2_UCP does not. Widen \s and \S so both engines agree.
std::string widen_whitespace(std::string_view p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      if (e == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (e == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

Result<std::vector<PreTokenizeStep>> pre_steps_for(std::string_view pre) {
  if (pre == "gpt-2" || pre == "gpt2" || pre == "default" || pre == "starcoder" || pre == "refact" ||
      pre == "mpt" || pre == "olmo" || pre == "jais") {
    return steps({kGpt2Regex});
  }
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "dbrx" || pre == "smaug-bpe" ||
      pre == "falcon3" || pre == "pixtral") {
    return steps({kLlama3Regex});
  }
  if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "stablelm2" || pre == "megrez") {
    return steps({kQwen2Regex});
  }
  if (pre == "smollm") return steps({kDigitsIndividual, kGpt2Regex});
  if (pre == "deepseek-llm") {
    return steps({kNewline, kDeepseekLetters, kDeepseekPunct, "\\s+$", kCjkDeepseek, kDigitsIndividual});
  }
  if (pre == "deepseek-coder") {
    return steps({kNewline, "\\s?\\p{L}+", "\\s?\\p{P}+", kCjkDeepseek, kDigitsIndividual});
  }
  if (pre == "deepseek-v3") return steps({"\\p{N}{1,3}", kDeepseekV3Cjk, kDeepseekV3Main});
  return make_error(ErrorCode::kUnsupported, "unsupported pre-tokenizer '{}' (tokenizer.ggml.pre)", pre);
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Result<PreTokenizer> PreTokenizer::create(const std::vector<PreTokenizeStep>& steps) {
  PreTokenizer pt;
  for (const PreTokenizeStep& step : steps) {
    const std::string pattern = widen_whitespace(step.regex);
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    auto compiled = std::make_shared<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
    if (compiled->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return make_error(ErrorCode::kInvalidArgument, "pre-tokenizer regex '{}' at offset {}: {}", step.regex,
                        static_cast<size_t>(err_offset), reinterpret_cast<const char*>(msg));
    }
    // JIT is an optimisation only: without it (unsupported CPU), pcre2_match interprets.
    (void)pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);
    pt.steps_.push_back(std::move(compiled));
  }
  return pt;
}

namespace {

// Per-thread match state: a match context with a JIT stack large enough for long inputs.
struct MatchState {
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  pcre2_match_data* data = pcre2_match_data_create(4, nullptr);
  MatchState() {
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

// Splits one piece on the matches of `code`, keeping matches and the gaps between them.
void split_isolated(pcre2_code* code, std::string_view piece, std::vector<std::string_view>& out) {
  MatchState& st = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
  size_t pos = 0;
  size_t emitted = 0;
  while (pos < piece.size()) {
    const int rc = pcre2_match(code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc < 0) break;  // no further match (or a resource limit): the rest stays one piece
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t start = ov[0];
    const size_t end = ov[1];
    if (end == start) {  // empty match: step one character and look again
      pos = start + 1;
      while (pos < piece.size() && (static_cast<uint8_t>(piece[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (start > emitted) out.push_back(piece.substr(emitted, start - emitted));
    out.push_back(piece.substr(start, end - start));
    emitted = end;
    pos = end;
  }
  if (emitted < piece.size()) out.push_back(piece.substr(emitted));
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  const size_t first = out.size();
  if (text.empty()) return;
  out.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& step : steps_) {
    next.clear();
    for (size_t i = first; i < out.size(); ++i) split_isolated(step->code, out[i], next);
    out.resize(first);
    out.insert(out.end(), next.begin(), next.end());
  }
}

}  // namespace keel::tokenizer
