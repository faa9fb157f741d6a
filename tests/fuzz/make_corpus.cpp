// Writes the seed corpus of the fuzz targets: a few small valid and near-valid inputs each, made with
// the real encoders so that they follow the formats as they change. scripts/fuzz.sh runs it into
// build-fuzz/seeds/ before every run; `build-fuzz/bin/make_corpus tests/fuzz/corpus` refreshes the
// committed copies.
//   make_corpus OUT_DIR   ->   OUT_DIR/<target>/<seed name>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt_shm/persist_files.hpp"
#include "corpus_stream_seeds.hpp"
#include "ckpt_shm/version_layout.hpp"
#include "control/replies.hpp"
#include "gossip/swim.hpp"
#include "membership/view_codec.hpp"
#include "net/stream_hello.hpp"
#include "rendezvous.pb.h"
#include "wire/cluster_key.hpp"
#include "wire/frame.hpp"
#include "wire/packet.hpp"
#include "wire/sealed_packet.hpp"

namespace {

using namespace shoal;
using Bytes = std::vector<std::byte>;
namespace fs = std::filesystem;

// The same constants as the targets: fuzz_packet.cpp and fuzz_hello.cpp expect kCluster, fuzz_sealed.cpp
// opens with kKeyText at kNowMs.
constexpr const char* kCluster = "fuzz-cluster";
constexpr const char* kKeyText =
    "# fuzz keys\n"
    "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0\n"
    "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=\n";
constexpr int64_t kNowMs = 1'700'000'000'000;
// fuzz_sealed.cpp and fuzz_handshake.cpp receive as a host with this address among its own.
constexpr std::string_view kTo = "10.0.0.2:7946";

fs::path out_dir;
bool ok = true;

void save(const std::string& target, const std::string& name, std::span<const std::byte> bytes) {
  const fs::path dir = out_dir / target;
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (ec || !f) {
    std::fprintf(stderr, "make_corpus: cannot write %s\n", (dir / name).c_str());
    ok = false;
  }
}
void save(const std::string& target, const std::string& name, std::string_view text) {
  save(target, name, std::as_bytes(std::span(text.data(), text.size())));
}

Bytes bytes_of(std::string_view s) {
  const auto b = std::as_bytes(std::span(s.data(), s.size()));
  return Bytes(b.begin(), b.end());
}

Bytes packet(const wire::Envelope& env) {
  auto p = wire::encode_packet(env);
  if (!p) {
    std::fprintf(stderr, "make_corpus: %s\n", p.error().message.c_str());
    ok = false;
    return {};
  }
  return *p;
}

wire::Envelope gossip_envelope(const std::string& cluster) {
  auto env = wire::make_envelope(cluster, "node-a", 7, "10.0.0.1:7946");
  env.set_gossip(std::string("\x0a\x03" "abc", 5));
  return env;
}

void packets() {
  const Bytes gossip = packet(gossip_envelope(kCluster));
  save("fuzz_packet", "gossip", gossip);
  auto hello = wire::make_envelope(kCluster, "node-b", 9, "[::1]:7946");
  hello.mutable_hello()->set_channel(wire::Hello::VIEW);
  save("fuzz_packet", "hello", packet(hello));
  save("fuzz_packet", "other-cluster", packet(gossip_envelope("other")));
  save("fuzz_packet", "no-body", packet(wire::make_envelope(kCluster, "node-a", 7, "10.0.0.1:7946")));
  save("fuzz_packet", "truncated", std::span(gossip).first(gossip.size() - 1));
  Bytes version = gossip;
  version[3] = std::byte{2};
  save("fuzz_packet", "header-version-2", version);
}

void sealed() {
  auto ring = wire::parse_key_text(kKeyText, "make_corpus");
  if (!ring) {
    std::fprintf(stderr, "make_corpus: %s\n", ring.error().message.c_str());
    ok = false;
    return;
  }
  wire::PacketSealer sealer(*ring);
  const Bytes gossip = packet(gossip_envelope(kCluster));
  save("fuzz_sealed", "sealed-gossip", sealer.seal(gossip, kTo, kNowMs));
  save("fuzz_sealed", "sealed-empty", sealer.seal({}, kTo, kNowMs));
  save("fuzz_sealed", "sealed-elsewhere", sealer.seal(gossip, "10.0.0.3:7946", kNowMs));
  Bytes v1 = sealer.seal(gossip, kTo, kNowMs);
  v1[4] = std::byte{1};
  save("fuzz_sealed", "format-1", v1);
  save("fuzz_sealed", "magic-only", std::string_view("SHLK"));
  save("fuzz_sealed", "plain-packet", gossip);
  // For the input-chosen clocks: sent at kNowMs, received a second later, then the plaintext.
  Bytes clocks(16);
  const int64_t sent = kNowMs;
  const int64_t now = kNowMs + 1000;
  std::memcpy(clocks.data(), &sent, 8);
  std::memcpy(clocks.data() + 8, &now, 8);
  clocks.insert(clocks.end(), gossip.begin(), gossip.end());
  save("fuzz_sealed", "clocks", clocks);
}

void frames() {
  // [payload limit: 1 << (b % 21)][read size - 1][stream]
  const Bytes hello = shoal::net::encode_hello(gossip_envelope(kCluster), wire::Hello::PUSH_PULL);
  Bytes two = {std::byte{10}, std::byte{2}};
  wire::append_frame(two, 1, hello);
  wire::append_frame(two, 2, bytes_of("request"));
  save("fuzz_frame", "two-frames", two);
  Bytes partial = {std::byte{16}, std::byte{0}};
  wire::append_frame(partial, 3, bytes_of("a response cut short"));
  partial.resize(partial.size() - 3);
  save("fuzz_frame", "partial", partial);
  save("fuzz_frame", "zero-length", Bytes{std::byte{10}, std::byte{255}, {}, {}, {}, {}});
  Bytes oversized = {std::byte{4}, std::byte{6}};
  wire::append_frame(oversized, 2, Bytes(40, std::byte{'x'}));
  save("fuzz_frame", "oversized", oversized);
  Bytes empty_payload = {std::byte{0}, std::byte{0}};
  wire::append_frame(empty_payload, 1, {});
  save("fuzz_frame", "empty-payload", empty_payload);
}

void hellos() {
  const auto sender = gossip_envelope(kCluster);
  save("fuzz_hello", "push-pull", shoal::net::encode_hello(sender, wire::Hello::PUSH_PULL));
  save("fuzz_hello", "view", shoal::net::encode_hello(sender, wire::Hello::VIEW));
  save("fuzz_hello", "ckpt-stream", shoal::net::encode_hello(sender, wire::Hello::CKPT_STREAM));
  save("fuzz_hello", "unspecified", shoal::net::encode_hello(sender, wire::Hello::CHANNEL_UNSPECIFIED));
  save("fuzz_hello", "other-cluster", shoal::net::encode_hello(gossip_envelope("other"), wire::Hello::PROBE));
  save("fuzz_hello", "gossip-not-hello", packet(sender));
}

void views() {
  auto view = membership::View::make(
      3, {{"node-a", "host-a", "10.0.0.1:7946", 8, 1, 7}, {"node-b", "host-b", "[fe80::1]:7946", 0, 2, 9}});
  if (!view) {
    std::fprintf(stderr, "make_corpus: %s\n", view.error().message.c_str());
    ok = false;
    return;
  }
  wire::ViewRequest req;
  req.set_epoch(4);
  req.set_from_name("node-a");
  req.set_from_generation(7);
  membership::to_msg(membership::Ballot{5, "node-a"}, req.mutable_ballot());
  req.mutable_prepare();
  save("fuzz_view_codec", "prepare", membership::encode(req));
  membership::to_msg(*view, req.mutable_accept()->mutable_view());
  save("fuzz_view_codec", "accept", membership::encode(req));
  req.mutable_commit()->set_hash(view->hash());
  save("fuzz_view_codec", "commit-by-hash", membership::encode(req));
  membership::to_msg(*view, req.mutable_commit()->mutable_view());
  save("fuzz_view_codec", "commit-with-view", membership::encode(req));

  wire::ViewResponse resp;
  resp.set_verdict(wire::ViewResponse::PROMISE);
  resp.set_committed_epoch(3);
  resp.set_acceptor(true);
  resp.set_generation(9);
  membership::to_msg(*view, resp.mutable_committed());
  save("fuzz_view_codec", "promise", membership::encode(resp));
  resp.set_verdict(wire::ViewResponse::NACK);
  membership::to_msg(membership::Ballot{6, "node-b"}, resp.mutable_promised());
  membership::to_msg(*view, resp.mutable_accepted());
  resp.mutable_accepted()->set_hash(1);  // a wrong hash
  save("fuzz_view_codec", "nack-bad-hash", membership::encode(resp));

  // A view that keeps two hosts out (`shoal view exclude`), committed with its body.
  auto excluding = membership::View::make(
      5, {{"node-a", "host-a", "10.0.0.1:7946", 8, 1, 7}, {"node-b", "host-b", "[fe80::1]:7946", 0, 2, 9}},
      view->lineage(), {}, {"node-c", "node-d"});
  if (!excluding) {
    std::fprintf(stderr, "make_corpus: %s\n", excluding.error().message.c_str());
    ok = false;
    return;
  }
  wire::ViewRequest commit;
  commit.set_epoch(5);
  commit.set_from_name("node-a");
  commit.set_from_generation(7);
  commit.mutable_commit()->set_hash(excluding->hash());
  membership::to_msg(*excluding, commit.mutable_commit()->mutable_view());
  save("fuzz_view_codec", "commit-excluding", membership::encode(commit));
}

// A version as fuzz_ckpt_header.cpp reads it: [flags][core length u16 LE][header and table][data].
Bytes version_input(uint8_t flags, std::span<const ckpt::BufferSpec> specs, bool seal, int corrupt_data_at = -1) {
  auto plan = ckpt::plan_layout(specs);
  if (!plan) {
    ok = false;
    return {};
  }
  Bytes segment(plan->total_bytes);
  const ckpt::VersionIdentity id{"job-1", 1, 100, 3, 4};
  if (!ckpt::begin_version(segment, id, specs, *plan)) ok = false;
  for (size_t i = 0; i < specs.size(); ++i) {
    for (uint64_t j = 0; j < specs[i].bytes; ++j) segment[plan->offsets[i] + j] = std::byte(i * 31 + j);
  }
  if (seal && !ckpt::seal_version(segment)) ok = false;
  const size_t core = ckpt::kHeaderBytes + specs.size() * ckpt::kEntryBytes;
  Bytes in = {std::byte{flags}, std::byte(core & 0xff), std::byte(core >> 8)};
  in.insert(in.end(), segment.begin(), segment.begin() + static_cast<std::ptrdiff_t>(core));
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto* b = segment.data() + plan->offsets[i];
    in.insert(in.end(), b, b + specs[i].bytes);
  }
  if (corrupt_data_at >= 0) in[in.size() - 1 - static_cast<size_t>(corrupt_data_at)] ^= std::byte{0x40};
  return in;
}

