// CUDA attention against the CPU backend over a token-granular KV pool with shuffled slots: prefill
// (no prefix), a cached prefix plus a new chunk, batched decode with long contexts (split-KV), mixed
// batches; MHA and GQA, head_dim 64/72/128/256; f32 and bf16. Outputs poisoned first. The bf16
// prefill cases with head_dim 64/128 and a group dividing 64 run the tensor-core kernel
// (attention_tc.cu); TensorCorePrefill checks that its plan is chosen for each shape it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/cuda/attention_plan.h"
#include "gpu_test_util.h"

namespace keel::gpu_test {
namespace {

using tensor::make_shape;

struct Heads {
  int n_heads, n_kv, hd;
};
struct SeqShape {
  int n_past, n_q;  // cached tokens, new tokens
};

double attention_err(std::mt19937_64& rng, DType dt, Heads h, const std::vector<SeqShape>& shapes) {
  Backend& cpu = *backends().cpu;
  Backend& gpu = *backends().gpu;
  int n_tokens = 0, n_ctx_total = 0;
  for (const SeqShape& s : shapes) {
    n_tokens += s.n_q;
    n_ctx_total += s.n_past + s.n_q;
  }
  const int n_slots = n_ctx_total + 17;
  std::vector<int32_t> perm(static_cast<size_t>(n_slots));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::vector<int32_t>> ctx(shapes.size());
  std::vector<backend::AttnSeq> seqs;
  size_t next = 0;
  int q_begin = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    ctx[s].assign(perm.begin() + static_cast<int64_t>(next), perm.begin() + static_cast<int64_t>(next) + shapes[s].n_past + shapes[s].n_q);
    next += ctx[s].size();
    seqs.push_back({.q_begin = q_begin, .n_q = shapes[s].n_q, .ctx_slots = ctx[s]});
    q_begin += shapes[s].n_q;
  }
  auto vals = [&](size_t n) {
    auto v = random_floats(rng, n, 2.0f);
    return dt == DType::kBF16 ? round_bf16(std::move(v)) : v;
  };
  const auto qs = make_shape({n_tokens, h.n_heads, h.hd}), cs = make_shape({n_slots, h.n_kv, h.hd});
  const auto q = vals(static_cast<size_t>(qs.numel())), k = vals(static_cast<size_t>(cs.numel())),
             v = vals(static_cast<size_t>(cs.numel()));
  Buffer qc = make(cpu, DType::kF32, qs, q), qg = make(gpu, dt, qs, q);
  Buffer kc = make(cpu, DType::kF32, cs, k), kg = make(gpu, dt, cs, k);
  Buffer vc = make(cpu, DType::kF32, cs, v), vg = make(gpu, dt, cs, v);
  Buffer oc = cpu.alloc(DType::kF32, qs), og = gpu.alloc(dt, qs);
  poison(gpu, og.tensor());
  const backend::AttentionParams p{.scale = 1.0f / std::sqrt(static_cast<float>(h.hd)), .seqs = seqs};
  cpu.attention(qc.tensor(), kc.tensor(), vc.tensor(), p, oc.tensor());
  gpu.attention(qg.tensor(), kg.tensor(), vg.tensor(), p, og.tensor());
  return rel_err(read(gpu, og.tensor()), read(cpu, oc.tensor()));
}

// Checks one attention call against the CPU backend at the fixture's activation dtype.
class AttentionCheck : public ::testing::Test {
 protected:
  explicit AttentionCheck(DType dt) : dt_(dt) {}
  void SetUp() override {
    seed_ = fresh_seed();
    rng_.seed(seed_);
  }
  void check(Heads h, const std::vector<SeqShape>& shapes, const char* what) {
    const double err = attention_err(rng_, dt_, h, shapes);
    EXPECT_LE(err, tolerance(dt_)) << what << " heads " << h.n_heads << "/" << h.n_kv << " hd " << h.hd << " seed "
                                   << seed_;
  }
  DType dt_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

// Every kernel path, at f32 and bf16 activations.
class AttentionTest : public AttentionCheck, public ::testing::WithParamInterface<DType> {
 protected:
  AttentionTest() : AttentionCheck(GetParam()) {}
};

// The tensor-core prefill kernel takes bf16 activations only.
class AttentionBf16 : public AttentionCheck {
 protected:
  AttentionBf16() : AttentionCheck(DType::kBF16) {}
};

INSTANTIATE_TEST_SUITE_P(Act, AttentionTest, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& p) { return p.param == DType::kF32 ? "f32" : "bf16"; });

const Heads kHeads[] = {{4, 4, 64}, {8, 2, 64}, {32, 8, 128}, {14, 2, 64}, {6, 3, 72}, {4, 1, 256}, {40, 2, 128}};

TEST_P(AttentionTest, Prefill) {
  for (Heads h : kHeads) check(h, {{0, 37}}, "prefill 37");
  check({32, 8, 128}, {{0, 300}, {0, 5}}, "prefill 300 + 5");
}

TEST_P(AttentionTest, CachedPrefixPlusChunk) {
  for (Heads h : kHeads) check(h, {{100, 20}}, "prefix 100 + 20");
  check({32, 8, 128}, {{4096, 64}}, "prefix 4096 + 64");
}

TEST_P(AttentionTest, DecodeLongContextsSplitKv) {
  for (Heads h : kHeads) check(h, {{4500, 1}}, "decode 4500");
  check({32, 8, 128}, {{1, 1}, {17, 1}, {1000, 1}, {4200, 1}, {63, 1}}, "decode batch of 5");
  check({32, 8, 128}, {{8191, 1}}, "decode 8191");
}

TEST_P(AttentionTest, MixedPrefillAndDecode) {
  check({32, 8, 128}, {{0, 50}, {300, 1}, {2000, 1}, {40, 31}, {0, 1}}, "mixed");
  check({14, 2, 64}, {{5000, 3}, {0, 2}}, "mixed long");
}

// Whether CudaBackend plans these shapes for the tensor-core kernel (bf16, no graph step).
bool plans_tensor_cores(Heads h, const std::vector<SeqShape>& shapes) {
  std::vector<std::vector<int32_t>> ctx(shapes.size());
  std::vector<backend::AttnSeq> seqs;
  int q_begin = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    ctx[s].resize(static_cast<size_t>(shapes[s].n_past + shapes[s].n_q));
    std::iota(ctx[s].begin(), ctx[s].end(), 0);
    seqs.push_back({.q_begin = q_begin, .n_q = shapes[s].n_q, .ctx_slots = ctx[s]});
    q_begin += shapes[s].n_q;
  }
  const backend::AttentionParams p{.scale = 1.0f, .seqs = seqs};
  backend::cuda::AttentionPlan plan;
  backend::cuda::plan_attention(p, h.n_heads, h.n_kv, h.hd, true, 132, false, plan);
  return plan.tensor_cores;
}

