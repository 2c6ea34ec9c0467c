// Skinny matmul for decode (n <= 8 tokens): out[n, m] = x[n, k] . w[m, k]^T (+ bias), bf16 operands
// (or f32 ones in the f32 precision mode), for up to three weights sharing x in one launch (Q/K/V,
// gate/up), f32 accumulation. Memory bound on the weights, so one warp streams one weight row with 16-byte loads
// (8 in flight per lane) and reuses it for every token; x is tiny and stays in L1/L2. cuBLAS picks
// kernels for n = 1 that read the weights at about half the bandwidth, hence this path.
// Fusions for batch-1 decode (docs/cuda_backend.md "Fused decode GEMVs"): the block's pre-norm (kNorm:
// x = rms_norm(residual + add) computed by every block into shared memory, the last block to get there
// writes the new residual and h) and, with it, an epilogue (gemv_fused.h): SiLU-and-multiply (a warp
// runs row r of the gate and of the up weight) or RoPE + the KV-pool write (a warp runs the two rows
// RoPE rotates together).
#include <algorithm>

#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/gemv_fused.h"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"

namespace keel::backend::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * 32;
constexpr int kUnroll = 8;

// acc += dot of one 16-byte vector of weights with one of x: 8 bf16 or 4 f32 elements.
__device__ __forceinline__ void fma_vec(const uint4& w, const uint4& x, float& acc, __nv_bfloat16 /*tag*/) {
  const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&x);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = __bfloat1622float2(wh[i]), b = __bfloat1622float2(xh[i]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
}

__device__ __forceinline__ void fma_vec(const uint4& w, const uint4& x, float& acc, float /*tag*/) {
  const float4 a = reinterpret_cast<const float4&>(w), b = reinterpret_cast<const float4&>(x);
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  acc = fmaf(a.w, b.w, acc);
}

// The elements of a 16-byte vector of W as floats, and back (rounded to W).
template <typename W>
struct Vec {
  static constexpr int kN = 16 / sizeof(W);
  float v[kN];
  __device__ __forceinline__ explicit Vec(const uint4& u) {
    const W* p = reinterpret_cast<const W*>(&u);
#pragma unroll
    for (int i = 0; i < kN; ++i) v[i] = load_f(p, i);
  }
  __device__ __forceinline__ uint4 pack() const {
    uint4 u;
    W* p = reinterpret_cast<W*>(&u);
#pragma unroll
    for (int i = 0; i < kN; ++i) store_f(p, i, v[i]);
    return u;
  }
};

__device__ __forceinline__ float block_sum(float v, float* warp_sums) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarpsPerBlock; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums is reused by the next row
  return total;
}