void versions() {
  const std::vector<ckpt::BufferSpec> three = {{"weights", 40}, {"empty", 0}, {"optimizer", 17}};
  const std::vector<ckpt::BufferSpec> one_empty = {{"nothing", 0}};
  save("fuzz_ckpt_header", "sealed", version_input(0, three, true));
  save("fuzz_ckpt_header", "sealed-small-reads", version_input(3 << 1, three, true));
  save("fuzz_ckpt_header", "reseal-unsealed", version_input(1 | (1 << 1), three, false));
  save("fuzz_ckpt_header", "bad-data", version_input(0, three, true, 5));
  save("fuzz_ckpt_header", "one-empty-buffer", version_input(0, one_empty, true));
  Bytes header_only = version_input(0, one_empty, true);
  header_only.resize(3 + ckpt::kHeaderBytes);
  header_only[1] = std::byte{ckpt::kHeaderBytes & 0xff};
  header_only[2] = std::byte{ckpt::kHeaderBytes >> 8};
  save("fuzz_ckpt_header", "header-only", header_only);
}

void control_text() {
  // Replies as the agent writes them.
  control::ViewReply view{"node-a",
                          3,
                          "00000000000000ab",
                          "0000000000000abc",
                          "stable",
                          "",
                          2,
                          2,
                          true,
                          true,
                          {{"node-a", "ha", "10.0.0.1:7946", 1, 1, 5}, {"node-b", "hb", "10.0.0.2:7946", 1, 2, 6}},
                          {{0, 0, 0, "node-a", 0}, {1, 0, 1, "node-b", 0}},
                          {},
                          {"node-c"},
                          {{"oversized", 1}}};
  save("fuzz_json", "view.json", control::write_reply(view));
  save("fuzz_json", "session-wait.json",
       control::write_reply(control::SessionWaitReply{4, 3, "member node-c is dead", 1, view, 0}));
  save("fuzz_json", "session-info.json",
       control::write_reply(control::SessionInfoReply{"node-a", 5, "10.0.0.1:7946", "c", 1, "j", "j", "", true}));
  control::MembersReply members{"node-a", {{"node-a", "10.0.0.1:7946", "alive", 0, 5}}, {}};
  members.rejected.by_cause = {{"truncated", 0}, {"bad_magic", 2}};
  save("fuzz_json", "members.json", control::write_reply(members));
  control::StatusReply status;
  status.self = "node-a";
  status.view_changes = {{3, 2, {"node-b"}, {}, "node-b alive", 0.25, 1700000000.5}};
  status.checkpoints.lag = {{0, 10, 8, 2}, {1, 10, std::nullopt, std::nullopt}};
  save("fuzz_json", "status.json", control::write_reply(status));
  control::CkptLsReply ls;
  ls.job = "j";
  ls.held.push_back({"/shoal.j.r0.a", "local", 4096, "(a trainer on this host)",
                     control::HeldVersion{"j", 0, 12, 2, 3000, 2}, true, std::nullopt});
  ls.held.push_back({"/shoal.j.r1.b", "replica", 4096, std::nullopt, std::nullopt, std::nullopt, "not sealed"});
  ls.persist = control::PersistSection{"/ckpt/j", {{0, 12, 2, 3000, "/ckpt/j/r0.s12.shoalckpt"}}, {}, {}};
  save("fuzz_json", "ckpt-ls.json", control::write_reply(ls));
  save("fuzz_json", "force.json", control::write_reply(control::ForceReply{false, "no live majority", 3}));
  save("fuzz_json", "error.json", control::write_reply(control::ErrorReply{"unknown request 'x'", {"members"}}));
  // Near-valid and hostile text.
  save("fuzz_json", "strings.json", R"(["\u00e9\ud83d\ude00 \"q\" \\ \/", "tab\t", -1.5e-3, 18446744073709551615])");
  save(
      "fuzz_json", "numbers.json",
      R"({"self":"a","view":{"epoch":-1},"view_changes":[{"committed_unix":1e300,"seconds":-0.0,"members":4294967296}]})");
  save("fuzz_json", "deep.json", "[[[[[[[[[[{}]]]]]]]]]]");
  save("fuzz_json", "bad.json", R"({"a":})");
  save("fuzz_json", "echo.txt", "echo a \"b\" c\\d");
  save("fuzz_json", "wait.txt", "wait 1 2\r");
  save("fuzz_json", "throw.txt", "throw boom");
  save("fuzz_json", "unknown.txt", "ckpt ls");
}

