// SmolLM2-135M-Instruct Q4_1 against llama.cpp (tests/golden/llamacpp/gen_llamacpp_logits.py):
// the prompts' token ids run through keel, then 64 decode steps fed with llama.cpp's greedy tokens,
// all prompts side by side in one batch per step. The logits llama.cpp stored (top-32, random ids,
// two full vectors per prompt for the first prompts) must agree within kMaxRelError of the row's
// largest |logit| (mean within kMaxMeanRelError). keel's argmax must equal llama.cpp's token except
// at near-ties (both top-2 gaps under kTieMargin), at most kMaxTieFraction of the steps; every such
// step is printed. docs/model.md gives the measurements behind these bounds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "model/model.h"

namespace keel::model {
namespace {

// llama.cpp quantizes activations to Q8_1 with f16 scales and keeps K/V in f16; keel's CPU backend
// uses f32 scales and an f32 KV cache. Each engine lands up to ~7% (max-relative) from an
// f32-activation reference with the same dequantized weights (keel: max 0.069 over all steps;
// llama.cpp: 0.047 where measured), and the two noises are independent (docs/model.md shows that a
// last-bit change in keel's rounding reshuffles them), so the bound is their sum: 2 x 0.07. Likewise
// each engine's absolute logit noise is 0.3-0.5, so two logits can swap order when their gap is
// under the sum, 1.0. Measured (2026-11-29, tiled attention kernels): max 0.0999 (stored ids), 0.056
// (full vectors), mean 0.018, 34 near-tie steps of 1408, largest gap at a mismatch 0.66.
constexpr double kMaxRelError = 0.14;
constexpr double kMaxMeanRelError = 0.025;  // the mean is stable at 0.017-0.018 across variants
constexpr float kTieMargin = 1.0f;          // logits
constexpr double kMaxTieFraction = 0.05;    // observed 0.024-0.032

float f16_to_f32(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -24)
                     : std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

struct StepRecord {
  std::vector<int32_t> ids;   // top_k then n_random
  std::vector<float> logits;  // llama.cpp's logits at ids
};

struct PromptRecord {
  std::vector<int32_t> ids;
  std::vector<int32_t> greedy;
  std::vector<StepRecord> steps;
  std::vector<std::vector<float>> full;  // per full step (when stored)
};

struct Golden {
  int n_steps = 0, top_k = 0, n_random = 0;
  int64_t vocab = 0;
  std::vector<int> full_steps;
  std::vector<PromptRecord> prompts;
};

Golden read_golden() {
  const std::string dir = keel::test::golden_dir() + "/llamacpp/";
  std::ifstream jf(dir + "smollm2_q4_1.json");
  EXPECT_TRUE(jf.good()) << "run tests/golden/llamacpp/gen_llamacpp_logits.py";
  nlohmann::json j = nlohmann::json::parse(jf);
  Golden g;
  g.n_steps = j["n_steps"];
  g.top_k = j["top_k"];
  g.n_random = j["n_random"];
  g.vocab = j["vocab_size"];
  g.full_steps = j["full_steps"].get<std::vector<int>>();
  const int n_full_prompts = j["n_full_prompts"];
  std::ifstream bf(dir + "smollm2_q4_1.bin", std::ios::binary);
  EXPECT_TRUE(bf.good());
  auto read = [&bf](void* dst, size_t n) { bf.read(static_cast<char*>(dst), static_cast<std::streamsize>(n)); };
  const size_t n_ids = static_cast<size_t>(g.top_k + g.n_random);
  for (const auto& p : j["prompts"]) {
    PromptRecord r;
    r.ids = p["ids"].get<std::vector<int32_t>>();
    r.greedy = p["greedy"].get<std::vector<int32_t>>();
    for (int s = 0; s < g.n_steps; ++s) {
      StepRecord st;
      st.ids.resize(n_ids);
      st.logits.resize(n_ids);
      read(st.ids.data(), 4 * static_cast<size_t>(g.top_k));
      read(st.logits.data(), 4 * static_cast<size_t>(g.top_k));
      read(st.ids.data() + g.top_k, 4 * static_cast<size_t>(g.n_random));
      read(st.logits.data() + g.top_k, 4 * static_cast<size_t>(g.n_random));
      r.steps.push_back(std::move(st));
    }
    g.prompts.push_back(std::move(r));
  }
  for (int p = 0; p < n_full_prompts; ++p) {
    for (size_t s = 0; s < g.full_steps.size(); ++s) {
      std::vector<uint16_t> h(static_cast<size_t>(g.vocab));
      read(h.data(), h.size() * 2);
      std::vector<float> f(h.size());
      std::transform(h.begin(), h.end(), f.begin(), f16_to_f32);
      g.prompts[static_cast<size_t>(p)].full.push_back(std::move(f));
    }
  }
  EXPECT_TRUE(bf.good()) << "smollm2_q4_1.bin too short";
  bf.get();
  EXPECT_TRUE(bf.eof()) << "smollm2_q4_1.bin longer than its json says";
  return g;
}

struct Stats {
  double worst_sparse = 0.0;  // over stored ids
  double worst_full = 0.0;    // over full vectors
  double sum_sparse = 0.0;
  int n_sparse = 0;
  int mismatches = 0;
};

// Compares one step of one prompt; `got` is keel's [vocab] row.
void check_step(const Golden& g, size_t p, int s, const float* got, Stats& st) {
  const PromptRecord& r = g.prompts[p];
  const StepRecord& rec = r.steps[static_cast<size_t>(s)];
  // Relative to the largest |logit| among the stored ids, as row_rel_error does over a full row.
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < rec.ids.size(); ++i) {
    err = std::max(err, static_cast<double>(std::fabs(got[rec.ids[i]] - rec.logits[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(rec.logits[i])));
  }
  err /= scale;
  st.worst_sparse = std::max(st.worst_sparse, err);
  st.sum_sparse += err;
  ++st.n_sparse;
  EXPECT_LE(err, kMaxRelError) << "prompt " << p << " step " << s;
  for (size_t f = 0; f < r.full.size(); ++f) {
    if (g.full_steps[f] != s) continue;
    double num = 0.0, den = 0.0;
    for (int64_t v = 0; v < g.vocab; ++v) {
      num = std::max(num, static_cast<double>(std::fabs(got[v] - r.full[f][static_cast<size_t>(v)])));
      den = std::max(den, static_cast<double>(std::fabs(r.full[f][static_cast<size_t>(v)])));
    }
    st.worst_full = std::max(st.worst_full, num / den);
    EXPECT_LE(num / den, kMaxRelError) << "prompt " << p << " full step " << s;
  }
  const int32_t keel_top = static_cast<int32_t>(std::max_element(got, got + g.vocab) - got);
  const int32_t want = r.greedy[static_cast<size_t>(s)];
  if (keel_top != want) {
    ++st.mismatches;
    // llama.cpp's gap between its pick and keel's (keel's pick must be among the stored ids).
    auto it = std::find(rec.ids.begin(), rec.ids.end(), keel_top);
    const float lc_gap = it == rec.ids.end() ? 1e9f : rec.logits[0] - rec.logits[static_cast<size_t>(it - rec.ids.begin())];
    const float keel_gap = got[keel_top] - got[want];
    std::printf("near-tie: prompt %zu step %d: keel picks %d, llama.cpp %d; keel gap %.4f, llama.cpp gap %.4f\n", p,
                s, keel_top, want, keel_gap, lc_gap);
    EXPECT_LE(lc_gap, kTieMargin) << "prompt " << p << " step " << s << " is no near-tie";
    EXPECT_LE(keel_gap, kTieMargin) << "prompt " << p << " step " << s << " is no near-tie";
  }
}

TEST(LlamaCppParity, SmolLM2GreedyAndLogits) {
  const std::string path = keel::test::default_model_path();
  ASSERT_TRUE(keel::test::exists(path)) << path << " missing: run scripts/fetch_model.sh";
  Golden g = read_golden();
  ASSERT_GE(g.prompts.size(), 20u);
  auto m = load_model({.path = path, .backend = "cpu", .backend_options = {.n_threads = 1}});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  Model& model = **m;
  ASSERT_EQ(model.config().vocab_size, g.vocab);

  // Each prompt gets a contiguous slot range; every step batches all prompts.
  std::vector<int32_t> base(g.prompts.size());
  int32_t n_slots = 0;
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    base[p] = n_slots;
    n_slots += static_cast<int32_t>(g.prompts[p].ids.size()) + g.n_steps;
  }
  auto kv = model.make_kv_storage(n_slots);
  ASSERT_TRUE(kv.ok());
  Stats st;
  for (int s = 0; s < g.n_steps; ++s) {
    Batch b;
    for (size_t p = 0; p < g.prompts.size(); ++p) {
      const PromptRecord& r = g.prompts[p];
      // Step 0 runs the prompt; step s feeds llama.cpp's token of step s - 1.
      std::vector<int32_t> toks = s == 0 ? r.ids : std::vector<int32_t>{r.greedy[static_cast<size_t>(s - 1)]};
      const int32_t pos0 = s == 0 ? 0 : static_cast<int32_t>(r.ids.size()) + s - 1;
      BatchSeq q{.q_begin = b.n_tokens(), .n_q = static_cast<int32_t>(toks.size()), .ctx_slots = {}};
      for (int32_t i = 0; i < pos0 + q.n_q; ++i) q.ctx_slots.push_back(base[p] + i);
      for (size_t i = 0; i < toks.size(); ++i) {
        b.tokens.push_back(toks[i]);
        b.positions.push_back(pos0 + static_cast<int32_t>(i));
        b.slots.push_back(base[p] + pos0 + static_cast<int32_t>(i));
      }
      b.logit_rows.push_back(b.n_tokens() - 1);
      b.seqs.push_back(std::move(q));
    }
    std::vector<float> logits(b.logit_rows.size() * static_cast<size_t>(g.vocab));
    Status fs = model.forward(b, *kv, logits);
    ASSERT_TRUE(fs.ok()) << fs.to_string();
    for (size_t p = 0; p < g.prompts.size(); ++p) check_step(g, p, s, logits.data() + p * g.vocab, st);
  }
  std::printf("llama.cpp parity: %zu prompts x %d steps, relative logit error over stored ids: max %.4g, "
              "mean %.4g; over full vectors: max %.4g; argmax mismatches: %d\n",
              g.prompts.size(), g.n_steps, st.worst_sparse, st.sum_sparse / st.n_sparse, st.worst_full,
              st.mismatches);
  EXPECT_LE(st.sum_sparse / st.n_sparse, kMaxMeanRelError);
  EXPECT_LE(st.mismatches, static_cast<int>(kMaxTieFraction * st.n_sparse));
}

}  // namespace
}  // namespace keel::model
