#include "model/fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace keel::model {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kHeadBytes = 1 << 20;
constexpr uint64_t kSampleBytes = 64 << 10;
constexpr int kSamples = 64;

Status hash_file(const fs::path& path, XXH3_state_t* state, bool whole) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return make_error(ErrorCode::kNotFound, "cannot read the size of '{}': {}", path.string(), ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot open '{}'", path.string());
  XXH3_64bits_update(state, &size, sizeof size);
  std::vector<char> buf;
  auto take = [&](uint64_t at, uint64_t n) -> Status {
    n = std::min(n, size - std::min(at, size));
    buf.resize(n);
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(buf.data(), static_cast<std::streamsize>(n))) {
      return make_error(ErrorCode::kIo, "cannot read {} bytes at {} of '{}'", n, at, path.string());
    }
    XXH3_64bits_update(state, buf.data(), buf.size());
    return {};
  };
  if (whole || size <= kHeadBytes + (kSamples + 1) * kSampleBytes) return take(0, size);
  if (Status s = take(0, kHeadBytes); !s.ok()) return s;
  for (int i = 0; i < kSamples; ++i) {
    const uint64_t at = kHeadBytes + (size - kHeadBytes - kSampleBytes) / kSamples * static_cast<uint64_t>(i);
    if (Status s = take(at, kSampleBytes); !s.ok()) return s;
  }
  return take(size - kSampleBytes, kSampleBytes);
}

}  // namespace

Result<std::string> model_fingerprint(const std::string& path, bool dummy) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    files.push_back(fs::path(path) / "config.json");
    if (!dummy) {
      for (const auto& e : fs::directory_iterator(path, ec)) {
        if (e.path().extension() == ".safetensors") files.push_back(e.path());
      }
      std::sort(files.begin() + 1, files.end());
    }
  } else {
    files.emplace_back(path);
  }
  const std::string tag = dummy ? "dummy" : "weights";
  XXH3_64bits_update(state.get(), tag.data(), tag.size());
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    XXH3_64bits_update(state.get(), name.data(), name.size());
    if (Status s = hash_file(f, state.get(), dummy); !s.ok()) return s;
  }
  return fmt::format("{:016x}", XXH3_64bits_digest(state.get()));
}

}  // namespace keel::model
