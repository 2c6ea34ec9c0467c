// Prefill attention on tensor cores (FlashAttention-2 style), bf16 operands, f32 accumulation.
// A block (WARPS warps) runs one item of the tensor-core plan: R = 16 x MT x WARPS query rows (256, 128
// or 64: attention_tc_rows()) = tokens x all query heads of one kv head's GQA group (row r: token
// t0 + r / group, head r % group), so each K/V row is read once per group and per R rows. Keys go in
// tiles of KEYS, gathered through the slot list into shared memory with cp.async (two stages: the next
// tile loads while this one is computed; rows past the block's last causal key are zero-filled). Each
// warp owns MT m-tiles of 16 rows: S = Q K^T with mma.sync m16n8k16 (K fragments by ldmatrix, each used
// for all MT m-tiles; Q fragments stay in registers when MT = 1, and are re-read from shared memory per
// tile when MT = 2, for registers), the online softmax runs on the S fragments in registers (a row lives
// in the 4 lanes of a quad; the causal mask only on tiles that reach the block's diagonal), P is rounded
// to bf16 and reused as the A operand of O += P V (V fragments by ldmatrix.trans, each used for all MT
// m-tiles), O stays in registers and is rescaled per row. m-tiles whose rows are all past the item's
// rows skip their MMAs. Causal masking by position in the sequence, so a cached prefix plus a new chunk
// is one call.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "backend/cuda/attention_tc.h"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

constexpr int kPad = 8;  // bf16 elements of padding per shared row (keeps ldmatrix conflict-free)

template <int HD, int MT, int KEYS, int WARPS>
struct TcCfg {
  static constexpr int kThreads = WARPS * 32;
  static constexpr int kRows = WARPS * 16 * MT;  // query rows per block
  static constexpr bool kQSmem = MT > 1;          // Q fragments re-read from shared memory each tile
  static constexpr int kRow = HD + kPad;          // elements per shared row
  static constexpr int kQElems = kQSmem ? kRows * kRow : 0;
  static constexpr int kStage = KEYS * kRow;  // elements of one K (or V) stage
  static constexpr size_t kSmem = sizeof(__nv_bfloat16) * (kQElems + 2 /*stages*/ * 2 /*K, V*/ * kStage);
};

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

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// 2^x (ex2.approx, subnormal results flushed to 0: weights below 2^-126 of the row maximum).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// K and V rows [tile, tile + KEYS) of the sequence for one kv head into stage buffers (zeros at and
// past key_end). 16-byte chunks, consecutive threads along a row. Each thread loads the slot ids of up to
// 4 of its chunks' keys at once (independent loads: one memory latency per 4 chunks, not one per chunk),
// then issues those copies.
template <int HD, int KEYS, int THREADS>
__device__ __forceinline__ void load_tile(const AttnLaunch& p, const AttnSeqDev& sq, int kv_head, int tile,
                                          int key_end, __nv_bfloat16* k_s, __nv_bfloat16* v_s) {
  constexpr int kChunks = HD / 8;
  constexpr int kIters = KEYS * kChunks / THREADS;
  static_assert(KEYS * kChunks % THREADS == 0, "whole chunks per thread");
  const auto* kc = static_cast<const __nv_bfloat16*>(p.k_cache);
  const auto* vc = static_cast<const __nv_bfloat16*>(p.v_cache);
  constexpr int kBatch = kIters < 4 ? kIters : 4;  // slot ids in registers at a time
  static_assert(kIters % kBatch == 0, "whole batches");
#pragma unroll
  for (int u0 = 0; u0 < kIters; u0 += kBatch) {
    int32_t slot[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int key = tile + (static_cast<int>(threadIdx.x) + (u0 + u) * THREADS) / kChunks;
      slot[u] = key < key_end ? __ldg(sq.ctx + key) : -1;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int idx = static_cast<int>(threadIdx.x) + (u0 + u) * THREADS, j = idx / kChunks, c = idx % kChunks;
      const bool valid = slot[u] >= 0;
      const int64_t off = valid ? (static_cast<int64_t>(slot[u]) * p.n_kv + kv_head) * HD + c * 8 : 0;
      cp_async16(k_s + j * (HD + kPad) + c * 8, kc + off, valid);
      cp_async16(v_s + j * (HD + kPad) + c * 8, vc + off, valid);
    }
  }
}