// The block's x for the kNorm kernels: hs [n, k] = rms_norm(residual + add) * w, each sum rounded to W
// as the residual stores it (the sum of squares runs over the rounded values, as launch_rms_norm's).
// Every block computes the same values in the same order; the last block to finish this writes them to
// nm.h and the new residual (all other blocks have read the old one by then).
template <typename W>
__device__ void norm_prelude(const GemvNorm& nm, int n, int64_t k, uint4* hs) {
  __shared__ float warp_sums[kWarpsPerBlock];
  __shared__ bool last;
  const int64_t kv = k / Vec<W>::kN;
  const uint4* res = static_cast<const uint4*>(nm.residual);
  const uint4* add = static_cast<const uint4*>(nm.add);
  const float4* w = reinterpret_cast<const float4*>(nm.w);
  for (int t = 0; t < n; ++t) {
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < kv; i += kThreads) {
      Vec<W> r(res[t * kv + i]);
      if (add != nullptr) {
        const Vec<W> a(add[t * kv + i]);
#pragma unroll
        for (int e = 0; e < Vec<W>::kN; ++e) r.v[e] += a.v[e];
        r = Vec<W>(r.pack());  // rounded, as the residual stores it
      }
#pragma unroll
      for (int e = 0; e < Vec<W>::kN; ++e) ss += r.v[e] * r.v[e];
      hs[t * kv + i] = r.pack();
    }
    const float inv = rsqrtf(block_sum(ss, warp_sums) / static_cast<float>(k) + nm.eps);
    for (int64_t i = threadIdx.x; i < kv; i += kThreads) {
      Vec<W> r(hs[t * kv + i]);
#pragma unroll
      for (int e = 0; e < Vec<W>::kN; e += 4) {
        const float4 wv = __ldg(w + (i * Vec<W>::kN + e) / 4);
        r.v[e] = r.v[e] * inv * wv.x;
        r.v[e + 1] = r.v[e + 1] * inv * wv.y;
        r.v[e + 2] = r.v[e + 2] * inv * wv.z;
        r.v[e + 3] = r.v[e + 3] * inv * wv.w;
      }
      hs[t * kv + i] = r.pack();
    }
  }
  __syncthreads();  // hs complete; every thread's reads of the residual are done
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(nm.counter, 1u) == gridDim.x - 1;
    if (last) *nm.counter = 0;  // the next launch's count starts from zero
  }
  __syncthreads();
  if (!last) return;
  uint4* res_out = static_cast<uint4*>(nm.residual);
  uint4* h_out = static_cast<uint4*>(nm.h);
  for (int64_t i = threadIdx.x; i < n * kv; i += kThreads) {
    if (add != nullptr) {
      Vec<W> r(res[i]);
      const Vec<W> a(add[i]);
#pragma unroll
      for (int e = 0; e < Vec<W>::kN; ++e) r.v[e] += a.v[e];
      res_out[i] = r.pack();
    }
    h_out[i] = hs[i];
  }
}

// A launch's units of work (rows of the grid's warps): kSiluMul pairs row r of the gate and of the up
// weight, kRopeKv the two rows RoPE rotates together, kNone takes each row alone.
__host__ __device__ __forceinline__ int64_t gemv_units(const GemvGroup& g, int epi) {
  return epi == static_cast<int>(GemvEpilogue::kSiluMul) ? g.m[0]
         : epi == static_cast<int>(GemvEpilogue::kRopeKv) ? g.m_total / 2
                                                           : g.m_total;
}

// The row's segment (up to kGemvMaxSegments weights sharing x, one launch): its weight, bias and
// output, and the row within it.
struct SegRow {
  const void* w;
  const float* bias;
  void* out;
  int64_t m, row;
};

