// Sampling on the device, the algorithm of sample::sample_token (sample/sampler.cc) one thread block
// per row, so only token ids cross to the host:
// - process: rows with logits processors or a grammar mask get a scratch copy with disallowed tokens at
//   -inf and the processors applied (the logits stay raw for log-probabilities);
// - sample: greedy is an argmax (lowest id on ties). Otherwise the candidate set of the CPU sampler is
//   found without sorting: top-k is a radix select of the k-th largest logit (4 passes of 8 bits over
//   order-preserving keys; ties at the boundary taken in id order, as the CPU's sort does), min-p a
//   per-token test against the top probability, top-p a radix select over probability mass in 2^-61
//   fixed point (the smallest prefix of the sorted order whose mass reaches top_p, ties again in id
//   order; per-warp histograms in shared memory keep the atomics off a few hot bins; when the nearest
//   candidates, at most kCompactCap, already hold top_p of the mass, the selection and the draw run over
//   a copy of just those in shared memory, which gives the same token); then the
//   Gumbel-max draw over the survivors with the same counter-based noise (base/counter_rng.h), so a seeded
//   request draws the same token as on the CPU (up to last-bit differences of sums taken in another
//   order). Every pass reads the row from L2/HBM; no sort, no global scratch.
#include <climits>
#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels.cuh"
#include "backend/cuda/launch_check.h"
#include "base/counter_rng.h"

namespace keel::backend::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kWhistBytes = kWarps * 256 * 8;  // per-warp radix histograms, dynamic shared memory
// top-p's compact path: the candidates within kReach[q] temperature units of the top logit (the nearest
// reach holding about top_p of the mass, at most kCompactCap of them), copied in id order into shared
// memory after the histograms (192 KiB in all, of the H100/H200's 227 KiB per block).
constexpr int kCompactCap = 16384;
constexpr int kReaches = 6;
__device__ constexpr float kReach[kReaches] = {1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 32.0f};
constexpr int kSmemBytes = kWhistBytes + kCompactCap * 8;

// Larger float -> larger key (NaN aside); -0 and +0 get the same key, as they compare equal (the host
// sampler's sort treats them as ties and orders them by id).
__device__ __forceinline__ uint32_t order_key(float f) {
  const uint32_t b = __float_as_uint(f) == 0x80000000u ? 0u : __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

struct Shared {
  double d[kWarps];
  uint64_t u[kWarps];
  float f[kWarps];
  int i[kWarps];
  uint64_t hist[256];
  int bin;
  uint64_t rem;
  int32_t id;
};

// Sum over the block, through one of Shared's per-warp arrays (sh.d for double, sh.u for uint64_t).
template <typename T>
__device__ T block_sum(T v, T (&warp_sums)[kWarps]) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = 0;
  for (int w = 0; w < kWarps; ++w) r += warp_sums[w];
  return r;
}

__device__ float block_max(float v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.f[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = sh.f[0];
  for (int w = 1; w < kWarps; ++w) r = fmaxf(r, sh.f[w]);
  return r;
}

// Block argmax of (key, id): larger key wins, the lower id on ties. Returns the id (INT_MAX if none).
template <typename K>
__device__ int32_t block_argmax(K key, int32_t id, K* keys, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) {
    const K k2 = __shfl_xor_sync(0xffffffffu, key, o);
    const int32_t i2 = __shfl_xor_sync(0xffffffffu, id, o);
    if (k2 > key || (k2 == key && i2 < id)) key = k2, id = i2;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) keys[threadIdx.x >> 5] = key, sh.i[threadIdx.x >> 5] = id;
  __syncthreads();
  K bk = keys[0];
  int32_t bi = sh.i[0];
  for (int w = 1; w < kWarps; ++w) {
    if (keys[w] > bk || (keys[w] == bk && sh.i[w] < bi)) bk = keys[w], bi = sh.i[w];
  }
  return bi;
}

// The id of the need-th (1-based) token in id order with flag(i), or INT_MAX when fewer have it.
template <typename F>
__device__ int32_t nth_in_order(int64_t vocab, int64_t need, F flag, Shared& sh) {
  int64_t before = 0;
  for (int64_t base = 0; base < vocab; base += kThreads) {
    const int64_t i = base + threadIdx.x;
    const bool f = i < vocab && flag(i);
    const int cnt = __syncthreads_count(f);
    if (before + cnt >= need) {
      const unsigned ballot = __ballot_sync(0xffffffffu, f);
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
      if (lane == 0) sh.i[warp] = __popc(ballot);
      __syncthreads();
      int prefix = __popc(ballot & ((1u << lane) - 1u));
      for (int w = 0; w < warp; ++w) prefix += sh.i[w];
      if (f && before + prefix + 1 == need) sh.id = static_cast<int32_t>(i);
      __syncthreads();
      return sh.id;
    }
    before += cnt;
  }
  return INT_MAX;
}