template <int HD, int MT, int KEYS, int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 8 / WARPS) attention_tc_kernel(AttnLaunch p) {
  using C = TcCfg<HD, MT, KEYS, WARPS>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto* q_s = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* kv_s = q_s + C::kQElems;
  const AttnItem it = p.items[blockIdx.x];
  const AttnSeqDev sq = p.seqs[it.seq];
  const int group = p.n_heads / p.n_kv;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;  // quad (row) and lane within the quad
  const int past = sq.n_ctx - sq.n_q;
  const int n_rows = (it.t1 - it.t0) * group;
  const int key_end = past + it.t1;  // the last token's causal limit
  const int n_tiles = (key_end + KEYS - 1) / KEYS;
  const int diag = past + it.t0 + 1;  // keys below this are visible to every row of the block
  const int row0 = warp * 16 * MT;    // this warp's first row; m-tile mt holds rows row0 + 16 mt + [0, 16)
  const auto* q = static_cast<const __nv_bfloat16*>(p.q);
  auto q_at = [&](int r) {  // row r's query vector (r < n_rows)
    const int64_t token = sq.q_begin + it.t0 + r / group;
    return q + (token * p.n_heads + it.kv_head * group + r % group) * HD;
  };

  // Prefetch the first tile (and Q, when it lives in shared memory) as one cp.async group.
  load_tile<HD, KEYS, C::kThreads>(p, sq, it.kv_head, 0, key_end, kv_s, kv_s + C::kStage);
  if constexpr (C::kQSmem) {
    for (int idx = threadIdx.x; idx < C::kRows * (HD / 8); idx += C::kThreads) {
      const int r = idx / (HD / 8), c = idx % (HD / 8);
      const bool ok = r < n_rows;
      cp_async16(q_s + r * C::kRow + c * 8, ok ? q_at(r) + c * 8 : q, ok);
    }
  }
  cp_async_commit();

  bool live[MT];  // m-tiles with at least one real row
  int lim[MT][2];  // causal limit of rows g and g + 8 of each m-tile: keys [0, lim)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    live[mt] = row0 + 16 * mt < n_rows;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + 16 * mt + g + 8 * h;
      lim[mt][h] = r < n_rows ? past + it.t0 + r / group + 1 : 0;
    }
  }
  // MT = 1: this warp's Q fragments in registers for the whole item (rows g and g + 8).
  uint32_t qf[C::kQSmem ? 1 : HD / 16][4];
  if constexpr (!C::kQSmem) {
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + g + 8 * h;
        const bool ok = r < n_rows;
        const __nv_bfloat16* qr = ok ? q_at(r) : q;
        qf[kk][h] = ok ? *reinterpret_cast<const uint32_t*>(qr + kk * 16 + 2 * t) : 0u;
        qf[kk][2 + h] = ok ? *reinterpret_cast<const uint32_t*>(qr + kk * 16 + 8 + 2 * t) : 0u;
      }
    }
  }

  const float sl2 = p.scale * 1.4426950408889634f;  // scores in log2 units for exp2
  float o[MT][HD / 8][4];
  float m[MT][2], l[MT][2];  // running max (raw score units) and sum per row
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.0f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
  }

  for (int ti = 0; ti < n_tiles; ++ti) {
    const int tile = ti * KEYS;
    if (ti + 1 < n_tiles) {
      __nv_bfloat16* nk = kv_s + ((ti + 1) & 1) * 2 * C::kStage;
      load_tile<HD, KEYS, C::kThreads>(p, sq, it.kv_head, tile + KEYS, key_end, nk, nk + C::kStage);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const __nv_bfloat16* k_s = kv_s + (ti & 1) * 2 * C::kStage;
    const __nv_bfloat16* v_s = k_s + C::kStage;

    // S = Q K^T: 16 rows x KEYS keys per m-tile, KEYS / 8 n-tiles of 8 keys. One ldmatrix.x4 of K
    // gives the B fragments of two 16-dim steps (matrix i: keys +lane % 8, dims +8 i).
    float s[MT][KEYS / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int j = 0; j < KEYS / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
    }
#pragma unroll
    for (int k2 = 0; k2 < HD / 32; ++k2) {
      uint32_t qa[MT][2][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          if constexpr (C::kQSmem) {
            if (live[mt]) {
              const int col = (2 * k2 + u) * 16 + (lane / 16) * 8;
              ldmatrix_x4(qa[mt][u], q_s + (row0 + 16 * mt + lane % 16) * C::kRow + col);
            }
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) qa[mt][u][e] = qf[2 * k2 + u][e];
          }
        }
      }
#pragma unroll
      for (int j = 0; j < KEYS / 8; ++j) {
        uint32_t b[4];
        ldmatrix_x4(b, k_s + (j * 8 + lane % 8) * C::kRow + k2 * 32 + (lane / 8) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if (!live[mt]) continue;
          mma_bf16(s[mt][j], qa[mt][0], b[0], b[1]);
          mma_bf16(s[mt][j], qa[mt][1], b[2], b[3]);
        }
      }
    }
    // Online softmax; element c of n-tile j: row g + 8 (c / 2), key tile + 8 j + 2 t + c % 2.
    const bool masked = tile + KEYS > diag;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if (!live[mt]) continue;
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < KEYS / 8; ++j) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int key = tile + j * 8 + 2 * t + (c & 1);
          if (masked && key >= lim[mt][c / 2]) s[mt][j][c] = -INFINITY;
          mx[c / 2] = fmaxf(mx[c / 2], s[mt][j][c]);
        }
      }
      float corr[2], base[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float m_new = fmaxf(m[mt][h], mx[h]);
        base[h] = m_new == -INFINITY ? 0.0f : m_new * sl2;  // a row with no visible key yet keeps zeros
        corr[h] = fast_exp2(m[mt][h] * sl2 - base[h]);
        m[mt][h] = m_new;
        l[mt][h] *= corr[h];
      }