void key_texts() {
  const std::string hex = "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0";
  const std::string b64 = "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=";
  save("fuzz_key_text", "hex", hex + "\n");
  save("fuzz_key_text", "base64", "  " + b64 + "\t\r\n");
  save("fuzz_key_text", "rotation", "# new key\n" + b64 + "\n\n# old key\n" + hex + "\n");
  save("fuzz_key_text", "duplicate", hex + "\n" + hex + "\n");
  save("fuzz_key_text", "all-zero", std::string(64, '0') + "\n");
  save("fuzz_key_text", "short", hex.substr(0, 62) + "\n");
  save("fuzz_key_text", "no-padding", b64.substr(0, 43) + "\n");
}

void manifests() {
  ckpt::Entries entries;
  for (const ckpt::PersistedVersion& v : {ckpt::PersistedVersion{0, 100, 3, 8, 4096, ""},
                                          ckpt::PersistedVersion{0, 200, 4, 8, 4096, ""},
                                          ckpt::PersistedVersion{7, 18446744073709551615u, 9, 4294967295u, 1, ""}}) {
    entries.emplace(ckpt::Key{v.rank, v.step}, v);
  }
  const std::string text = ckpt::format_manifest(entries);
  save("fuzz_manifest", "three", text);
  save("fuzz_manifest", "empty", ckpt::format_manifest({}));
  save("fuzz_manifest", "no-final-newline", text.substr(0, text.size() - 1));
  save("fuzz_manifest", "spaces-and-tabs", "shoal-ckpt-manifest 1\n  3\t5 6 8\v100 r3.s5.shoalckpt \r\n");
  save("fuzz_manifest", "duplicate", text + "0 100 3 8 4096 r0.s100.shoalckpt\n");
  save("fuzz_manifest", "bad-step", text + "0 x 1 8 100 r0.sx.shoalckpt\n");
  save("fuzz_manifest", "wrong-file", "shoal-ckpt-manifest 1\n5 1 2 8 100 r5.s01.shoalckpt\n");
  save("fuzz_manifest", "garbage", "not a manifest\n1 2 3\n");
}

