// Attention over the token-granular KV pool, FlashAttention-style: a block runs one AttnItem (up to
// 16 query rows = tokens x heads of one kv head's group, so each K/V row is read once for the whole
// GQA group) over one key range (split-KV), in tiles of 32 keys gathered through the slot list into
// shared memory, with an online softmax (running max m, sum l, unnormalised accumulator).
// Scores: lane j of a warp owns key j of the tile; the P.V product: lane owns head dims lane + 32c.
// With n_splits > 1 each split writes (acc, m, l) and combine_kernel merges them.
#include <cfloat>
#include <type_traits>

#include "backend/cuda/attention_decode.h"
#include "backend/cuda/attention_tc.h"
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

constexpr int kTileKeys = 32;
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = kAttnRowsPerBlock / kWarps;

size_t smem_bytes(int hd) {
  return sizeof(float) * (static_cast<size_t>(kAttnRowsPerBlock) * hd + 2 * kTileKeys * (hd + 1));
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__device__ void load_q(const AttnLaunch& p, const AttnItem& it, const AttnSeqDev& sq, float* q_s) {
  const int hd = p.head_dim, ng = it.g1 - it.g0, n_rows = (it.t1 - it.t0) * ng;
  const int group = p.n_heads / p.n_kv;
  const T* q = static_cast<const T*>(p.q);
  for (int idx = threadIdx.x; idx < n_rows * hd; idx += blockDim.x) {
    const int r = idx / hd, d = idx % hd;
    const int64_t token = sq.q_begin + it.t0 + r / ng;
    const int head = it.kv_head * group + it.g0 + r % ng;
    q_s[idx] = load_f(q, (token * p.n_heads + head) * hd + d) * p.scale;
  }
}

__device__ __forceinline__ void to_floats(const uint4& raw, float* out, float) {
  const float4* f = reinterpret_cast<const float4*>(&raw);
  out[0] = f->x;
  out[1] = f->y;
  out[2] = f->z;
  out[3] = f->w;
}
__device__ __forceinline__ void to_floats(const uint4& raw, float* out, __nv_bfloat16) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

// K/V rows [tile, tile + 32) of the sequence for one kv head into shared memory as f32 (zeros past
// key_end), rows padded to hd + 1 floats. The tile's slot ids are read once into slot_s; then each
// thread issues all its (up to 4) 16-byte K and V loads before storing any, so a tile costs about two
// memory latencies instead of one chain per element. 16-byte loads need head_dim % (16 / sizeof(T)) == 0;
// consecutive threads walk along a row (coalesced). Called by all threads between two barriers.
template <typename T>
__device__ void load_kv_tile(const AttnLaunch& p, const AttnSeqDev& sq, int kv_head, int tile, int key_end,
                             int* slot_s, float* k_s, float* v_s) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kBatch = 4;
  const int hd = p.head_dim;
  const T* kc = static_cast<const T*>(p.k_cache);
  const T* vc = static_cast<const T*>(p.v_cache);
  if (threadIdx.x < kTileKeys) {
    const int key = tile + threadIdx.x;
    slot_s[threadIdx.x] = key < key_end ? sq.ctx[key] : -1;
  }
  __syncthreads();
  if (hd % kVec == 0) {
    const int vec_per_row = hd / kVec, total = kTileKeys * vec_per_row;
    for (int base = threadIdx.x; base < total; base += kBatch * blockDim.x) {
      uint4 kr[kBatch], vr[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int idx = base + u * blockDim.x;
        kr[u] = vr[u] = make_uint4(0, 0, 0, 0);
        if (idx < total) {
          const int j = idx / vec_per_row, slot = slot_s[j];
          if (slot >= 0) {
            const int64_t off = (static_cast<int64_t>(slot) * p.n_kv + kv_head) * hd + (idx - j * vec_per_row) * kVec;
            kr[u] = *reinterpret_cast<const uint4*>(kc + off);
            vr[u] = *reinterpret_cast<const uint4*>(vc + off);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int idx = base + u * blockDim.x;
        if (idx >= total) break;
        const int j = idx / vec_per_row, d0 = (idx - j * vec_per_row) * kVec;
        float kf[kVec], vf[kVec];
        to_floats(kr[u], kf, T{});
        to_floats(vr[u], vf, T{});
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          k_s[j * (hd + 1) + d0 + e] = kf[e];
          v_s[j * (hd + 1) + d0 + e] = vf[e];
        }
      }
    }
    return;
  }
  for (int idx = threadIdx.x; idx < kTileKeys * hd; idx += blockDim.x) {
    const int j = idx / hd, d = idx % hd, slot = slot_s[j];
    float kv = 0.0f, vv = 0.0f;
    if (slot >= 0) {
      const int64_t off = (static_cast<int64_t>(slot) * p.n_kv + kv_head) * hd + d;
      kv = load_f(kc, off);
      vv = load_f(vc, off);
    }
    k_s[j * (hd + 1) + d] = kv;
    v_s[j * (hd + 1) + d] = vv;
  }
}

template <typename T, int kDPerLane>
__global__ void __launch_bounds__(kWarps * 32) attention_kernel(AttnLaunch p) {
  extern __shared__ float smem[];
  __shared__ int slot_s[kTileKeys];
  const int hd = p.head_dim;
  float* q_s = smem;
  float* k_s = q_s + kAttnRowsPerBlock * hd;
  float* v_s = k_s + kTileKeys * (hd + 1);
  const AttnItem it = p.items[blockIdx.x];
  const AttnSeqDev sq = p.seqs[it.seq];
  const int ng = it.g1 - it.g0, n_rows = (it.t1 - it.t0) * ng;
  const int past = sq.n_ctx - sq.n_q;
  const int split_len = p.split_len_dev != nullptr ? *p.split_len_dev : p.split_len;
  const int key_begin = blockIdx.y * split_len;
  const int key_end = min(past + it.t1, key_begin + split_len);  // empty for splits past the context
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int my_rows = (n_rows - warp + kWarps - 1) / kWarps;  // rows warp, warp + 4, ... below n_rows

  load_q<T>(p, it, sq, q_s);
  float acc[kRowsPerWarp][kDPerLane];
  float m[kRowsPerWarp], l[kRowsPerWarp];
  int lim[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = warp + kWarps * i;
    lim[i] = r < n_rows ? past + it.t0 + r / ng + 1 : 0;  // causal: keys [0, past + t]
    m[i] = -FLT_MAX;
    l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < kDPerLane; ++c) acc[i][c] = 0.0f;
  }
  for (int tile = key_begin; tile < key_end; tile += kTileKeys) {
    __syncthreads();
    load_kv_tile<T>(p, sq, it.kv_head, tile, key_end, slot_s, k_s, v_s);
    __syncthreads();
    float s[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) s[i] = 0.0f;
    for (int d = 0; d < hd; ++d) {
      const float kd = k_s[lane * (hd + 1) + d];
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        if (i < my_rows) s[i] = fmaf(q_s[(warp + kWarps * i) * hd + d], kd, s[i]);
      }
    }
    const int key = tile + lane;
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const bool visible = key < key_end && key < lim[i];
      const float tile_max = warp_max(visible ? s[i] : -FLT_MAX);
      const float m_new = fmaxf(m[i], tile_max);
      const float pj = visible ? expf(s[i] - m_new) : 0.0f;
      const float corr = expf(m[i] - m_new);
      l[i] = l[i] * corr + warp_sum(pj);
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < kDPerLane; ++c) acc[i][c] *= corr;
      s[i] = pj;
    }
    const int n_keys = min(kTileKeys, key_end - tile);
    for (int j = 0; j < n_keys; ++j) {
      float vj[kDPerLane];
#pragma unroll
      for (int c = 0; c < kDPerLane; ++c) {
        const int d = lane + 32 * c;
        vj[c] = d < hd ? v_s[j * (hd + 1) + d] : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        if (i >= my_rows) break;
        const float pj = __shfl_sync(0xffffffffu, s[i], j);
#pragma unroll
        for (int c = 0; c < kDPerLane; ++c) acc[i][c] = fmaf(pj, vj[c], acc[i][c]);
      }
    }
  }
  const int group = p.n_heads / p.n_kv;
  const int64_t n_rows_total = p.n_tokens * p.n_heads;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = warp + kWarps * i;
    if (r >= n_rows) continue;
    const int64_t row = (sq.q_begin + it.t0 + r / ng) * static_cast<int64_t>(p.n_heads) + it.kv_head * group + it.g0 +
                        r % ng;
    if (p.n_splits == 1) {
      const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
#pragma unroll
      for (int c = 0; c < kDPerLane; ++c) {
        const int d = lane + 32 * c;
        if (d < hd) store_f(static_cast<T*>(p.out), row * hd + d, acc[i][c] * inv);
      }
    } else {
      const int64_t prow = blockIdx.y * n_rows_total + row;
#pragma unroll
      for (int c = 0; c < kDPerLane; ++c) {
        const int d = lane + 32 * c;
        if (d < hd) p.partial_acc[prow * hd + d] = acc[i][c];
      }
      if (lane == 0) {
        p.partial_ml[2 * prow] = l[i] > 0.0f ? m[i] : -FLT_MAX;
        p.partial_ml[2 * prow + 1] = l[i];
      }
    }
  }
}

