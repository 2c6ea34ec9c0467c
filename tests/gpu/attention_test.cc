// CUDA attention against the CPU backend over a token-granular KV pool with shuffled slots: prefill
// (no prefix), a cached prefix plus a new chunk, batched decode with long contexts (split-KV), mixed
// batches; MHA and GQA, head_dim 64/72/128/256; f32 and bf16. Outputs poisoned first. The bf16
// prefill cases with head_dim 64/128 and a group dividing 64 run the tensor-core kernel
// (attention_tc.cu) at each of its block sizes (64, 128 and 256 rows); TensorCorePrefill checks that its plan
// is chosen for each shape it runs; TensorCoreMixedDecodeRows checks mixed batches, whose one-token
// sequences the decode kernel takes. bf16
// decode batches with head_dim 64/128 and a group of at most 8 run the decode kernel
// (attention_decode.cu): DecodeKernel* check its plan, group sizes 1..8, long contexts and graph replays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/cuda/attention_plan.h"
#include "backend/cuda/attention_tc.h"
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

INSTANTIATE_TEST_SUITE_P(Act, AttentionTest, ::testing::Values(DType::kF32, DType::kBF16), act_name);

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

// How CudaBackend plans these shapes (bf16; fixed_grid: a graph step).
backend::cuda::AttentionPlan plan_of(Heads h, const std::vector<SeqShape>& shapes, bool fixed_grid = false) {
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
  backend::cuda::plan_attention(p, h.n_heads, h.n_kv, h.hd, true, 132, fixed_grid, plan);
  return plan;
}
bool plans_tensor_cores(Heads h, const std::vector<SeqShape>& shapes) { return plan_of(h, shapes).tensor_cores; }
bool plans_decode(Heads h, const std::vector<SeqShape>& shapes) { return plan_of(h, shapes).decode; }

// Runs body once per tensor-core block size (64, 128 and 256 query rows), then restores the default.
template <typename F>
void for_each_tc_rows(F body) {
  const int saved = backend::cuda::attention_tc_rows();
  for (const int rows : {64, 128, 256}) {
    backend::cuda::set_attention_tc_rows(rows);
    SCOPED_TRACE(::testing::Message() << "tensor-core rows " << rows);
    body(rows);
  }
  backend::cuda::set_attention_tc_rows(saved);
}

// The tensor-core prefill kernel at each block size: every GQA group size it takes (1..64), head_dim
// 64 and 128, odd lengths (partial row blocks, partial m-tiles of a warp, key tiles), cached prefix +
// chunk, long contexts, batches of sequences.
TEST_F(AttentionBf16, TensorCorePrefill) {
  const Heads heads[] = {{4, 4, 64}, {8, 4, 64}, {8, 2, 128}, {32, 8, 128}, {16, 2, 64}, {64, 1, 128}, {32, 1, 64}};
  const std::vector<std::vector<SeqShape>> cases = {
      {{0, 16}}, {{0, 17}}, {{0, 63}}, {{0, 129}}, {{100, 20}}, {{1, 31}, {0, 16}, {200, 65}}, {{70, 45}, {0, 33}}};
  for_each_tc_rows([&](int rows) {
    for (Heads h : heads) {
      for (const auto& c : cases) {
        const backend::cuda::AttentionPlan plan = plan_of(h, c);
        EXPECT_TRUE(plan.tensor_cores) << h.n_heads << "/" << h.n_kv << " hd " << h.hd;
        EXPECT_EQ(plan.tc_rows, rows);
        check(h, c, "tensor-core prefill");
      }
    }
  });
  // Shapes the kernel does not take keep the CUDA-core kernel.
  EXPECT_FALSE(plans_tensor_cores({32, 8, 128}, {{0, 15}, {100, 1}}));
  EXPECT_FALSE(plans_tensor_cores({6, 3, 72}, {{0, 64}}));
  EXPECT_FALSE(plans_tensor_cores({40, 2, 128}, {{0, 64}}));
}

// Long prefills and long cached prefixes on the tensor-core kernel (left out of the memcheck run).
TEST_F(AttentionBf16, TensorCorePrefillLong) {
  const Heads llama = {32, 8, 128};
  EXPECT_TRUE(plans_tensor_cores(llama, {{0, 777}}));
  for_each_tc_rows([&](int) {
    check(llama, {{0, 777}}, "prefill 777");
    check(llama, {{0, 300}, {3000, 1}, {17, 1}, {500, 40}}, "prefill with decode rows");
    check({8, 2, 128}, {{6000, 100}}, "prefix 6000 + 100");
    check({8, 2, 64}, {{0, 2500}}, "prefill 2500");
    check(llama, {{0, 1024}, {1024, 1024}}, "prefill 1024 + chunk after 1024");
  });
}

