// Launchers of the CUDA backend's kernels, one .cu each. Activations are f32 or bf16 (ActType);
// matrix weights are bf16, norm weights and biases f32. All launch on `stream` and check the launch.
// Host spans are already on the device here (CudaBackend stages them). Called by CudaBackend only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace keel::backend::cuda {

enum class ActType { kF32, kBF16 };

// Whether p suits 16-byte vector loads and stores (the GEMV, row-norm and vector SiLU-mul kernels' operands).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// out [n, d] (act) = table [vocab, d] (bf16) rows ids [n].
// from (may be null): where from[i] >= 0 the id is sampled[from[i]] instead of ids[i] (overlap scheduling).
void launch_embed(const void* table, const int32_t* ids, const int32_t* from, const int32_t* sampled, int64_t n,
                  int64_t d, void* out, ActType t, cudaStream_t s);
// residual [n, d] += x (when x != nullptr); out = residual / rms(residual) * w (f32 [d]).
void launch_rms_norm(void* residual, const void* x, const float* w, float eps, int64_t n, int64_t d, void* out,
                     ActType t, cudaStream_t s);
// In place on x [n, n_heads, head_dim]; positions [n]; inv_freq [rot_dims / 2]; neox = rotate halves.
struct RopeLaunch {
  int64_t n, n_heads, head_dim;
  int rot_dims;
  bool neox;
  float attn_factor;
};
void launch_rope(void* x, const int32_t* positions, const float* inv_freq, const RopeLaunch& p, ActType t,
                 cudaStream_t s);
// rope on q [n, p.n_heads, head_dim] and k [n, n_kv, head_dim] in place, then k_cache, v_cache
// [n_slots, n_kv, head_dim] rows slots [n] = k, v (head_dim even): rope + rope + write_kv in one launch.
void launch_rope_write_kv(void* q, void* k, const void* v, const int32_t* positions, const int32_t* slots,
                          const float* inv_freq, const RopeLaunch& p, int64_t n_kv, void* k_cache, void* v_cache,
                          ActType t, cudaStream_t s);
// k_cache, v_cache [n_slots, w] rows slots [n] = k, v [n, w].
void launch_write_kv(const void* k, const void* v, const int32_t* slots, int64_t n, int64_t w, void* k_cache,
                     void* v_cache, ActType t, cudaStream_t s);
// out = silu(gate) * up over n elements.
void launch_silu_mul(const void* gate, const void* up, void* out, int64_t n, ActType t, cudaStream_t s);
// out = a + b over n elements.
void launch_add(const void* a, const void* b, void* out, int64_t n, ActType t, cudaStream_t s);
// Decode-sized matmul (gemv.cu) of up to kGemvMaxSegments weights [m_i, k] sharing x in one launch:
// out_i [n, m_i] (act) = x [n, k] . w_i^T (+ bias_i [m_i] f32 when not null), x and w bf16,
// n <= kGemvMaxTokens, k % 8 == 0 and x, w 16-byte aligned.
inline constexpr int kGemvMaxTokens = 8;
inline constexpr int kGemvMaxSegments = 3;
struct GemvGroup {
  const void* w[kGemvMaxSegments];
  const float* bias[kGemvMaxSegments];
  void* out[kGemvMaxSegments];
  int64_t m[kGemvMaxSegments];
  int n_seg;
  int64_t m_total;  // set by the launcher
};
void launch_gemv_group(const void* x, GemvGroup g, int n, int64_t k, ActType t, cudaStream_t s);
// The f32 precision mode's forms (docs/cuda_backend.md "Precision"): embed from an f32 table; the
// decode matmul with f32 x and f32 weights (k % 4 == 0, 16-byte aligned); and q8_round
// (KEEL_CUDA_F32_Q8ACT=1), which rounds each run of `block` elements of x (n_blocks of them) to the
// 8-bit grid cpu's dtype auto quantizes activations to before its integer dots (d = amax / 127,
// q = rint(x / d), out = d * q).
void launch_embed_f32_table(const float* table, const int32_t* ids, const int32_t* from, const int32_t* sampled,
                            int64_t n, int64_t d, void* out, ActType t, cudaStream_t s);
