#include "router/access_log.h"

#include <chrono>

#include <fmt/format.h>

namespace keel::router {

AccessLog::AccessLog(std::FILE* out, AccessLogConfig config) : out_(out), config_(config), writer_([this] { run(); }) {}

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  writer_.join();
}

void AccessLog::write(std::string_view line) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (buf_.size() + line.size() + 1 > config_.max_buffered) {
      ++dropped_;
      return;
    }
    const bool below = buf_.size() < config_.flush_bytes;
    buf_.append(line).push_back('\n');
    wake = below && buf_.size() >= config_.flush_bytes;
  }
  if (wake) cv_.notify_one();
}

int64_t AccessLog::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void AccessLog::run() {
  std::string out;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait_for(lock, std::chrono::milliseconds(config_.flush_ms),
                 [this] { return stop_ || buf_.size() >= config_.flush_bytes; });
    const bool last = stop_;
    out.clear();
    out.swap(buf_);
    const int64_t dropped = dropped_;
    lock.unlock();
    if (dropped > reported_) {
      out += fmt::format("keel warn: access log: {} lines dropped (the output fell behind)\n", dropped - reported_);
      reported_ = dropped;
    }
    if (!out.empty()) {
      std::fwrite(out.data(), 1, out.size(), out_);
      std::fflush(out_);
    }
    lock.lock();
    if (last && buf_.empty()) return;
  }
}

}  // namespace keel::router