__device__ __forceinline__ SegRow seg_row(const GemvGroup& g, int64_t row) {
  int s = 0;
  if (g.n_seg > 1 && row >= g.m[0]) {
    row -= g.m[0];
    s = 1;
    if (g.n_seg > 2 && row >= g.m[1]) {
      row -= g.m[1];
      s = 2;
    }
  }
  // Selects, not an indexed parameter array (which would go through local memory).
  const void* w = s == 0 ? g.w[0] : (s == 1 ? g.w[1] : g.w[2]);
  const float* b = s == 0 ? g.bias[0] : (s == 1 ? g.bias[1] : g.bias[2]);
  void* o = s == 0 ? g.out[0] : (s == 1 ? g.out[1] : g.out[2]);
  const int64_t m = s == 0 ? g.m[0] : (s == 1 ? g.m[1] : g.m[2]);
  return {w, b, o, m, row};
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float round_to(float v, const float*) { return v; }
__device__ __forceinline__ float round_to(float v, const __nv_bfloat16*) {
  return __bfloat162float(__float2bfloat16_rn(v));
}

// kRopeKv's epilogue for one token: the pair's two outputs (bias added) as matmul_group would store
// them, rotated as rope_write_kv's kernel does (same angle, same expressions) unless they are v or a
// pass-through pair, stored at rows ra and rb of out (the token's row of its segment) and, for k and v,
// of the token's KV-pool row (a segment row is kv_head * head_dim + dim, the pool row's layout).
template <typename T>
__device__ __forceinline__ void rope_kv_store(const GemvRope& rp, int seg, int pair, int t, float v0, float v1,
                                              T* out, int64_t ra, int64_t rb) {
  const float x0 = round_to(v0, out), x1 = round_to(v1, out);
  float y0 = x0, y1 = x1;
  if (seg < 2 && pair < rp.rot_dims / 2) {
    float sn, cs;
    sincosf(static_cast<float>(rp.positions[t]) * rp.inv_freq[pair], &sn, &cs);
    cs *= rp.attn_factor;
    sn *= rp.attn_factor;
    y0 = x0 * cs - x1 * sn;
    y1 = x0 * sn + x1 * cs;
  }
  store_f(out, ra, y0);
  store_f(out, rb, y1);
  if (seg == 0) return;
  T* cache = static_cast<T*>(seg == 1 ? rp.k_cache : rp.v_cache);
  const int64_t dst = static_cast<int64_t>(rp.slots[t]) * rp.n_kv * rp.head_dim;
  store_f(cache, dst + ra, y0);
  store_f(cache, dst + rb, y1);
}

// W: the type of x and the weights (bf16, or f32 in the f32 mode); T: the output's. kEpi: a
// GemvEpilogue. A warp's unit of work is one row (kNone) or two (kSiluMul: row r of g.w[0] (gate) and
// of g.w[1] (up), out = g.out[0]; kRopeKv: the two rows of a head that RoPE rotates together, or two
// pass-through rows past rot_dims). The plain kernel runs one unit per warp; the kNorm ones are
// launched with at most one wave of blocks, each warp striding over units, so every block computes
// its pre-norm once.
template <typename W, typename T, int kMaxN, bool kNorm, int kEpi>
__global__ void __launch_bounds__(kThreads) gemv_kernel(const W* x, GemvGroup g, GemvNorm nm, GemvRope rp, int n,
                                                        int64_t k, bool early_weights) {
  extern __shared__ uint4 hs[];  // kNorm: the block's x [n, k]
  constexpr bool kPair = kEpi == static_cast<int>(GemvEpilogue::kSiluMul);
  constexpr bool kRope = kEpi == static_cast<int>(GemvEpilogue::kRopeKv);
  constexpr int kRows = kPair || kRope ? 2 : 1;
  pdl_trigger();
  const int lane = threadIdx.x % 32;
  const int64_t rows = gemv_units(g, kEpi);
  const int64_t row_step = kNorm ? static_cast<int64_t>(gridDim.x) * kWarpsPerBlock : rows;
  int64_t grow = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t kv = k / (16 / sizeof(W));  // 16-byte vectors per row
  int seg = 0, pair = 0;  // kRope: the unit's segment (0 q, 1 k, 2 v) and pair index within its head
  const auto seg_rows = [&](int64_t r0, SegRow* sr) {
    if constexpr (kRope) {
      const int half_hd = rp.head_dim / 2, half_rot = rp.rot_dims / 2;
      const int64_t head = r0 / half_hd;
      pair = static_cast<int>(r0 % half_hd);
      int a = rp.rot_dims + 2 * (pair - half_rot), b = a + 1;  // a pass-through pair
      if (pair < half_rot) {
        a = rp.neox ? pair : 2 * pair;
        b = a + (rp.neox ? half_rot : 1);
      }
      const int64_t ga = head * rp.head_dim + a;
      seg = ga < g.m[0] ? 0 : ga < g.m[0] + g.m[1] ? 1 : 2;
      sr[0] = seg_row(g, ga);
      sr[1] = sr[0];
      sr[1].row += b - a;
    } else if constexpr (kPair) {
      sr[0] = {g.w[0], g.bias[0], g.out[0], g.m[0], r0};
      sr[1] = {g.w[1], g.bias[1], g.out[0], g.m[0], r0};
    } else {
      sr[0] = seg_row(g, r0);
    }
  };
  SegRow sr[kRows];
  seg_rows(grow < rows ? grow : 0, sr);
  const uint4* wr[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) wr[r] = reinterpret_cast<const uint4*>(static_cast<const W*>(sr[r].w) + sr[r].row * k);
  // The first batch of weights (no kernel's output) is requested before pdl_wait and the pre-norm: it
  // streams while the kernel before (the one writing x) ends and while the block computes x. Not when
  // launched early after attention (early_weights false): that stream would queue ahead of attention's
  // dependent loads (KEEL_CUDA_PDL=1 made the 8B batch-1 step 0.7 ms slower, session 7).
  uint4 wv[kRows][kUnroll];
  bool loaded = false;
  if (early_weights && grow < rows && lane + 32 * (kUnroll - 1) < kv) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) wv[r][u] = __ldcs(wr[r] + lane + 32 * u);  // streamed once: evict first
    }
    loaded = true;
  }
  pdl_wait();  // x (or the residual) comes from the kernel before
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  if constexpr (kNorm) {
    norm_prelude<W>(nm, n, k, hs);
    xr = hs;
  }
  // x from shared memory (kNorm) or through the read-only cache.
  const auto load_x = [&](int64_t j) { return kNorm ? xr[j] : __ldg(xr + j); };
  for (; grow < rows; grow += row_step) {
    if (!loaded) {  // a later row of this warp
      seg_rows(grow, sr);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        wr[r] = reinterpret_cast<const uint4*>(static_cast<const W*>(sr[r].w) + sr[r].row * k);
      }
    }
    float acc[kRows][kMaxN];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int t = 0; t < kMaxN; ++t) acc[r][t] = 0.0f;
    }
    int64_t i = lane;
    for (; i + 32 * (kUnroll - 1) < kv; i += 32 * kUnroll) {
      if (!loaded) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) wv[r][u] = __ldcs(wr[r] + i + 32 * u);
        }
      }
      loaded = false;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int t = 0; t < kMaxN; ++t) {
          if (t < n) {
            const uint4 xv = load_x(t * kv + i + 32 * u);
#pragma unroll
            for (int r = 0; r < kRows; ++r) fma_vec(wv[r][u], xv, acc[r][t], W{});
          }
        }
      }
    }
    loaded = false;
    for (; i < kv; i += 32) {
      uint4 w1[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) w1[r] = __ldcs(wr[r] + i);
#pragma unroll
      for (int t = 0; t < kMaxN; ++t) {
        if (t < n) {
          const uint4 xv = load_x(t * kv + i);
#pragma unroll
          for (int r = 0; r < kRows; ++r) fma_vec(w1[r], xv, acc[r][t], W{});
        }
      }
    }
    T* out = static_cast<T*>(sr[0].out);
    const int64_t row = sr[0].row, m = sr[0].m;
