// Decode attention over the token-granular KV pool: one query token per sequence, so the work is a
// stream of K/V rows (page size 1: each key's row is found through the sequence's slot list) with
// little arithmetic per byte, and the kernel is built to keep HBM busy:
// - a block (4 warps) runs one (sequence, kv head, key range); each K/V row is read once and serves
//   all G query heads of the group (their q rows live in registers);
// - a row is read by HD / 8 lanes, 16 bytes each, so a warp covers 32 / (HD / 8) keys per step; each
//   warp takes batches of kUnroll steps in turn and copies them with cp.async into its own ring of
//   kStages batches in shared memory (kStages - 1 batches in flight while one is computed; the slot
//   ids of the batch after next are loaded while this one is computed);
// - scores: 8 FMAs per lane and head, summed over the row's lanes with shuffles; the online softmax
//   works in the log2 domain (q pre-scaled by scale * log2 e, exp2f) once per batch; acc += p * v in
//   f32 on CUDA cores (why not tensor cores: docs/cuda_backend.md);
// - the 4 warps' (m, l, acc) merge through shared memory; with several splits the block writes a
//   partial (acc, max in natural-log units, sum), and the item's last block to finish (a device
//   counter per item) merges them, as combine_kernel (attention.cu) would: no second launch. Splits
//   past the sequence's context (a graph step's fixed grid) exit at once and are not merged (they
//   would add exact zeros), so graph and eager steps stay bitwise equal.
#include <cfloat>
#include <cmath>
#include <utility>

#include "backend/cuda/attention_decode.h"
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"