// Mixed batches on the tensor-core path: sequences with one new token go to the decode kernel (one
// split, keys up to the longest of them) when it takes the heads, and ride on tensor-core items
// otherwise (group 16, or with the split turned off); both against the CPU backend.
TEST_F(AttentionBf16, TensorCoreMixedDecodeRows) {
  const std::vector<SeqShape> mixed = {{0, 50}, {300, 1}, {2000, 1}, {40, 31}, {0, 1}, {5000, 1}, {129, 1}};
  const bool saved = backend::cuda::attention_mixed_split();
  const int saved_mode = backend::cuda::attention_mixed_mode();
  for (const bool split : {true, false}) {
    backend::cuda::set_attention_mixed_split(split);
    // Mixed modes: 0 one split of all keys per decode item, 1 split-KV, 2 split-KV on a second stream.
    for (const int mode : split ? std::vector<int>{0, 1, 2} : std::vector<int>{0}) {
      backend::cuda::set_attention_mixed_mode(mode);
      SCOPED_TRACE(::testing::Message() << "mixed split " << split << ", mode " << mode);
      for (Heads h : {Heads{32, 8, 128}, Heads{8, 8, 64}, Heads{16, 2, 128}, Heads{16, 1, 64}}) {
        const backend::cuda::AttentionPlan plan = plan_of(h, mixed);
        EXPECT_TRUE(plan.tensor_cores);
        const bool decode_kernel = split && h.n_heads / h.n_kv <= 8;
        // 5 one-token sequences x kv heads; the tensor-core items cover only the other two then.
        EXPECT_EQ(plan.decode_items.size(), decode_kernel ? static_cast<size_t>(5 * h.n_kv) : 0u);
        if (decode_kernel) {
          // The splits cover the longest context (5,001 keys); with 5 x n_kv items on 132 SMs the
          // split-KV modes cut it (a few items: 32-key units, wave fill).
          EXPECT_GE(static_cast<int64_t>(plan.decode_splits) * plan.decode_split_len, 5001);
          EXPECT_LT(static_cast<int64_t>(plan.decode_splits - 1) * plan.decode_split_len, 5001);
          if (mode == 0) {
            EXPECT_EQ(plan.decode_splits, 1);
          } else {
            EXPECT_GT(plan.decode_splits, 1);
          }
          for (const auto& it : plan.items) EXPECT_TRUE(it.seq == 0 || it.seq == 3);
        }
        for_each_tc_rows([&](int) { check(h, mixed, "mixed prefill + decode rows"); });
      }
    }
  }
  backend::cuda::set_attention_mixed_split(saved);
  backend::cuda::set_attention_mixed_mode(saved_mode);
}

// The decode kernel: GQA groups 1..8 at head_dim 64 and 128, contexts of 1 key up to several splits,
// odd lengths (partial batches of keys), batches of sequences with very different lengths.
const Heads kDecodeHeads[] = {{8, 8, 128}, {4, 2, 64},  {32, 8, 128}, {12, 4, 64}, {14, 2, 64},
                              {14, 2, 128}, {16, 2, 128}, {8, 1, 64},  {24, 4, 128}, {15, 3, 64}};

TEST_F(AttentionBf16, DecodeKernel) {
  const std::vector<std::vector<SeqShape>> cases = {
      {{0, 1}}, {{36, 1}}, {{1000, 1}, {16, 1}, {4200, 1}, {62, 1}, {0, 1}}, {{129, 1}, {255, 1}, {2999, 1}}};
  for (Heads h : kDecodeHeads) {
    for (const auto& c : cases) {
      EXPECT_TRUE(plans_decode(h, c)) << h.n_heads << "/" << h.n_kv << " hd " << h.hd;
      check(h, c, "decode kernel");
    }
  }
  // Shapes the kernel does not take keep the other kernels.
  EXPECT_FALSE(plans_decode({6, 3, 72}, {{100, 1}}));    // head_dim 72
  EXPECT_FALSE(plans_decode({4, 1, 256}, {{100, 1}}));   // head_dim 256
  EXPECT_FALSE(plans_decode({40, 2, 128}, {{100, 1}}));  // group 20
  EXPECT_FALSE(plans_decode({32, 8, 128}, {{100, 1}, {0, 2}}));  // a sequence with two new tokens
  // Split-KV: a short batch with a long context is split, a full device is not.
  EXPECT_GT(plan_of({32, 8, 128}, {{8000, 1}}).n_splits, 1);
  EXPECT_EQ(plan_of({32, 8, 128}, std::vector<SeqShape>(256, {1100, 1})).n_splits, 1);
}

