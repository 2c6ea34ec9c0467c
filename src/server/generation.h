// One admitted generation as the wire sees it: collects the engine's StreamEvents for its n samples
// and turns them into SSE chunks (stream) or one response body, in the shape of its endpoint (chat,
// completions, native /generate), and records its latency metrics. The engine's sink only posts
// events to the connection's strand (make_sink); every method runs on that strand.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sched/engine.h"
#include "server/http/exchange.h"
#include "server/metrics.h"
#include "server/openai/response_build.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

enum class ApiKind { kChat, kCompletion, kNative };

// Handles into the registry for what every generation records.
struct GenerationMetrics {
  explicit GenerationMetrics(MetricsRegistry& registry);
  MetricsRegistry& registry;
  Histogram& ttft_s;
  Histogram& inter_token_s;
  Histogram& e2e_s;
  Counter& prompt_tokens;
  Counter& cached_prompt_tokens;
  Counter& generation_tokens;
  void count_finished(sched::FinishReason reason);
};

struct GenerationSetup {
  ApiKind kind = ApiKind::kChat;
  openai::ResponseHead head;
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;
  bool with_logprobs = false;
  bool detokenize = false;  // the engine sends no text: decode tokens here
  bool emit_token_ids = false;  // keel_tokens events before each chunk (server/stream_resume.h)
  int64_t received_us = 0;  // when the request arrived (now_us clock)
};

class Generation {
 public:
  Generation(GenerationSetup setup, http::ExchangePtr exchange, const tokenizer::Tokenizer& tok,
             GenerationMetrics& metrics);
  // The client went away (Exchange::on_disconnect, on the strand): a submitted generation that has
  // not ended is counted as cancelled here, because the engine's final kCancelled event is dropped
  // with the connection. Not done in a destructor: a sink can outlive the Api and its metrics.
  void on_client_gone();

  // Sends the stream head (and chat's role chunks) unless already sent. Idempotent. The Api calls it
  // once the engine accepted the request, which marks the generation submitted.
  void start_stream();
  void on_event(sched::StreamEvent&& ev);

 private:
  struct Sample {
    openai::Choice choice;
    std::unique_ptr<tokenizer::IncrementalDetokenizer> detok;
    bool finished = false;
  };

  std::string event_text(Sample& s, const sched::StreamEvent& ev);
  void record_token_times(size_t n_new);
  void stream_event(Sample& s, const sched::StreamEvent& ev, const std::string& text, size_t text_offset);
  void finish_sample(Sample& s, const sched::StreamEvent& ev);
  void fail(const sched::StreamEvent& ev);
  void complete();
  std::string chunk_for(int32_t index, const std::string& text, const nlohmann::json& logprobs,
                        sched::FinishReason finish) const;

  GenerationSetup setup_;
  http::ExchangePtr exchange_;
  const tokenizer::Tokenizer& tok_;
  GenerationMetrics& metrics_;
  openai::TokenBytes token_bytes_;
  std::vector<Sample> samples_;
  openai::Usage usage_;
  int32_t n_finished_ = 0;
  bool head_sent_ = false;
  bool submitted_ = false;  // start_stream() ran: the engine accepted the request
  bool done_ = false;
  int64_t last_token_us_ = 0;
};

// The EventSink for the engine: moves each event onto the exchange's strand.
sched::EventSink make_sink(std::shared_ptr<Generation> generation, http::ExchangePtr exchange);

}  // namespace keel::server
