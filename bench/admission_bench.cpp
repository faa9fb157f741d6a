// shoal-bench-admission: what the checkpoint service's per-request view questions cost as the job grows.
//   shoal-bench-admission [--members LIST] [--slots N] [--replicas R] [--requests N]
// For each view size it asks, for one receiving host, "may this member push this rank's replica here?" for
// `requests` pushes from the members placement sends here, two ways: as the service did before placement
// was made once per view (judge_push over the View: place_replicas and two rank tables per request, the
// baseline, measured in the same run), and as it does now (judge_push over a PlacedView, made once). Also
// the one-off cost of placing the view, and the safety query's (the drain asks it every 10 ms per rank).
// One JSON object per size.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "ckpt_service/admission.hpp"
#include "ckpt_service/placed_view.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using shoal::membership::View;
using shoal::membership::ViewMember;

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

std::vector<size_t> parse_list(const std::string& text) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(std::stoul(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

View view_of(size_t members, uint32_t slots) {
  std::vector<ViewMember> ms;
  ms.reserve(members);
  for (size_t i = 0; i < members; ++i) {
    const std::string name = "host" + std::to_string(i);
    ms.push_back(ViewMember{name, name,
                            "10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
                                std::to_string(i % 256) + ":7946",
                            slots, 1, 1});
  }
  return View::make(2, std::move(ms), 7).value();
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<size_t> sizes = {100, 1000, 10000};
  uint32_t slots = 8, replicas = 1;
  size_t requests = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--members") {
      sizes = parse_list(value);
    } else if (flag == "--slots") {
      slots = static_cast<uint32_t>(std::stoul(value));
    } else if (flag == "--replicas") {
      replicas = static_cast<uint32_t>(std::stoul(value));
    } else if (flag == "--requests") {
      requests = std::stoul(value);
    } else {
      std::fprintf(stderr,
                   "shoal-bench-admission: unknown flag %s (--members LIST --slots N --replicas R --requests N)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "shoal-bench-admission: every flag takes a value\n");
    return 2;
  }
  for (const size_t n : sizes) {
    const View view = view_of(n, slots);
    const std::optional<View> as_before = view;
    const std::string self = "host0";
    auto t = Clock::now();
    const shoal::ckpt_service::PlacedView placed(view, replicas, self);
    const double place_us = us_since(t);
    // The members whose replicas come here, and one of their ranks each.
    std::vector<std::pair<std::string, uint32_t>> pushes;
    for (const auto& owner : placed.placement().held_by(self)) {
      pushes.emplace_back(owner, placed.table().ranks_of(owner).front().global_rank);
    }
    if (pushes.empty()) throw std::runtime_error("no member places its replicas on " + self);
    size_t refused = 0;
    t = Clock::now();
    for (size_t i = 0; i < requests; ++i) {
      const auto& [sender, rank] = pushes[i % pushes.size()];
      refused += shoal::ckpt_service::judge_push(as_before, self, sender, replicas, rank).has_value();
    }
    const double before_us = us_since(t) / static_cast<double>(requests);
    const size_t placed_requests = requests * 1000;
    t = Clock::now();
    for (size_t i = 0; i < placed_requests; ++i) {
      const auto& [sender, rank] = pushes[i % pushes.size()];
      refused += shoal::ckpt_service::judge_push(&placed, sender, rank).has_value();
    }
    const double placed_us = us_since(t) / static_cast<double>(placed_requests);
    uint64_t holders = 0;
    t = Clock::now();
    for (size_t i = 0; i < placed_requests; ++i) holders += placed.replicas_of(self)->holders.size();
    const double safety_us = us_since(t) / static_cast<double>(placed_requests);
    if (refused != 0) throw std::runtime_error(std::to_string(refused) + " placed pushes were refused");
    std::printf(
        "{\"bench\":\"admission\",\"members\":%zu,\"slots\":%u,\"replicas\":%u,\"place_once_ms\":%.3f,"
        "\"push_check_us_baseline\":%.3f,\"push_check_us\":%.4f,\"safety_us\":%.4f,\"speedup\":%.1f,"
        "\"holders\":%llu}\n",
        n, slots, replicas, place_us / 1000.0, before_us, placed_us, safety_us, before_us / placed_us,
        static_cast<unsigned long long>(holders / placed_requests));
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "shoal-bench-admission: %s\n", e.what());
  return 1;
}
