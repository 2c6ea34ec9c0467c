// extend_prefix_hash against hashes from the Python xxhash package (tests/golden/cache/gen_prefix_hash.py).
#include "cache/prefix_hash.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_paths.h"

namespace keel::cache {
namespace {

TEST(PrefixHash, MatchesPythonXxhashGolden) {
  std::string path = test::golden_dir() + "/cache/prefix_hash.txt";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path << " (python3 tests/golden/cache/gen_prefix_hash.py)";
  std::string line;
  int n_lines = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    size_t n = 0;
    ASSERT_TRUE(fields >> n);
    std::vector<int32_t> tokens(n);
    for (auto& t : tokens) ASSERT_TRUE(fields >> t);
    uint64_t h = kRootPrefixHash;
    for (size_t i = 0; i < n; ++i) {
      std::string hex;
      ASSERT_TRUE(fields >> hex);
      h = extend_prefix_hash(h, tokens[i]);
      ASSERT_EQ(h, std::stoull(hex, nullptr, 16)) << "line " << n_lines << " token " << i;
    }
    EXPECT_EQ(extend_prefix_hash(kRootPrefixHash, tokens), h);
    ++n_lines;
  }
  EXPECT_EQ(n_lines, 8);
}

TEST(PrefixHash, ChainsAcrossSpans) {
  std::vector<int32_t> t{5, 6, 7, 8, 9};
  std::span<const int32_t> s(t);
  uint64_t whole = extend_prefix_hash(kRootPrefixHash, s);
  uint64_t split = extend_prefix_hash(extend_prefix_hash(kRootPrefixHash, s.first(2)), s.subspan(2));
  EXPECT_EQ(whole, split);
  EXPECT_EQ(extend_prefix_hash(123, std::span<const int32_t>{}), 123u);
  EXPECT_NE(extend_prefix_hash(kRootPrefixHash, s.first(4)), whole);
}

}  // namespace
}  // namespace keel::cache
