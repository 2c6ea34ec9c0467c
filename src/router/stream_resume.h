// Stream resumption, the router's half (the replica's half is server/stream_resume.h). While a
// stream runs, the replica interleaves `event: keel_tokens` events naming the token ids of the
// content chunk that follows; ResumeState commits them when that chunk is forwarded, so the ids it
// holds are exactly the tokens whose text the client has. When the replica dies, resume_body() asks
// another replica to continue from prompt + those ids (same seed, max_tokens reduced), and
// rewrite_chunk() makes its chunks look like the first stream's (id, created, no second role chunk,
// usage counting every generated token). One per proxied stream, under its request's mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace keel::router {

class ResumeState {
 public:
  // A keel_tokens event's data ({"index": 0, "token_ids": [...]}); false if malformed.
  bool on_token_event(std::string_view data);
  // A data chunk about to be forwarded: commits the pending tokens (they are its tokens).
  void on_chunk_forwarded(std::string_view data);
  // The chunk to forward instead of `data` (nullopt: drop it). Identity until a resume happened.
  std::optional<std::string> rewrite_chunk(std::string_view data);

  // The body for the next replica, or nullopt when nothing can be resumed (n > 1, budget spent).
  std::optional<std::string> resume_body(const nlohmann::json& original) const;
  // Marks the start of a resumed attempt (after resume_body was sent).
  void begin_resume();

  // A chunk with a finish_reason was forwarded: the sample is complete.
  bool finished() const { return finished_; }
  const std::vector<int32_t>& tokens() const { return committed_; }
  int32_t n_resumes() const { return n_resumes_; }

 private:
  std::vector<int32_t> committed_;
  std::vector<int32_t> pending_;
  int32_t n_resumes_ = 0;
  int64_t resume_base_ = 0;  // tokens handed to the current resumed attempt
  std::string first_id_;
  std::optional<int64_t> first_created_;
  bool bad_ = false;  // a token event was malformed: resumption is off for this stream
  bool saw_token_event_ = false;
  int64_t n_forwarded_ = 0;  // data chunks forwarded
  bool finished_ = false;
};

}  // namespace keel::router
