// Fuzz target: a rank's timing record as another rank receives it (health::decode_record), and the
// straggler judge fed what it decodes. A record is refused whole or yields at most kRecordSteps figures,
// each within range; what it yields encodes and decodes to itself; the verdict names only known hosts.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "health/step_record.hpp"
#include "health/straggler_judge.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::health;
  const auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  const auto record = decode_record(bytes);
  if (record.refused && !record.steps.empty()) __builtin_trap();
  if (record.steps.size() + record.dropped > kRecordSteps) __builtin_trap();
  for (const auto& f : record.steps) {
    if (f.compute_us > kMaxFigureUs || f.wait_us > kMaxFigureUs) __builtin_trap();
  }
  const auto again = decode_record(encode_record(record.steps));
  if (again.refused || again.dropped != 0 || again.steps != record.steps) __builtin_trap();

  // Three hosts; the input's figures are the third's, repeated over a few exchanges.
  StragglerJudge judge(shoal::StragglerOptions{});
  const std::vector<std::string> hosts = {"a", "b", "c"};
  judge.reset(hosts, 1);
  const std::vector<StepFigure> steady(5, StepFigure{100'000, 0});
  for (uint64_t round = 0; round < 4; ++round) {
    const std::vector<std::vector<StepFigure>> figures = {steady, steady, record.steps};
    const auto& health = judge.evaluate(figures, round);
    if (health.hosts.size() != 3) __builtin_trap();
    for (const auto& name : health.stragglers) {
      if (name != "c") __builtin_trap();  // a and b are equal: only c can be named
    }
  }
  return 0;
}