// fuzz_rendezvous_request's chunks: [op][length u8][bytes], op 0 a request, 1 | p << 2 an epoch
// advance by p % 4, 2 | p << 2 p * 50 ms pass, 3 | p << 2 a cancel.
void rendezvous_chunk(Bytes& in, uint8_t op, const std::string& bytes = {}) {
  in.push_back(std::byte{op});
  in.push_back(std::byte(bytes.size()));
  const auto b = bytes_of(bytes);
  in.insert(in.end(), b.begin(), b.end());
}
std::string rendezvous_request(uint64_t epoch, wire::RendezvousRequest::Op op, std::vector<std::string> keys,
                               const std::string& value = {}, uint32_t timeout_ms = 0) {
  wire::RendezvousRequest r;
  r.set_epoch(epoch);
  r.set_op(op);
  for (auto& k : keys) r.add_keys(std::move(k));
  r.set_value(value);
  r.set_timeout_ms(timeout_ms);
  return r.SerializeAsString();
}

void rendezvous_inputs() {
  using R = wire::RendezvousRequest;
  Bytes set_get;  // a GET that waits for two SETs
  rendezvous_chunk(set_get, 0, rendezvous_request(0, R::GET, {"rank0", "rank1"}, {}, 500));
  rendezvous_chunk(set_get, 0, rendezvous_request(0, R::SET, {"rank0"}, "addr-0"));
  rendezvous_chunk(set_get, 0, rendezvous_request(0, R::SET, {"rank1"}, "addr-1"));
  rendezvous_chunk(set_get, 0, rendezvous_request(0, R::WAIT, {"rank1"}));
  save("fuzz_rendezvous_request", "set-then-get", set_get);
  Bytes epochs;  // waits in the next epoch; the view moves past one, the other times out
  rendezvous_chunk(epochs, 0, rendezvous_request(1, R::WAIT, {"nccl-id"}, {}, 200));
  rendezvous_chunk(epochs, 0, rendezvous_request(2, R::GET, {"nccl-id"}, {}, 300));
  rendezvous_chunk(epochs, 1 | (2 << 2));
  rendezvous_chunk(epochs, 2 | (10 << 2));
  rendezvous_chunk(epochs, 0, rendezvous_request(1, R::SET, {"late"}, "x"));
  save("fuzz_rendezvous_request", "epochs-and-timeouts", epochs);
  Bytes refused;  // too far ahead, two keys in a set, no keys, an unknown op, a wait then its cancel
  rendezvous_chunk(refused, 0, rendezvous_request(9, R::SET, {"k"}, "v"));
  rendezvous_chunk(refused, 0, rendezvous_request(0, R::SET, {"a", "b"}, "v"));
  rendezvous_chunk(refused, 0, rendezvous_request(0, R::GET, {}));
  rendezvous_chunk(refused, 0, rendezvous_request(0, R::OP_UNSPECIFIED, {"k"}));
  rendezvous_chunk(refused, 0, rendezvous_request(0, R::WAIT, {"never"}, {}, 100000));
  rendezvous_chunk(refused, 3);
  save("fuzz_rendezvous_request", "refusals-and-cancel", refused);
  Bytes torch_store;  // what torch's init_process_group does: add, a long poll on the counter, the others
  R add = R();
  add.set_epoch(0);
  add.set_op(R::ADD);
  add.add_keys("barrier");
  add.set_delta(1);
  rendezvous_chunk(torch_store, 0, add.SerializeAsString());
  R poll = add;
  poll.set_delta(0);
  poll.set_wait_for_change(true);
  poll.set_seen(1);
  poll.set_timeout_ms(200);
  rendezvous_chunk(torch_store, 0, poll.SerializeAsString());
  rendezvous_chunk(torch_store, 0, add.SerializeAsString());
  rendezvous_chunk(torch_store, 0, rendezvous_request(0, R::CHECK, {"barrier", "absent"}));
  rendezvous_chunk(torch_store, 0, rendezvous_request(0, R::NUM_KEYS, {"bar"}));
  rendezvous_chunk(torch_store, 0, rendezvous_request(0, R::DELETE, {"barrier"}));
  rendezvous_chunk(torch_store, 0, poll.SerializeAsString());
  rendezvous_chunk(torch_store, 2 | (5 << 2));
  save("fuzz_rendezvous_request", "torch-store-ops", torch_store);
}

