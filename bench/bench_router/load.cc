// Closed-loop HTTP/1.1 load generator: N keep-alive connections, each sends the same POST and waits
// for the whole response before the next, for D seconds, on one thread. Prints one JSON line:
// requests, errors, req/s, latency p50/p90/p99/max in microseconds.
// Usage: bench_router_load HOST PORT PATH BODY CONNECTIONS SECONDS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
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
  int64_t errors = 0;
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(net::io_context& ioc, const std::string& wire, Clock::time_point end, Stats& stats)
      : socket_(ioc), wire_(wire), end_(end), stats_(stats) {}
  void start(const tcp::resolver::results_type& eps) {
    net::async_connect(socket_, eps, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (ec) {
        ++self->stats_.errors;
        return;
      }
      self->send();
    });
  }

 private:
  void send() {
    if (Clock::now() >= end_) return;
    t0_ = Clock::now();
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
          self->stats_.latencies_us.push_back(
              std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - self->t0_).count());
        }
        self->send();
      });
    });
  }

  tcp::socket socket_;
  const std::string& wire_;
  Clock::time_point end_, t0_;
  Stats& stats_;
  beast::flat_buffer buf_;
  bhttp::response<bhttp::string_body> res_;
};

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s HOST PORT PATH BODY CONNECTIONS SECONDS\n", argv[0]);
    return 2;
  }
  std::string host = argv[1], port = argv[2], path = argv[3], body = argv[4];
  int n_conn = std::atoi(argv[5]);
  double seconds = std::atof(argv[6]);
  std::string wire = "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
                     "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  auto eps = resolver.resolve(host, port);
  Stats stats;
  auto end = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  for (int i = 0; i < n_conn; ++i) std::make_shared<Conn>(ioc, wire, end, stats)->start(eps);
  auto t0 = Clock::now();
  ioc.run();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  auto& l = stats.latencies_us;
  std::sort(l.begin(), l.end());
  auto q = [&l](double p) { return l.empty() ? 0 : l[std::min(l.size() - 1, static_cast<size_t>(p * l.size()))]; };
  std::printf("{\"requests\": %zu, \"errors\": %lld, \"rps\": %.1f, \"p50_us\": %lld, \"p90_us\": %lld, "
              "\"p99_us\": %lld, \"max_us\": %lld}\n",
              l.size(), static_cast<long long>(stats.errors), static_cast<double>(l.size()) / elapsed,
              static_cast<long long>(q(0.5)), static_cast<long long>(q(0.9)), static_cast<long long>(q(0.99)),
              static_cast<long long>(l.empty() ? 0 : l.back()));
  return 0;
}
