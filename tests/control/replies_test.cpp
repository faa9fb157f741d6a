// The typed replies of the control socket: each one written and read back is equal, its text is the
// document scripts already read (names, order, integers), and documents of older agents, which lack
// members added since, read with defaults.
#include "control/replies.hpp"

#include <doctest/doctest.h>

using namespace shoal::control;

namespace {

template <class Reply>
Reply round_trip(const Reply& reply) {
  const std::string text = write_reply(reply);
  auto back = parse_reply<Reply>(text);
  REQUIRE_MESSAGE(back.ok(), text);
  return *back;
}

template <class Reply>
Reply read(const std::string& text) {
  auto reply = parse_reply<Reply>(text);
  REQUIRE_MESSAGE(reply.ok(), reply.error().message);
  return *reply;
}

ViewReply sample_view() {
  ViewReply v;
  v.self = "a";
  v.epoch = 3;
  v.hash = "00000000000000ab";
  v.lineage = "00000000000000cd";
  v.status = "stalled";
  v.reason = "below --min-hosts";
  v.world_size = 3;
  v.live_of_view = 2;
  v.in_view = true;
  v.members = {{"a", "ha", "10.0.0.1:7946", 2, 1, 5}, {"b", "hb", "10.0.0.2:7946", 1, 2, 18446744073709551615u}};
  v.ranks = {{0, 0, 0, "a", 0}, {1, 1, 0, "a", 1}, {2, 0, 1, "b", 0}};
  return v;
}

StatusReply sample_status() {
  StatusReply s;
  s.self = "s1";
  s.addr = "10.0.0.1:7946";
  s.generation = 1700000000123;
  s.cluster = "c";
  s.slots = 8;
  s.view = {4, 2, "stable", "", true, 2};
  s.members_by_state = {2, 0, 1, 0};
  s.view_changes = {{3, 3, {"s3"}, {}, "", std::nullopt, 1700000000.25},
                    {4, 2, {}, {"s3"}, "s3 dead", 0.5, 1700000001.5}};
  s.checkpoints.job = "j";
  s.checkpoints.local_versions = 2;
  s.checkpoints.local_bytes = 1u << 30;
  s.checkpoints.replicas = 1;
  s.checkpoints.replica_bytes = 1000;
  s.checkpoints.pushed = 3;
  s.checkpoints.push_failed = 1;
  s.checkpoints.received = 4;
  s.checkpoints.receive_refused = 5;
  s.checkpoints.lag = {{0, 10, 8, 2}, {1, 10, std::nullopt, std::nullopt}};
  s.health = {true, 4, 99, {"s2"}, "off", 0};
  StatusTrainer t;
  t.rank = 1;
  t.age_s = 2.5;
  t.reports = 3;
  t.figures = {{"steps_completed", 120}, {"stall_s", 0.25}, {"ettr", 0.5}};
  s.trainers = {t};
  return s;
}

CkptLsReply sample_ckpt_ls() {
  CkptLsReply r;
  r.job = "j";
  r.store = "j.h1";
  r.replicas = 1;
  r.budget_bytes = 1u << 20;
  HeldRow local;
  local.segment = "/shoal.j.h1.r0.a";
  local.kind = "local";
  local.segment_bytes = 4096;
  local.from = "(a trainer on this host)";
  local.version = HeldVersion{"j", 0, 12, 2, 3000, 2};
  local.verified = false;
  local.problem = "checksum: buffer 1";
  HeldRow unsealed;
  unsealed.segment = "/shoal.j.h1.r1.b";
  unsealed.kind = "replica";
  unsealed.segment_bytes = 8192;
  unsealed.problem = "not sealed";
  r.held = {local, unsealed};
  r.counters = {1, 2, 3, 4, 5, 6, 7, 8};
  r.persist =
      PersistSection{"/var/ckpt/j", {{0, 12, 2, 3000, "/var/ckpt/j/r0.s12.shoalckpt"}}, {1, 3000, 0, 0, 0, 0, true},
                     {0, 1, 2, 0, 0, 3, 4}};
  return r;
}

}  // namespace

