// The cluster harness itself, driven through a scripted Layer on channel 1 (the gossip core runs
// beside it): delivery of datagrams and stream requests, refused and timed-out streams, paused
// members' bounded inboxes, timers, restarts, and layers fed by gossip's member events.
#include <doctest/doctest.h>

#include <tuple>

#include "core_prefetch.hpp"
#include "sim_test_support.hpp"

using namespace shoal::sim;
using namespace shoal::sim::testing;
using shoal::gossip::Effects;

namespace {

// A cluster whose members each carry one ScriptedLayer; layers[m] is member m's current one.
struct LayeredCluster {
  explicit LayeredCluster(ClusterOptions o) : cluster(with_layers(std::move(o))) {}

  ClusterOptions with_layers(ClusterOptions o) {
    layers.resize(o.members, nullptr);
    o.layers = [this](uint32_t m, const shoal::gossip::Identity&, uint64_t) {
      auto l = std::make_unique<ScriptedLayer>();
      if (m < hooks.size() && hooks[m]) hooks[m](*l);
      if (m >= layers.size()) layers.resize(m + 1, nullptr);
      layers[m] = l.get();
      ++created;
      std::vector<std::unique_ptr<Layer>> out;
      out.push_back(std::move(l));
      return out;
    };
    return o;
  }

  std::vector<std::function<void(ScriptedLayer&)>> hooks;  // run on each new layer of member m
  std::vector<ScriptedLayer*> layers;
  int created = 0;
  Cluster cluster;
};

ClusterOptions quiet(size_t n, uint64_t seed) {
  ClusterOptions o;
  o.members = n;
  o.seed = seed;
  o.link.delay = Time(100);
  o.link.jitter = Time(0);  // exact times below
  return o;
}

}  // namespace

TEST_CASE("a layer's datagrams reach the same layer on the peer after the link delay (seed 3, 2 members)") {
  LayeredCluster lc(quiet(2, 3));
  lc.hooks = {[](ScriptedLayer& l) {
    l.on_start_hook = [](ScriptedLayer&, Time, Effects& out) {
      out.packets.push_back({member_addr(1), bytes_of("hello")});
    };
  }};
  Cluster& c = lc.cluster;
  c.start(1, Time(0));
  c.start(0, ms(5));
  c.run_until(ms(10));
  REQUIRE(c.ok());
  REQUIRE(lc.layers[1]->packets.size() == 1);
  CHECK(lc.layers[1]->packets[0].from == member_addr(0));
  CHECK(lc.layers[1]->packets[0].bytes == bytes_of("hello"));
  CHECK(lc.layers[1]->packets[0].at == ms(5) + Time(100));
  CHECK(c.counters(0).packets_out >= 1);
}

TEST_CASE("a stream request is served by the peer's layer and answered after handshake and return trips (seed 4)") {
  LayeredCluster lc(quiet(2, 4));
  lc.hooks = {[](ScriptedLayer& l) {
                l.on_start_hook = [](ScriptedLayer&, Time now, Effects& out) {
                  out.streams.push_back({7, member_addr(1), bytes_of("ask"), now + sec(1)});
                };
              },
              [](ScriptedLayer& l) { l.reply = bytes_of("answer"); }};
  Cluster& c = lc.cluster;
  c.start(1, Time(0));
  c.start(0, ms(1));
  c.run_until(sec(2));
  REQUIRE(c.ok());
  REQUIRE(lc.layers[1]->requests.size() == 1);
  CHECK(lc.layers[1]->requests[0].bytes == bytes_of("ask"));
  CHECK(lc.layers[1]->requests[0].at == ms(1) + Time(300));  // SYN, SYN-ACK, request
  REQUIRE(lc.layers[0]->answers.size() == 1);                // once: the deadline adds nothing
  CHECK(lc.layers[0]->answers[0].token == 7);
  CHECK(lc.layers[0]->answers[0].bytes == bytes_of("answer"));
  CHECK(lc.layers[0]->answers[0].at == ms(1) + Time(400));
}

