#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <tuple>

#include "base/check.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581

bool is_added_type(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

bool is_skipped_type(TokenType t) { return t == TokenType::kControl || t == TokenType::kUnknown; }

// "<0x41>" -> 0x41, or -1.
int parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int v = 0;
  for (char c : t.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

size_t char_count(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

int32_t BpeTokenizer::lookup(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  return it == vocab_.end() ? -1 : it->second;
}

Result<std::unique_ptr<Tokenizer>> BpeTokenizer::build(VocabSpec spec) {
  const size_t n = spec.tokens.size();
  if (n == 0) return make_error(ErrorCode::kCorruptFile, "tokenizer has an empty vocabulary");
  if (spec.types.empty()) spec.types.assign(n, TokenType::kNormal);
  if (spec.types.size() != n) {
    return make_error(ErrorCode::kCorruptFile, "token types ({}) and tokens ({}) differ in count", spec.types.size(), n);
  }
  for (int32_t id : {spec.bos_id, spec.eos_id, spec.unk_id, spec.pad_id}) {
    if (id >= static_cast<int32_t>(n)) return make_error(ErrorCode::kCorruptFile, "special token id {} >= n_vocab {}", id, n);
  }
  auto tok = std::unique_ptr<BpeTokenizer>(new BpeTokenizer(std::move(spec)));
  const VocabSpec& s = tok->spec_;
  const bool byte_level = s.algorithm == Algorithm::kByteLevelBpe;

  tok->bytes_.resize(n);
  tok->byte_ids_.fill(-1);
  tok->vocab_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = s.tokens[i];
    const auto id = static_cast<int32_t>(i);
    tok->vocab_.insert_or_assign(t, id);
    if (byte_level) {
      tok->bytes_[i] = from_byte_level(t);
    } else if (s.types[i] == TokenType::kByte && parse_byte_token(t) >= 0) {
      tok->bytes_[i] = std::string(1, static_cast<char>(parse_byte_token(t)));
    } else {
      tok->bytes_[i] = replace_all(t, kSpmSpace, " ");
    }
  }
  for (int b = 0; b < 256; ++b) {
    if (byte_level) {
      tok->byte_ids_[b] = tok->lookup(byte_alphabet().byte_to_char[b]);
    } else {
      tok->byte_ids_[b] = tok->lookup(fmt::format("<0x{:02X}>", b));
    }
  }

  KEEL_RETURN_IF_ERROR(tok->load_merges());
  if (byte_level) {
    std::vector<PreTokenizeStep> steps = s.pre_steps;
    if (steps.empty()) {
      KEEL_ASSIGN_OR_RETURN(steps, pre_steps_for(s.pre_tokenizer));
    }
    KEEL_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::create(steps));
    tok->pre_.emplace(std::move(pre));
  }

  for (size_t i = 0; i < n; ++i) {
    if (!is_added_type(s.types[i])) continue;
    bool lstrip = false;
    bool rstrip = false;
    for (const AddedTokenStrip& st : s.added_strips) {
      if (st.id == static_cast<int32_t>(i)) std::tie(lstrip, rstrip) = std::pair(st.lstrip, st.rstrip);
    }
    tok->added_.add(s.tokens[i], static_cast<int32_t>(i), s.types[i] != TokenType::kUserDefined, lstrip, rstrip);
  }
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Status BpeTokenizer::load_merges() {
  if (spec_.merges.empty()) {
    if (spec_.algorithm == Algorithm::kSentencePieceBpe) derive_spm_merges();
    return Status::ok_status();
  }
  for (const std::string& m : spec_.merges) {
    // Tokens may hold spaces (rare SPM vocabularies): take the split whose halves are both tokens.
    bool found = false;
    for (size_t sp = m.find(' '); sp != std::string::npos && !found; sp = m.find(' ', sp + 1)) {
      const int32_t left = lookup(std::string_view(m).substr(0, sp));
      const int32_t right = lookup(std::string_view(m).substr(sp + 1));
      if (left < 0 || right < 0) continue;
      const int32_t merged = lookup(m.substr(0, sp) + m.substr(sp + 1));
      if (merged < 0) continue;
      merges_.add(left, right, merged);
      found = true;
    }
    if (!found) return make_error(ErrorCode::kCorruptFile, "merge '{}' names tokens not in the vocabulary", m);
  }
  return Status::ok_status();
}

// SentencePiece files carry scores, not merges. Rebuild merges as transformers' generate_merges
// does (the reference HF tokenizer): every split of every token into two tokens, ordered by the
// merged token's score (high first), then longer left part, longer right part, token order, ids.
void BpeTokenizer::derive_spm_merges() {
  struct Candidate {
    float score;
    uint32_t len_left, len_right;
    int32_t token, left, right;
  };
  std::vector<Candidate> all;
  for (size_t i = 0; i < spec_.tokens.size(); ++i) {
    const std::string& t = spec_.tokens[i];
    if (lookup(t) != static_cast<int32_t>(i)) continue;  // a duplicate: the dict keeps the last id
    const float score = i < spec_.scores.size() ? spec_.scores[i] : 0.0f;
    uint32_t left_chars = 0;
    for (size_t cut = 0; cut < t.size(); ++cut) {
      if ((static_cast<uint8_t>(t[cut]) & 0xC0) == 0x80) continue;
      if (cut > 0) {
        const int32_t l = lookup(std::string_view(t).substr(0, cut));
        const int32_t r = lookup(std::string_view(t).substr(cut));
        if (l >= 0 && r >= 0) {
          all.push_back({score, left_chars, static_cast<uint32_t>(char_count(t)) - left_chars,
                         static_cast<int32_t>(i), l, r});
        }
      }
      ++left_chars;
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.len_left != b.len_left) return a.len_left > b.len_left;
    if (a.len_right != b.len_right) return a.len_right > b.len_right;
    if (a.token != b.token) return a.token < b.token;
    return std::tie(a.left, a.right) < std::tie(b.left, b.right);
  });
  for (const Candidate& c : all) merges_.add(c.left, c.right, c.token);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view raw, const EncodeOptions& opts) const {
  std::string fixed;
  std::string_view text = raw;
  if (!is_valid_utf8(raw)) {
    fixed = utf8_lossy(raw);
    text = fixed;
  }
  std::vector<int32_t> out;
  if (opts.add_special && spec_.add_bos && spec_.bos_id >= 0) out.push_back(spec_.bos_id);
  std::vector<Fragment> fragments;
  added_.split(text, opts.parse_special, fragments);
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
    } else if (spec_.algorithm == Algorithm::kByteLevelBpe) {
      encode_byte_level(f.text, out);
    } else {
      encode_spm(f.text, f.offset == 0, out);
    }
  }
  if (opts.add_special && spec_.add_eos && spec_.eos_id >= 0) out.push_back(spec_.eos_id);
  return out;
}