namespace keel::backend::cuda {
namespace {

constexpr int kWarps = 4;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kMaxMergeSplits = kAttnDecodeMaxSplits;  // the merge's weights live in the ring

template <int HD, int G>
struct DecodeCfg {
  static constexpr int kLanesPerKey = HD / 8;              // 16-byte pieces of a row
  static constexpr int kKeysPerStep = 32 / kLanesPerKey;   // keys a warp reads per load instruction
  static constexpr int kUnroll = G <= 4 ? 4 : 2;           // steps per batch (registers: G x 16 floats)
  static constexpr int kBatchKeys = kKeysPerStep * kUnroll;
  static constexpr int kStages = 3;                        // batches in flight per warp (cp.async ring)
  // Per warp: kStages x (K and V) x kUnroll x 32 lanes x 16 bytes; reused for the warps' merge.
  static constexpr size_t kSmem = static_cast<size_t>(kWarps) * kStages * 2 * kUnroll * 32 * sizeof(uint4);
  static_assert(kSmem >= sizeof(float) * kWarps * G * HD, "the warps' merge reuses the ring");
  static_assert(kSmem >= sizeof(float) * 2 * G * kMaxMergeSplits, "the splits' merge reuses the ring");
};

__device__ __forceinline__ void bf16x8(const uint4& raw, float* f) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

// 16 bytes global -> shared without registers; zero-filled (nothing read) when !valid.
__device__ __forceinline__ void cp_async16(uint4* dst, const void* src, bool valid) {
  const auto d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// The item's n_real partials -> out rows [row0, row0 + G), by the block that finishes last. Every
// thread's partial stores are fenced before thread 0 counts the block; the last block sets the counter
// back to 0 (ready for the next launch or graph replay) and reads the partials past L1 (__ldcg). Then
// warp g % 4 finds head g's max over the splits (lanes read splits in parallel) and puts each split's
// weight exp(m - max) (natural-log units, as combine_kernel) into shared memory (the ring, unused by
// now; kMaxMergeSplits per head), lane 0 sums l x weight in split order; every thread sums acc x weight
// for its outputs in split order, with the loads of 8 (then 4) splits in flight at a time.
template <int HD, int G>
__device__ __forceinline__ void merge_if_last(const AttnLaunch& p, int n_real, int64_t row0, float* f_s) {
  __shared__ bool last;
  __shared__ float inv_s[G];
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned done = atomicAdd(&p.split_counters[blockIdx.x], 1u);
    last = done == static_cast<unsigned>(n_real - 1);
    if (last) p.split_counters[blockIdx.x] = 0;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // Partial rows are per (split, item, head of the group): (split x items + item) x G + g.
  const int64_t n_prows = static_cast<int64_t>(gridDim.x) * G, prow0 = static_cast<int64_t>(blockIdx.x) * G;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int g = warp; g < G; g += kWarps) {
    const int64_t prow = prow0 + g;
    float mx = -FLT_MAX;
    for (int sp = lane; sp < n_real; sp += 32) {
      const float m = __ldcg(&p.partial_ml[2 * (sp * n_prows + prow)]);
      f_s[g * kMaxMergeSplits + sp] = m;
      mx = fmaxf(mx, m);
    }
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    for (int sp = lane; sp < n_real; sp += 32) {
      const float f = expf(f_s[g * kMaxMergeSplits + sp] - mx);
      f_s[g * kMaxMergeSplits + sp] = f;
      f_s[(G + g) * kMaxMergeSplits + sp] = __ldcg(&p.partial_ml[2 * (sp * n_prows + prow) + 1]) * f;
    }
    __syncwarp();
    if (lane == 0) {
      float l_sum = 0.0f;
      for (int sp = 0; sp < n_real; ++sp) l_sum += f_s[(G + g) * kMaxMergeSplits + sp];
      inv_s[g] = l_sum > 0.0f ? 1.0f / l_sum : 0.0f;
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < G * HD; idx += blockDim.x) {
    const int g = idx / HD, d = idx % HD;
    const int64_t row = row0 + g, prow = prow0 + g;
    const float* f = f_s + g * kMaxMergeSplits;
    float o = 0.0f;
    int sp = 0;
    for (; sp + 8 <= n_real; sp += 8) {
      float a[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) a[u] = __ldcg(&p.partial_acc[((sp + u) * n_prows + prow) * HD + d]);
#pragma unroll
      for (int u = 0; u < 8; ++u) o += a[u] * f[sp + u];
    }
    for (; sp + 4 <= n_real; sp += 4) {
      float a[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) a[u] = __ldcg(&p.partial_acc[((sp + u) * n_prows + prow) * HD + d]);
#pragma unroll
      for (int u = 0; u < 4; ++u) o += a[u] * f[sp + u];
    }
    for (; sp < n_real; ++sp) o += __ldcg(&p.partial_acc[(sp * n_prows + prow) * HD + d]) * f[sp];
    store_f(static_cast<__nv_bfloat16*>(p.out), row * HD + d, o * inv_s[g]);
  }
}

template <int HD, int G>
__global__ void __launch_bounds__(kWarps * 32, attention_decode_blocks_per_sm(G)) attention_decode_kernel(AttnLaunch p) {
  using C = DecodeCfg<HD, G>;
  constexpr int L = C::kLanesPerKey, KS = C::kKeysPerStep, U = C::kUnroll, B = C::kBatchKeys, S = C::kStages;
  extern __shared__ uint4 ring[];
  __shared__ float m_s[kWarps][G], l_s[kWarps][G];
  pdl_trigger();
  // Before pdl_wait only the plan (items, descriptors, slot lists, split length: staged spans copied
  // before the step's kernels) is read, so with PDL its dependent loads overlap the kernel before.
  const AttnItem it = p.items[blockIdx.x];
  const AttnSeqDev sq = p.seqs[it.seq];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int sub = lane / L, dl = lane % L;
  const int split_len = p.split_len_dev != nullptr ? *p.split_len_dev : p.split_len;
  // Splits holding keys (the plan keeps them within the grid; the min keeps the counters sound anyway).
  const int n_real = min(static_cast<int>(gridDim.y), max(1, (sq.n_ctx + split_len - 1) / split_len));
  if (static_cast<int>(blockIdx.y) >= n_real) return;
  const int key_begin = blockIdx.y * split_len;
  const int key_end = min(sq.n_ctx, key_begin + split_len);
  const int64_t token = sq.q_begin;
  const int head0 = it.kv_head * G;
  const int first = key_begin + warp * B, stride = kWarps * B;
  auto slots_of = [&](int base, int* slot) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int key = base + u * KS + sub;
      slot[u] = key < key_end ? sq.ctx[key] : -1;
    }
  };
  int slot0[S][U];  // the slot ids of the first S batches
#pragma unroll
  for (int st = 0; st < S; ++st) slots_of(first + st * stride, slot0[st]);
  pdl_wait();  // q and this step's K/V rows come from the kernels before

