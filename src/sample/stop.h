// Stop-string matching over streamed text: text that could still be the start of a stop string is
// held back; when a stop string completes, the output ends just before it (the stop string is not
// emitted). One per sample stream; scheduler thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace keel::sample {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Step {
    std::string text;      // text that is final now
    bool stopped = false;  // a stop string completed; nothing after it is emitted
  };
  // Feeds newly decoded text.
  Step push(std::string_view text);
  // End of stream without a stop: releases the held-back text.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  size_t max_stop_len_ = 0;
};

}  // namespace keel::sample
