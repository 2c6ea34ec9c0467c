// Prefill attention on tensor cores (FlashAttention-2 style), bf16 operands, f32 accumulation.
// A block (4 warps) runs one item of the tensor-core plan: 64 query rows = tokens x all query heads of
// one kv head's GQA group (row r: token t0 + r / group, head r % group), so each K/V row is read once
// per group. Keys go in tiles of 64, gathered through the slot list into shared memory with cp.async
// (two stages: the next tile loads while this one is computed; rows past the context are zero-filled).
// Each warp owns 16 rows: S = Q K^T with mma.sync m16n8k16 (Q fragments stay in registers for the
// whole item), the online softmax runs on the S fragments in registers (a row lives in the 4 lanes of
// a quad), P is rounded to bf16 and reused as the A operand of O += P V (V fragments via
// ldmatrix.trans), O stays in registers and is rescaled per row. Causal masking by position in the
// sequence, so a cached prefix plus a new chunk is one call.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_tc.h"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kKeys = 64;  // keys per tile
constexpr int kPad = 8;    // bf16 elements of padding per shared row (keeps fragment loads conflict-free)

template <int HD>
constexpr size_t tc_smem_bytes() {
  return sizeof(__nv_bfloat16) * 2 /*stages*/ * 2 /*K, V*/ * kKeys * (HD + kPad);
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0 source bytes: the 16 bytes are zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// K and V rows [tile, tile + 64) of the sequence for one kv head into stage buffers (zeros at and past
// key_end). 16-byte chunks, consecutive threads along a row.
template <int HD>
__device__ __forceinline__ void load_tile(const AttnLaunch& p, const AttnSeqDev& sq, int kv_head, int tile,
                                          int key_end, __nv_bfloat16* k_s, __nv_bfloat16* v_s) {
  constexpr int kChunks = HD / 8;
  const auto* kc = static_cast<const __nv_bfloat16*>(p.k_cache);
  const auto* vc = static_cast<const __nv_bfloat16*>(p.v_cache);
  for (int idx = threadIdx.x; idx < kKeys * kChunks; idx += kWarps * 32) {
    const int j = idx / kChunks, c = idx % kChunks, key = tile + j;
    const bool valid = key < key_end;
    const int64_t off = valid ? (static_cast<int64_t>(sq.ctx[key]) * p.n_kv + kv_head) * HD + c * 8 : 0;
    cp_async16(k_s + j * (HD + kPad) + c * 8, kc + off, valid);
    cp_async16(v_s + j * (HD + kPad) + c * 8, vc + off, valid);
  }
}

template <int HD>
__global__ void __launch_bounds__(kWarps * 32) attention_tc_kernel(AttnLaunch p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto* kv_s = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  constexpr int kStage = kKeys * (HD + kPad);  // elements of one K (or V) stage
  const AttnItem it = p.items[blockIdx.x];
  const AttnSeqDev sq = p.seqs[it.seq];
  const int group = p.n_heads / p.n_kv;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;  // quad (row) and lane within the quad
  const int past = sq.n_ctx - sq.n_q;
  const int n_rows = (it.t1 - it.t0) * group;
  const int key_end = past + it.t1;  // the last token's causal limit
  const int n_tiles = (key_end + kKeys - 1) / kKeys;

  // Prefetch the first tile, then load this warp's Q fragments (rows r0 = 16 warp + g and r0 + 8).
  load_tile<HD>(p, sq, it.kv_head, 0, key_end, kv_s, kv_s + kStage);
  cp_async_commit();

  int row[2], lim[2];
  const __nv_bfloat16* qrow[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = warp * 16 + g + 8 * h;
    row[h] = r;
    const bool ok = r < n_rows;
    const int64_t token = sq.q_begin + it.t0 + (ok ? r / group : 0);
    const int head = it.kv_head * group + (ok ? r % group : 0);
    qrow[h] = static_cast<const __nv_bfloat16*>(p.q) + (token * p.n_heads + head) * HD;
    lim[h] = ok ? past + it.t0 + r / group + 1 : 0;  // causal: keys [0, past + t]
  }
  uint32_t qf[HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool ok = row[h] < n_rows;
      qf[kk][h] = ok ? *reinterpret_cast<const uint32_t*>(qrow[h] + kk * 16 + 2 * t) : 0u;
      qf[kk][2 + h] = ok ? *reinterpret_cast<const uint32_t*>(qrow[h] + kk * 16 + 8 + 2 * t) : 0u;
    }
  }

  const float sl2 = p.scale * 1.4426950408889634f;  // scores in log2 units for exp2f
  float o[HD / 8][4];
#pragma unroll
  for (int j = 0; j < HD / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int ti = 0; ti < n_tiles; ++ti) {
    const int tile = ti * kKeys;
    if (ti + 1 < n_tiles) {
      __nv_bfloat16* nk = kv_s + ((ti + 1) & 1) * 2 * kStage;
      load_tile<HD>(p, sq, it.kv_head, tile + kKeys, key_end, nk, nk + kStage);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const __nv_bfloat16* k_s = kv_s + (ti & 1) * 2 * kStage;
    const __nv_bfloat16* v_s = k_s + kStage;

    // S = Q K^T: 16 rows x 64 keys per warp, 8 n-tiles of 8 keys.
    float s[kKeys / 8][4];
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
      const __nv_bfloat16* krow = k_s + (j * 8 + g) * (HD + kPad) + 2 * t;
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(krow + kk * 16);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(krow + kk * 16 + 8);
        mma_bf16(s[j], qf[kk], b0, b1);
      }
    }
    // Online softmax; element c of n-tile j: row h = c / 2, key tile + 8 j + 2 t + c % 2.
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int key = tile + j * 8 + 2 * t + (c & 1);
        const float v = key < lim[c / 2] ? s[j][c] * sl2 : -INFINITY;
        s[j][c] = v;
        mx[c / 2] = fmaxf(mx[c / 2], v);
      }
    }
    float corr[2], base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      const float m_new = fmaxf(m[h], mx[h]);
      base[h] = m_new == -INFINITY ? 0.0f : m_new;  // a row with no visible key yet keeps zeros
      corr[h] = exp2f(m[h] - base[h]);
      m[h] = m_new;
      l[h] *= corr[h];
    }
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        s[j][c] = exp2f(s[j][c] - base[c / 2]);
        l[c / 2] += s[j][c];
      }
    }
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) {
      o[j][0] *= corr[0];
      o[j][1] *= corr[0];
      o[j][2] *= corr[1];
      o[j][3] *= corr[1];
    }
    // O += P V: P's S fragments are the A fragments of 16-key steps; V fragments by ldmatrix.trans
    // (matrix q of the x4: keys +8 (q & 1), head dims +8 (q >> 1)).
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const uint32_t a[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                             pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      const int q = lane / 8;
      const __nv_bfloat16* vrow = v_s + (kk * 16 + (q & 1) * 8 + lane % 8) * (HD + kPad) + (q >> 1) * 8;
#pragma unroll
      for (int jd = 0; jd < HD / 8; jd += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, vrow + jd * 8);
        mma_bf16(o[jd], a, b[0], b[1]);
        mma_bf16(o[jd + 1], a, b[2], b[3]);
      }
    }
    __syncthreads();  // the stage is overwritten by the load two tiles on
  }

  auto* out = static_cast<__nv_bfloat16*>(p.out);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    if (row[h] >= n_rows) continue;
    const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
    const int64_t token = sq.q_begin + it.t0 + row[h] / group;
    const int head = it.kv_head * group + row[h] % group;
    __nv_bfloat16* orow = out + (token * p.n_heads + head) * HD + 2 * t;
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) {
      *reinterpret_cast<__nv_bfloat162*>(orow + j * 8) =
          __floats2bfloat162_rn(o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
    }
  }
}

template <int HD>
void launch_hd(const AttnLaunch& p, cudaStream_t s) {
  attention_tc_kernel<HD><<<static_cast<unsigned>(p.n_items), kWarps * 32, tc_smem_bytes<HD>(), s>>>(p);
  KEEL_CUDA_LAUNCHED();
}

template <int HD>
void allow_smem_hd() {
  cudaFuncSetAttribute(attention_tc_kernel<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(tc_smem_bytes<HD>()));
  KEEL_CUDA_LAUNCHED();
}

}  // namespace

void attention_tc_set_smem_limits() {
  allow_smem_hd<64>();
  allow_smem_hd<128>();
}

void launch_attention_tc(const AttnLaunch& p, cudaStream_t s) {
  if (p.head_dim == 64) {
    launch_hd<64>(p, s);
  } else {
    launch_hd<128>(p, s);
  }
}

}  // namespace keel::backend::cuda