// ---- fuzz_swim: transcripts of what a real cluster sends node-a ----------------------------------

// fuzz_swim.cpp's input: chunks [op][length u16 LE][bytes], op & 3 the call (0 packet, 1 stream
// request, 2 response to the oldest pending request, 3 tick when empty, else that request fails),
// op >> 2 the time step in 5 ms units. Its core: kCluster, node-a below, started at time 0 with
// kSwimSeedAddr as seed, random seed 1.
constexpr const char* kSwimSeedAddr = "10.0.0.2:7946";

gossip::Config swim_config() {
  gossip::Config cfg;
  cfg.cluster_id = kCluster;
  cfg.max_stream_bytes = 1 << 20;
  cfg.broadcast_queue_max = 64;
  return cfg;
}

// node-a, driven the way fuzz_swim drives it, with every call written down.
class SwimTranscript {
 public:
  gossip::Swim swim{swim_config(), {"node-a", 7, "10.0.0.1:7946"}, {"host-a", 8, {}}, 1};
  gossip::Effects out;
  std::deque<gossip::StreamRequest> pending;  // our requests, oldest first
  Bytes text;

  void start() {
    swim.start({kSwimSeedAddr}, now_, out);
    collect();
  }
  // dt: multiples of 5 ms, at most 315 ms.
  void packet(std::span<const std::byte> b, int dt_ms) {
    advance(0, dt_ms, b);
    swim.on_packet(kSwimSeedAddr, b, now_, out);
    collect();
  }
  Bytes stream_request(std::span<const std::byte> b, int dt_ms) {
    advance(1, dt_ms, b);
    auto reply = swim.on_stream_request(kSwimSeedAddr, b, now_, out);
    collect();
    return reply;
  }
  void respond(std::optional<std::span<const std::byte>> b, int dt_ms) {
    const uint64_t token = pending.front().token;
    pending.pop_front();
    if (b) {
      advance(2, dt_ms, *b);
    } else {
      advance(3, dt_ms, bytes_of("x"));
    }
    swim.on_stream_response(token, b, now_, out);
    collect();
  }
  void tick(int dt_ms) {
    advance(3, dt_ms, {});
    swim.on_tick(now_, out);
    collect();
  }
  gossip::Time now() const { return now_; }