// Copies the tokens with flag(i) (at most kCompactCap; the caller guarantees it) in id order: their
// logits to vals, their ids to ids. Returns how many. Each warp takes a contiguous range of ids, counts
// its tokens, then writes them after those of the warps before it: two passes without block barriers in
// the loops, so the loads of a warp stay in flight (one barrier per 1,024 ids left them latency-bound).
template <typename F>
__device__ int compact_in_order(const float* x, int64_t vocab, F flag, float* vals, int32_t* ids, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t span = (vocab + kWarps * 32 - 1) / (kWarps * 32) * 32;  // ids per warp, a multiple of 32
  const int64_t lo = warp * span, hi = lo + span < vocab ? lo + span : vocab;
  int mine = 0;
  for (int64_t i = lo + lane; i - lane < hi; i += 32) mine += __popc(__ballot_sync(0xffffffffu, i < hi && flag(i)));
  __syncthreads();  // sh.i may still be read by the caller's previous step
  if (lane == 0) sh.i[warp] = mine;
  __syncthreads();
  int n = 0, before = 0;
  for (int w = 0; w < kWarps; ++w) {
    before += w < warp ? sh.i[w] : 0;
    n += sh.i[w];
  }
  for (int64_t i = lo + lane; i - lane < hi; i += 32) {
    const bool f = i < hi && flag(i);
    const unsigned ballot = __ballot_sync(0xffffffffu, f);
    if (f) {
      const int at = before + __popc(ballot & ((1u << lane) - 1u));
      vals[at] = x[i];
      ids[at] = static_cast<int32_t>(i);
    }
    before += __popc(ballot);
  }
  __syncthreads();
  return n;
}

// Radix select over the order keys of the tokens with flag(i, key), by weight(v) (u64: 1 for counts,
// fixed-point probability mass for top-p; integer sums are exact, so a bin's weight is exactly the sum
// of its sub-bins'). Returns the key at which the weight of the tokens with larger keys first reaches
// `need` (need <= the total); *rem: the weight still needed from the tokens with that key (>= 1).
// Each warp adds into its own histogram (whist: kWarps x 256, dynamic shared memory): most tokens
// fall into a few bins, and one block-wide histogram would serialise them on a handful of addresses.
template <typename F, typename W>
__device__ uint32_t radix_select(const float* x, int64_t vocab, uint64_t need, F flag, W weight, uint64_t* rem,
                                 uint64_t* whist, Shared& sh) {
  uint32_t prefix = 0, mask = 0;
  uint64_t r = need;
  uint64_t* mine = whist + (threadIdx.x >> 5) * 256;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < kWarps * 256; b += kThreads) whist[b] = 0;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = x[i];
      const uint32_t k = order_key(v);
      if ((k & mask) == prefix && flag(i, k)) {
        atomicAdd(reinterpret_cast<unsigned long long*>(&mine[(k >> shift) & 255u]),
                  static_cast<unsigned long long>(weight(v)));
      }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += kThreads) {
      uint64_t t = 0;
      for (int w = 0; w < kWarps; ++w) t += whist[w * 256 + b];
      sh.hist[b] = t;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t cum = 0;
      int b = 255;
      for (; b > 0; --b) {
        if (cum + sh.hist[b] >= r) break;
        cum += sh.hist[b];
      }
      sh.bin = b;
      sh.rem = r - cum;
    }
    __syncthreads();
    prefix |= static_cast<uint32_t>(sh.bin) << shift;
    mask |= 0xffu << shift;
    r = sh.rem;
    __syncthreads();
  }
  *rem = r;
  return prefix;
}