#pragma unroll
    for (int t = 0; t < kMaxN; ++t) {
      float v[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        v[r] = warp_sum(acc[r][t]) + (sr[r].bias != nullptr ? sr[r].bias[sr[r].row] : 0.0f);
      }
      if (lane != 0 || t >= n) continue;
      if constexpr (kRope) {
        rope_kv_store(rp, seg, pair, t, v[0], v[1], out + t * m, row, sr[1].row);
      } else if constexpr (kPair) {
        // silu_mul of the gate and up values as matmul_group would have stored them.
        const float gv = round_to(v[0], out), uv = round_to(v[1], out);
        store_f(out, t * m + row, gv / (1.0f + expf(-gv)) * uv);
      } else {
        store_f(out, t * m + row, v[0]);
      }
    }
  }
}

template <typename W, typename T, int kMaxN, bool kNorm, int kEpi>
void launch_n(const void* x, const GemvGroup& g, const GemvNorm& nm, const GemvRope& rp, int n, int64_t k,
              cudaStream_t s) {
  const int64_t rows = gemv_units(g, kEpi);
  auto blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const size_t smem = kNorm ? static_cast<size_t>(n) * static_cast<size_t>(k) * sizeof(W) : 0;
  if constexpr (kNorm) {  // one wave at most: the pre-norm once per block
    static const int n_sm = [] {
      int dev = 0, v = 0;
      (void)cudaGetDevice(&dev);
      (void)cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
      return v;
    }();
    static size_t queried_smem = 0;  // per instantiation; queried again when the shared memory changes
    static int per_sm = 0;
    if (per_sm == 0 || queried_smem != smem) {
      (void)cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_kernel<W, T, kMaxN, kNorm, kEpi>, kThreads,
                                                          smem);
      queried_smem = smem;
    }
    blocks = std::min(blocks, static_cast<unsigned>(std::max(1, per_sm) * std::max(1, n_sm)));
  }
  const bool early_weights =
      pdl_previous() != PdlKind::kAttention || !pdl_allowed(PdlKind::kGemv, PdlKind::kAttention);
  launch_pdl(PdlKind::kGemv, gemv_kernel<W, T, kMaxN, kNorm, kEpi>, dim3(blocks), dim3(kThreads), smem, s, static_cast<const W*>(x),
             g, nm, rp, n, k, early_weights);
}