// One block per (token, head) row: merges the splits' (acc, m, l).
template <typename T>
__global__ void combine_kernel(AttnLaunch p) {
  const int64_t row = blockIdx.x;
  const int64_t n_rows_total = p.n_tokens * p.n_heads;
  float m_max = -FLT_MAX;
  for (int sp = 0; sp < p.n_splits; ++sp) m_max = fmaxf(m_max, p.partial_ml[2 * (sp * n_rows_total + row)]);
  float l_sum = 0.0f;
  for (int sp = 0; sp < p.n_splits; ++sp) {
    const int64_t pr = sp * n_rows_total + row;
    l_sum += p.partial_ml[2 * pr + 1] * expf(p.partial_ml[2 * pr] - m_max);
  }
  const float inv = l_sum > 0.0f ? 1.0f / l_sum : 0.0f;
  for (int d = threadIdx.x; d < p.head_dim; d += blockDim.x) {
    float o = 0.0f;
    for (int sp = 0; sp < p.n_splits; ++sp) {
      const int64_t pr = sp * n_rows_total + row;
      o += p.partial_acc[pr * p.head_dim + d] * expf(p.partial_ml[2 * pr] - m_max);
    }
    store_f(static_cast<T*>(p.out), row * p.head_dim + d, o * inv);
  }
}