// top-p over the tokens j < n of arr with flag(j, key) (mass by fixed(v)): false when their mass is below
// target; else *vp, the key of the boundary, and *tie, the id (id_of(j)) of the last boundary tie taken
// (INT_MAX: all of them). Ties are taken in the order of arr, which is id order.
template <typename F, typename W, typename Id>
__device__ bool select_top_p(const float* arr, int64_t n, uint64_t target, F flag, W fixed, Id id_of, uint32_t* vp,
                             int32_t* tie, uint64_t* whist, Shared& sh) {
  uint64_t total = 0;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) {
    const float v = arr[j];
    if (flag(j, order_key(v))) total += fixed(v);
  }
  if (block_sum(total, sh.u) < target) return false;
  uint64_t rem = 0;
  const uint32_t key = radix_select(arr, n, target, flag, fixed, &rem, whist, sh);
  auto at_key = [&](int64_t j) {
    const uint32_t k = order_key(arr[j]);
    return k == key && flag(j, k);
  };
  const uint64_t p_star = fixed(key_value(key));
  uint64_t n_eq = 0;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) n_eq += at_key(j) ? 1 : 0;
  const auto ties = static_cast<int64_t>(block_sum(n_eq, sh.u));
  // The first `take` ties complete the mass; a zero-mass tie takes them all.
  const int64_t take = p_star == 0 ? ties : static_cast<int64_t>((rem + p_star - 1) / p_star);
  *vp = key;
  *tie = INT_MAX;
  if (take < ties) {
    const int32_t j = nth_in_order(n, take < 1 ? 1 : take, at_key, sh);
    if (j != INT_MAX) *tie = id_of(j);
  }
  return true;
}

// The compact path's reach (an index into kReach): the nearest one whose candidates, at most kCompactCap,
// hold about `want` of the softmax's unnormalised mass; -1 when none does. near_n / near_mass: this
// thread's counts and float masses per reach; red: kWarps * 2 * kReaches floats of scratch.
__device__ int pick_reach(const int (&near_n)[kReaches], const float (&near_mass)[kReaches], double want, float* red,
                          Shared& sh) {
#pragma unroll
  for (int q = 0; q < kReaches; ++q) {
    float c = static_cast<float>(near_n[q]), m = near_mass[q];
    for (int o = 16; o > 0; o >>= 1) {
      c += __shfl_xor_sync(0xffffffffu, c, o);
      m += __shfl_xor_sync(0xffffffffu, m, o);
    }
    float* mine = red + (threadIdx.x >> 5) * 2 * kReaches;
    if ((threadIdx.x & 31) == 0) mine[q] = c, mine[kReaches + q] = m;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    sh.bin = -1;
    for (int q = 0; q < kReaches; ++q) {
      float c = 0.0f, m = 0.0f;
      for (int w = 0; w < kWarps; ++w) c += red[w * 2 * kReaches + q], m += red[w * 2 * kReaches + kReaches + q];
      if (c > static_cast<float>(kCompactCap)) break;
      // A float estimate with a margin (a reach just short of top_p would fail the exact fixed-point
      // check and cost the whole-row path): the exact sum decides.
      if (static_cast<double>(m) >= 1.0001 * want) {
        sh.bin = q;
        break;
      }
    }
  }
  __syncthreads();
  return sh.bin;
}

// Fixed-point scale of probability mass (the candidates' masses sum to 1 up to rounding: 8x headroom).
constexpr double kMassScale = 2305843009213693952.0;  // 2^61

