// Stream resumption, the replica's half (the router's half is router/stream_resume.h). Two opt-in
// extensions a router uses, invisible to other clients:
//  - `X-Keel-Token-Ids: 1`: each streamed chunk of generated text is preceded by
//    `event: keel_tokens` / `data: {"index": i, "token_ids": [...]}` naming its tokens;
//  - `X-Keel-Resume: 1` with a body field "keel_resume_token_ids": [...]: continue a chat/completion
//    whose first tokens were already generated (elsewhere); they are appended to the prompt, so with
//    the same seed the counter-based sampler (sample/rng.h, keyed on position) draws what an
//    uninterrupted run would. The field is taken out of the body before the OpenAI parser sees it.
// Pure functions: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/http/message.h"
#include "server/openai/errors.h"

namespace keel::server {

bool wants_token_ids(const http::HttpRequest& req);

// With X-Keel-Resume: 1, removes "keel_resume_token_ids" from `body` and returns the ids (each in
// [0, n_vocab) when n_vocab > 0); without the header, nullopt and `body` untouched. 400 on a bad body.
openai::ApiResult<std::optional<std::vector<int32_t>>> take_resume_tokens(const http::HttpRequest& req,
                                                                          std::string& body, int32_t n_vocab);

// The `event: keel_tokens` SSE event for tokens of sample `index`.
std::string token_ids_event(int32_t index, std::span<const int32_t> tokens);

}  // namespace keel::server