TEST_CASE("every reply reads back equal to what was written") {
  CHECK(round_trip(ErrorReply{"unknown request 'x'", {"members", "view"}}) ==
        ErrorReply{"unknown request 'x'", {"members", "view"}});
  CHECK(round_trip(CommittedReply{true}) == CommittedReply{true});
  CHECK(round_trip(ForceReply{true, std::nullopt, 9}) == ForceReply{true, std::nullopt, 9});
  MembersReply members{"b", {{"a", "10.0.0.1:1", "suspect", 5, 10}, {"b", "10.0.0.2:1", "alive", 0, 20}}, {}};
  members.rejected.by_cause = {{"truncated", 0}, {"bad_magic", 3}, {"a cause from a newer agent", 1}};
  CHECK(round_trip(members) == members);
  StatsReply stats{"me", 7, 3, 2, {}, members.rejected};
  stats.gossip.packets_in = 1;
  stats.gossip.stalls_detected = 2;
  stats.gossip.push_pull_full_exchanges = 18446744073709551615u;
  CHECK(round_trip(stats) == stats);
  CHECK(round_trip(sample_view()) == sample_view());
  ViewReply refusing = sample_view();
  refusing.refused = {{"epoch_overflow", 1}, {"unconfirmed", 7}};
  CHECK(round_trip(refusing) == refusing);
  CHECK(round_trip(sample_status()) == sample_status());
  const SessionInfoReply info{"a", 17, "10.0.0.1:7946", "c", 4, "j", "j.a", "/etc/shoal/key"};
  CHECK(round_trip(info) == info);
  const SessionWaitReply before_view{5, 2, "member b is dead", 1, std::nullopt};
  CHECK(round_trip(before_view) == before_view);
  const SessionWaitReply with_view{6, 2, "", 1, sample_view()};
  CHECK(round_trip(with_view) == with_view);
  CHECK(round_trip(sample_ckpt_ls()) == sample_ckpt_ls());
  CkptLsReply without_persist = sample_ckpt_ls();
  without_persist.persist.reset();
  CHECK(round_trip(without_persist) == without_persist);
}

TEST_CASE("the members and error documents keep their text") {
  MembersReply members{"b", {{"a", "10.0.0.1:1", "suspect", 5, 10}}, {}};
  members.rejected.by_cause = {{"truncated", 0}, {"bad_magic", 3}};
  CHECK(write_reply(members) ==
        R"({"self":"b","members":[{"name":"a","addr":"10.0.0.1:1","state":"suspect","incarnation":5,"generation":10}],)"
        R"("rejected":{"truncated":0,"bad_magic":3}})");
  CHECK(write_reply(ErrorReply{"empty request", {"members", "view"}}) ==
        R"({"error":"empty request","requests":["members","view"]})");
  CHECK(write_reply(CommittedReply{true}) == R"({"ok":true})");
  CHECK(write_reply(ForceReply{true, std::nullopt, 9}) == R"({"forced":true,"epoch":9})");
  CHECK(write_reply(ForceReply{false, "no live majority", 8}) ==
        R"({"forced":false,"error":"no live majority","epoch":8})");
}

TEST_CASE("the view and session documents keep their text") {
  const std::string view =
      R"({"self":"a","epoch":3,"hash":"00000000000000ab","lineage":"00000000000000cd","status":"stalled",)"
      R"("reason":"below --min-hosts",)"
      R"("world_size":3,"live_of_view":2,"in_view":true,"keyed":false,)"
      R"("members":[{"name":"a","host":"ha","addr":"10.0.0.1:7946","slots":2,"join_epoch":1,"generation":5},)"
      R"({"name":"b","host":"hb","addr":"10.0.0.2:7946","slots":1,"join_epoch":2,"generation":18446744073709551615}],)"
      R"("ranks":[{"rank":0,"local_rank":0,"node_rank":0,"name":"a","slot":0},)"
      R"({"rank":1,"local_rank":1,"node_rank":0,"name":"a","slot":1},)"
      R"({"rank":2,"local_rank":0,"node_rank":1,"name":"b","slot":0}],"evicted":[],"excluded":[],"refused":{}})";
  CHECK(write_reply(sample_view()) == view);
  CHECK(write_reply(SessionInfoReply{"a", 17, "10.0.0.1:7946", "c", 4, "j", "j.a", "", true, 1}) ==
        R"({"name":"a","generation":17,"addr":"10.0.0.1:7946","cluster":"c","slots":4,"job":"j","store":"j.a",)"
        R"("key_file":"","store_by_lineage":true,"ckpt_replicas":1})");
  // An agent from before ckpt_replicas: the trainer reads -1 ("does not say"), not 0 ("keeps no copy").
  const auto older = parse_reply<SessionInfoReply>(
      R"({"name":"a","generation":17,"addr":"10.0.0.1:7946","cluster":"c","slots":4,"job":"j","store":"j.a"})");
  REQUIRE(older);
  CHECK(older->ckpt_replicas == -1);
  CHECK(write_reply(SessionWaitReply{5, 2, "member b is dead", 1, std::nullopt, 2}) ==
        R"({"seq":5,"broken_epoch":2,"broken_why":"member b is dead","failures":1,"view":null,"cleared_epoch":2,)"
        R"("drain":false})");
  CHECK(write_reply(SessionWaitReply{6, 0, "", 0, sample_view(), 0, true}) ==
        R"({"seq":6,"broken_epoch":0,"broken_why":"","failures":0,"view":)" + view +
            R"(,"cleared_epoch":0,"drain":true})");
  // An agent from before drains: no drain.
  CHECK_FALSE(read<SessionWaitReply>(R"({"seq":5})").drain);
}