// Instantiates kMaxN 1, 2, 4, 8 for the plain kernel, 1 and 8 for the fused ones (batch-1 decode).
template <typename W, typename T, bool kNorm, int kEpi>
void launch_g(const void* x, GemvGroup& g, const GemvNorm& nm, const GemvRope& rp, int n, int64_t k, cudaStream_t s) {
  g.m_total = 0;
  for (int i = 0; i < g.n_seg; ++i) g.m_total += g.m[i];
  if (n == 0 || g.m_total == 0) return;
  if (n == 1) {
    launch_n<W, T, 1, kNorm, kEpi>(x, g, nm, rp, n, k, s);
  } else if constexpr (kNorm) {
    launch_n<W, T, 8, kNorm, kEpi>(x, g, nm, rp, n, k, s);
  } else if (n == 2) {
    launch_n<W, T, 2, kNorm, kEpi>(x, g, nm, rp, n, k, s);
  } else if (n <= 4) {
    launch_n<W, T, 4, kNorm, kEpi>(x, g, nm, rp, n, k, s);
  } else {
    launch_n<W, T, 8, kNorm, kEpi>(x, g, nm, rp, n, k, s);
  }
  KEEL_CUDA_LAUNCHED();
}

template <typename W>
void launch_fused_w(GemvGroup& g, const GemvNorm& nm, GemvEpilogue epi, const GemvRope& rp, int n, int64_t k,
                    cudaStream_t s) {
  switch (epi) {
    case GemvEpilogue::kSiluMul: launch_g<W, W, true, 1>(nullptr, g, nm, rp, n, k, s); break;
    case GemvEpilogue::kRopeKv: launch_g<W, W, true, 2>(nullptr, g, nm, rp, n, k, s); break;
    default: launch_g<W, W, true, 0>(nullptr, g, nm, rp, n, k, s); break;
  }
}

}  // namespace

void launch_gemv_group(const void* x, GemvGroup g, int n, int64_t k, ActType t, cudaStream_t s) {
  dispatch_act(t, [&](auto tag) {
    launch_g<__nv_bfloat16, decltype(tag), false, 0>(x, g, GemvNorm{}, GemvRope{}, n, k, s);
  });
}

void launch_gemv_group_f32(const float* x, GemvGroup g, int n, int64_t k, cudaStream_t s) {
  launch_g<float, float, false, 0>(x, g, GemvNorm{}, GemvRope{}, n, k, s);
}

void launch_gemv_fused(GemvGroup g, const GemvNorm& norm, GemvEpilogue epi, const GemvRope& rope, int n, int64_t k,
                       bool f32, cudaStream_t s) {
  if (f32) {
    launch_fused_w<float>(g, norm, epi, rope, n, k, s);
  } else {
    launch_fused_w<__nv_bfloat16>(g, norm, epi, rope, n, k, s);
  }
}

}  // namespace keel::backend::cuda
