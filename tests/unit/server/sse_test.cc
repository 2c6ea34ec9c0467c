// SSE and HTTP framing: events, multi-line data, chunk encoding, serialized responses.
#include "server/http/sse.h"

#include <gtest/gtest.h>

#include "server/http/message.h"

namespace keel::server::http {
namespace {

TEST(Sse, SingleLineEvent) {
  EXPECT_EQ(sse_event(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event(""), "data: \n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

TEST(Sse, MultiLineDataAndEventName) {
  EXPECT_EQ(sse_event("a\nb"), "data: a\ndata: b\n\n");
  EXPECT_EQ(sse_event("a\r\nb\rc"), "data: a\ndata: b\ndata: c\n\n");
  EXPECT_EQ(sse_event("a\n"), "data: a\ndata: \n\n");
  EXPECT_EQ(sse_event("x", "error"), "event: error\ndata: x\n\n");
}

TEST(HttpFraming, Chunks) {
  EXPECT_EQ(frame_chunk("hello"), "5\r\nhello\r\n");
  EXPECT_EQ(frame_chunk(std::string(26, 'z')), "1a\r\n" + std::string(26, 'z') + "\r\n");
  EXPECT_EQ(last_chunk(), "0\r\n\r\n");
}

TEST(HttpFraming, Responses) {
  HttpResponse r{.status = 429, .content_type = "application/json", .headers = {{"Retry-After", "1"}}, .body = "{}"};
  EXPECT_EQ(serialize_response(r, true),
            "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            "Connection: keep-alive\r\nRetry-After: 1\r\n\r\n{}");
  EXPECT_EQ(serialize_stream_head(200, "text/event-stream", {}, false),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(reason_phrase(413), "Payload Too Large");
  EXPECT_EQ(reason_phrase(299), "Unknown");
}

TEST(HttpFraming, HeaderLookupIsCaseInsensitive) {
  HttpRequest req;
  req.headers = {{"content-TYPE", "application/json"}, {"X-A", "1"}};
  EXPECT_EQ(req.header("Content-Type"), "application/json");
  EXPECT_EQ(req.header("x-a"), "1");
  EXPECT_EQ(req.header("missing"), "");
  EXPECT_TRUE(iequals("ABC", "abc"));
  EXPECT_FALSE(iequals("abc", "abd"));
  EXPECT_FALSE(iequals("abc", "ab"));
}

}  // namespace
}  // namespace keel::server::http