TEST_CASE("a drain's answer: accepted with its deadline, refused as its error") {
  CHECK(write_reply(DrainReply{true, std::nullopt, 60.0, 7}) == R"({"draining":true,"within_s":60.0,"epoch":7})");
  const auto accepted = read<DrainReply>(write_reply(DrainReply{true, std::nullopt, 2.5, 7}));
  CHECK(accepted.within_s == 2.5);
  const auto refused = parse_reply<DrainReply>(write_reply(DrainReply{false, "the last member", 0, 3}));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == "the last member");
}

TEST_CASE("the status document keeps its text, optional members only where they apply") {
  CHECK(
      write_reply(sample_status()) ==
      R"({"self":"s1","addr":"10.0.0.1:7946","generation":1700000000123,"cluster":"c","keyed":false,"slots":8,)"
      R"("view":{"epoch":4,"members":2,"status":"stable","reason":"","in_view":true,"live_of_view":2},)"
      R"("members_by_state":{"alive":2,"suspect":0,"dead":1,"left":0},)"
      R"("view_changes":[{"epoch":3,"members":3,"joined":["s3"],"left":[],"trigger":"","committed_unix":1700000000.25},)"
      R"({"epoch":4,"members":2,"joined":[],"left":["s3"],"trigger":"s3 dead","seconds":0.5,)"
      R"("committed_unix":1700000001.5}],)"
      R"("checkpoints":{"job":"j","local_versions":2,"local_bytes":1073741824,"replicas":1,"replica_bytes":1000,)"
      R"("pushed":3,"push_failed":1,"received":4,"receive_refused":5,)"
      R"("lag":[{"rank":0,"committed_step":10,"replicated_step":8,"steps_behind":2},)"
      R"({"rank":1,"committed_step":10}]},)"
      R"("health":{"reported":true,"epoch":4,"step":99,"stragglers":["s2"],"eviction":"off","evictions":0},)"
      R"("trainers":[{"rank":1,"age_s":2.5,"reports":3,"figures":{"steps_completed":120,"stall_s":0.25,"ettr":0.5}}]})");
}

