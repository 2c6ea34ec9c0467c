#include "router/peer_link.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "router/peer_event.h"
#include "router/service.h"

namespace keel::router {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr int64_t kPeerReconnectMs = 100;
constexpr int64_t kPeerIdleTimeoutMs = 3000;
constexpr int kMaxReadsPerDrain = 64;  // 1 MiB: a drain never reads for long
constexpr size_t kMaxWarnedUrls = 8;   // a peer naming many unknown replicas cannot flood the log
constexpr size_t kMaxLoggedUrlBytes = 200;

// A peer's URL for the log: printable ASCII, control and other bytes as '?', at most kMaxLoggedUrlBytes.
std::string printable(std::string_view s) {
  std::string out(s.substr(0, kMaxLoggedUrlBytes));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  if (s.size() > kMaxLoggedUrlBytes) out += "...";
  return out;
}

int64_t now_ms() { return now_us() / 1000; }

}  // namespace

// The io objects, on one strand of the upstream client's io_context. Every handler holds a reference,
// so they are destroyed either with the last handler (at the latest when that io_context goes) or by
// stop() while it still exists.
struct PeerLink::Conn {
  explicit Conn(net::io_context& ioc)
      : strand(net::make_strand(ioc)), socket(strand), resolver(strand), idle(strand), retry(strand) {}
  net::strand<net::io_context::executor_type> strand;
  tcp::socket socket;
  tcp::resolver resolver;
  net::steady_timer idle, retry;
  std::string request;
};

PeerLink::PeerLink(RouterService& svc, size_t peer) : svc_(svc), peer_(peer) {}

PeerLink::~PeerLink() = default;

void PeerLink::start() {
  conn_ = std::make_shared<Conn>(svc_.upstream().io_context());
  const Endpoint& ep = svc_.peer_endpoint(peer_);
  const std::string& key = svc_.config().admin_key;
  conn_->request = fmt::format(
      "GET /v1/router/peer_feed HTTP/1.1\r\nHost: {}:{}\r\nAccept: text/event-stream\r\nUser-Agent: "
      "keel-router\r\n{}\r\n",
      ep.host, ep.port, key.empty() ? std::string() : "Authorization: Bearer " + key + "\r\n");
  net::post(conn_->strand, [self = shared_from_this()] { self->connect(); });
}

void PeerLink::connect() {
  if (stopped_.load() || svc_.stopping() || !conn_) return;
  uint64_t gen = 0;
  {
    std::lock_guard lock(mu_);
    gen = ++generation_;
    fd_ = -1;
    reader_ = PeerFeedReader{};
  }
  auto c = conn_;
  const Endpoint& ep = svc_.peer_endpoint(peer_);
  c->resolver.async_resolve(
      ep.host, std::to_string(ep.port),
      [self = shared_from_this(), c, gen](boost::system::error_code ec, const tcp::resolver::results_type& results) {
        if (ec) return self->fail(gen, "resolve: " + ec.message());
        net::async_connect(c->socket, results, [self, c, gen](boost::system::error_code cec, const tcp::endpoint&) {
          if (cec) return self->fail(gen, "connect: " + cec.message());
          boost::system::error_code ignored;
          c->socket.set_option(tcp::no_delay(true), ignored);
          net::async_write(c->socket, net::buffer(c->request), [self, c, gen](boost::system::error_code wec, size_t) {
            if (wec) return self->fail(gen, "write: " + wec.message());
            boost::system::error_code nb;
            c->socket.non_blocking(true, nb);
            if (nb) return self->fail(gen, "non-blocking: " + nb.message());
            {
              std::lock_guard lock(self->mu_);
              if (gen != self->generation_) return;
              self->fd_ = c->socket.native_handle();
            }
            self->last_data_ms_.store(now_ms());
            self->arm_read(gen);
            self->check_idle(gen);
            self->drain();  // the answer's first bytes may be here already
          });
        });
      });
}

void PeerLink::arm_read(uint64_t gen) {
  auto c = conn_;
  if (!c) return;
  c->socket.async_wait(tcp::socket::wait_read, [self = shared_from_this(), c, gen](boost::system::error_code ec) {
    {
      std::lock_guard lock(self->mu_);
      if (gen != self->generation_) return;
    }
    if (ec) return self->fail(gen, ec.message());
    // The next wait first: the socket's readiness is edge-triggered, so bytes arriving after this
    // drain's last read would otherwise wake nothing until the next ones.
    self->arm_read(gen);
    self->drain();
  });
}

