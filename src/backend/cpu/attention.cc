// Causal attention over the KV pool. Work items are (sequence, kv head, chunk of query tokens); an
// item runs the chunk's tokens for every query head sharing that kv head (GQA), so each K/V row is
// read (and converted from f16) once per item. Keys are visited in tiles with an online softmax:
// running max m, running sum l, unnormalised accumulator acc, rescaled when the max grows. Per tile
// and token, the kernel table's qk/pv tile kernels handle all the token's heads at once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/ops.h"
#include "base/check.h"

namespace keel::backend::cpu {
namespace {

constexpr int64_t kKeyTile = 64;    // keys per tile
constexpr int64_t kQueryChunk = 8;  // query tokens per work item

struct Item {
  int32_t seq;
  int32_t kv_head;
  int32_t t0, t1;  // query tokens [t0, t1) of the sequence (0 = its first new token)
  int32_t g0, g1;  // query heads [g0, g1) of the kv head's group
};

struct Dims {
  int64_t n_heads, n_kv, hd, group;
};

// Pointers to f32 K and V rows [j0, j1) of sequence ctx for one kv head, converting f16 into tile.
void load_tile(const Kernels& k, const Tensor& cache, std::span<const int32_t> ctx, int64_t kvh, const Dims& dm,
               int64_t j0, int64_t j1, float* tile, const float** rows) {
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t off = (static_cast<int64_t>(ctx[static_cast<size_t>(j)]) * dm.n_kv + kvh) * dm.hd;
    if (cache.dtype == DType::kF32) {
      rows[j - j0] = static_cast<const float*>(cache.data) + off;
    } else {
      float* dst = tile + (j - j0) * dm.hd;
      k.f16_to_f32(static_cast<const uint16_t*>(cache.data) + off, dst, dm.hd);
      rows[j - j0] = dst;
    }
  }
}

void run_item(const OpContext& c, const Item& it, const AttnSeq& sq, const Tensor& q, const Tensor& kc,
              const Tensor& vc, float scale, const Dims& dm, Tensor& out, int thread) {
  const Kernels& k = *c.k;
  const int64_t n_ctx = static_cast<int64_t>(sq.ctx_slots.size());
  const int64_t n_g = it.g1 - it.g0;
  const int64_t n_rows = (it.t1 - it.t0) * n_g;  // query rows: token-major, head-minor
  // Scratch: acc [n_rows, hd], m [n_rows], l [n_rows], K/V tiles [kKeyTile, hd], scores [n_g, kKeyTile].
  float* acc = c.ws->thread_f32(
      thread, static_cast<size_t>(n_rows * (dm.hd + 2) + 2 * kKeyTile * dm.hd + n_g * kKeyTile));
  float* mx = acc + n_rows * dm.hd;
  float* sum = mx + n_rows;
  float* k_tile = sum + n_rows;
  float* v_tile = k_tile + kKeyTile * dm.hd;
  float* scores = v_tile + kKeyTile * dm.hd;
  const float* k_rows[kKeyTile];
  const float* v_rows[kKeyTile];
  std::fill(acc, acc + n_rows * dm.hd, 0.0f);
  std::fill(mx, mx + n_rows, -std::numeric_limits<float>::infinity());
  std::fill(sum, sum + n_rows, 0.0f);

  const int64_t past = n_ctx - sq.n_q;       // keys visible to every new token
  const int64_t j_end = past + it.t1;        // keys visible to the chunk's last token
  for (int64_t j0 = 0; j0 < j_end; j0 += kKeyTile) {
    const int64_t j1 = std::min(j_end, j0 + kKeyTile);
    load_tile(k, kc, sq.ctx_slots, it.kv_head, dm, j0, j1, k_tile, k_rows);
    load_tile(k, vc, sq.ctx_slots, it.kv_head, dm, j0, j1, v_tile, v_rows);
    for (int64_t t = it.t0; t < it.t1; ++t) {
      const int64_t lim = std::min(j1, past + t + 1);  // causal: keys [0, past + t]
      if (lim <= j0) continue;
      const int64_t n_k = lim - j0;
      // The token's heads [g0, g1) are adjacent rows of q and of acc.
      const int64_t row0 = (t - it.t0) * n_g;
      const float* qv =
          static_cast<const float*>(q.data) + ((sq.q_begin + t) * dm.n_heads + it.kv_head * dm.group + it.g0) * dm.hd;
      k.qk_tile_f32(qv, n_g, k_rows, n_k, dm.hd, scale, scores, kKeyTile);
      for (int64_t g = 0; g < n_g; ++g) {
        const int64_t row = row0 + g;
        float* sg = scores + g * kKeyTile;
        const float tile_max = *std::max_element(sg, sg + n_k);
        const float m_new = std::max(mx[row], tile_max);
        if (m_new > mx[row]) {
          const float corr = std::exp(mx[row] - m_new);
          sum[row] *= corr;
          k.scale_f32(corr, acc + row * dm.hd, dm.hd);
          mx[row] = m_new;
        }
        sum[row] += k.exp_sub_sum_f32(sg, n_k, m_new);
      }
      k.pv_tile_f32(scores, kKeyTile, n_g, v_rows, n_k, dm.hd, acc + row0 * dm.hd);
    }
  }
  for (int64_t t = it.t0; t < it.t1; ++t) {
    for (int64_t g = it.g0; g < it.g1; ++g) {
      const int64_t row = (t - it.t0) * n_g + (g - it.g0);
      const int64_t head = it.kv_head * dm.group + g;
      float* o = static_cast<float*>(out.data) + ((sq.q_begin + t) * dm.n_heads + head) * dm.hd;
      const float* a = acc + row * dm.hd;
      const float inv = 1.0f / sum[row];
      for (int64_t d = 0; d < dm.hd; ++d) o[d] = a[d] * inv;
    }
  }
}

}  // namespace

