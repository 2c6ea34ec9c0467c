#include "backend/cuda/profile_label.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include <fmt/format.h>

namespace keel::backend::cuda {
namespace {

bool profile_shapes() {
  static const bool on = [] {
    const char* env = std::getenv("KEEL_CUDA_PROFILE");
    return env != nullptr && std::strcmp(env, "2") == 0;
  }();
  return on;
}

}  // namespace

const char* profile_label(const char* op, int64_t n, int64_t m, int64_t k) {
  if (!profile_shapes()) return op;
  static std::mutex mu;
  static std::set<std::string> labels;  // node-based: c_str() of an element never moves
  std::string s = n <= 256 ? fmt::format("{} n{}", op, n) : fmt::format("{} n<={}", op, (n + 1023) / 1024 * 1024);
  if (m > 0) s += fmt::format(" m{}", m);
  if (k > 0) s += fmt::format(" k{}", k);
  // Which labelled op came before a matmul on this thread tells the layer's same-shape GEMMs apart
  // (q after add_rms_norm, o after attention).
  thread_local const char* prev = "-";
  if (std::strcmp(op, "matmul") == 0) s += fmt::format(" after {}", prev);
  prev = op;
  const std::lock_guard<std::mutex> lock(mu);
  return labels.insert(std::move(s)).first->c_str();
}

}  // namespace keel::backend::cuda
