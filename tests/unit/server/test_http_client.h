// Raw HTTP/1.1 over a loopback socket for the server tests: send bytes as written, read responses
// (Content-Length or chunked) and notice when the server closes. Test code only; one thread per
// RawClient.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::server::test {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  std::vector<std::string> chunks;             // chunk payloads, when chunked
};

class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until `pred(buffer_)` holds, EOF, or the timeout. False on EOF/timeout before pred holds.
  template <typename Pred>
  bool read_until(Pred pred, int timeout_ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!pred(buffer_)) {
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, left) <= 0) return false;
      char tmp[4096];
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) {
        eof_ = true;
        return pred(buffer_);
      }
      buffer_.append(tmp, static_cast<size_t>(n));
    }
    return true;
  }

  // True if the server closed the connection within the timeout (pending bytes are kept).
  bool wait_closed(int timeout_ms = 5000) {
    read_until([](const std::string&) { return false; }, timeout_ms);
    return eof_;
  }

  // Reads one complete response. nullopt on timeout or a connection closed mid-response.
  std::optional<RawResponse> read_response(int timeout_ms = 5000) {
    if (!read_until([](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; }, timeout_ms)) {
      return std::nullopt;
    }
    size_t head_end = buffer_.find("\r\n\r\n");
    std::string head = buffer_.substr(0, head_end);
    buffer_.erase(0, head_end + 4);
    RawResponse r;
    r.status = std::stoi(head.substr(9, 3));
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos) {
      size_t next = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      pos = next;
    }
    if (r.status == 100) return read_response(timeout_ms);
    if (r.headers.count("content-length")) {
      size_t len = std::stoul(r.headers["content-length"]);
      if (!read_until([len](const std::string& b) { return b.size() >= len; }, timeout_ms)) return std::nullopt;
      r.body = buffer_.substr(0, len);
      buffer_.erase(0, len);
      return r;
    }
    while (true) {  // chunked
      if (!read_until([](const std::string& b) { return b.find("\r\n") != std::string::npos; }, timeout_ms))
        return std::nullopt;
      size_t line_end = buffer_.find("\r\n");
      size_t len = std::stoul(buffer_.substr(0, line_end), nullptr, 16);
      if (!read_until([&](const std::string& b) { return b.size() >= line_end + 2 + len + 2; }, timeout_ms)) {
        return std::nullopt;
      }
      std::string data = buffer_.substr(line_end + 2, len);
      buffer_.erase(0, line_end + 2 + len + 2);
      if (len == 0) return r;
      r.chunks.push_back(data);
      r.body += data;
    }
  }

  const std::string& buffer() const { return buffer_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

inline std::string post_json(std::string_view path, std::string_view body, std::string_view extra_headers = {}) {
  std::string out = "POST " + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += extra_headers;
  out += "\r\n";
  out += body;
  return out;
}

inline std::string get(std::string_view path, std::string_view extra_headers = {}) {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\n" + std::string(extra_headers) + "\r\n";
}

}  // namespace keel::server::test