void launch_gemv_group_f32(const float* x, GemvGroup g, int n, int64_t k, cudaStream_t s);
void launch_q8_round(const float* x, int64_t n_blocks, int block, float* out, cudaStream_t s);
// out [n, m] += bias [m] (f32).
void launch_add_bias(void* out, const float* bias, int64_t n, int64_t m, ActType t, cudaStream_t s);
// out [r, row_bytes] = x rows [r] (any dtype: whole rows of bytes).
void launch_gather_rows(const void* x, const int32_t* rows, int64_t r, int64_t row_bytes, void* out, cudaStream_t s);

// Attention over the token-granular KV pool (attention.cu).
struct AttnSeqDev {
  const int32_t* ctx;  // [n_ctx] KV slots of the visible tokens, in position order
  int32_t q_begin, n_q, n_ctx, pad;
};
// One thread block's work: tokens [t0, t1) of sequence seq (0 = its first new token), query heads
// [g0, g1) of kv head kv_head's group. (t1 - t0) * (g1 - g0) <= kAttnRowsPerBlock.
struct AttnItem {
  int32_t seq, kv_head, t0, t1, g0, g1;
};
inline constexpr int kAttnRowsPerBlock = 16;
inline constexpr int kAttnMaxHeadDim = 256;
struct AttnLaunch {
  const void* q;  // [n, n_heads, head_dim]
  const void* k_cache;
  const void* v_cache;  // [n_slots, n_kv, head_dim]
  void* out;            // [n, n_heads, head_dim]
  const AttnItem* items;
  const AttnSeqDev* seqs;
  int n_items;
  int64_t n_tokens;
  int n_heads, n_kv, head_dim;
  float scale;
  int n_splits;   // key ranges per item (split-KV); 1 writes out directly
  int split_len;  // keys per split, a multiple of 32
  const int32_t* split_len_dev;  // when not null, split_len is read here (graph steps: it changes per step)
  float* partial_acc;  // [n_splits, n_tokens * n_heads, head_dim] when n_splits > 1
  float* partial_ml;   // [n_splits, n_tokens * n_heads, 2] running max and sum
  // Decode kernel with n_splits > 1: [n_items] zeros; each item's splits count their finished blocks
  // here and the last one merges the partials (and sets its counter back to 0).
  unsigned* split_counters;
  bool tensor_cores;   // items planned for the tensor-core prefill kernel (attention_tc.h)
  bool decode;         // items planned for the decode kernel (attention_decode.h)
};
void launch_attention(const AttnLaunch& p, ActType t, cudaStream_t s);
// Shared memory the attention kernel needs above the 48 KiB default (set once at start-up).
void attention_set_smem_limits();

// Sampling (sampling.cu): the layout of backend::DeviceSampleRow / DeviceSampleProc (backend.h), kept
// free of base/ for nvcc; cuda_ops.cc static_asserts that the two match.
struct SampleRowDev {
  int32_t logit_row;
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
  uint64_t seed;
  int64_t position;
  float repetition_penalty, frequency_penalty, presence_penalty;
  int32_t mask_offset, proc_begin, n_proc;
};
struct SampleProcDev {
  int32_t token;
  float bias;
  int32_t seen, n_output;
};
// Rows listed in proc_rows [n_proc_rows] (those with processors or a mask): scratch row j = logits row
// of rows[proc_rows[j]] with disallowed tokens at -inf and the processors applied.
void launch_sample_process(const float* logits, int64_t vocab, const SampleRowDev* rows, const int32_t* proc_rows,
                           int n_proc_rows, const SampleProcDev* procs, const uint32_t* masks, float* scratch,
                           cudaStream_t s);
// tokens[i] for rows[i], i < n_rows, read from scratch row src_scratch[i] when >= 0, else from its logits row.
void launch_sample(const float* logits, const float* scratch, int64_t vocab, const SampleRowDev* rows,
                   const int32_t* src_scratch, int n_rows, int32_t* tokens, cudaStream_t s);
// Whether top-p may take its compact path (default on; KEEL_CUDA_TOPP_COMPACT=0 turns it off): for A/B runs.
void sample_set_topp_compact(bool on);

}  // namespace keel::backend::cuda
