#include "sample/constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

namespace keel::sample {
namespace {

// Test double: allows exactly the tokens of `script`, in order.
class ScriptConstraint final : public TokenConstraint {
 public:
  explicit ScriptConstraint(std::vector<int32_t> script) : script_(std::move(script)) {}
  void fill_mask(std::span<uint32_t> bitmask) override {
    std::fill(bitmask.begin(), bitmask.end(), 0u);
    if (pos_ < script_.size()) bitmask[script_[pos_] / 32] |= 1u << (script_[pos_] % 32);
  }
  bool accept_token(int32_t token) override {
    if (pos_ >= script_.size() || script_[pos_] != token) return false;
    ++pos_;
    return true;
  }
  void rollback(size_t n) override { pos_ -= std::min(n, pos_); }
  bool is_terminated() const override { return pos_ == script_.size(); }
  std::optional<int32_t> forced_token() override {
    if (pos_ < script_.size()) return script_[pos_];
    return std::nullopt;
  }

 private:
  std::vector<int32_t> script_;
  size_t pos_ = 0;
};

class ScriptFactory final : public ConstraintFactory {
 public:
  explicit ScriptFactory(std::vector<int32_t> script) : script_(std::move(script)) {}
  std::unique_ptr<TokenConstraint> make() const override { return std::make_unique<ScriptConstraint>(script_); }

 private:
  std::vector<int32_t> script_;
};

TEST(ConstraintTest, MaskLeavesOnlyAllowedTokens) {
  std::vector<float> logits(70, 1.0f);
  std::vector<uint32_t> mask(mask_words(70), 0u);
  mask[0] |= 1u << 3;
  mask[2] |= 1u << 1;  // token 65
  EXPECT_EQ(apply_token_mask(logits, mask), 2);
  for (int i = 0; i < 70; ++i) {
    if (i == 3 || i == 65) {
      EXPECT_EQ(logits[i], 1.0f) << i;
    } else {
      EXPECT_TRUE(std::isinf(logits[i]) && logits[i] < 0) << i;
    }
  }
}

TEST(ConstraintTest, AfterPrefixStartsWhereTheResumedTokensEnd) {
  auto base = std::make_shared<ScriptFactory>(std::vector<int32_t>{5, 9, 2, 40});
  auto after = constraint_after_prefix(base, {5, 9});
  ASSERT_NE(after, nullptr);
  auto c = after->make();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->forced_token(), 2);
  EXPECT_FALSE(c->accept_token(5));
  EXPECT_TRUE(c->accept_token(2));
  // Each make() is a fresh sample at the same point.
  EXPECT_EQ(after->make()->forced_token(), 2);
}

TEST(ConstraintTest, AfterPrefixRejectsTokensTheGrammarForbids) {
  auto base = std::make_shared<ScriptFactory>(std::vector<int32_t>{5, 9, 2});
  EXPECT_EQ(constraint_after_prefix(base, {5, 7}), nullptr);
  EXPECT_EQ(constraint_after_prefix(base, {}), base);
}

}  // namespace
}  // namespace keel::sample