// Long contexts (8k and more) across many splits, every group size (left out of the memcheck run).
TEST_F(AttentionBf16, DecodeLongContextsSplitKvDecodeKernel) {
  for (Heads h : kDecodeHeads) check(h, {{8191, 1}}, "decode 8191");
  check({32, 8, 128}, {{20000, 1}, {9000, 1}, {3, 1}}, "decode 20000 + 9000 + 3");
  check({8, 1, 64}, {{33000, 1}}, "decode 33000");
}

// Decode steps through Backend::run_step: captured once, then replayed with new context lengths (the
// split length changes, the grid does not: splits past a context are empty) and fresh K/V and q.
TEST_F(AttentionBf16, DecodeKernelGraphReplay) {
  Backend& cpu = *backends().cpu;
  Backend& gpu = *backends().gpu;
  const Heads h{32, 8, 128};
  constexpr int kSeqs = 5, kSlots = 12000;
  const auto qs = make_shape({kSeqs, h.n_heads, h.hd}), cs = make_shape({kSlots, h.n_kv, h.hd});
  Buffer qg = gpu.alloc(DType::kBF16, qs), kg = gpu.alloc(DType::kBF16, cs), vg = gpu.alloc(DType::kBF16, cs);
  Buffer og = gpu.alloc(DType::kBF16, qs), oc = cpu.alloc(DType::kF32, qs);
  const std::vector<std::vector<int>> steps = {
      {100, 3000, 17, 1, 640}, {101, 3001, 18, 2, 641}, {7000, 5, 900, 33, 2000}, {1, 1, 1, 1, 1}, {64, 2048, 129, 5, 11}};
  const int64_t key = gpu.step_graph_bucket(kSeqs);
  ASSERT_GT(key, 0) << "graphs turned off (KEEL_CUDA_GRAPHS=0?)";
  int grid_splits = 0;
  for (size_t st = 0; st < steps.size(); ++st) {
    std::vector<int32_t> perm(kSlots);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng_);
    std::vector<std::vector<int32_t>> ctx(kSeqs);
    std::vector<backend::AttnSeq> seqs;
    size_t next = 0;
    for (int s = 0; s < kSeqs; ++s) {
      const auto n = static_cast<size_t>(steps[st][static_cast<size_t>(s)]);
      ctx[static_cast<size_t>(s)].assign(perm.begin() + static_cast<int64_t>(next),
                                         perm.begin() + static_cast<int64_t>(next + n));
      next += n;
      seqs.push_back({.q_begin = s, .n_q = 1, .ctx_slots = ctx[static_cast<size_t>(s)]});
    }
    const auto q = round_bf16(random_floats(rng_, static_cast<size_t>(qs.numel()), 2.0f));
    const auto k = round_bf16(random_floats(rng_, static_cast<size_t>(cs.numel()), 2.0f));
    const auto v = round_bf16(random_floats(rng_, static_cast<size_t>(cs.numel()), 2.0f));
    gpu.copy_from_host(q, qg.tensor());
    gpu.copy_from_host(k, kg.tensor());
    gpu.copy_from_host(v, vg.tensor());
    poison(gpu, og.tensor());
    const backend::AttentionParams p{.scale = 1.0f / std::sqrt(static_cast<float>(h.hd)), .seqs = seqs};
    std::vector<SeqShape> shapes;
    for (const int n : steps[st]) shapes.push_back({n - 1, 1});
    const backend::cuda::AttentionPlan plan = plan_of(h, shapes, true);
    EXPECT_TRUE(plan.decode);
    if (st == 0) grid_splits = plan.grid_splits;
    EXPECT_EQ(plan.grid_splits, grid_splits) << "a graph step's grid must not depend on the contexts";
    gpu.run_step(key, [&] { gpu.attention(qg.tensor(), kg.tensor(), vg.tensor(), p, og.tensor()); });
    Buffer qc = make(cpu, DType::kF32, qs, q), kc = make(cpu, DType::kF32, cs, k), vc = make(cpu, DType::kF32, cs, v);
    cpu.attention(qc.tensor(), kc.tensor(), vc.tensor(), p, oc.tensor());
    const double err = rel_err(read(gpu, og.tensor()), read(cpu, oc.tensor()));
    EXPECT_LE(err, tolerance(DType::kBF16)) << "graph step " << st << " seed " << seed_;
  }
}

}  // namespace
}  // namespace keel::gpu_test