TEST_CASE("a trainer's figures must be numbers; an agent without trainers reads as none") {
  const auto none = read<StatusReply>(R"({"self":"s","view":{}})");
  CHECK(none.trainers.empty());
  const auto bad = parse_reply<StatusReply>(R"({"self":"s","view":{},"trainers":[{"rank":0,"figures":{"ettr":"x"}}]})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("the figure ettr is not a number") != std::string::npos);
  CHECK_FALSE(parse_reply<StatusReply>(R"({"self":"s","view":{},"trainers":[{"figures":[1]}]})").ok());
}

TEST_CASE("the view history carries the kept changes and which ones had their names cut") {
  ViewHistoryReply h;
  h.self = "s1";
  h.kept = 256;
  h.recorded = 300;
  h.view_changes = sample_status().view_changes;
  h.cut = {{3, 100, 0}};
  CHECK(round_trip(h) == h);
  CHECK(write_reply(h).find(R"("kept":256,"recorded":300,"view_changes":[{"epoch":3,)") != std::string::npos);
  CHECK(write_reply(h).find(R"("cut":[{"epoch":3,"joined":100,"left":0}])") != std::string::npos);
}

HealthReply sample_health() {
  HealthReply h;
  h.self = "s1";
  h.reported = true;
  h.epoch = 4;
  h.step = 49;
  h.evaluations = 10;
  h.age_s = 0.25;
  h.hosts = {{"s1", 100.5, 30, 10, false}, {"s2", 130.5, 0.5, 10, true}};
  h.stragglers = {"s2"};
  h.changes = 1;
  h.dropped = {0, 2, 1};
  h.authenticated = true;
  h.eviction = "off";
  h.rule = {1.2, 5, 1.1, 10, 5, 2, 2, 5};
  return h;
}

TEST_CASE("the health document keeps its text: hosts with their figures, the verdict, the rule") {
  CHECK(round_trip(sample_health()) == sample_health());
  CHECK(write_reply(sample_health()) ==
        R"({"self":"s1","reported":true,"epoch":4,"step":49,"evaluations":10,"age_s":0.25,)"
        R"("hosts":[{"name":"s1","compute_ms":100.5,"wait_ms":30.0,"samples":10,"straggler":false},)"
        R"({"name":"s2","compute_ms":130.5,"wait_ms":0.5,"samples":10,"straggler":true}],)"
        R"("stragglers":["s2"],"changes":1,"dropped":{"records":0,"figures":2,"forged":1},)"
        R"("authenticated":true,"eviction":"off",)"
        R"("rule":{"factor":1.2,"min_excess_ms":5.0,"clear_factor":1.1,"window_steps":10,"min_samples":5,)"
        R"("raise_after":2,"clear_after":2,"exchange_every":5}})");
  // Before any report: no age, no hosts; a document without "hosts" is not a health document.
  HealthReply none;
  none.self = "s1";
  CHECK(write_reply(none).find("age_s") == std::string::npos);
  CHECK(round_trip(none) == none);
  CHECK_FALSE(parse_reply<HealthReply>(R"({"self":"s1"})").ok());
}

CheckReply sample_check() {
  CheckReply c;
  c.self = "a";
  c.epoch = 3;
  c.factor = 1.5;
  c.bytes = 1024;
  c.max_ms = 500;
  c.elapsed_ms = 812.5;
  c.median_gflops = 50;
  c.median_gbps = 9.5;
  CheckHostRow a;
  a.name = "a";
  a.addr = "10.0.0.1:7946";
  a.answered = true;
  a.gflops = 50;
  a.compute_ratio = 1;
  a.gbps = 9.5;
  a.links = 2;
  a.matrix_n = 1536;
  a.backend = "openblas";
  CheckHostRow b;
  b.name = "b";
  b.addr = "10.0.0.2:7946";
  b.flagged = true;
  b.reasons = {"unreachable", "network"};
  b.links = 1;
  b.slow_links = 1;
  b.error = "no answer: timed out";
  c.hosts = {a, b};
  CheckLinkRow l;
  l.a = "a";
  l.b = "b";
  l.round = 1;
  l.slow = true;
  l.error = "no answer";
  CheckLinkRow m;
  m.a = "b";
  m.b = "a";
  m.round = 2;
  m.gbps = 9.5;
  m.rtt_us = 40;
  m.rtt_min_us = 30;
  m.bytes = 1024;
  m.elapsed_ms = 0.5;
  c.links = {l, m};
  c.flagged = {"b"};
  c.slow_links = {"a-b"};
  c.dropped = 1;
  return c;
}

TEST_CASE("the check document keeps its text: null for a figure not measured, the verdict beside the figures") {
  CHECK(round_trip(sample_check()) == sample_check());
  CHECK(write_reply(sample_check()) ==
        R"({"self":"a","epoch":3,"factor":1.5,"bytes":1024,"max_ms":500,"elapsed_ms":812.5,"median_gflops":50.0,)"
        R"("median_gbps":9.5,"hosts":[{"name":"a","addr":"10.0.0.1:7946","flagged":false,"reasons":[],)"
        R"("answered":true,"gflops":50.0,"compute_ratio":1.0,"gbps":9.5,"links":2,"slow_links":0,"matrix_n":1536,)"
        R"("backend":"openblas","error":null},{"name":"b","addr":"10.0.0.2:7946","flagged":true,)"
        R"("reasons":["unreachable","network"],"answered":false,"gflops":null,"compute_ratio":null,"gbps":null,)"
        R"("links":1,"slow_links":1,"matrix_n":0,"backend":"","error":"no answer: timed out"}],)"
        R"("links":[{"a":"a","b":"b","round":1,"gbps":null,"rtt_us":null,"rtt_min_us":null,"bytes":0,)"
        R"("elapsed_ms":0.0,"slow":true,"error":"no answer"},{"a":"b","b":"a","round":2,"gbps":9.5,"rtt_us":40.0,)"
        R"("rtt_min_us":30.0,"bytes":1024,"elapsed_ms":0.5,"slow":false,"error":null}],"flagged":["b"],)"
        R"("slow_links":["a-b"],"dropped":1})");
  CHECK_FALSE(parse_reply<CheckReply>(R"({"hosts":[]})").ok());  // no "links": not a check
  CHECK(parse_reply<CheckReply>(R"({"hosts":[],"links":[]})").ok());
}

TEST_CASE("the ckpt-ls document keeps its text: sealed, unsealed and the persist directory") {
  CHECK(
      write_reply(sample_ckpt_ls()) ==
      R"({"job":"j","store":"j.h1","replicas":1,"budget_bytes":1048576,)"
      R"("held":[{"segment":"/shoal.j.h1.r0.a","kind":"local","segment_bytes":4096,)"
      R"json("from":"(a trainer on this host)","sealed":true,"job":"j","rank":0,"step":12,"world":2,"bytes":3000,)json"
      R"("buffers":2,"verified":false,"problem":"checksum: buffer 1"},)"
      R"({"segment":"/shoal.j.h1.r1.b","kind":"replica","segment_bytes":8192,"sealed":false,"problem":"not sealed"}],)"
      R"("counters":{"pushed":1,"push_skipped":2,"push_failed":3,"push_superseded":4,"received":5,)"
      R"("receive_refused":6,"fetches_served":7,"evicted":8},)"
      R"("refused_segments":{"symlink":0,"not_regular":0,"foreign_owner":0,"loose_mode":0},)"
      R"("persist_dir":"/var/ckpt/j","persisted":[{"rank":0,"step":12,"world":2,"bytes":3000,)"
      R"("path":"/var/ckpt/j/r0.s12.shoalckpt"}],)"
      R"("persist_counters":{"persisted":1,"bytes":3000,"refused":0,"cancelled":0,"failed":0,"removed":0,)"
      R"("busy":true},"persist_refused":{"unsafe_directory":0,"symlink":1,"not_regular":2,"foreign_owner":0,)"
      R"("loose_mode":0,"oversized":3,"invalid":4}})");
}

TEST_CASE("documents of older agents read with defaults for what they lack") {
  // session-info before key files, session-wait before "failures".
  const auto info = read<SessionInfoReply>(R"({"name":"a","generation":3,"addr":"10.0.0.1:1","cluster":"c",)"
                                           R"("slots":2,"job":"j","store":"j"})");
  CHECK(info.name == "a");
  CHECK(info.slots == 2u);
  CHECK(info.key_file.empty());
  const auto wait = read<SessionWaitReply>(R"({"seq":4,"broken_epoch":1,"broken_why":"x","view":null})");
  CHECK(wait.seq == 4u);
  CHECK(wait.failures == 0u);
  CHECK_FALSE(wait.view.has_value());
  // A view change without a trigger has no "seconds"; a rank not replicated yet has no replicated step.
  const auto status = read<StatusReply>(
      R"({"self":"s","view":{"epoch":2},"view_changes":[{"epoch":2,"members":1,"joined":["s"],"left":[],)"
      R"("trigger":"","committed_unix":1.5}],"checkpoints":{"job":"j","lag":[{"rank":3,"committed_step":7}]}})");
  CHECK(status.view.epoch == 2u);
  CHECK(status.view.status.empty());
  REQUIRE(status.view_changes.size() == 1);
  CHECK_FALSE(status.view_changes[0].seconds.has_value());
  CHECK(status.view_changes[0].committed_unix == 1.5);
  REQUIRE(status.checkpoints.lag.size() == 1);
  CHECK(status.checkpoints.lag[0].rank == 3u);
  CHECK_FALSE(status.checkpoints.lag[0].replicated_step.has_value());
  CHECK(status.members_by_state == MembersByState{});
  CHECK(status.health == StatusHealth{});  // an agent from before node health
  // ckpt-ls of an agent without a persist directory, and an unsealed segment.
  const auto ls = read<CkptLsReply>(
      R"({"job":"j","store":"j","held":[{"segment":"/s","kind":"local","segment_bytes":1,"sealed":false,)"
      R"("problem":"not sealed"}]})");
  CHECK_FALSE(ls.persist.has_value());
  REQUIRE(ls.held.size() == 1);
  CHECK_FALSE(ls.held[0].sealed());
  CHECK(ls.held[0].problem == "not sealed");
  CHECK_FALSE(ls.held[0].from.has_value());
  CHECK(ls.counters == CkptCounters{});
  // Members a newer agent added are ignored.
  const auto view = read<ViewReply>(R"({"epoch":1,"members":[],"ranks":[],"added_later":{"x":[1]}})");
  CHECK(view.epoch == 1u);
}

TEST_CASE("an error document reads as itself only when asked for as one") {
  const std::string text = write_reply(ErrorReply{"empty request", {"members"}});
  CHECK(read<ErrorReply>(text).requests == std::vector<std::string>{"members"});
  const auto as_view = parse_reply<ViewReply>(text);
  REQUIRE_FALSE(as_view.ok());
  CHECK(as_view.error().message == "empty request");
  CHECK_FALSE(parse_reply<ErrorReply>(write_reply(sample_view())).ok());
}

TEST_CASE("a refused view-force reads as its error, as the CLI reports it") {
  const auto refused = parse_reply<ForceReply>(write_reply(ForceReply{false, "no live majority of 3", 8}));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == "no live majority of 3");
  auto doc = parse_document(write_reply(ForceReply{false, "no live majority of 3", 8}));
  REQUIRE(doc.ok());
  const auto force = read_reply<ForceReply>(*doc);
  REQUIRE(force.ok());
  CHECK(force->error == "no live majority of 3");
  CHECK(force->epoch == 8u);
}

