// The member table's open-addressing name index: lookups stay right through many inserts,
// erases (backward shift) and moves, checked against std::map.
#include "gossip/name_index.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace shoal::gossip;

TEST_CASE("the name index agrees with a reference map through inserts, erases and moves") {
  NameIndex index;
  std::vector<std::string> at;  // position -> name, like the member table's records
  std::map<std::string, uint32_t> reference;
  std::mt19937_64 rng(17);
  auto name_at = [&](uint32_t p) { return std::string_view(at[p]); };
  for (int step = 0; step < 20000; ++step) {
    const bool add = at.size() < 50 || rng() % 3 != 0;
    if (add) {
      std::string name = "m" + std::to_string(rng() % 5000);
      if (reference.count(name) != 0) continue;
      index.insert(name, static_cast<uint32_t>(at.size()));
      reference[name] = static_cast<uint32_t>(at.size());
      at.push_back(name);
    } else {
      // Remove a random entry the way the table does: swap the last one into its place.
      const uint32_t i = static_cast<uint32_t>(rng() % at.size());
      const uint32_t last = static_cast<uint32_t>(at.size() - 1);
      index.erase(at[i], i);
      reference.erase(at[i]);
      if (i != last) {
        index.move(at[last], last, i);
        reference[at[last]] = i;
        at[i] = at[last];
      }
      at.pop_back();
    }
    if (step % 97 == 0) {
      for (const auto& [name, pos] : reference) REQUIRE(index.find(name, name_at) == pos);
      CHECK(index.find("absent", name_at) == NameIndex::kNone);
      CHECK(index.size() == reference.size());
    }
  }
}

TEST_CASE("an empty index finds nothing") {
  NameIndex index;
  CHECK(index.find("x", [](uint32_t) { return std::string_view(); }) == NameIndex::kNone);
}
