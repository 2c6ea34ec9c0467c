// PeerView (peer_view.h): the peers' feed events applied to the replicas' peer sums — reset and
// snapshot, route/done updates (absolute, so a lost event heals), malformed and unknown-replica events
// dropped without touching the sums, and a lost feed taking its peer's contribution off at once.
// Also Replica::load_synced and the polled excess neither instance sent.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "router/peer_view.h"
#include "router/replica.h"

namespace keel::router {
namespace {

const char* kA = "http://10.0.0.1:8000";
const char* kB = "http://10.0.0.2:8000";

ReplicaList two_replicas() {
  ReplicaList list;
  for (const char* u : {kA, kB}) {
    list.push_back(std::make_shared<Replica>(list.size() + 1, u, Endpoint{.host = "10.0.0.1", .port = 8000},
                                             ReplicaLabels{}, BreakerConfig{}));
  }
  return list;
}

SseEvent ev(std::string name, std::string data) { return SseEvent{.event = std::move(name), .data = std::move(data)}; }

std::string figures(const char* url, int64_t n, int64_t work) {
  return std::string(R"({"url":")") + url + R"(","in_flight":)" + std::to_string(n) + R"(,"work":)" +
         std::to_string(work) + "}";
}

TEST(PeerView, ResetAndSnapshotSetThePeersSums) {
  auto list = two_replicas();
  PeerView view({"http://127.0.0.1:9001", "http://127.0.0.1:9002"});
  uint64_t g = 1;
  EXPECT_FALSE(view.all_live());
  EXPECT_EQ(view.apply(0, ev("reset", "{}"), list, &g), PeerApply::kApplied);
  EXPECT_EQ(g, 0u);
  EXPECT_TRUE(view.live(0));
  EXPECT_FALSE(view.all_live());  // peer 1 not yet
  EXPECT_EQ(view.apply(0, ev("replica", figures(kA, 3, 120)), list, &g), PeerApply::kApplied);
  EXPECT_EQ(view.apply(1, ev("replica", figures(kA, 1, 16)), list, &g), PeerApply::kIgnored);  // before its reset
  EXPECT_EQ(view.apply(1, ev("reset", "{}"), list, &g), PeerApply::kApplied);
  EXPECT_EQ(view.apply(1, ev("replica", figures(kA, 2, 32)), list, &g), PeerApply::kApplied);
  EXPECT_TRUE(view.all_live());
  EXPECT_EQ(list[0]->peer_in_flight.load(), 5);
  EXPECT_EQ(list[0]->peer_work.load(), 152);
  EXPECT_EQ(list[1]->peer_in_flight.load(), 0);
  EXPECT_EQ(view.in_flight(0, kA), 3);
  EXPECT_EQ(view.in_flight(1, kA), 2);
  // A second reset (the peer reconnected) starts it over: its old figures go.
  EXPECT_EQ(view.apply(0, ev("reset", "{}"), list, &g), PeerApply::kApplied);
  EXPECT_EQ(list[0]->peer_in_flight.load(), 2);
  EXPECT_EQ(list[0]->peer_work.load(), 32);
}

TEST(PeerView, RouteAndDoneAreAbsoluteAndCarryTheGroup) {
  auto list = two_replicas();
  PeerView view({"http://127.0.0.1:9001"});
  uint64_t g = 0;
  ASSERT_EQ(view.apply(0, ev("reset", "{}"), list, &g), PeerApply::kApplied);
  EXPECT_EQ(
      view.apply(0,
                 ev("route", R"({"url":"http://10.0.0.2:8000","in_flight":1,"work":80,"group":18446744073709551615})"),
                 list, &g),
      PeerApply::kApplied);
  EXPECT_EQ(g, 18446744073709551615ull);
  EXPECT_EQ(list[1]->peer_in_flight.load(), 1);
  // A lost event (in_flight 2) is healed by the next absolute one.
  EXPECT_EQ(view.apply(0, ev("route", figures(kB, 3, 112) + ""), list, &g), PeerApply::kApplied);
  EXPECT_EQ(g, 0u);  // no group named
  EXPECT_EQ(list[1]->peer_in_flight.load(), 3);
  EXPECT_EQ(view.apply(0, ev("done", figures(kB, 0, 0)), list, &g), PeerApply::kApplied);
  EXPECT_EQ(list[1]->peer_in_flight.load(), 0);
  EXPECT_EQ(list[1]->peer_work.load(), 0);
  EXPECT_EQ(view.apply(0, SseEvent{.raw = ":\n\n", .comment_only = true}, list, &g), PeerApply::kIgnored);
}

TEST(PeerView, MalformedAndUnknownEventsAreDroppedWithoutTouchingTheSums) {
  auto list = two_replicas();
  PeerView view({"http://127.0.0.1:9001"});
  uint64_t g = 0;
  ASSERT_EQ(view.apply(0, ev("reset", "{}"), list, &g), PeerApply::kApplied);
  ASSERT_EQ(view.apply(0, ev("route", figures(kA, 2, 50)), list, &g), PeerApply::kApplied);
  const std::vector<SseEvent> bad = {
      ev("route", "not json"),
      ev("route", "[1,2]"),
      ev("route", R"({"in_flight":1,"work":1})"),                                // no url
      ev("route", R"({"url":7,"in_flight":1,"work":1})"),                        // url not a string
      ev("route", R"({"url":"http://10.0.0.1:8000","in_flight":-1,"work":1})"),  // negative
      ev("route", R"({"url":"http://10.0.0.1:8000","in_flight":1,"work":-5})"),
      ev("route", R"({"url":"http://10.0.0.1:8000","in_flight":1.5,"work":1})"),
      ev("route", R"({"url":"http://10.0.0.1:8000","in_flight":"1","work":1})"),
      ev("route", R"({"url":"http://10.0.0.1:8000","in_flight":1099511627777,"work":1})"),  // > 2^40
      ev("route", R"({"url":"http://10.0.0.1:8000","in_flight":1,"work":1,"group":-3})"),
      ev("done", R"({"url":"http://10.0.0.1:8000","in_flight":1,"work":1,"group":3})"),  // a group on done
      ev("route", R"({"url":"http://10.0.0.1:8000","work":1})"),
      ev("teleport", figures(kA, 1, 1)),  // unknown event name
      ev("reset", "not json"),
  };
  for (const auto& e : bad) {
    EXPECT_EQ(view.apply(0, e, list, &g), PeerApply::kMalformed) << e.event << " " << e.data;
    EXPECT_EQ(list[0]->peer_in_flight.load(), 2) << e.data;
    EXPECT_EQ(list[0]->peer_work.load(), 50) << e.data;
  }
  EXPECT_EQ(view.apply(0, ev("route", figures("http://10.9.9.9:1", 4, 4)), list, &g), PeerApply::kUnknownReplica);
  EXPECT_EQ(list[0]->peer_in_flight.load() + list[1]->peer_in_flight.load(), 2);
  EXPECT_TRUE(view.live(0));  // dropped events do not end the feed
}

TEST(PeerView, ALostFeedDropsItsContributionAtOnce) {
  auto list = two_replicas();
  PeerView view({"http://127.0.0.1:9001", "http://127.0.0.1:9002"});
  uint64_t g = 0;
  for (size_t p : {0u, 1u}) ASSERT_EQ(view.apply(p, ev("reset", "{}"), list, &g), PeerApply::kApplied);
  ASSERT_EQ(view.apply(0, ev("route", figures(kA, 4, 64)), list, &g), PeerApply::kApplied);
  ASSERT_EQ(view.apply(1, ev("route", figures(kA, 1, 80)), list, &g), PeerApply::kApplied);
  ASSERT_TRUE(view.all_live());
  view.drop(0, list);
  EXPECT_FALSE(view.live(0));
  EXPECT_FALSE(view.all_live());
  EXPECT_EQ(list[0]->peer_in_flight.load(), 1);
  EXPECT_EQ(list[0]->peer_work.load(), 80);
  EXPECT_EQ(view.in_flight(0, kA), 0);
  // Events of the lost feed before its next reset change nothing.
  EXPECT_EQ(view.apply(0, ev("route", figures(kA, 9, 9)), list, &g), PeerApply::kIgnored);
  EXPECT_EQ(list[0]->peer_in_flight.load(), 1);
  view.drop(0, list);  // twice is harmless
  view.drop(1, list);
  EXPECT_EQ(list[0]->peer_in_flight.load(), 0);
  EXPECT_EQ(list[0]->peer_work.load(), 0);
}

// Synced load: own + peers' + the polled traffic neither sent; the --instance estimate is not used.
TEST(PeerView, SyncedLoadCountsThePeersExactly) {
  auto list = two_replicas();
  Replica& r = *list[0];
  r.in_flight.store(2);
  r.peer_in_flight.store(3);
  r.set_pushed(1);  // a push that lags both instances (the replica admitted 1 of the 5 so far)
  EXPECT_EQ(r.load_synced(), 5);
  EXPECT_EQ(r.load(2), 2);  // the estimate: max(own 2, pushed 1 + 2 x own sent since the push, 0)
  // The replica reports 9 (2 ours + 3 the peer's + 4 from elsewhere) twice: 4 neither sent.
  r.set_reported(4, 5, 2, 3);
  EXPECT_EQ(r.load_synced(), 5);  // the smaller of the last two polls (the first poll's predecessor was 0)
  r.set_reported(4, 5, 2, 3);
  EXPECT_EQ(r.load_synced(), 9);
  EXPECT_EQ(r.external.load(), 7);  // without peers the same polls say 7 others
}

}  // namespace
}  // namespace keel::router
