#include "sample/stop.h"

#include <algorithm>

namespace keel::sample {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  for (const auto& s : stops_) max_stop_len_ = std::max(max_stop_len_, s.size());
}

StopMatcher::Step StopMatcher::push(std::string_view text) {
  Step step;
  held_.append(text);
  if (stops_.empty()) {
    step.text = std::move(held_);
    held_.clear();
    return step;
  }
  // Earliest complete stop string wins.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    step.text = held_.substr(0, first);
    step.stopped = true;
    held_.clear();
    return step;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  const size_t limit = std::min(held_.size(), max_stop_len_ - 1);
  for (size_t len = limit; len > 0 && keep == 0; --len) {
    std::string_view tail(held_.data() + held_.size() - len, len);
    for (const auto& s : stops_) {
      if (s.size() > len && std::string_view(s).substr(0, len) == tail) {
        keep = len;
        break;
      }
    }
  }
  step.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return step;
}

std::string StopMatcher::flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace keel::sample
