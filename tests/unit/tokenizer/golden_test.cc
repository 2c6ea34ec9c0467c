// Encode/decode/stream of 10,000 generated strings per vocabulary against HF tokenizers' goldens
// (tests/golden/tokenizer/gen_tokenizer_goldens.py), for tokenizers loaded from GGUF and from the
// reference tokenizer.json alike.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace keel::tokenizer {
namespace {

using nlohmann::json;

std::string fnv1a64(const std::vector<int32_t>& ids) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (int32_t id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int k = 0; k < 4; ++k) h = (h ^ ((u >> (8 * k)) & 0xFF)) * 0x100000001B3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::string show(const std::vector<int32_t>& ids) { return fmt::format("[{}]", fmt::join(ids, ", ")); }


const std::vector<std::string>& golden_strings() {
  static const std::vector<std::string> strings = [] {
    const std::string path = keel::test::golden_dir() + "/tokenizer/strings.json";
    return json::parse(test::read_file(path)).get<std::vector<std::string>>();
  }();
  return strings;
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

void check_against_golden(const Tokenizer& tok, const std::string& label, const json& g) {
  const std::vector<std::string>& strings = golden_strings();
  ASSERT_EQ(strings.size(), g.at("hashes").size());
  const EncodeOptions plain{.add_special = false, .parse_special = true};
  const json& head = g.at("head_ids");
  const json& differs = g.at("decode_differs");
  int encode_fail = 0, decode_fail = 0, stream_fail = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::vector<int32_t> ids = tok.encode(strings[i], plain);
    if (fnv1a64(ids) != g.at("hashes")[i].get<std::string>() && ++encode_fail <= 5) {
      ADD_FAILURE() << label << " string " << i << " " << json(strings[i]).dump() << "\n  keel: " << show(ids)
                    << (i < head.size() ? "\n  HF:   " + show(head[i].get<std::vector<int32_t>>()) : std::string());
    }
    const std::string expected = differs.contains(std::to_string(i)) ? differs.at(std::to_string(i)).get<std::string>() : strings[i];
    const std::string decoded = utf8_lossy(tok.decode(ids, false));
    if (decoded != expected && ++decode_fail <= 5) {
      ADD_FAILURE() << label << " decode " << i << ": keel " << json(decoded).dump() << " HF " << json(expected).dump();
    }
    IncrementalDetokenizer detok(tok, false);
    std::string streamed;
    for (int32_t id : ids) streamed += detok.push(id);
    streamed += detok.flush();
    if (streamed != decoded && ++stream_fail <= 5) {
      ADD_FAILURE() << label << " stream " << i << ": " << json(streamed).dump() << " vs decode " << json(decoded).dump();
    }
  }
  EXPECT_EQ(encode_fail, 0) << label << ": encode mismatches of " << strings.size();
  EXPECT_EQ(decode_fail, 0) << label << ": decode mismatches";
  EXPECT_EQ(stream_fail, 0) << label << ": stream mismatches";

  int no_special_fail = 0;
  const EncodeOptions literal{.add_special = false, .parse_special = false};
  for (auto it = g.at("no_special").begin(); it != g.at("no_special").end(); ++it) {
    const std::string& s = strings[std::stoul(it.key())];
    const std::vector<int32_t> ids = tok.encode(s, literal);
    if (fnv1a64(ids) != it.value().get<std::string>() && ++no_special_fail <= 5) {
      ADD_FAILURE() << label << " parse_special=false " << it.key() << " " << json(s).dump() << " keel " << show(ids);
    }
  }
  EXPECT_EQ(no_special_fail, 0) << label;

  for (const json& inv : g.at("invalid_utf8")) {
    const std::vector<uint8_t> bytes = from_hex(inv[0].get<std::string>());
    const std::string text(bytes.begin(), bytes.end());
    EXPECT_EQ(show(tok.encode(text, plain)), show(inv[1].get<std::vector<int32_t>>())) << label << " invalid UTF-8 " << inv[0];
  }
  // HF's SentencePiece decoder (ByteFallback) turns each byte of an invalid <0xXX> run into its own
  // U+FFFD, where utf8_lossy replaces maximal invalid subsequences (docs/tokenizer.md): compare
  // character-splitting prefixes on byte-level vocabularies only.
  if (tok.spec().algorithm != Algorithm::kByteLevelBpe) return;
  for (const json& p : g.at("decode_prefixes")) {
    const auto ids = tok.encode(strings[p[0].get<size_t>()], plain);
    const std::vector<int32_t> prefix(ids.begin(), ids.begin() + p[1].get<int64_t>());
    EXPECT_EQ(utf8_lossy(tok.decode(prefix, false)), p[2].get<std::string>()) << label << " prefix of " << p[0];
  }
}

class GoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenTest, FromGgufMatchesHf) {
  const std::string name = GetParam();
  const json g = json::parse(test::read_file(keel::test::golden_dir() + "/tokenizer/" + name + ".json"));
  auto tok = test::load_gguf(name);
  ASSERT_NE(tok, nullptr);
  check_against_golden(*tok, name + " (gguf)", g);
}

TEST_P(GoldenTest, FromHfJsonMatchesHf) {
  const std::string name = GetParam();
  const json g = json::parse(test::read_file(keel::test::golden_dir() + "/tokenizer/" + name + ".json"));
  auto tok = test::load_hf_json(name);
  ASSERT_NE(tok, nullptr);
  check_against_golden(*tok, name + " (tokenizer.json)", g);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GoldenTest,
                         ::testing::Values("gpt-2", "llama-bpe", "qwen2", "smollm", "deepseek-llm", "deepseek-coder",
                                           "deepseek-v3", "llama-spm"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace keel::tokenizer
