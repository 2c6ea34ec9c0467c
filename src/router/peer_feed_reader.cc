#include "router/peer_feed_reader.h"

#include <cstdint>
#include <limits>

#include <fmt/format.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace keel::router {

namespace {

namespace bhttp = boost::beast::http;

constexpr uint32_t kMaxHeadBytes = 16 << 10;
constexpr size_t kMaxPeerEventBytes = 64 << 10;

}  // namespace

struct PeerFeedReader::Impl {
  Impl() {
    parser.header_limit(kMaxHeadBytes);
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // a stream: its body is taken as it comes
    parser.eager(true);
  }
  bhttp::response_parser<bhttp::string_body> parser;
  std::string pending;  // bytes the parser has not taken yet (a partial head or chunk header)
};

PeerFeedReader::PeerFeedReader() : impl_(std::make_unique<Impl>()) {}
PeerFeedReader::~PeerFeedReader() = default;
PeerFeedReader::PeerFeedReader(PeerFeedReader&&) noexcept = default;
PeerFeedReader& PeerFeedReader::operator=(PeerFeedReader&&) noexcept = default;

bool PeerFeedReader::feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event,
                          std::string* why) {
  auto& p = impl_->parser;
  std::string& in = impl_->pending;
  in.append(bytes);
  while (!in.empty()) {
    boost::beast::error_code ec;
    const size_t n = p.put(boost::asio::buffer(in), ec);
    in.erase(0, n);
    if (p.is_header_done() && p.get().result_int() != 200) {
      *why = fmt::format("answered {}", p.get().result_int());
      return false;
    }
    std::string& body = p.get().body();
    if (!body.empty()) {
      const bool ok = events_.feed(body, on_event, kMaxPeerEventBytes);
      body.clear();
      if (!ok) {
        *why = "oversized event";
        return false;
      }
    }
    if (ec && ec != bhttp::error::need_more) {  // after the events that came before the bad bytes
      *why = ec.message();
      return false;
    }
    if (p.is_done()) {
      *why = "the stream ended";
      return false;
    }
    if (n == 0 || ec) break;  // needs more bytes
  }
  return true;
}

}  // namespace keel::router