template <typename T, int kDPerLane>
void launch_typed(const AttnLaunch& p, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.n_items), static_cast<unsigned>(p.n_splits));
  attention_kernel<T, kDPerLane><<<grid, kWarps * 32, smem_bytes(p.head_dim), s>>>(p);
  KEEL_CUDA_LAUNCHED();
  if (p.n_splits > 1) launch_attention_combine(p, std::is_same_v<T, float> ? ActType::kF32 : ActType::kBF16, s);
}

template <typename T>
void launch_for_dims(const AttnLaunch& p, cudaStream_t s) {
  if (p.head_dim <= 32) {
    launch_typed<T, 1>(p, s);
  } else if (p.head_dim <= 64) {
    launch_typed<T, 2>(p, s);
  } else if (p.head_dim <= 128) {
    launch_typed<T, 4>(p, s);
  } else {
    launch_typed<T, 8>(p, s);
  }
}

template <typename T, int kDPerLane>
void allow_smem() {
  cudaFuncSetAttribute(attention_kernel<T, kDPerLane>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(smem_bytes(kAttnMaxHeadDim)));
  KEEL_CUDA_LAUNCHED();
}

}  // namespace

void attention_set_smem_limits() {
  allow_smem<float, 8>();
  allow_smem<__nv_bfloat16, 8>();
  attention_tc_set_smem_limits();
  attention_decode_set_smem_limits();
}

void launch_attention_combine(const AttnLaunch& p, ActType t, cudaStream_t s) {
  dispatch_act(t, [&](auto tag) {
    combine_kernel<decltype(tag)><<<static_cast<unsigned>(p.n_tokens * p.n_heads), 128, 0, s>>>(p);
  });
  KEEL_CUDA_LAUNCHED();
}

void launch_attention(const AttnLaunch& p, ActType t, cudaStream_t s) {
  if (p.n_items == 0) return;
  if (p.tensor_cores) {
    launch_attention_tc(p, attention_tc_rows(), s);
    return;
  }
  if (p.decode) {
    launch_attention_decode(p, s);
    return;
  }
  dispatch_act(t, [&](auto tag) { launch_for_dims<decltype(tag)>(p, s); });
}

}  // namespace keel::backend::cuda