  float q[G][8];
  const auto* qp = static_cast<const __nv_bfloat16*>(p.q) + (token * p.n_heads + head0) * HD + dl * 8;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    bf16x8(*reinterpret_cast<const uint4*>(qp + g * HD), q[g]);
#pragma unroll
    for (int e = 0; e < 8; ++e) q[g][e] *= p.scale * kLog2e;
  }
  float acc[G][8], m[G], l[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
  }

  // Batch b of this warp: keys first + b * stride + [0, B); its K/V pieces go to ring stage b % S,
  // each lane's own 16 bytes (a lane reads back only what it copied: no barrier needed).
  const int64_t row_stride = static_cast<int64_t>(p.n_kv) * HD;
  const auto* kc = static_cast<const __nv_bfloat16*>(p.k_cache) + it.kv_head * HD + dl * 8;
  const auto* vc = static_cast<const __nv_bfloat16*>(p.v_cache) + it.kv_head * HD + dl * 8;
  uint4* my = ring + static_cast<size_t>(warp) * S * 2 * U * 32 + lane;
  auto issue = [&](int stage, const int* slot) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t off = static_cast<int64_t>(max(slot[u], 0)) * row_stride;
      cp_async16(my + (stage * 2 * U + u) * 32, kc + off, slot[u] >= 0);
      cp_async16(my + (stage * 2 * U + U + u) * 32, vc + off, slot[u] >= 0);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int st = 0; st < S - 1; ++st) issue(st, slot0[st]);
  int slot[U];  // the batch issued in the first iteration
#pragma unroll
  for (int u = 0; u < U; ++u) slot[u] = slot0[S - 1][u];
  int b = 0;
  for (int base = first; base < key_end; base += stride, ++b) {
    issue((b + S - 1) % S, slot);  // batch b + S - 1 (zero-filled, no reads, past the range)
    slots_of(base + S * stride, slot);
    cp_async_wait<S - 1>();        // batch b has landed
    const uint4* stage = my + (b % S) * 2 * U * 32;
    // Scores of the batch's keys for every head; out-of-range keys are -inf.
    float s[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float kf[8];
      bf16x8(stage[u * 32], kf);
      const bool valid = base + u * KS + sub < key_end;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float d = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) d = fmaf(q[g][e], kf[e], d);
#pragma unroll
        for (int o = L / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        s[u][g] = valid ? d : -INFINITY;
      }
    }
    // One max per head for the whole batch (all lanes agree); key base + 0 is in range, so it is finite.
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float mx = s[0][g];
#pragma unroll
      for (int u = 1; u < U; ++u) mx = fmaxf(mx, s[u][g]);
