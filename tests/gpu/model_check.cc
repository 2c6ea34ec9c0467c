// keel_gpu_model_check: one model on the cpu and cuda backends, same token ids. Prints one JSON line
// (prompt-logit relative error cuda vs cpu, greedy tokens of each, their match length) and writes the
// prompt logits of both ([n_prompt, vocab] f32, raw) for tests/gpu/hf_parity.py to compare with HF.
// Usage: keel_gpu_model_check MODEL TOKENS(comma-separated) N_NEW OUT_PREFIX
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "model/model.h"

namespace {

using keel::model::Batch;
using keel::model::BatchSeq;

struct Run {
  std::vector<float> prompt_logits;  // [n_prompt, vocab]
  std::vector<int32_t> greedy;
};

int argmax(const float* v, int64_t n) {
  int best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = static_cast<int>(i);
  }
  return best;
}

Run run(const std::string& path, const std::string& backend, const std::vector<int32_t>& prompt, int n_new) {
  auto m = keel::model::load_model({.path = path, .backend = backend});
  if (!m.ok()) {
    std::fprintf(stderr, "%s: %s\n", backend.c_str(), m.status().to_string().c_str());
    std::exit(1);
  }
  const int64_t vocab = (*m)->config().vocab_size;
  const auto n = static_cast<int32_t>(prompt.size());
  auto kv = (*m)->make_kv_storage(n + n_new + 1).value();
  Run r;
  Batch b;
  BatchSeq seq{.q_begin = 0, .n_q = n, .ctx_slots = {}};
  for (int32_t i = 0; i < n; ++i) {
    b.tokens.push_back(prompt[static_cast<size_t>(i)]);
    b.positions.push_back(i);
    b.slots.push_back(i);
    b.logit_rows.push_back(i);
    seq.ctx_slots.push_back(i);
  }
  b.seqs.push_back(seq);
  r.prompt_logits.resize(static_cast<size_t>(n * vocab));
  if (auto st = (*m)->forward(b, kv, r.prompt_logits); !st.ok()) {
    std::fprintf(stderr, "%s forward: %s\n", backend.c_str(), st.to_string().c_str());
    std::exit(1);
  }
  std::vector<float> logits(r.prompt_logits.end() - vocab, r.prompt_logits.end());
  for (int32_t pos = n; pos < n + n_new; ++pos) {
    const int32_t next = argmax(logits.data(), vocab);
    r.greedy.push_back(next);
    Batch d{.tokens = {next}, .positions = {pos}, .slots = {pos}, .seqs = {}, .logit_rows = {0}};
    BatchSeq s{.q_begin = 0, .n_q = 1, .ctx_slots = {}};
    for (int32_t i = 0; i <= pos; ++i) s.ctx_slots.push_back(i);
    d.seqs.push_back(s);
    if (auto st = (*m)->forward(d, kv, logits); !st.ok()) {
      std::fprintf(stderr, "%s decode: %s\n", backend.c_str(), st.to_string().c_str());
      std::exit(1);
    }
  }
  return r;
}

std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL TOKENS N_NEW OUT_PREFIX\n", argv[0]);
    return 2;
  }
  std::vector<int32_t> prompt;
  std::stringstream ss(argv[2]);
  for (std::string t; std::getline(ss, t, ',');) prompt.push_back(std::stoi(t));
  const int n_new = std::atoi(argv[3]);
  const Run cpu = run(argv[1], "cpu", prompt, n_new);
  const Run gpu = run(argv[1], "cuda", prompt, n_new);
  double num = 0, den = 0;
  for (size_t i = 0; i < cpu.prompt_logits.size(); ++i) {
    const double d = static_cast<double>(gpu.prompt_logits[i]) - cpu.prompt_logits[i];
    num += std::isnan(d) ? INFINITY : d * d;
    den += static_cast<double>(cpu.prompt_logits[i]) * cpu.prompt_logits[i];
  }
  size_t match = 0;
  while (match < cpu.greedy.size() && cpu.greedy[match] == gpu.greedy[match]) ++match;
  for (const auto& [name, r] : {std::pair{"cpu", &cpu}, std::pair{"cuda", &gpu}}) {
    std::ofstream(std::string(argv[4]) + "." + name + ".f32", std::ios::binary)
        .write(reinterpret_cast<const char*>(r->prompt_logits.data()),
               static_cast<std::streamsize>(r->prompt_logits.size() * sizeof(float)));
  }
  std::printf("{\"rel_err_cuda_vs_cpu\": %.3e, \"greedy_match\": %zu, \"n_new\": %d, \"cpu\": [%s], \"cuda\": [%s]}\n",
              std::sqrt(num / den), match, n_new, join(cpu.greedy).c_str(), join(gpu.greedy).c_str());
  return 0;
}
