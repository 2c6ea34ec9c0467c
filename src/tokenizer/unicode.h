// UTF-8 helpers and GPT-2's byte-to-unicode alphabet, shared by the tokenizers, the decoders and
// the incremental detokenizer. Pure functions over bytes: any thread may call them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keel::tokenizer {

// Appends the UTF-8 encoding of code point `cp` (must be <= 0x10FFFF).
void append_utf8(std::string& out, uint32_t cp);

// Length in bytes of the valid UTF-8 sequence starting at s[i], or 0 if the bytes there are not a
// complete valid sequence (overlong forms, surrogates and values past U+10FFFF are invalid).
size_t utf8_valid_len(std::string_view s, size_t i);

bool is_valid_utf8(std::string_view s);

// Replaces each maximal invalid subsequence with U+FFFD, as Rust's String::from_utf8_lossy and
// Python's bytes.decode("utf-8", "replace") do (the behaviour of HF tokenizers' decoders).
std::string utf8_lossy(std::string_view s);

// Number of bytes at the end of `s` that form the start of a valid sequence still waiting for
// continuation bytes (0..3). Those bytes may complete with later input; everything before them is final.
size_t utf8_incomplete_tail(std::string_view s);

// GPT-2's reversible byte <-> printable character mapping used by byte-level BPE vocabularies.
struct ByteAlphabet {
  std::array<std::string, 256> byte_to_char;  // UTF-8 of the character standing for each byte
  std::array<int16_t, 324> char_to_byte;      // code point -> byte, -1 where not in the alphabet
};
const ByteAlphabet& byte_alphabet();

// The byte-level spelling of raw bytes ("Ġhello" for " hello").
std::string to_byte_level(std::string_view bytes);
// Raw bytes of a byte-level token, as HF's ByteLevel decoder does: if every character is in the
// alphabet, the bytes they stand for; otherwise the token's own UTF-8 (added tokens like "<｜end｜>").
std::string from_byte_level(std::string_view token);

}  // namespace keel::tokenizer