// The tensor-core prefill kernel: every GQA group size it takes (1..64), head_dim 64 and 128, odd
// lengths (partial row blocks and key tiles), cached prefix + chunk, long contexts, batches of
// sequences, decode sequences riding along in a prefill batch.
TEST_F(AttentionBf16, TensorCorePrefill) {
  const Heads heads[] = {{4, 4, 64}, {8, 4, 64}, {8, 2, 128}, {32, 8, 128}, {16, 2, 64}, {64, 1, 128}, {32, 1, 64}};
  const std::vector<std::vector<SeqShape>> cases = {
      {{0, 16}}, {{0, 17}}, {{0, 63}}, {{0, 129}}, {{100, 20}}, {{1, 31}, {0, 16}, {200, 65}}};
  for (Heads h : heads) {
    for (const auto& c : cases) {
      EXPECT_TRUE(plans_tensor_cores(h, c)) << h.n_heads << "/" << h.n_kv << " hd " << h.hd;
      check(h, c, "tensor-core prefill");
    }
  }
  // Shapes the kernel does not take keep the CUDA-core kernel.
  EXPECT_FALSE(plans_tensor_cores({32, 8, 128}, {{0, 15}, {100, 1}}));
  EXPECT_FALSE(plans_tensor_cores({6, 3, 72}, {{0, 64}}));
  EXPECT_FALSE(plans_tensor_cores({40, 2, 128}, {{0, 64}}));
}

// Long prefills and long cached prefixes on the tensor-core kernel (left out of the memcheck run).
TEST_F(AttentionBf16, TensorCorePrefillLong) {
  const Heads llama = {32, 8, 128};
  EXPECT_TRUE(plans_tensor_cores(llama, {{0, 777}}));
  check(llama, {{0, 777}}, "prefill 777");
  check(llama, {{0, 300}, {3000, 1}, {17, 1}, {500, 40}}, "prefill with decode rows");
  check({8, 2, 128}, {{6000, 100}}, "prefix 6000 + 100");
  check({8, 2, 64}, {{0, 2500}}, "prefill 2500");
}

}  // namespace
}  // namespace keel::gpu_test