 private:
  void advance(int op, int dt_ms, std::span<const std::byte> b) {
    now_ += std::chrono::milliseconds(dt_ms);
    text.push_back(std::byte(op | ((dt_ms / 5) << 2)));
    text.push_back(std::byte(b.size() & 0xff));
    text.push_back(std::byte(b.size() >> 8));
    text.insert(text.end(), b.begin(), b.end());
  }
  void collect() {
    for (auto& s : out.streams) pending.push_back(std::move(s));
    out.streams.clear();
  }
  gossip::Time now_{0};
};

// node-a with peers node-b (its seed) and node-c (which joins through node-b), delivering every
// packet and stream for `steps` rounds of 50 ms; node-b stops answering from round crash_b on.
Bytes swim_cluster(int steps, int crash_b) {
  const std::string a_addr = "10.0.0.1:7946", b_addr = kSwimSeedAddr, c_addr = "10.0.0.3:7946";
  SwimTranscript a;
  std::map<std::string, gossip::Swim> peers;
  peers.emplace(b_addr, gossip::Swim(swim_config(), {"node-b", 9, b_addr}, {"host-b", 8, {}}, 2));
  peers.emplace(c_addr, gossip::Swim(swim_config(), {"node-c", 11, c_addr}, {"host-c", 4, {}}, 3));
  std::map<std::string, gossip::Effects> peer_out;
  a.start();
  peers.at(b_addr).start({}, a.now(), peer_out[b_addr]);
  peers.at(c_addr).start({b_addr}, a.now(), peer_out[c_addr]);
  for (int step = 0; step < steps; ++step) {
    const bool b_up = step < crash_b;
    a.tick(50);
    for (auto& [addr, p] : peers) {
      if (addr != b_addr || b_up) p.on_tick(a.now(), peer_out[addr]);
    }
    // node-a's packets to its peers; the peers' packets to each other and to node-a.
    for (auto& pkt : a.out.packets) {
      if (peers.count(pkt.to) != 0 && (pkt.to != b_addr || b_up)) {
        peers.at(pkt.to).on_packet(a_addr, pkt.bytes, a.now(), peer_out[pkt.to]);
      }
    }
    a.out.packets.clear();
    for (auto& [addr, eff] : peer_out) {
      if (addr == b_addr && !b_up) eff.clear();
      auto packets = std::move(eff.packets);
      auto streams = std::move(eff.streams);
      eff.clear();
      for (auto& pkt : packets) {
        if (pkt.to == a_addr) {
          a.packet(pkt.bytes, 0);
        } else if (peers.count(pkt.to) != 0 && (pkt.to != b_addr || b_up)) {
          peers.at(pkt.to).on_packet(addr, pkt.bytes, a.now(), peer_out[pkt.to]);
        }
      }
      for (auto& s : streams) {
        std::optional<Bytes> reply;
        if (s.to == a_addr) {
          reply = a.stream_request(s.bytes, 0);
        } else if (peers.count(s.to) != 0 && (s.to != b_addr || b_up)) {
          reply = peers.at(s.to).on_stream_request(addr, s.bytes, a.now(), peer_out[s.to]);
        }
        if (reply && reply->empty()) reply.reset();
        peers.at(addr).on_stream_response(s.token, reply ? std::optional<std::span<const std::byte>>(*reply)
                                                         : std::nullopt,
                                          a.now(), peer_out[addr]);
      }
    }
    // node-a's stream requests, answered in the order made.
    while (!a.pending.empty()) {
      const auto& s = a.pending.front();
      std::optional<Bytes> reply;
      if (peers.count(s.to) != 0 && (s.to != b_addr || b_up)) {
        reply = peers.at(s.to).on_stream_request(a_addr, s.bytes, a.now(), peer_out[s.to]);
      }
      if (reply && !reply->empty()) {
        a.respond(std::span<const std::byte>(*reply), 0);
      } else {
        a.respond(std::nullopt, 0);
      }
    }
  }
  return a.text;
}