void BpeTokenizer::encode_byte_level(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<std::string_view> words;
  pre_->split(text, words);
  std::vector<int32_t> symbols;
  for (std::string_view word : words) {
    if (cache_.lookup(word, out)) continue;
    const size_t first = out.size();
    int32_t whole = -1;
    if (spec_.ignore_merges) whole = lookup(to_byte_level(word));
    if (whole >= 0) {
      out.push_back(whole);
    } else {
      symbols.clear();
      for (char c : word) {
        const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
        if (id >= 0) symbols.push_back(id);  // a byte the vocabulary lacks is dropped, as in HF
      }
      merges_.merge(symbols, out);
    }
    cache_.insert(word, std::span<const int32_t>(out).subspan(first));
  }
}

void BpeTokenizer::encode_spm(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string normalized = replace_all(text, " ", kSpmSpace);
  if (spec_.add_space_prefix) {
    const bool prepend = spec_.space_prefix_every_segment ||
                         (at_start && std::string_view(normalized).substr(0, kSpmSpace.size()) != kSpmSpace);
    if (prepend) normalized.insert(0, kSpmSpace);
  }
  if (!spec_.spm_split_on_space) {
    encode_spm_word(normalized, out);
    return;
  }
  size_t start = 0;
  for (size_t i = 1; i <= normalized.size(); ++i) {
    if (i == normalized.size() || normalized.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
      encode_spm_word(std::string_view(normalized).substr(start, i - start), out);
      start = i;
    }
  }
}

void BpeTokenizer::encode_spm_word(std::string_view word, std::vector<int32_t>& out) const {
  if (cache_.lookup(word, out)) return;
  const size_t first = out.size();
  std::vector<int32_t> symbols;
  bool last_unk = false;
  for (size_t i = 0; i < word.size();) {
    const size_t n = std::max<size_t>(1, utf8_valid_len(word, i));
    const int32_t id = lookup(word.substr(i, n));
    bool unknown = id < 0;
    if (id >= 0) {
      symbols.push_back(id);
    } else if (spec_.byte_fallback &&
               std::all_of(word.begin() + i, word.begin() + i + n, [&](char c) { return byte_ids_[static_cast<uint8_t>(c)] >= 0; })) {
      for (size_t k = i; k < i + n; ++k) symbols.push_back(byte_ids_[static_cast<uint8_t>(word[k])]);
      unknown = false;
    } else if (spec_.unk_id >= 0 && !last_unk) {
      symbols.push_back(spec_.unk_id);  // consecutive unknowns fuse into one (HF fuse_unk)
    }
    last_unk = unknown;
    i += n;
  }
  merges_.merge(symbols, out);
  cache_.insert(word, std::span<const int32_t>(out).subspan(first));
}

const std::string& BpeTokenizer::token_bytes(int32_t id) const {
  KEEL_CHECK(id >= 0 && id < static_cast<int32_t>(bytes_.size()), "token id {} out of range", id);
  return bytes_[id];
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= static_cast<int32_t>(bytes_.size())) continue;
    if (skip_special && is_skipped_type(spec_.types[id])) continue;
    out += bytes_[id];
  }
  int32_t strip = spec_.decode_strip_leading_spaces;
  size_t start = 0;
  while (strip-- > 0 && start < out.size() && out[start] == ' ') ++start;
  return out.substr(start);
}

}  // namespace keel::tokenizer
