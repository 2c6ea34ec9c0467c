// HTTP/1.1 load generator on one thread: N keep-alive connections send the same POST for D seconds.
// Closed loop (no RATE): each connection sends the next request as soon as the whole response is in.
// Open loop (RATE req/s in all): each connection draws Poisson arrivals at RATE / N and latency counts
// from a request's scheduled time, so a request due while its connection still waits for the previous
// answer counts that wait too ("late": how many were). Prints one JSON line: requests, errors, req/s,
// latency p50/p90/p99/max in microseconds (and the offered rate and late count in open loop).
// Usage: bench_router_load HOST PORT PATH BODY CONNECTIONS SECONDS [RATE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Stats {
  std::vector<int64_t> latencies_us;
  std::vector<int64_t> early_us;   // latencies of requests sent in the run's first 0.5 s (connections new)
  std::vector<int64_t> steady_us;  // ... and of those sent after it (every connection set up)
  int64_t errors = 0;
  int64_t late = 0;  // open loop: sent after their scheduled time (the connection was busy)
  Clock::time_point start = Clock::now();
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  // rate > 0: open loop at `rate` req/s on this connection (Poisson, seeded by `seed`).
  Conn(net::io_context& ioc, const std::string& wire, Clock::time_point end, Stats& stats, double rate, uint64_t seed)
      : socket_(ioc), timer_(ioc), wire_(wire), end_(end), stats_(stats), rate_(rate), rng_(seed) {}
  void start(const tcp::resolver::results_type& eps) {
    net::async_connect(socket_, eps, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (ec) {
        ++self->stats_.errors;
        return;
      }
      self->due_ = Clock::now();
      self->next();
    });
  }

 private:
  // The next request: at once (closed loop) or at the next arrival (open loop).
  void next() {
    if (rate_ > 0) {
      schedule();
    } else {
      send();
    }
  }

  // Open loop: the next arrival after due_; sends at once when it is already due.
  void schedule() {
    due_ += std::chrono::nanoseconds(static_cast<int64_t>(std::exponential_distribution<double>(rate_)(rng_) * 1e9));
    if (due_ >= end_) return;
    if (due_ <= Clock::now()) {
      ++stats_.late;
      send();
      return;
    }
    timer_.expires_at(due_);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->send();
    });
  }

  void send() {
    if (Clock::now() >= end_) return;
    t0_ = rate_ > 0 ? due_ : Clock::now();
    net::async_write(socket_, net::buffer(wire_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        ++self->stats_.errors;
        return;
      }
      self->res_ = {};
      bhttp::async_read(self->socket_, self->buf_, self->res_, [self](beast::error_code rec, size_t) {
        if (rec || self->res_.result_int() != 200) {
          ++self->stats_.errors;
          if (rec) return;
        } else {
          const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - self->t0_).count();
          self->stats_.latencies_us.push_back(us);
          if (self->t0_ < self->stats_.start + std::chrono::milliseconds(500)) {
            self->stats_.early_us.push_back(us);
          } else {
            self->stats_.steady_us.push_back(us);
          }
          ++self->n_done_;
          self->max_us_ = std::max(self->max_us_, us);
        }
        self->next();
      });
    });
  }

 public:
  int64_t n_done_ = 0, max_us_ = 0;  // this connection's completed requests and slowest one

 private:
  tcp::socket socket_;
  net::steady_timer timer_;
  const std::string& wire_;
  Clock::time_point end_, t0_, due_;
  Stats& stats_;
  double rate_;
  std::mt19937_64 rng_;
  beast::flat_buffer buf_;
  bhttp::response<bhttp::string_body> res_;
};

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s HOST PORT PATH BODY CONNECTIONS SECONDS [RATE]\n", argv[0]);
    return 2;
  }
  std::string host = argv[1], port = argv[2], path = argv[3], body = argv[4];
  int n_conn = std::atoi(argv[5]);
  double seconds = std::atof(argv[6]);
  double rate = argc > 7 ? std::atof(argv[7]) : 0.0;
  if (n_conn <= 0 || seconds <= 0 || rate < 0) {
    std::fprintf(stderr, "CONNECTIONS and SECONDS must be positive, RATE not negative\n");
    return 2;
  }
  std::string wire = "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
                     "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  auto eps = resolver.resolve(host, port);
  Stats stats;
  auto end = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  std::random_device seed;
  std::vector<std::shared_ptr<Conn>> conns;
  for (int i = 0; i < n_conn; ++i) {
    conns.push_back(std::make_shared<Conn>(ioc, wire, end, stats, rate / n_conn, (uint64_t{seed()} << 32) | seed()));
    conns.back()->start(eps);
  }
  auto t0 = Clock::now();
  ioc.run();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  auto& l = stats.latencies_us;
  std::sort(l.begin(), l.end());
  auto q = [&l](double p) { return l.empty() ? 0 : l[std::min(l.size() - 1, static_cast<size_t>(p * l.size()))]; };
  // Fairness between connections: requests each completed, and each one's slowest (min / p50 / max over
  // connections); and the p99 of requests sent in the first 0.5 s (new connections) and after it apart.
  std::vector<int64_t> done, slowest;
  for (const auto& c : conns) {
    done.push_back(c->n_done_);
    slowest.push_back(c->max_us_);
  }
  std::sort(done.begin(), done.end());
  std::sort(slowest.begin(), slowest.end());
  auto& e = stats.early_us;
  std::sort(e.begin(), e.end());
  auto& st = stats.steady_us;
  std::sort(st.begin(), st.end());
  auto p99 = [](const std::vector<int64_t>& v) {
    return static_cast<long long>(v.empty() ? 0 : v[std::min(v.size() - 1, v.size() * 99 / 100)]);
  };
  auto mid = [](const std::vector<int64_t>& v) { return static_cast<long long>(v.empty() ? 0 : v[v.size() / 2]); };
  auto lo = [](const std::vector<int64_t>& v) { return static_cast<long long>(v.empty() ? 0 : v.front()); };
  auto hi = [](const std::vector<int64_t>& v) { return static_cast<long long>(v.empty() ? 0 : v.back()); };
  std::printf(
      "{\"requests\": %zu, \"errors\": %lld, \"rps\": %.1f, \"p50_us\": %lld, \"p90_us\": %lld, "
      "\"p99_us\": %lld, \"max_us\": %lld, \"offered_rps\": %.1f, \"late\": %lld, "
      "\"conn_done\": [%lld, %lld, %lld], \"conn_slowest_us\": [%lld, %lld, %lld], \"early\": %zu, "
      "\"early_p99_us\": %lld, \"steady_p99_us\": %lld}\n",
      l.size(), static_cast<long long>(stats.errors), static_cast<double>(l.size()) / elapsed,
      static_cast<long long>(q(0.5)), static_cast<long long>(q(0.9)), static_cast<long long>(q(0.99)),
      static_cast<long long>(l.empty() ? 0 : l.back()), rate, static_cast<long long>(stats.late), lo(done), mid(done),
      hi(done), lo(slowest), mid(slowest), hi(slowest), e.size(), p99(e), p99(st));
  return 0;
}