#pragma unroll
      for (int o = L; o < 32; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_new = fmaxf(m[g], mx);
      const float corr = exp2f(m[g] - m_new);
      m[g] = m_new;
      l[g] *= corr;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] *= corr;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float vf[8];
      bf16x8(stage[(U + u) * 32], vf);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float pj = exp2f(s[u][g] - m[g]);
        l[g] += pj;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(pj, vf[e], acc[g][e]);
      }
    }
  }
  cp_async_wait<0>();  // the zero-filled batches past the range, before the ring is reused
  __syncthreads();
  auto* acc_s = reinterpret_cast<float(*)[G][HD]>(ring);  // [kWarps][G][HD]

  // The warp's key groups (sub) share m: their sums add.
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int o = L; o < 32; o <<= 1) {
      l[g] += __shfl_xor_sync(0xffffffffu, l[g], o);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
    }
    if (sub == 0) {
#pragma unroll
      for (int e = 0; e < 8; ++e) acc_s[warp][g][dl * 8 + e] = acc[g][e];
    }
    if (lane == 0) {
      m_s[warp][g] = m[g];
      l_s[warp][g] = l[g];
    }
  }
  __syncthreads();

  for (int idx = threadIdx.x; idx < G * HD; idx += blockDim.x) {
    const int g = idx / HD, d = idx % HD;
    float mx = m_s[0][g];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) mx = fmaxf(mx, m_s[w][g]);
    float sum = 0.0f, o = 0.0f;
    if (mx != -INFINITY) {  // else no key in this range: sum 0, o 0
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float f = exp2f(m_s[w][g] - mx);
        sum += l_s[w][g] * f;
        o += acc_s[w][g][d] * f;
      }
    }
    const int64_t row = token * p.n_heads + head0 + g;
    if (n_real == 1) {
      // o * (1 / sum) as in the merge, so a graph step (more, empty, splits) matches an eager one bitwise.
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      store_f(static_cast<__nv_bfloat16*>(p.out), row * HD + d, o * inv);
    } else {
      // (split x items + item) x G + g: as compact as the items (a mixed batch's decode rows are a few
      // of its n_tokens rows), so the scratch bound is splits x items x G (plan_attention's).
      const int64_t prow = (static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x) * G + g;
      p.partial_acc[prow * HD + d] = o;
      if (d == 0) {
        p.partial_ml[2 * prow] = sum > 0.0f ? mx * kLn2 : -FLT_MAX;
        p.partial_ml[2 * prow + 1] = sum;
      }
    }
  }
  // (merge_if_last synchronizes the block before it reuses the ring.)
  if (n_real > 1) merge_if_last<HD, G>(p, n_real, token * p.n_heads + head0, reinterpret_cast<float*>(ring));
}

template <int HD, int G>
void launch_hd_group(const AttnLaunch& p, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.n_items), static_cast<unsigned>(p.n_splits));
  launch_pdl(PdlKind::kAttention, attention_decode_kernel<HD, G>, grid, dim3(kWarps * 32), DecodeCfg<HD, G>::kSmem, s, p);
  KEEL_CUDA_LAUNCHED();
}

template <int HD, int... Gs>
void allow_smem(std::integer_sequence<int, Gs...>) {
  (cudaFuncSetAttribute(attention_decode_kernel<HD, Gs + 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                        static_cast<int>(DecodeCfg<HD, Gs + 1>::kSmem)),
   ...);
  KEEL_CUDA_LAUNCHED();
}

template <int HD>
void launch_hd(const AttnLaunch& p, cudaStream_t s) {
  switch (p.n_heads / p.n_kv) {
    case 1: launch_hd_group<HD, 1>(p, s); break;
    case 2: launch_hd_group<HD, 2>(p, s); break;
    case 3: launch_hd_group<HD, 3>(p, s); break;
    case 4: launch_hd_group<HD, 4>(p, s); break;
    case 5: launch_hd_group<HD, 5>(p, s); break;
    case 6: launch_hd_group<HD, 6>(p, s); break;
    case 7: launch_hd_group<HD, 7>(p, s); break;
    default: launch_hd_group<HD, 8>(p, s); break;
  }
}

}  // namespace

void attention_decode_set_smem_limits() {
  allow_smem<64>(std::make_integer_sequence<int, kAttnDecodeMaxGroup>{});
  allow_smem<128>(std::make_integer_sequence<int, kAttnDecodeMaxGroup>{});
}

void launch_attention_decode(const AttnLaunch& p, cudaStream_t s) {
  if (p.head_dim == 64) {
    launch_hd<64>(p, s);
  } else {
    launch_hd<128>(p, s);
  }
}

}  // namespace keel::backend::cuda
