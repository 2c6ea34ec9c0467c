// model_fingerprint: the identity KV pulls check (docs/router.md "KV pulls"). Equal files give equal
// fingerprints, a byte changed in the header, in a sampled block or in the tail gives another, and a
// dummy-weight folder is named by its config.json alone.
#include "model/fingerprint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace keel::model {
namespace {

namespace fs = std::filesystem;

class FingerprintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("keel_fingerprint_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  std::string of(const std::string& path, bool dummy = false) {
    auto f = model_fingerprint(path, dummy);
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return f.ok() ? f.value() : "";
  }
  fs::path dir_;
};

TEST_F(FingerprintTest, LargeFilesDifferInHeadSampledBlocksAndTail) {
  std::string big(16 << 20, '\0');  // 16 MiB: past the whole-file bound, so it is sampled
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) >> 7);
  const std::string base = of(write("a.gguf", big));
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(of(write("b.gguf", big)), base) << "equal files, equal fingerprints (the name is not hashed)";
  // 1 MiB + a multiple of the stride is the start of a sampled block.
  const size_t stride = ((16u << 20) - (1u << 20) - (64u << 10)) / 64;
  for (size_t at : {size_t{100}, (size_t{1} << 20) + 5 * stride + 10, big.size() - 1}) {
    std::string changed = big;
    changed[at] ^= 1;
    EXPECT_NE(of(write("c.gguf", changed)), base) << "byte " << at;
  }
  EXPECT_NE(of(write("d.gguf", big + "x")), base) << "a longer file";
}

TEST_F(FingerprintTest, DummyWeightsAreNamedByTheirConfig) {
  write("config.json", R"({"hidden_size": 64})");
  const std::string a = of(dir_.string(), true);
  write("config.json", R"({"hidden_size": 65})");
  EXPECT_NE(of(dir_.string(), true), a);
  EXPECT_FALSE(model_fingerprint((dir_ / "missing.gguf").string(), false).ok());
}

}  // namespace
}  // namespace keel::model
