#include "server/generation.h"

#include <fmt/format.h>

#include "base/clock.h"
#include "server/http/sse.h"
#include "server/native_generate.h"
#include "server/openai/errors.h"
#include "server/stream_resume.h"

namespace keel::server {

using nlohmann::json;
using sched::FinishReason;

GenerationMetrics::GenerationMetrics(MetricsRegistry& r)
    : registry(r),
      ttft_s(r.histogram("keel_time_to_first_token_seconds", "Request arrival to first generated token.",
                         latency_buckets_s())),
      inter_token_s(r.histogram("keel_inter_token_latency_seconds", "Time between generated tokens of a sample.",
                                latency_buckets_s())),
      e2e_s(r.histogram("keel_e2e_request_latency_seconds", "Request arrival to its last byte queued.",
                        latency_buckets_s())),
      prompt_tokens(r.counter("keel_prompt_tokens_total", "Prompt tokens of finished requests.")),
      cached_prompt_tokens(r.counter("keel_cached_prompt_tokens_total", "Prompt tokens served from the prefix cache.")),
      generation_tokens(r.counter("keel_generation_tokens_total", "Generated tokens.")) {}

void GenerationMetrics::count_finished(FinishReason reason) {
  std::string_view name = "none";
  switch (reason) {
    case FinishReason::kNone: name = "none"; break;
    case FinishReason::kStop: name = "stop"; break;
    case FinishReason::kLength: name = "length"; break;
    case FinishReason::kCancelled: name = "cancelled"; break;
    case FinishReason::kError: name = "error"; break;
  }
  registry
      .counter("keel_request_samples_finished_total", "Finished samples by finish reason.",
               fmt::format("reason=\"{}\"", name))
      .add();
}

Generation::Generation(GenerationSetup setup, http::ExchangePtr exchange, const tokenizer::Tokenizer& tok,
                       GenerationMetrics& metrics)
    : setup_(std::move(setup)),
      exchange_(std::move(exchange)),
      tok_(tok),
      metrics_(metrics),
      token_bytes_([&tok](int32_t id) -> const std::string& {
        static const std::string kEmpty;
        return id >= 0 && id < tok.n_vocab() ? tok.token_bytes(id) : kEmpty;
      }),
      samples_(static_cast<size_t>(setup_.n)) {
  for (int32_t i = 0; i < setup_.n; ++i) {
    samples_[i].choice.index = i;
    if (setup_.detokenize) samples_[i].detok = std::make_unique<tokenizer::IncrementalDetokenizer>(tok_);
  }
}

void Generation::on_client_gone() {
  if (!submitted_ || done_) return;
  done_ = true;
  metrics_.count_finished(FinishReason::kCancelled);
}

void Generation::start_stream() {
  submitted_ = true;
  if (head_sent_ || done_ || !setup_.stream) return;
  head_sent_ = true;
  exchange_->begin_stream(200, "text/event-stream", {});
  if (setup_.kind != ApiKind::kChat) return;
  for (int32_t i = 0; i < setup_.n; ++i) {
    openai::ChunkDelta delta{.index = i, .role = "assistant", .content = ""};
    exchange_->push(http::sse_event(openai::chat_chunk_json(setup_.head, delta, setup_.include_usage)));
  }
}

std::string Generation::event_text(Sample& s, const sched::StreamEvent& ev) {
  if (!setup_.detokenize) return ev.text;
  std::string text;
  for (int32_t t : ev.tokens) text += s.detok->push(t);
  if (ev.finish != FinishReason::kNone) text += s.detok->flush();
  return text;
}

void Generation::record_token_times(size_t n_new) {
  if (n_new == 0) return;
  int64_t now = now_us();
  if (last_token_us_ == 0) {
    metrics_.ttft_s.observe(static_cast<double>(now - setup_.received_us) * 1e-6);
  } else {
    double per_token = static_cast<double>(now - last_token_us_) * 1e-6 / static_cast<double>(n_new);
    for (size_t i = 0; i < n_new; ++i) metrics_.inter_token_s.observe(per_token);
  }
  last_token_us_ = now;
}

std::string Generation::chunk_for(int32_t index, const std::string& text, const json& logprobs,
                                  FinishReason finish) const {
  switch (setup_.kind) {
    case ApiKind::kChat: {
      openai::ChunkDelta delta{.index = index, .logprobs = logprobs, .finish = finish};
      if (!text.empty() || finish == FinishReason::kNone) delta.content = text;
      return openai::chat_chunk_json(setup_.head, delta, setup_.include_usage);
    }
    case ApiKind::kCompletion:
      return openai::completion_chunk_json(setup_.head, index, text, logprobs, finish, setup_.include_usage);
    case ApiKind::kNative: return "";  // native chunks are built in stream_event
  }
  return "";
}

void Generation::stream_event(Sample& s, const sched::StreamEvent& ev, const std::string& text, size_t text_offset) {
  const int32_t index = s.choice.index;
  if (setup_.kind == ApiKind::kNative) {
    bool final = ev.finish != FinishReason::kNone;
    openai::Usage usage{.prompt_tokens = ev.prompt_tokens,
                        .completion_tokens = ev.completion_tokens,
                        .cached_tokens = ev.cached_tokens};
    if (!text.empty() || !ev.tokens.empty() || final) {
      exchange_->push(http::sse_event(
          native_chunk_json(setup_.head.id, index, text, ev.tokens, ev.finish, final ? &usage : nullptr)));
    }
    return;
  }
  if (setup_.emit_token_ids && !ev.tokens.empty()) exchange_->push(token_ids_event(index, ev.tokens));
  json logprobs = nullptr;
  if (setup_.with_logprobs && ev.logprobs.size() == ev.tokens.size() && !ev.tokens.empty()) {
    openai::LogprobRun run{.tokens = ev.tokens, .chosen = ev.logprobs, .alternatives = ev.top_logprobs};
    logprobs = setup_.kind == ApiKind::kChat
                   ? openai::chat_logprobs_json(run, token_bytes_)
                   : openai::completion_logprobs_json(run, token_bytes_, static_cast<int64_t>(text_offset));
  }
  if (!text.empty() || !logprobs.is_null()) {
    exchange_->push(http::sse_event(chunk_for(index, text, logprobs, FinishReason::kNone)));
  }
  if (ev.finish == FinishReason::kStop || ev.finish == FinishReason::kLength) {
    exchange_->push(http::sse_event(chunk_for(index, "", nullptr, ev.finish)));
  }
}

void Generation::on_event(sched::StreamEvent&& ev) {
  if (done_) return;
  if (ev.index < 0 || ev.index >= setup_.n) {
    sched::StreamEvent bad{.finish = FinishReason::kError,
                           .error = fmt::format("engine sent sample index {} of {}", ev.index, setup_.n)};
    return fail(bad);
  }
  Sample& s = samples_[static_cast<size_t>(ev.index)];
  if (s.finished) return;
  if (ev.finish == FinishReason::kError || ev.finish == FinishReason::kCancelled) return fail(ev);
  record_token_times(ev.tokens.size());
  std::string text = event_text(s, ev);
  size_t text_offset = s.choice.text.size();
  if (setup_.stream) {
    start_stream();
    stream_event(s, ev, text, text_offset);
  }
  s.choice.text += text;
  s.choice.tokens.insert(s.choice.tokens.end(), ev.tokens.begin(), ev.tokens.end());
  s.choice.logprobs.insert(s.choice.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
  s.choice.top_logprobs.insert(s.choice.top_logprobs.end(), ev.top_logprobs.begin(), ev.top_logprobs.end());
  if (ev.finish != FinishReason::kNone) finish_sample(s, ev);
}

void Generation::finish_sample(Sample& s, const sched::StreamEvent& ev) {
  s.finished = true;
  s.choice.finish = ev.finish;
  usage_.prompt_tokens = ev.prompt_tokens;
  usage_.cached_tokens = ev.cached_tokens;
  usage_.completion_tokens += ev.completion_tokens;
  metrics_.generation_tokens.add(ev.completion_tokens);
  metrics_.count_finished(ev.finish);
  if (++n_finished_ == setup_.n) complete();
}

void Generation::complete() {
  done_ = true;
  metrics_.prompt_tokens.add(usage_.prompt_tokens);
  metrics_.cached_prompt_tokens.add(usage_.cached_tokens);
  metrics_.e2e_s.observe(static_cast<double>(now_us() - setup_.received_us) * 1e-6);
  std::vector<openai::Choice> choices;
  if (setup_.stream) {
    if (setup_.include_usage && setup_.kind != ApiKind::kNative) {
      std::string_view object = setup_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion";
      exchange_->push(http::sse_event(openai::usage_chunk_json(setup_.head, object, usage_)));
    }
    exchange_->push(std::string(http::sse_done()));
    exchange_->end_stream();
    return;
  }
  for (auto& s : samples_) choices.push_back(std::move(s.choice));
  std::string body;
  switch (setup_.kind) {
    case ApiKind::kChat:
      body = openai::chat_completion_json(setup_.head, choices, usage_, setup_.with_logprobs, token_bytes_);
      break;
    case ApiKind::kCompletion:
      body = openai::text_completion_json(setup_.head, choices, usage_, setup_.with_logprobs, token_bytes_);
      break;
    case ApiKind::kNative: body = native_response_json(setup_.head.id, choices, usage_, setup_.with_logprobs); break;
  }
  exchange_->respond(http::HttpResponse{.status = 200, .body = std::move(body)});
}

void Generation::fail(const sched::StreamEvent& ev) {
  done_ = true;
  metrics_.count_finished(ev.finish);
  openai::ApiError error;
  if (ev.finish == FinishReason::kCancelled) {
    error.status = Status(ErrorCode::kUnavailable, "the request was cancelled before it finished");
  } else {
    error.status = Status(ErrorCode::kInternal, ev.error.empty() ? "generation failed" : ev.error);
  }
  if (!setup_.stream || !head_sent_) {
    exchange_->respond(openai::error_response(error));
    return;
  }
  exchange_->push(http::sse_event(openai::error_json(error)));
  exchange_->push(std::string(http::sse_done()));
  exchange_->end_stream();
}

sched::EventSink make_sink(std::shared_ptr<Generation> generation, http::ExchangePtr exchange) {
  return [generation = std::move(generation), exchange = std::move(exchange)](sched::StreamEvent&& ev) {
    exchange->post([generation, ev = std::move(ev)]() mutable { generation->on_event(std::move(ev)); });
  };
}

}  // namespace keel::server