__global__ void __launch_bounds__(kThreads) sample_process_kernel(const float* logits, int64_t vocab,
                                                                  const SampleRowDev* rows, const int32_t* proc_rows,
                                                                  const SampleProcDev* procs, const uint32_t* masks,
                                                                  float* scratch) {
  const SampleRowDev r = rows[proc_rows[blockIdx.x]];
  const float* src = logits + static_cast<int64_t>(r.logit_row) * vocab;
  float* dst = scratch + static_cast<int64_t>(blockIdx.x) * vocab;
  const uint32_t* m = r.mask_offset >= 0 ? masks + r.mask_offset : nullptr;
  auto allowed = [&](int64_t i) { return m == nullptr || ((m[i >> 5] >> (i & 31)) & 1u) != 0u; };
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) dst[i] = allowed(i) ? src[i] : -INFINITY;
  __syncthreads();
  // The processors of sample::apply_processors, in its order; ids are unique within a row. No
  // contraction into FMAs: the CPU rounds each operation.
  for (int e = threadIdx.x; e < r.n_proc; e += kThreads) {
    const SampleProcDev p = procs[r.proc_begin + e];
    if (p.token < 0 || p.token >= vocab || !allowed(p.token)) continue;
    float l = __fadd_rn(src[p.token], p.bias);
    if (r.repetition_penalty != 1.0f && p.seen != 0) {
      l = l > 0.0f ? __fdiv_rn(l, r.repetition_penalty) : __fmul_rn(l, r.repetition_penalty);
    }
    if ((r.frequency_penalty != 0.0f || r.presence_penalty != 0.0f) && p.n_output > 0) {
      l = __fsub_rn(l, __fadd_rn(__fmul_rn(r.frequency_penalty, static_cast<float>(p.n_output)), r.presence_penalty));
    }
    dst[p.token] = l;
  }
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* logits, const float* scratch, int64_t vocab,
                                                          const SampleRowDev* rows, const int32_t* src_scratch,
                                                          int32_t* tokens, bool compact) {
  __shared__ Shared sh;
  extern __shared__ uint64_t whist[];  // [kWarps * 256], then the compact path's kCompactCap entries
  __shared__ float fkeys[kWarps];
  __shared__ double dkeys[kWarps];
  const SampleRowDev r = rows[blockIdx.x];
  const int sidx = src_scratch[blockIdx.x];
  const float* x = sidx >= 0 ? scratch + static_cast<int64_t>(sidx) * vocab : logits + static_cast<int64_t>(r.logit_row) * vocab;

  if (r.temperature == 0.0f || r.top_k == 1) {  // greedy
    float best = -INFINITY;
    int32_t best_id = INT_MAX;
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = x[i];
      if (v > best || (v == best && i < best_id)) best = v, best_id = static_cast<int32_t>(i);
    }
    const int32_t id = block_argmax(best, best_id, fkeys, sh);
    if (threadIdx.x == 0) tokens[blockIdx.x] = id;
    return;
  }

  // top-k: candidates are the k largest logits, ties in id order.
  const bool topk = r.top_k > 0 && r.top_k < vocab;
  uint32_t vk = 0;
  int32_t tie_k = INT_MAX;
  if (topk) {
    uint64_t need = 0;
    vk = radix_select(x, vocab, static_cast<uint64_t>(r.top_k), [](int64_t, uint32_t) { return true; },
                      [](float) { return uint64_t{1}; }, &need, whist, sh);
    uint64_t n_eq_u = 0;
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) n_eq_u += order_key(x[i]) == vk ? 1 : 0;
    const auto n_eq = static_cast<int64_t>(block_sum(n_eq_u, sh.u));
    if (static_cast<int64_t>(need) < n_eq) tie_k = nth_in_order(vocab, static_cast<int64_t>(need), [&](int64_t i) { return order_key(x[i]) == vk; }, sh);
  }
  auto in_c = [&](int64_t i, uint32_t k) { return !topk || k > vk || (k == vk && i <= tie_k); };

  // Softmax at the temperature over the candidates (the maximum is the row's: top-k keeps it).
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) mx = fmaxf(mx, x[i]);
  mx = block_max(mx, sh);
  const double t = static_cast<double>(r.temperature);
  auto expd = [&](float v) { return exp((static_cast<double>(v) - static_cast<double>(mx)) / t); };
  auto pf = [&](float v) { return static_cast<float>(expd(v)); };  // the CPU keeps probabilities as float
  // With top-p, the same pass counts the candidates within each reach of the top logit (in temperature
  // units) and their approximate mass, in registers, for the compact path below.
  const bool want_p = r.top_p < 1.0f;
  // Reach q holds the logits above floor_of[q]: any function of q works as long as both passes use the
  // same one (an upper set of the candidates, by logit).
  float floor_of[kReaches];
