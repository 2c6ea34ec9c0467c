// Dequantizers, activation quantizers and f16/bf16 rounding against independent tools on real
// SmolLM2 rows: gguf-py's dequantize, llama.cpp's quantize_row_q8_0_ref/q8_K_ref, numpy and torch.
// Golden: tests/golden/dequant/dequant_golden.{json,bin} (gen_dequant.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "tensor/blocks.h"
#include "tensor/dequantize.h"
#include "tensor/half.h"
#include "tensor/quantize.h"

namespace keel::tensor {
namespace {

struct Golden {
  nlohmann::json index;
  std::vector<uint8_t> blob;

  std::vector<uint8_t> bytes(const nlohmann::json& range) const {
    const auto off = range[0].get<size_t>();
    const auto len = range[1].get<size_t>();
    EXPECT_LE(off + len, blob.size());
    return {blob.begin() + static_cast<std::ptrdiff_t>(off), blob.begin() + static_cast<std::ptrdiff_t>(off + len)};
  }
};

const Golden& golden() {
  static const Golden g = [] {
    Golden out;
    const std::string dir = test::golden_dir() + "/dequant/";
    std::ifstream js(dir + "dequant_golden.json");
    std::ifstream bin(dir + "dequant_golden.bin", std::ios::binary);
    EXPECT_TRUE(js.good() && bin.good()) << "missing golden: python3 tests/golden/dequant/gen_dequant.py";
    if (js.good()) out.index = nlohmann::json::parse(js);
    out.blob.assign(std::istreambuf_iterator<char>(bin), {});
    return out;
  }();
  return g;
}

template <typename T>
std::vector<T> as(const std::vector<uint8_t>& b) {
  std::vector<T> out(b.size() / sizeof(T));
  std::memcpy(out.data(), b.data(), out.size() * sizeof(T));
  return out;
}

DType dtype_named(const std::string& name) {
  static const std::map<std::string, DType> kByName = {
      {"f32", DType::kF32},   {"f16", DType::kF16},       {"bf16", DType::kBF16}, {"q4_0", DType::kQ4_0},
      {"q4_1", DType::kQ4_1}, {"q8_0", DType::kQ8_0},     {"q4_k", DType::kQ4_K}, {"q6_k", DType::kQ6_K},
      {"q8_k", DType::kQ8_K}, {"f8_e4m3", DType::kF8E4M3}};
  return kByName.at(name);
}

// Runs every case of `op` through `check` and returns how many there were.
template <typename Check>
int for_each_case(std::string_view op, Check check) {
  int n = 0;
  for (const auto& c : golden().index.at("cases")) {
    if (c.at("op") != op) continue;
    SCOPED_TRACE(c.at("name").get<std::string>());
    check(c, golden().bytes(c.at("src")), golden().bytes(c.at("want")), c.at("n").get<int64_t>());
    ++n;
  }
  return n;
}

TEST(DequantizeGolden, MatchesGgufPyBitExactly) {
  std::map<std::string, int> per_type;
  for_each_case("dequantize", [&](const auto& c, const auto& src, const auto& want_bytes, int64_t n) {
    const DType t = dtype_named(c.at("dtype").template get<std::string>());
    ASSERT_EQ(src.size(), row_size_bytes(t, n));
    const std::vector<float> want = as<float>(want_bytes);
    ASSERT_EQ(static_cast<int64_t>(want.size()), n);
    // An odd start address: file rows need not be aligned for the block structs.
    std::vector<uint8_t> shifted(src.size() + 1);
    std::memcpy(shifted.data() + 1, src.data(), src.size());
    std::vector<float> got(static_cast<size_t>(n));
    dequantize_row(t, shifted.data() + 1, got.data(), n);
    int mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float g = got[static_cast<size_t>(i)];
      const float w = want[static_cast<size_t>(i)];
      if (std::isnan(g) && std::isnan(w)) continue;  // fp8's NaN bytes: any NaN bits will do
      if (std::memcmp(&g, &w, 4) != 0 && mismatches++ < 5) {
        ADD_FAILURE() << "element " << i << ": keel " << got[static_cast<size_t>(i)] << ", gguf-py "
                      << want[static_cast<size_t>(i)];
      }
    }
    EXPECT_EQ(mismatches, 0);
    per_type[std::string(dtype_name(t))]++;
  });
  for (const char* t : {"f16", "bf16", "q4_0", "q4_1", "q8_0", "q4_k", "q6_k", "f32", "f8_e4m3"}) {
    EXPECT_GE(per_type[t], 1) << "no real " << t << " rows in the golden";
  }
}

template <typename Block, typename Quantize>
void check_quantizer(std::string_view op, Quantize quantize) {
  const int n_cases = for_each_case(op, [&](const auto&, const auto& src, const auto& want, int64_t n) {
    const std::vector<float> x = as<float>(src);
    ASSERT_EQ(static_cast<int64_t>(x.size()), n);
    std::vector<Block> got(want.size() / sizeof(Block));
    ASSERT_EQ(got.size() * sizeof(Block), want.size());
    quantize(x.data(), got.data(), n);
    for (size_t b = 0; b < got.size(); ++b) {
      EXPECT_EQ(std::memcmp(&got[b], want.data() + b * sizeof(Block), sizeof(Block)), 0) << "block " << b;
    }
  });
  EXPECT_GE(n_cases, 5);
}

TEST(QuantizeGolden, Q8_0MatchesGgmlReference) { check_quantizer<BlockQ8_0>("quantize_q8_0", quantize_row_q8_0); }

TEST(QuantizeGolden, Q8_KMatchesGgmlReference) { check_quantizer<BlockQ8_K>("quantize_q8_k", quantize_row_q8_k); }

template <uint16_t (*Convert)(float)>
void check_rounding(std::string_view op) {
  const int n_cases = for_each_case(op, [&](const auto&, const auto& src, const auto& want_bytes, int64_t n) {
    const std::vector<float> x = as<float>(src);
    const std::vector<uint16_t> want = as<uint16_t>(want_bytes);
    ASSERT_EQ(static_cast<int64_t>(want.size()), n);
    int mismatches = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (Convert(x[i]) != want[i] && mismatches++ < 5) {
        ADD_FAILURE() << "f32 " << x[i] << ": keel " << Convert(x[i]) << ", reference " << want[i];
      }
    }
    EXPECT_EQ(mismatches, 0);
  });
  EXPECT_GE(n_cases, 2);
}

TEST(HalfGolden, F32ToFp16MatchesNumpy) { check_rounding<f32_to_fp16>("f32_to_fp16"); }

TEST(HalfGolden, F32ToBf16MatchesTorch) { check_rounding<f32_to_bf16>("f32_to_bf16"); }

}  // namespace
}  // namespace keel::tensor