void swim_inputs() {
  save("fuzz_swim", "cluster-of-three", swim_cluster(30, 30));
  save("fuzz_swim", "seed-crashes", swim_cluster(40, 12));
  // The join alone: node-b's state answers node-a's request.
  save("fuzz_swim", "join", swim_cluster(1, 1));
  // Single chunks: a gossip packet of another member, a digest request, a garbage response.
  gossip::Swim b(swim_config(), {"node-b", 9, kSwimSeedAddr}, {"host-b", 8, {}}, 2);
  gossip::Effects eff;
  b.start({"10.0.0.1:7946"}, gossip::Time{0}, eff);
  Bytes one;
  for (const auto& s : eff.streams) {
    one.push_back(std::byte{1});
    one.push_back(std::byte(s.bytes.size() & 0xff));
    one.push_back(std::byte(s.bytes.size() >> 8));
    one.insert(one.end(), s.bytes.begin(), s.bytes.end());
  }
  save("fuzz_swim", "join-request", one);
  const Bytes junk = {std::byte{2}, std::byte{3}, std::byte{0}, std::byte{'S'}, std::byte{'H'}, std::byte{'L'},
                      std::byte{3}, std::byte{0}, std::byte{0}};
  save("fuzz_swim", "junk-response", junk);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus OUT_DIR\n");
    return 2;
  }
  out_dir = argv[1];
  packets();
  sealed();
  frames();
  hellos();
  {
    auto ring = wire::parse_key_text(kKeyText, "make_corpus");
    if (!ring) {
      std::fprintf(stderr, "make_corpus: %s\n", ring.error().message.c_str());
      return 1;
    }
    const Bytes hello = net::encode_hello(gossip_envelope(kCluster), wire::Hello::CKPT_STREAM);
    fuzz::stream_seeds(*ring, hello, kTo, kNowMs,
                       [](const std::string& target, const std::string& name, std::span<const std::byte> bytes) {
                         save(target, name, bytes);
                       });
  }
  views();
  versions();
  control_text();
  key_texts();
  manifests();
  rendezvous_inputs();
  swim_inputs();
  return ok ? 0 : 1;
}
