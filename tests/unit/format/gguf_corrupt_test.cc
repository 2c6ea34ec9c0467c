// Real GGUF files cut short at many offsets and with flipped header/metadata/tensor-info bytes:
// the reader must return a Status (kCorruptFile for truncation), never crash or read out of bounds
// (the fuzz build runs the same parser under ASan: tests/fuzz/gguf_fuzz.cc).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/mapped_file.h"
#include "common/test_paths.h"
#include "format/gguf.h"

namespace keel::format {
namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  Result<MappedFile> f = MappedFile::open(path);
  EXPECT_TRUE(f.ok()) << path << " is missing: run scripts/fetch_model.sh and scripts/fetch_test_data.sh";
  if (!f.ok()) return {};
  return {f->bytes().begin(), f->bytes().end()};
}

// Parses and, when the parse succeeds, checks that every view lies inside the bytes.
bool parses_in_bounds(std::span<const uint8_t> bytes) {
  Result<GgufFile> f = GgufFile::parse(bytes);
  if (!f.ok()) {
    EXPECT_FALSE(f.status().message().empty());
    return false;
  }
  for (const GgufTensorInfo& t : f->tensors()) {
    const auto* p = static_cast<const uint8_t*>(f->tensor_view(t).data);
    EXPECT_TRUE(p >= bytes.data() && p + t.size_bytes <= bytes.data() + bytes.size()) << t.name;
  }
  return true;
}

// Truncation offsets: every byte of the first 400 (header, first keys), then `n_spread` spread
// evenly over the file.
std::vector<size_t> cut_points(size_t size, size_t n_spread) {
  std::vector<size_t> cuts;
  for (size_t i = 0; i < std::min<size_t>(400, size); ++i) cuts.push_back(i);
  for (size_t i = 1; i <= n_spread; ++i) cuts.push_back(size - size * i / (n_spread + 1));
  cuts.push_back(size - 1);
  return cuts;
}

TEST(GgufCorrupt, TruncatedVocabFilesFail) {
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-aquila.gguf", "ggml-vocab-bert-bge.gguf"}) {
    const std::vector<uint8_t> bytes = read_all(test::llamacpp_vocab_dir() + "/" + name);
    ASSERT_FALSE(bytes.empty()) << name;
    ASSERT_TRUE(parses_in_bounds(bytes)) << name;
    for (size_t cut : cut_points(bytes.size(), 60)) {
      Result<GgufFile> f = GgufFile::parse(std::span(bytes).first(cut));
      ASSERT_FALSE(f.ok()) << name << " cut at " << cut;
      EXPECT_EQ(f.status().code(), ErrorCode::kCorruptFile)
          << name << " cut at " << cut << ": " << f.status().to_string();
    }
  }
}

TEST(GgufCorrupt, TruncatedModelFails) {
  Result<MappedFile> mapped = MappedFile::open(test::default_model_path());
  ASSERT_TRUE(mapped.ok()) << mapped.status().to_string() << ": run scripts/fetch_model.sh";
  const std::span<const uint8_t> bytes = mapped->bytes();
  for (size_t cut : cut_points(bytes.size(), 60)) {
    Result<GgufFile> f = GgufFile::parse(bytes.first(cut));
    ASSERT_FALSE(f.ok()) << "cut at " << cut;
    EXPECT_EQ(f.status().code(), ErrorCode::kCorruptFile) << "cut at " << cut << ": " << f.status().to_string();
  }
}

TEST(GgufCorrupt, FlippedBytesNeverCrash) {
  std::vector<uint8_t> bytes = read_all(test::llamacpp_vocab_dir() + "/ggml-vocab-llama-spm.gguf");
  ASSERT_FALSE(bytes.empty());
  std::mt19937_64 rng(1234);
  int n_ok = 0;
  int n_failed = 0;
  // Every byte of the header and first keys, each with a few masks; then random spots anywhere.
  for (size_t pos = 0; pos < 250; ++pos) {
    for (uint8_t mask : {0x01, 0xff}) {
      bytes[pos] ^= mask;
      (parses_in_bounds(bytes) ? n_ok : n_failed)++;
      bytes[pos] ^= mask;
    }
  }
  for (int i = 0; i < 120; ++i) {
    const size_t pos = rng() % bytes.size();
    const auto mask = static_cast<uint8_t>(1u << (rng() % 8));
    bytes[pos] ^= mask;
    (parses_in_bounds(bytes) ? n_ok : n_failed)++;
    bytes[pos] ^= mask;
  }
  EXPECT_GT(n_failed, 100);  // most header flips are caught...
  EXPECT_GT(n_ok, 100);      // ...and flips inside string payloads are legal files
}

TEST(GgufCorrupt, FlippedTensorInfoBytesNeverCrash) {
  std::vector<uint8_t> bytes = read_all(test::default_model_path());
  ASSERT_FALSE(bytes.empty());
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  // The tensor infos sit just before the data section (aligned to 32 bytes).
  const size_t data_start = static_cast<size_t>(f->data_section().data() - bytes.data());
  std::mt19937_64 rng(99);
  int n_failed = 0;
  for (int i = 0; i < 80; ++i) {
    const size_t pos = data_start - 1 - rng() % 16000;
    const auto mask = static_cast<uint8_t>(1u << (rng() % 8));
    bytes[pos] ^= mask;
    n_failed += parses_in_bounds(bytes) ? 0 : 1;
    bytes[pos] ^= mask;
  }
  EXPECT_GT(n_failed, 10);
}

}  // namespace
}  // namespace keel::format