void attention(const OpContext& c, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
               const AttentionParams& p, Tensor& out) {
  KEEL_CHECK(q.dtype == DType::kF32 && out.dtype == DType::kF32 && q.shape.rank == 3 && out.shape == q.shape,
             "attention: q {} out {} must be f32 [n, n_heads, head_dim]", q.shape.to_string(), out.shape.to_string());
  KEEL_CHECK(k_cache.shape.rank == 3 && k_cache.shape == v_cache.shape && k_cache.dtype == v_cache.dtype &&
                 (k_cache.dtype == DType::kF32 || k_cache.dtype == DType::kF16),
             "attention: caches must be f32/f16 [n_slots, n_kv_heads, head_dim]");
  const Dims dm{q.shape[1], k_cache.shape[1], q.shape[2], q.shape[1] / std::max<int64_t>(1, k_cache.shape[1])};
  KEEL_CHECK(k_cache.shape[2] == dm.hd && dm.n_kv > 0 && dm.n_heads % dm.n_kv == 0,
             "attention: {} heads over {} kv heads, head_dim {} vs {}", dm.n_heads, dm.n_kv, dm.hd, k_cache.shape[2]);
  const int64_t n_slots = k_cache.shape[0];

  // Decode steps give few (sequence, kv head) pairs: then split each group into single query heads
  // so every thread gets work (each head re-reads the kv head's rows, which sit in cache).
  int64_t n_pairs = 0;
  for (const AttnSeq& sq : p.seqs) n_pairs += dm.n_kv * ((sq.n_q + kQueryChunk - 1) / kQueryChunk);
  // One thread has nothing to balance: it keeps each group together, reading every K/V row once.
  const int n_threads = c.pool->n_threads();
  const int32_t heads_per_item = n_threads == 1 || n_pairs >= 4 * n_threads ? static_cast<int32_t>(dm.group) : 1;
  std::vector<Item> items;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    KEEL_CHECK(sq.n_q >= 0 && static_cast<int64_t>(sq.ctx_slots.size()) >= sq.n_q && sq.q_begin >= 0 &&
                   sq.q_begin + sq.n_q <= q.shape[0],
               "attention: sequence {} has {} new tokens at {} and {} context slots", s, sq.n_q, sq.q_begin,
               sq.ctx_slots.size());
    for (int32_t slot : sq.ctx_slots) KEEL_CHECK(slot >= 0 && slot < n_slots, "attention: slot {} outside [0, {})", slot, n_slots);
    for (int32_t kvh = 0; kvh < dm.n_kv; ++kvh) {
      for (int32_t t0 = 0; t0 < sq.n_q; t0 += kQueryChunk) {
        for (int32_t g0 = 0; g0 < dm.group; g0 += heads_per_item) {
          items.push_back({static_cast<int32_t>(s), kvh, t0, std::min<int32_t>(sq.n_q, t0 + kQueryChunk), g0,
                           static_cast<int32_t>(std::min<int64_t>(dm.group, g0 + heads_per_item))});
        }
      }
    }
  }
  c.pool->parallel_for(static_cast<int64_t>(items.size()), [&](int64_t i, int thread) {
    const Item& it = items[static_cast<size_t>(i)];
    run_item(c, it, p.seqs[static_cast<size_t>(it.seq)], q, k_cache, v_cache, p.scale, dm, out, thread);
  });
}

}  // namespace keel::backend::cpu
