// leading_prompt_tokens (server/prompt.h), what keel router's prefix keys come from: the head of a long
// prompt's encoding, without encoding all of it, must be a prefix of the whole encoding (a key that
// differs from the replica's tokens would break the match there). Checked on the default model's
// byte-level BPE vocabulary and on llama's SentencePiece one (the tokenizers themselves are checked
// against HF tokenizers in tests/unit/tokenizer/golden_test.cc).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/prompt.h"
#include "unit/tokenizer/tokenizer_test_util.h"

namespace keel::server {
namespace {

std::string repeat(std::string_view unit, size_t bytes) {
  std::string s;
  while (s.size() < bytes) s += unit;
  return s;
}

void expect_head_of_whole(const tokenizer::Tokenizer& tok, const std::string& text,
                          const tokenizer::EncodeOptions& opts, size_t max_tokens, size_t at_least) {
  const auto whole = tok.encode(text, opts);
  const auto head = leading_prompt_tokens(tok, text, opts, max_tokens);
  ASSERT_LE(head.size(), max_tokens);
  ASSERT_GE(head.size(), at_least) << "whole " << whole.size();
  ASSERT_LE(head.size(), whole.size());
  for (size_t i = 0; i < head.size(); ++i) ASSERT_EQ(head[i], whole[i]) << "token " << i << " of " << head.size();
}

class PromptHead : public ::testing::TestWithParam<const char*> {};

TEST_P(PromptHead, IsAPrefixOfTheWholeEncoding) {
  auto tok = tokenizer::test::load_gguf(GetParam());
  ASSERT_NE(tok, nullptr);
  for (const auto& opts : {kChatEncode, kTextEncode}) {
    // English: ~4-5 bytes a token, so the 8-byte budget holds about twice max_tokens.
    const std::string english = repeat("The quick brown fox jumps over the lazy dog, then naps. ", 200'000);
    expect_head_of_whole(*tok, english, opts, 1000, 1000);
    // Words of 8 bytes a token, shifted by 2 bytes: the budget cuts inside a word, whose last tokens
    // differ from the whole encoding's; they must be dropped.
    const std::string words = "Hi" + repeat(" example", 100'000);
    expect_head_of_whole(*tok, words, opts, 1000, 900);
    // Multi-byte characters: the cut must land on a character's first byte.
    const std::string utf8 = repeat("héllo wörld — 日本語のテキスト ", 100'000);
    for (size_t n : {997, 1000, 1003}) expect_head_of_whole(*tok, utf8, opts, n, n / 2);
    // Special tokens written in the text (parsed): a cut inside one must not leave its pieces.
    const std::string chat = repeat("<|im_start|>user\nhi<|im_end|>\n", 100'000);
    for (size_t n : {500, 501, 502, 503}) expect_head_of_whole(*tok, chat, opts, n, n / 4);
    // Tokens of more than 8 bytes (one special token each, or its pieces where the vocabulary has no
    // such token): the budget holds fewer than max_tokens, so the cut's own tail is what is left.
    const std::string specials = repeat("<|im_start|><|im_end|>", 100'000);
    for (size_t n : {500, 501, 502, 503}) expect_head_of_whole(*tok, specials, opts, n, n / 4);
    // Shorter than the budget: the whole encoding, cut to max_tokens.
    const std::string short_text = "Hello there, how are you today?";
    const auto whole = tok->encode(short_text, opts);
    EXPECT_EQ(leading_prompt_tokens(*tok, short_text, opts, 1000), whole);
    EXPECT_EQ(leading_prompt_tokens(*tok, short_text, opts, 3), std::vector<int32_t>(whole.begin(), whole.begin() + 3));
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, PromptHead, ::testing::Values("smollm", "llama-spm"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace keel::server