TEST_CASE("a double that a writer could not spell (null) reads as the default, and no member reads as null") {
  const auto status =
      read<StatusReply>(R"({"self":"s","view":{},"view_changes":[{"epoch":1,"seconds":null,"committed_unix":null}]})");
  REQUIRE(status.view_changes.size() == 1);
  CHECK_FALSE(status.view_changes[0].seconds.has_value());
  CHECK(status.view_changes[0].committed_unix == 0);
  CHECK_FALSE(parse_reply<ViewReply>(R"({"epoch":null,"members":[],"ranks":[]})").ok());
}

TEST_CASE("an integer member reads only a JSON integer that fits its type, never a cast") {
  const auto view = [](const std::string& members) {
    return parse_reply<ViewReply>(R"({"members":[],"ranks":[],)" + members + "}");
  };
  CHECK(view(R"("epoch":18446744073709551615,"world_size":4294967295)")->epoch == 18446744073709551615u);
  CHECK(view(R"("epoch":18446744073709551615,"world_size":4294967295)")->world_size == 4294967295u);
  CHECK(view(R"("epoch":-1)").error().message == "the reply is not a view: the integer -1 is out of range");
  CHECK(view(R"("epoch":1,"world_size":4294967296)").error().message ==
        "the reply is not a view: the integer 4294967296 is out of range");
  CHECK(view(R"("epoch":1.5)").error().message ==
        "the reply is not a view: type must be an integer, but is number 1.5");
  CHECK(view(R"("epoch":1e300)").error().message ==
        "the reply is not a view: type must be an integer, but is number 1e+300");
  CHECK(view(R"("epoch":true)").error().message == "the reply is not a view: type must be an integer, but is boolean");
  CHECK(view(R"("epoch":"3")").error().message == "the reply is not a view: type must be an integer, but is string");
  const auto stats = parse_reply<StatsReply>(R"({"self":"a","gossip":{},"local_health":-2})");
  REQUIRE(stats.ok());
  CHECK(stats->local_health == -2);
}
