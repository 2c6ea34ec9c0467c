// RoPE tables against transformers' ROPE_INIT_FUNCTIONS (tests/golden/hf/gen_rope_tables.py):
// the config.json fragment goes through config_from_hf_json, then compute_rope.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "model/config_hf.h"
#include "model/rope.h"

namespace keel::model {
namespace {

TEST(Rope, MatchesTransformers) {
  std::ifstream f(keel::test::golden_dir() + "/hf/rope_tables.json");
  ASSERT_TRUE(f.good()) << "run tests/golden/hf/gen_rope_tables.py";
  nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_GE(j["cases"].size(), 9u);
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"];
    auto cfg = config_from_hf_json(c["config"].dump());
    ASSERT_TRUE(cfg.ok()) << name << ": " << cfg.status().to_string();
    RopeTable t = compute_rope(cfg->rope, cfg->head_dim);
    auto want = c["inv_freq"].get<std::vector<double>>();
    ASSERT_EQ(t.inv_freq.size(), want.size()) << name;
    for (size_t i = 0; i < want.size(); ++i) {
      // f32 on both sides; pow may differ by an ulp or two.
      EXPECT_NEAR(t.inv_freq[i], want[i], 4e-7 * std::abs(want[i])) << name << " i=" << i;
    }
    EXPECT_NEAR(t.attn_factor, c["attention_factor"].get<double>(), 1e-6) << name;
  }
}

TEST(Rope, FreqFactorsDivide) {
  RopeConfig r;
  r.theta = 10000.0f;
  std::vector<float> factors = {1.0f, 2.0f, 4.0f, 8.0f};
  RopeTable plain = compute_rope(r, 8);
  RopeTable scaled = compute_rope(r, 8, factors);
  for (size_t i = 0; i < factors.size(); ++i) EXPECT_FLOAT_EQ(scaled.inv_freq[i], plain.inv_freq[i] / factors[i]);
  EXPECT_FLOAT_EQ(plain.inv_freq[0], 1.0f);
  EXPECT_FLOAT_EQ(plain.inv_freq[2], 0.01f);
}

}  // namespace
}  // namespace keel::model