#pragma unroll
      for (int j = 0; j < KEYS / 8; ++j) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const float e = fast_exp2(fmaf(s[mt][j][c], sl2, -base[c / 2]));
          s[mt][j][c] = e;
          l[mt][c / 2] += e;
        }
      }
#pragma unroll
      for (int j = 0; j < HD / 8; ++j) {
        o[mt][j][0] *= corr[0];
        o[mt][j][1] *= corr[0];
        o[mt][j][2] *= corr[1];
        o[mt][j][3] *= corr[1];
      }
    }
    // O += P V: P's S fragments are the A fragments of 16-key steps; V fragments by ldmatrix.trans
    // (matrix i of the x4: keys +8 (i & 1), head dims +8 (i >> 1)), each used for every m-tile.
#pragma unroll
    for (int kk = 0; kk < KEYS / 16; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
      const int qi = lane / 8;
      const __nv_bfloat16* vrow = v_s + (kk * 16 + (qi & 1) * 8 + lane % 8) * C::kRow + (qi >> 1) * 8;
#pragma unroll
      for (int jd = 0; jd < HD / 8; jd += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, vrow + jd * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if (!live[mt]) continue;
          mma_bf16(o[mt][jd], a[mt], b[0], b[1]);
          mma_bf16(o[mt][jd + 1], a[mt], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the stage is overwritten by the load two tiles on
  }

  auto* out = static_cast<__nv_bfloat16*>(p.out);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float lh = l[mt][h];
      lh += __shfl_xor_sync(0xffffffffu, lh, 1);
      lh += __shfl_xor_sync(0xffffffffu, lh, 2);
      const int r = row0 + 16 * mt + g + 8 * h;
      if (r >= n_rows) continue;
      const float inv = lh > 0.0f ? 1.0f / lh : 0.0f;
      const int64_t token = sq.q_begin + it.t0 + r / group;
      const int head = it.kv_head * group + r % group;
      __nv_bfloat16* orow = out + (token * p.n_heads + head) * HD + 2 * t;
#pragma unroll
      for (int j = 0; j < HD / 8; ++j) {
        *reinterpret_cast<__nv_bfloat162*>(orow + j * 8) =
            __floats2bfloat162_rn(o[mt][j][2 * h] * inv, o[mt][j][2 * h + 1] * inv);
      }
    }
  }
}

template <int HD, int MT, int WARPS>
void launch_cfg(const AttnLaunch& p, cudaStream_t s) {
  using C = TcCfg<HD, MT, 64, WARPS>;
  attention_tc_kernel<HD, MT, 64, WARPS><<<static_cast<unsigned>(p.n_items), C::kThreads, C::kSmem, s>>>(p);
  KEEL_CUDA_LAUNCHED();
}

template <int HD, int MT, int WARPS>
void allow_smem_cfg() {
  cudaFuncSetAttribute(attention_tc_kernel<HD, MT, 64, WARPS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(TcCfg<HD, MT, 64, WARPS>::kSmem));
  KEEL_CUDA_LAUNCHED();
}

// rows = 64 (4 warps of one m-tile), 128 (4 warps of two) or 256 (8 warps of two).
template <int HD>
void launch_hd(const AttnLaunch& p, int rows, cudaStream_t s) {
  if (rows == 256) {
    launch_cfg<HD, 2, 8>(p, s);
  } else if (rows == 128) {
    launch_cfg<HD, 2, 4>(p, s);
  } else {
    launch_cfg<HD, 1, 4>(p, s);
  }
}

bool valid_rows(int rows) { return rows == 64 || rows == 128 || rows == 256; }
int rows_from_env() {
  const char* v = std::getenv("KEEL_CUDA_ATTN_TC_ROWS");
  const int rows = v != nullptr ? std::atoi(v) : 0;
  return valid_rows(rows) ? rows : 256;
}
int g_tc_rows = rows_from_env();

}  // namespace

int attention_tc_rows() { return g_tc_rows; }
void set_attention_tc_rows(int rows) {
  if (valid_rows(rows)) g_tc_rows = rows;
}

void attention_tc_set_smem_limits() {
  allow_smem_cfg<64, 1, 4>();
  allow_smem_cfg<128, 1, 4>();
  allow_smem_cfg<64, 2, 4>();
  allow_smem_cfg<128, 2, 4>();
  allow_smem_cfg<64, 2, 8>();
  allow_smem_cfg<128, 2, 8>();
}

void launch_attention_tc(const AttnLaunch& p, int rows, cudaStream_t s) {
  if (p.head_dim == 64) {
    launch_hd<64>(p, rows, s);
  } else {
    launch_hd<128>(p, rows, s);
  }
}

}  // namespace keel::backend::cuda
