// PeerFeed (peer_feed.h): what this instance's feed pushes and when. The subscriber is a RecordingExchange,
// a test double of server::http::Exchange (the real one needs a live connection) that keeps every push and
// every posted function for the test to run; the pushed bytes are read back through the real SseReader and
// PeerView, as a peer instance reads them: the snapshot, then one posted flush per batch of events, which
// carries them in order with the figures current when each was made.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "router/peer_event.h"
#include "router/peer_feed.h"
#include "router/peer_view.h"
#include "router/replica.h"

namespace keel::router {
namespace {

const char* kA = "http://10.0.0.1:8000";

class RecordingExchange final : public server::http::Exchange {
 public:
  void respond(server::http::HttpResponse response) override { responded = response.status; }
  void begin_stream(int status, std::string, server::http::Headers) override { stream_status = status; }
  void push(std::string bytes) override { pushes.push_back(std::move(bytes)); }
  void end_stream() override { ended = true; }
  void post(std::function<void()> fn) override { posted.push_back(std::move(fn)); }
  void on_disconnect(std::function<void()> fn) override { disconnect = std::move(fn); }

  // Runs (and forgets) the functions posted so far.
  void run_posted() {
    auto fns = std::move(posted);
    posted.clear();
    for (auto& fn : fns) fn();
  }

  int responded = 0, stream_status = 0;
  bool ended = false;
  std::vector<std::string> pushes;
  std::vector<std::function<void()>> posted;
  std::function<void()> disconnect;  // the client going away (set by the feed)
};

ReplicaList one_replica() {
  return {
      std::make_shared<Replica>(1, kA, Endpoint{.host = "10.0.0.1", .port = 8000}, ReplicaLabels{}, BreakerConfig{})};
}

// Feeds `bytes` to a peer's view of `list` (peer 0); returns the route events' groups seen.
// Every figures event this feed writes is in the shape the peer's scan reads in place (peer_event.h).
std::vector<uint64_t> read_as_peer(SseReader& reader, PeerView& view, const ReplicaList& list,
                                   const std::string& bytes) {
  std::vector<uint64_t> groups;
  EXPECT_TRUE(reader.feed(bytes, [&](const SseEvent& ev) {
    PeerFigures f;
    if (!ev.comment_only && ev.event != "reset") {
      EXPECT_TRUE(scan_peer_figures(ev.data, &f)) << ev.data;
    }
    uint64_t group = 0;
    EXPECT_EQ(view.apply(0, ev, list, &group), ev.comment_only ? PeerApply::kIgnored : PeerApply::kApplied);
    if (ev.event == "route") groups.push_back(group);
  }));
  return groups;
}

// Each subscriber costs a push per decision: past kMaxSubscribers live ones, a subscription is refused
// (503) until one goes away.
TEST(PeerFeed, SubscribersAreCappedAndTheGoneOnesDoNotCount) {
  PeerFeed feed;
  const ReplicaList list = one_replica();
  std::vector<std::shared_ptr<RecordingExchange>> subs;
  for (size_t i = 0; i < PeerFeed::kMaxSubscribers; ++i) {
    subs.push_back(std::make_shared<RecordingExchange>());
    feed.subscribe(subs.back(), list);
    ASSERT_EQ(subs.back()->stream_status, 200) << i;
  }
  auto extra = std::make_shared<RecordingExchange>();
  feed.subscribe(extra, list);
  EXPECT_EQ(extra->responded, 503);
  EXPECT_EQ(extra->stream_status, 0);
  EXPECT_EQ(feed.n_subscribers(), static_cast<int64_t>(PeerFeed::kMaxSubscribers));
  subs.front()->disconnect();  // one leaves: room for one more
  auto next = std::make_shared<RecordingExchange>();
  feed.subscribe(next, list);
  EXPECT_EQ(next->stream_status, 200);
  EXPECT_EQ(next->responded, 0);
  feed.close();
}

TEST(PeerFeed, WithoutAGapEachFlushPushesWhatWasEmittedBeforeIt) {
  auto list = one_replica();
  Replica& r = *list[0];
  PeerFeed feed;
  auto ex = std::make_shared<RecordingExchange>();
  r.in_flight = 2;
  r.work = 40;
  feed.subscribe(ex, list);
  ASSERT_EQ(ex->stream_status, 200);
  ASSERT_EQ(ex->pushes.size(), 1u);  // reset + snapshot

  auto peer_list = one_replica();  // the peer routes to the same replica URL
  PeerView view({"http://127.0.0.1:9001"});
  SseReader reader;
  read_as_peer(reader, view, peer_list, ex->pushes[0]);
  EXPECT_TRUE(view.all_live());
  EXPECT_EQ(peer_list[0]->peer_in_flight.load(), 2);
  EXPECT_EQ(peer_list[0]->peer_work.load(), 40);

  r.in_flight = 3;
  r.work = 56;
  feed.on_route(r, 77);
  EXPECT_EQ(ex->pushes.size(), 1u);  // not yet: the flush is posted
  ASSERT_EQ(ex->posted.size(), 1u);
  r.in_flight = 2;
  r.work = 40;
  feed.on_done(r);
  EXPECT_EQ(ex->posted.size(), 1u);  // one flush for both
  ex->run_posted();
  ASSERT_EQ(ex->pushes.size(), 2u);
  EXPECT_EQ(read_as_peer(reader, view, peer_list, ex->pushes[1]), std::vector<uint64_t>{77});
  EXPECT_EQ(peer_list[0]->peer_in_flight.load(), 2);  // the later event's figures
  EXPECT_LT(ex->pushes[1].find("event: route"), ex->pushes[1].find("event: done"));

  feed.on_done(r);  // the next event posts a new flush
  EXPECT_EQ(ex->posted.size(), 1u);
  feed.close();
  EXPECT_TRUE(ex->ended);
}

}  // namespace
}  // namespace keel::router