#pragma unroll
  for (int q = 0; q < kReaches; ++q) floor_of[q] = mx - kReach[q] * r.temperature;
  int near_n[kReaches] = {};
  float near_mass[kReaches] = {};
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = x[i];
    if (!in_c(i, order_key(v))) continue;
    const double e = expd(v);
    sum += e;
    if (want_p) {
#pragma unroll
      for (int q = 0; q < kReaches; ++q) {
        if (v > floor_of[q]) ++near_n[q], near_mass[q] += static_cast<float>(e);
      }
    }
  }
  sum = block_sum(sum, sh.d);

  // min-p: probability (relative to the top one) below min_p is cut; monotone in the logit.
  const bool minp = r.min_p > 0.0f;
  const double floor_p = static_cast<double>(r.min_p) * (static_cast<double>(pf(mx)) / sum);
  auto in_m = [&](int64_t i, uint32_t k) {
    return in_c(i, k) && (!minp || !(static_cast<double>(pf(key_value(k))) / sum < floor_p));
  };
  auto mass = [&](float v) { return static_cast<double>(pf(v)) / sum; };

  // top-p: the shortest prefix of the sorted candidates whose mass reaches top_p. Compact path: the
  // candidates within the nearest reach that holds top_p (at most kCompactCap of them) are an upper set
  // of the candidates in logit order, so when their mass reaches top_p the boundary lies among them and
  // the selection over a copy of them (in id order) equals the one over the whole row, without its passes.
  bool topp = false;
  uint32_t vp = 0;
  int32_t tie_p = INT_MAX;
  float* cv = reinterpret_cast<float*>(whist + kWarps * 256);  // the compact path's logits, in id order
  int32_t* cid = reinterpret_cast<int32_t*>(cv + kCompactCap);    // and their ids
  int n_compact = -1;                                             // >= 0: the survivors are all in cv
  if (want_p) {
    auto fixed = [&](float v) { return static_cast<uint64_t>(mass(v) * kMassScale); };
    const auto target = static_cast<uint64_t>(static_cast<double>(r.top_p) * kMassScale);
    const int pick = compact ? pick_reach(near_n, near_mass, r.top_p * sum, reinterpret_cast<float*>(whist), sh) : -1;
    if (pick >= 0) {
      const float lowest = floor_of[pick];
      const int n = compact_in_order(x, vocab, [&](int64_t i) {
        const float v = x[i];
        const uint32_t k = order_key(v);
        return v > lowest && in_c(i, k) && in_m(i, k);
      }, cv, cid, sh);
      if (select_top_p(cv, n, target, [](int64_t, uint32_t) { return true; }, fixed, [&](int64_t j) { return cid[j]; },
                       &vp, &tie_p, whist, sh)) {
        topp = true;
        n_compact = n;
      }
    }
    if (n_compact < 0) {
      topp = select_top_p(x, vocab, target, in_m, fixed, [](int64_t i) { return static_cast<int32_t>(i); }, &vp, &tie_p,
                          whist, sh);
    }
  }

  // Gumbel-max over the survivors: argmax(logit / T - log(-log u)), u from (seed, position, id).
  const double inv_t = 1.0 / t;
  double best = -INFINITY;
  int32_t best_id = INT_MAX;
  auto draw = [&](int64_t i, float v) {
    const double u = uniform_open(r.seed, static_cast<uint64_t>(r.position), static_cast<uint64_t>(i));
    const double key = __dsub_rn(__dmul_rn(static_cast<double>(v), inv_t), log(-log(u)));
    if (key > best || (key == best && i < best_id)) best = key, best_id = static_cast<int32_t>(i);
  };
  auto survives = [&](int64_t i, uint32_t k) { return !topp || k > vp || (k == vp && i <= tie_p); };
  if (n_compact >= 0) {  // every survivor is in cv (and a candidate)
    for (int j = threadIdx.x; j < n_compact; j += kThreads) {
      if (survives(cid[j], order_key(cv[j]))) draw(cid[j], cv[j]);
    }
  } else {
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = x[i];
      const uint32_t k = order_key(v);
      if (in_m(i, k) && survives(i, k)) draw(i, v);
    }
  }
  const int32_t id = block_argmax(best, best_id, dkeys, sh);
  if (threadIdx.x == 0) tokens[blockIdx.x] = id;
}

// KEEL_CUDA_TOPP_COMPACT=0: top-p always over the whole row (the A/B of bench/cuda/sample_bench.cc).
bool g_topp_compact = env_on("KEEL_CUDA_TOPP_COMPACT");

}  // namespace

void sample_set_topp_compact(bool on) { g_topp_compact = on; }

void launch_sample_process(const float* logits, int64_t vocab, const SampleRowDev* rows, const int32_t* proc_rows,
                           int n_proc_rows, const SampleProcDev* procs, const uint32_t* masks, float* scratch,
                           cudaStream_t s) {
  if (n_proc_rows == 0) return;
  sample_process_kernel<<<n_proc_rows, kThreads, 0, s>>>(logits, vocab, rows, proc_rows, procs, masks, scratch);
  KEEL_CUDA_LAUNCHED();
}

void launch_sample(const float* logits, const float* scratch, int64_t vocab, const SampleRowDev* rows,
                   const int32_t* src_scratch, int n_rows, int32_t* tokens, cudaStream_t s) {
  if (n_rows == 0) return;
  static bool smem_set = false;  // the backend's one thread launches this
  if (!smem_set) {
    cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    KEEL_CUDA_LAUNCHED();
    smem_set = true;
  }
  sample_kernel<<<n_rows, kThreads, kSmemBytes, s>>>(logits, scratch, vocab, rows, src_scratch, tokens, g_topp_compact);
  KEEL_CUDA_LAUNCHED();
}

}  // namespace keel::backend::cuda