TEST_CASE("a stream to a crashed member is refused after a round trip; across a partition it fails at the deadline") {
  LayeredCluster lc(quiet(3, 5));
  lc.hooks = {[](ScriptedLayer& l) {
    l.on_tick_hook = [](ScriptedLayer&, Time now, Effects& out) {
      out.streams.push_back({1, member_addr(1), bytes_of("to crashed"), now + ms(500)});
      out.streams.push_back({2, member_addr(2), bytes_of("to partitioned"), now + ms(500)});
    };
    l.on_start_hook = [](ScriptedLayer&, Time now, Effects& out) { out.wake_at = now + ms(10); };
  }};
  Cluster& c = lc.cluster;
  c.start_all(Time(0));
  c.run_until(ms(5));
  c.crash(1);
  c.network().partition({{0, 1}, {2}});
  c.run_until(sec(1));
  REQUIRE(c.ok());
  auto& answers = lc.layers[0]->answers;
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].token == 1);
  CHECK_FALSE(answers[0].bytes);
  CHECK(answers[0].at == ms(10) + Time(200));
  CHECK(answers[1].token == 2);
  CHECK_FALSE(answers[1].bytes);
  CHECK(answers[1].at == ms(510));
  CHECK(lc.layers[2]->requests.empty());
}

TEST_CASE("a paused member queues datagrams up to its inbox capacity and reads them in order at resume (seed 6)") {
  ClusterOptions o = quiet(2, 6);
  o.inbox_capacity_bytes = 550;  // five 100-byte datagrams
  LayeredCluster lc(o);
  lc.hooks = {[](ScriptedLayer& l) {
    l.on_start_hook = [](ScriptedLayer&, Time now, Effects& out) { out.wake_at = now + ms(100); };
    l.on_tick_hook = [](ScriptedLayer&, Time, Effects& out) {
      for (int i = 0; i < 8; ++i) {
        std::vector<std::byte> b(100, std::byte(i));
        out.packets.push_back({member_addr(1), b});
      }
    };
  }};
  Cluster& c = lc.cluster;
  c.start_all(Time(0));
  c.run_until(ms(50));
  const uint64_t bytes_before = c.counters(1).bytes_in;
  c.pause(1, ms(400));
  CHECK(c.status(1) == MemberStatus::paused);
  c.run_until(ms(449));
  CHECK(lc.layers[1]->packets.empty());
  c.run_until(ms(450));  // the resume; nothing sent after it has arrived yet
  REQUIRE(c.ok());
  CHECK(c.status(1) == MemberStatus::running);
  const auto& got = lc.layers[1]->packets;
  // Gossip's own datagrams share the inbox; whatever came first was kept, the rest dropped.
  CHECK(c.counters(1).bytes_in - bytes_before <= 550);
  CHECK(c.counters(1).inbox_dropped >= 3);
  CHECK(got.size() <= 5);
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].at == ms(450));
    CHECK(got[i].bytes[0] == std::byte(i));
  }
}

TEST_CASE("a layer's timers are its own, and a paused member's expired timers fire at resume (seed 8)") {
  LayeredCluster lc(quiet(1, 8));
  lc.hooks = {[](ScriptedLayer& l) {
    l.on_start_hook = [](ScriptedLayer&, Time now, Effects& out) { out.wake_at = now + ms(100); };
    l.on_tick_hook = [](ScriptedLayer&, Time now, Effects& out) { out.wake_at = now + ms(100); };
  }};
  Cluster& c = lc.cluster;
  c.start(0, Time(0));
  c.run_until(ms(250));
  CHECK(lc.layers[0]->ticks == std::vector<Time>{ms(100), ms(200)});
  c.pause(0, ms(500));  // 250 -> 750: the tick due at 300 waits
  c.run_until(ms(760));
  CHECK(lc.layers[0]->ticks == std::vector<Time>{ms(100), ms(200), ms(750)});
}

TEST_CASE("a restart makes a new core and layer with the next generation; the old life's answers are dropped") {
  LayeredCluster lc(quiet(2, 9));
  lc.hooks = {[](ScriptedLayer& l) {
                l.on_start_hook = [](ScriptedLayer&, Time now, Effects& out) {
                  out.streams.push_back({1, member_addr(1), bytes_of("slow"), now + sec(1)});
                };
              },
              [](ScriptedLayer& l) { l.reply = bytes_of("late"); }};
  Cluster& c = lc.cluster;
  c.start(1, Time(0));
  c.start(0, ms(1));
  c.run_until(ms(1) + Time(350));  // the request is served at +300, its answer is on its way
  CHECK(lc.created == 2);
  CHECK(c.generation(0) == 1);
  c.restart(0);
  CHECK(c.generation(0) == 2);
  CHECK(lc.created == 3);
  c.run_until(sec(3));
  REQUIRE(c.ok());
  // The new life asked again and got its own answer; nothing of the first request reached it twice.
  REQUIRE(lc.layers[0]->answers.size() == 1);
  CHECK(lc.layers[0]->answers[0].bytes == bytes_of("late"));
  CHECK(lc.layers[1]->requests.size() == 2);
}

