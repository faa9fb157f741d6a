// Timing records sealed with the cluster key: a record verifies only under a key of the ring and only in its
// own place (epoch, attempt, step, rank, world); a forged, tampered, moved or replayed record is dropped
// whole and counted, and never changes the straggler verdict.
#include "health/record_seal.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "health/straggler_judge.hpp"
#include "wire/cluster_key.hpp"

using namespace shoal::health;
using shoal::wire::KeyRing;

namespace {

KeyRing ring(const char* hex_lines) {
  auto r = shoal::wire::parse_key_text(hex_lines, "test keys");
  REQUIRE(r);
  return *r;
}

constexpr const char* kKeyA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
constexpr const char* kKeyB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n";

std::vector<StepFigure> steps_of(uint32_t compute_ms, int n = 5) {
  return std::vector<StepFigure>(static_cast<size_t>(n), StepFigure{compute_ms * 1000, 100});
}

}  // namespace

TEST_CASE("a sealed record opens in its own place under the same key") {
  const KeyRing keys = ring(kKeyA);
  const RecordPlace place{7, 0, 24, 3, 6};
  const auto sealed = seal_record(encode_record(steps_of(100)), &keys, place);
  const auto opened = open_record(sealed, &keys, place);
  REQUIRE(opened.trust == RecordTrust::verified);
  CHECK(decode_record(opened.record).steps == steps_of(100));
}

TEST_CASE("a record with one byte changed, or sealed by an outsider, is forged") {
  const KeyRing keys = ring(kKeyA);
  const KeyRing outsider = ring(kKeyB);
  const RecordPlace place{7, 0, 24, 3, 6};
  const auto sealed = seal_record(encode_record(steps_of(100)), &keys, place);
  for (size_t i = 0; i < sealed.size(); ++i) {
    auto tampered = sealed;
    tampered[i] ^= std::byte{0x01};
    CHECK_MESSAGE(open_record(tampered, &keys, place).trust == RecordTrust::forged, "byte " << i);
  }
  CHECK(open_record(seal_record(encode_record(steps_of(100)), &outsider, place), &keys, place).trust ==
        RecordTrust::forged);
  // Unsealed (what a host without the key sends) and the wrong size.
  CHECK(open_record(seal_record(encode_record(steps_of(100)), nullptr, place), &keys, place).trust ==
        RecordTrust::forged);
  CHECK(open_record(std::span<const std::byte>(sealed).first(kSealedRecordBytes - 1), &keys, place).trust ==
        RecordTrust::forged);
}

TEST_CASE("a genuine record moved to another rank, replayed at a later exchange or into another view is forged") {
  const KeyRing keys = ring(kKeyA);
  const RecordPlace place{7, 0, 24, 3, 6};
  const auto sealed = seal_record(encode_record(steps_of(100)), &keys, place);
  auto other = place;
  other.rank = 2;
  CHECK(open_record(sealed, &keys, other).trust == RecordTrust::forged);
  other = place;
  other.step = 29;
  CHECK(open_record(sealed, &keys, other).trust == RecordTrust::forged);
  other = place;
  other.epoch = 8;
  CHECK(open_record(sealed, &keys, other).trust == RecordTrust::forged);
  other = place;
  other.attempt = 1;
  CHECK(open_record(sealed, &keys, other).trust == RecordTrust::forged);
  other = place;
  other.world = 5;
  CHECK(open_record(sealed, &keys, other).trust == RecordTrust::forged);
}

TEST_CASE("during a key rotation a record sealed with either key of the ring verifies") {
  const KeyRing old_first = ring((std::string(kKeyA) + kKeyB).c_str());
  const KeyRing new_first = ring((std::string(kKeyB) + kKeyA).c_str());
  const RecordPlace place{3, 0, 9, 0, 2};
  CHECK(open_record(seal_record(encode_record(steps_of(50)), &new_first, place), &old_first, place).trust ==
        RecordTrust::verified);
  CHECK(open_record(seal_record(encode_record(steps_of(50)), &old_first, place), &new_first, place).trust ==
        RecordTrust::verified);
}

TEST_CASE("in an open cluster nothing is verified: the record is marked open") {
  const RecordPlace place{3, 0, 9, 0, 2};
  const auto sealed = seal_record(encode_record(steps_of(50)), nullptr, place);
  const auto opened = open_record(sealed, nullptr, place);
  CHECK(opened.trust == RecordTrust::open);
  CHECK(decode_record(opened.record).steps == steps_of(50));
}

TEST_CASE("an outsider's forged figures for a healthy host are dropped, counted and never name it") {
  // Six hosts of 100 ms; every exchange an outsider replaces host c's record with one claiming 500 ms.
  const KeyRing keys = ring(kKeyA);
  const KeyRing outsider = ring(kKeyB);
  const std::vector<std::string> hosts = {"a", "b", "c", "d", "e", "f"};
  StragglerJudge judge(shoal::StragglerOptions{});
  judge.reset(hosts, 7);
  judge.set_authenticated(true);
  uint64_t forged = 0;
  for (uint64_t exchange = 0; exchange < 10; ++exchange) {
    const uint64_t step = exchange * 5 + 4;
    std::vector<DecodedRecord> records;
    for (uint32_t r = 0; r < hosts.size(); ++r) {
      const RecordPlace place{7, 0, step, r, 6};
      const auto sealed = r == 2 ? seal_record(encode_record(steps_of(500)), &outsider, place)
                                 : seal_record(encode_record(steps_of(100)), &keys, place);
      const auto opened = open_record(sealed, &keys, place);
      if (opened.trust != RecordTrust::verified) {
        DecodedRecord none;
        none.refused = true;
        records.push_back(none);
        ++forged;
        continue;
      }
      records.push_back(decode_record(opened.record));
    }
    judge.count_forged(forged);
    forged = 0;
    const auto figures = host_figures(hosts, hosts, records);
    const auto& verdict = judge.evaluate(figures, step);
    CHECK_MESSAGE(verdict.stragglers.empty(), "exchange " << exchange);
  }
  CHECK(judge.health().forged_records == 10);
  CHECK(judge.health().authenticated);
  CHECK(judge.health().hosts[2].samples == 0);  // no figure of c was ever trusted
}
