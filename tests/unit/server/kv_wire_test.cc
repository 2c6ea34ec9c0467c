// The KV pull's wire form (server/kv_wire.h), its export request, and the one-shot HTTP client that
// fetches it (server/http/fetch.h) against a real HttpServer on a loopback port.
#include "server/kv_wire.h"

#include <gtest/gtest.h>

#include <cstring>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "server/http/fetch.h"
#include "server/http/server.h"

namespace keel::server {
namespace {

KvIdentity identity() {
  return {.model = "00112233aabbccdd", .backend = "cpu", .kv_dtype = "f32",
          .n_layers = 2, .n_kv_heads = 1, .head_dim = 4, .n_vocab = 50};
}

sched::KvPrefix prefix(int32_t n) {
  sched::KvPrefix p;
  for (int32_t i = 0; i < n; ++i) p.tokens.push_back(3 + i);
  for (int64_t i = 0; i < n * identity().floats_per_token(); ++i) p.data.push_back(0.25f * static_cast<float>(i) - 7.0f);
  return p;
}

TEST(KvWire, RoundTripsTokensAndEveryFloat) {
  const sched::KvPrefix p = prefix(5);
  const std::string body = encode_kv(identity(), p);
  ASSERT_TRUE(body.starts_with(kKvWireMagic));
  auto back = decode_kv(body, identity(), 5);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back.value().tokens, p.tokens);
  EXPECT_EQ(back.value().data, p.data);
  auto empty = decode_kv(encode_kv(identity(), {}), identity(), 5);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty.value().n_tokens(), 0);
}

TEST(KvWire, KvOfAnotherReplicaKindIsRefusedNamingTheField) {
  const sched::KvPrefix p = prefix(3);
  auto refused = [&](KvIdentity other, std::string_view says) {
    auto r = decode_kv(encode_kv(other, p), identity(), 10);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  KvIdentity i = identity();
  i.model = "ffffffffffffffff";
  refused(i, "model fingerprint");
  i = identity();
  i.backend = "cuda";
  refused(i, "backend");
  i = identity();
  i.kv_dtype = "bf16";
  refused(i, "KV dtype");
  i = identity();
  i.n_layers = 3;
  refused(i, "model shape");
  i = identity();
  i.n_vocab = 51;
  refused(i, "model shape");
}

TEST(KvWire, MalformedBodiesAreRefused) {
  const std::string good = encode_kv(identity(), prefix(4));
  auto refused = [&](std::string body, std::string_view says, int64_t max_tokens = 10) {
    auto r = decode_kv(body, identity(), max_tokens);
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  refused("", "KEELKV01");
  refused("KEELKV02" + good.substr(8), "KEELKV01");
  refused(good.substr(0, 10), "header length");
  std::string huge = good;
  const uint32_t big = 1u << 30;
  std::memcpy(huge.data() + 8, &big, 4);
  refused(huge, "header length");
  refused(good.substr(0, good.size() - 1), "size");
  refused(good + "x", "size");
  refused(good, "n_tokens", 3);
  // A token outside the vocabulary.
  sched::KvPrefix p = prefix(2);
  p.tokens[1] = 50;
  refused(encode_kv(identity(), p), "vocabulary");
  // A header that is not an object, or lacks a field.
  std::string not_object = std::string(kKvWireMagic) + std::string("\x02\x00\x00\x00", 4) + "[]";
  refused(not_object, "JSON object");
  std::string no_field = std::string(kKvWireMagic) + std::string("\x02\x00\x00\x00", 4) + "{}";
  refused(no_field, "field");
}

TEST(KvWire, ExportRequests) {
  auto r = parse_kv_export_request(R"({"tokens":[1,2,49],"max_tokens":2})", 50, 8);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value().tokens, (std::vector<int32_t>{1, 2, 49}));
  EXPECT_EQ(r.value().max_tokens, 2);
  auto body = kv_export_request_body(std::vector<int32_t>{4, 5});
  auto back = parse_kv_export_request(body, 50, 8);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().tokens, (std::vector<int32_t>{4, 5}));
  for (const char* bad : {"", "[]", "{}", R"({"tokens":"1"})", R"({"tokens":[50]})", R"({"tokens":[-1]})",
                          R"({"tokens":[1.5]})", R"({"tokens":[1],"max_tokens":0})", R"({"tokens":[1],"x":1})",
                          R"({"tokens":[1,2,3,4,5,6,7,8,9]})"}) {
    auto e = parse_kv_export_request(bad, 50, 8);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), ErrorCode::kInvalidArgument) << bad;
    }
  }
}

TEST(HttpFetch, ParsesOriginsOnly) {
  auto o = http::parse_http_origin("http://127.0.0.1:8001");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o.value().host, "127.0.0.1");
  EXPECT_EQ(o.value().port, 8001);
  auto v6 = http::parse_http_origin("http://[::1]:9/");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6.value().host, "::1");
  EXPECT_EQ(v6.value().port, 9);
  for (const char* bad : {"", "127.0.0.1:80", "https://h:1", "http://h", "http://h:0", "http://h:65536", "http://:80",
                          "http://h:80/path", "http://u@h:80", "http://[::1]80", "http://h:8x"}) {
    EXPECT_FALSE(http::parse_http_origin(bad).ok()) << bad;
  }
}

TEST(HttpFetch, AnswersUnreachableAndSilentServersWithinTheDeadline) {
  http::Router router;
  router.add("POST", "/echo", [](http::HttpRequest&& req, const http::ExchangePtr& ex) {
    ex->respond(http::HttpResponse{.status = 201, .content_type = "text/plain", .body = req.body + "!"});
  });
  http::HttpServer server(http::ServerConfig{.host = "127.0.0.1", .port = 0, .n_io_threads = 1}, std::move(router), {});
  ASSERT_TRUE(server.start().ok());
  const http::FetchTarget here{.host = "127.0.0.1", .port = server.port()};
  auto got = http::fetch(here, {.target = "/echo", .body = "hi"});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got.value().status, 201);
  EXPECT_EQ(got.value().body, "hi!");
  EXPECT_EQ(got.value().content_type, "text/plain");

  auto limited = http::fetch(here, {.target = "/echo", .body = std::string(100, 'x'), .max_body_bytes = 50});
  ASSERT_FALSE(limited.ok()) << limited.value().status << " " << limited.value().body.size();
  EXPECT_EQ(limited.status().code(), ErrorCode::kResourceExhausted);

  // A listener that accepts and never answers: the deadline ends the call.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor silent(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  auto timed_out = http::fetch({.host = "127.0.0.1", .port = silent.local_endpoint().port()},
                               {.target = "/x", .timeout_ms = 200});
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), ErrorCode::kUnavailable);

  // Nothing listening.
  const uint16_t closed = silent.local_endpoint().port();
  silent.close();
  auto refused = http::fetch({.host = "127.0.0.1", .port = closed}, {.target = "/x", .timeout_ms = 500});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnavailable);
  server.stop();
}

}  // namespace
}  // namespace keel::server