TEST_CASE("a layer is fed every member event its own gossip core announces (seed 10, 8 members)") {
  ClusterOptions o = quiet(8, 10);
  LayeredCluster lc(o);
  std::vector<std::vector<uint32_t>> announced(8);  // by observer: subjects its gossip core announced
  EventTap tap;
  tap.event = [&](uint32_t observer, uint32_t subject, const shoal::gossip::MemberEvent&, Time) {
    announced[observer].push_back(subject);
  };
  Cluster& c = lc.cluster;
  c.add_observer(&tap);
  REQUIRE(start_and_converge(c, sec(30)));
  for (uint32_t m = 0; m < 8; ++m) {
    std::vector<uint32_t> fed;
    for (const auto& e : lc.layers[m]->events) fed.push_back(*index_of_name(e.member.id.name));
    CHECK(fed == announced[m]);
    CHECK(fed.size() >= 7);  // at least one event about each other member
  }
}

TEST_CASE(
    "a warm start hands every core the roster: all know all at time 0 with no join, and a crash is still "
    "detected by all (seed 12, 64 members)") {
  ClusterOptions o = small_cluster(64, 12);
  o.warm_start = true;
  Cluster c(o);
  FalseDeathCounter false_deaths(c);
  c.start_all(Time(0));
  c.run_until(Time(0));
  REQUIRE(c.ok());
  CHECK(c.ledger().all_know_all());
  for (uint32_t m = 0; m < c.size(); ++m) {
    CHECK(c.counters(m).streams_out == 0);  // no join push-pull: the roster was the state
    CHECK(c.core(m)->live_count() == 64);
  }
  c.run_until(sec(10));
  REQUIRE(c.ok());
  CHECK(false_deaths.count == 0);
  CHECK(c.ledger().all_know_all());
  c.crash(17);
  c.run_until(sec(15));
  REQUIRE(c.ok());
  CHECK(everyone_shows(c, 17, shoal::gossip::State::dead));
  // A restart is a new process with no roster: it joins through the seeds as usual.
  c.start(17, c.now());
  c.run_until(c.now());  // the start itself, before "all know all" counts member 17 again
  REQUIRE(c.status(17) == MemberStatus::running);
  CHECK_FALSE(c.ledger().all_know_all());
  const bool back = c.run_until(sec(30), ms(10), [&] { return c.ledger().all_know_all(); });
  CHECK(back);
  CHECK(c.counters(17).streams_out > 0);
}

TEST_CASE("the harness's prefetching of a core changes nothing, whatever the step and the peer named") {
  using namespace shoal::gossip;
  Config cfg;
  cfg.cluster_id = "test";
  Swim core(cfg, Identity{"a", 1, "10.0.0.1:7946"}, MemberMeta{"a", 8, {}}, 7);
  auto hint_everything = [&core] {
    for (int step = -1; step <= 5; ++step) {
      for (std::string_view peer : {"", "a", "b", "c", "nobody", "a-much-longer-name-than-any-member-has"}) {
        prefetch_core(core, step, peer);
      }
    }
  };
  hint_everything();  // before start: an empty table and no probe order
  const std::vector<Member> roster = {
      Member{{"b", 1, "10.0.0.2:7946"}, State::alive, 0, {"b", 8, {}}, {}},
      Member{{"c", 1, "10.0.0.3:7946"}, State::alive, 0, {"c", 8, {}}, {}},
  };
  Effects out;
  core.start({}, roster, Time{0}, out);
  out.clear();
  core.on_tick(Time{std::chrono::milliseconds(200)}, out);  // a probe in flight: a round, a timer
  auto view = [&core] {
    std::vector<std::tuple<std::string, uint64_t, State, uint64_t, std::string>> v;
    for (const Member& m : core.members()) v.emplace_back(m.id.name, m.id.generation, m.state, m.incarnation, m.id.addr);
    return v;
  };
  const auto before = view();
  const Stats stats_before = core.stats();
  hint_everything();
  CHECK(view() == before);
  CHECK(core.stats().packets_out == stats_before.packets_out);
  CHECK(core.stats().probes_sent == stats_before.probes_sent);
  CHECK(core.live_count() == 3);
}