void PeerLink::check_idle(uint64_t gen) {
  auto c = conn_;
  if (!c) return;
  c->idle.expires_after(std::chrono::milliseconds(kPeerIdleTimeoutMs / 3));
  c->idle.async_wait([self = shared_from_this(), c, gen](boost::system::error_code ec) {
    if (ec) return;
    {
      std::lock_guard lock(self->mu_);
      if (gen != self->generation_) return;
    }
    if (now_ms() - self->last_data_ms_.load() > kPeerIdleTimeoutMs) {
      return self->fail(gen, fmt::format("silent for {} ms", kPeerIdleTimeoutMs));
    }
    self->check_idle(gen);
  });
}

void PeerLink::drain() {
  std::string why;
  uint64_t gen = 0;
  {
    std::lock_guard lock(mu_);
    if (fd_ < 0) return;
    gen = generation_;
    if (read_available(&why)) return;
  }
  // The socket and timers are the strand's: the connection is closed there.
  if (auto c = conn_) net::post(c->strand, [self = shared_from_this(), gen, why] { self->fail(gen, why); });
}

bool PeerLink::read_available(std::string* why) {
  char buf[16 << 10];
  for (int k = 0; k < kMaxReadsPerDrain; ++k) {
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      last_data_ms_.store(now_ms(), std::memory_order_relaxed);
      if (!feed(std::string_view(buf, static_cast<size_t>(n)), why)) return false;
      continue;
    }
    if (n == 0) {
      *why = "closed";
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    *why = std::strerror(errno);
    return false;
  }
  // More waits but this drain has read enough. Readiness is edge-triggered, so no wait fires for what is
  // already here: the strand reads on.
  if (auto c = conn_) net::post(c->strand, [self = shared_from_this()] { self->drain(); });
  return true;
}

bool PeerLink::feed(std::string_view bytes, std::string* why) {
  auto list = svc_.replicas().snapshot();
  auto on_event = [&](const SseEvent& ev) {
    uint64_t group = 0;
    const PeerApply a = svc_.peers().apply(peer_, ev, *list, &group);
    if (a == PeerApply::kApplied && group != 0) svc_.add_peer_arrival(group);
    if (a == PeerApply::kApplied && ev.event == "reset") KEEL_LOG_INFO("peer {} live", svc_.peers().url(peer_));
    if (a == PeerApply::kMalformed || a == PeerApply::kUnknownReplica) svc_.count_peer_dropped();
    if (a == PeerApply::kUnknownReplica) warn_unknown_replica(ev.data);
  };
  return reader_.feed(bytes, on_event, why);
}

void PeerLink::warn_unknown_replica(std::string_view data) {
  if (warned_urls_.size() >= kMaxWarnedUrls) return;
  PeerFigures f;
  if (parse_peer_figures(data, &f) != PeerParse::kOk || !warned_urls_.emplace(f.url).second) return;
  KEEL_LOG_WARN(
      "peer {} reports requests on replica '{}', which this instance does not route to: its figures there "
      "are dropped (give every instance the same replicas, with URLs spelled alike; "
      "keel_router_peer_events_dropped_total counts such events)",
      svc_.peers().url(peer_), printable(f.url));
}

void PeerLink::fail(uint64_t gen, const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (gen != generation_) return;
    ++generation_;
    fd_ = -1;
  }
  auto c = conn_;
  if (!c) return;
  boost::system::error_code ignored;
  c->socket.close(ignored);
  c->idle.cancel();
  const bool was_live = svc_.peers().live(peer_);
  svc_.peers().drop(peer_, *svc_.replicas().snapshot());
  if (was_live) KEEL_LOG_WARN("peer {} lost: {}", svc_.peers().url(peer_), why);
  if (stopped_.load() || svc_.stopping()) return;
  c->retry.expires_after(std::chrono::milliseconds(kPeerReconnectMs));
  c->retry.async_wait([self = shared_from_this(), c](boost::system::error_code ec) {
    if (!ec) self->connect();
  });
}

void PeerLink::stop() {
  stopped_.store(true);
  {
    std::lock_guard lock(mu_);
    ++generation_;
    fd_ = -1;
  }
  // Called once no thread runs the io_context (RouterService::stop): the io objects go now if no
  // handler holds them, else with those handlers when the io_context is destroyed.
  if (auto c = std::exchange(conn_, nullptr)) {
    boost::system::error_code ignored;
    c->socket.close(ignored);
  }
}

}  // namespace keel::router
