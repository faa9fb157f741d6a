// find_persisted and load_persisted_file against a real shared directory: every member's versions of the job
// found, read-only; a member directory that is a link or writable by others, a forged or mis-named file, a
// stray file and another job's directory not read; a file corrupted on disk refused at load; and
// member_dir_name as a table.
#include "ckpt_shm/persist_peers.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "ckpt_shm/persist_dir.hpp"
#include "ckpt_shm/persist_trust.hpp"
#include "persist_test_dir.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::kJob;
using shoal::ckpt::test::make_version;
using shoal::ckpt::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A member's PersistDir under the shared root, as the agent opens it (<root>/<member>/<job>/).
PersistDir member_dir(const TempDir& root, const std::string& member) {
  auto d = PersistDir::open(PersistConfig{root.str() + "/" + member, kJob, 2});
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  return std::move(*d);
}

void persist_ok(PersistDir& d, const std::vector<std::byte>& version) {
  auto r = d.persist(version);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
}

using Found = std::vector<std::tuple<std::string, uint32_t, uint64_t>>;  // member, rank, step

Found found_in(const TempDir& root) {
  Found out;
  for (const auto& c : find_persisted(root.str(), kJob, uint64_t{1} << 30)) {
    out.emplace_back(c.member, c.version.rank, c.version.step);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every path under `root` with its size and modification time, to show that nothing was written.
std::vector<std::tuple<std::string, uintmax_t, fs::file_time_type>> snapshot(const TempDir& root) {
  std::vector<std::tuple<std::string, uintmax_t, fs::file_time_type>> out;
  for (const auto& e : fs::recursive_directory_iterator(root.str())) {
    if (e.is_symlink()) continue;
    out.emplace_back(e.path().string(), e.is_regular_file() ? e.file_size() : 0, e.last_write_time());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace

TEST_CASE("every member's versions of the job are found, whoever wrote them, and nothing is written") {
  TempDir root("peers-found");
  {
    auto a = member_dir(root, "a");
    persist_ok(a, make_version(kJob, 0, 10));
    persist_ok(a, make_version(kJob, 0, 20));
    auto b = member_dir(root, "b");
    persist_ok(b, make_version(kJob, 1, 10));
  }
  // Another job's files beside them, and a stray file at the root.
  {
    auto other = PersistDir::open(PersistConfig{root.str() + "/c", "another-job", 2});
    REQUIRE(other.ok());
    persist_ok(*other, make_version("another-job", 0, 90));
  }
  write_bytes(fs::path(root.str()) / "notes.txt", "not a member");
  const auto before = snapshot(root);
  CHECK(found_in(root) == Found{{"a", 0, 10}, {"a", 0, 20}, {"b", 1, 10}});
  CHECK(snapshot(root) == before);
  // Without a manifest the files themselves are read, still without writing one.
  fs::remove(fs::path(root.str()) / "b" / kJob / "MANIFEST");
  const auto no_manifest = snapshot(root);
  CHECK(found_in(root) == Found{{"a", 0, 10}, {"a", 0, 20}, {"b", 1, 10}});
  CHECK(snapshot(root) == no_manifest);
  const auto all = find_persisted(root.str(), kJob, uint64_t{1} << 30);
  const auto b1 = std::find_if(all.begin(), all.end(), [](const auto& c) { return c.member == "b"; });
  REQUIRE(b1 != all.end());
  CHECK(b1->version.world == 8);
  CHECK(b1->version.path == root.str() + "/b/" + kJob + "/r1.s10.shoalckpt");
}

TEST_CASE("a member directory that is a link or writable by others, and forged files, are refused and not read") {
  TempDir root("peers-refused");
  {
    auto a = member_dir(root, "a");
    persist_ok(a, make_version(kJob, 0, 10));
  }
  const fs::path base(root.str());
  // A link to a's directory: a's versions would count twice, and a link may point anywhere.
  fs::create_directory_symlink(base / "a", base / "linked");
  // A directory others may write, holding a copy of a real version.
  fs::create_directories(base / "loose" / kJob);
  ::chmod((base / "loose").c_str(), 0777);
  ::chmod((base / "loose" / kJob).c_str(), 0700);
  fs::copy_file(base / "a" / kJob / "r0.s10.shoalckpt", base / "loose" / kJob / "r1.s10.shoalckpt");
  // A forger's files in a proper directory: garbage, a real version under another name, a truncated one.
  const fs::path forger = base / "forger" / kJob;
  fs::create_directories(forger);
  ::chmod((base / "forger").c_str(), 0700);
  ::chmod(forger.c_str(), 0700);
  write_bytes(forger / "r0.s99.shoalckpt", std::string(8192, 'x'));
  fs::copy_file(base / "a" / kJob / "r0.s10.shoalckpt", forger / "r1.s99.shoalckpt");
  fs::copy_file(base / "a" / kJob / "r0.s10.shoalckpt", forger / "r0.s10.shoalckpt");
  fs::resize_file(forger / "r0.s10.shoalckpt", 300);
  for (const auto& e : fs::directory_iterator(forger)) ::chmod(e.path().c_str(), 0600);

  const auto symlinks = refused_persisted(PersistRefusal::symlink);
  const auto unsafe = refused_persisted(PersistRefusal::unsafe_directory);
  const auto invalid = refused_persisted(PersistRefusal::invalid);
  CHECK(found_in(root) == Found{{"a", 0, 10}});
  CHECK(refused_persisted(PersistRefusal::symlink) == symlinks + 1);
  CHECK(refused_persisted(PersistRefusal::unsafe_directory) == unsafe + 1);
  CHECK(refused_persisted(PersistRefusal::invalid) == invalid + 3);
  // They stay where they are, for a person to look at.
  CHECK(fs::exists(forger / "r0.s99.shoalckpt"));
  CHECK(fs::exists(base / "loose" / kJob / "r1.s10.shoalckpt"));
}

TEST_CASE("a found version loads fully verified; one corrupted on disk or not what it was listed as is refused") {
  TempDir root("peers-load");
  const auto version = make_version(kJob, 3, 40);
  {
    auto a = member_dir(root, "a");
    persist_ok(a, version);
  }
  const auto found = find_persisted(root.str(), kJob, uint64_t{1} << 30);
  REQUIRE(found.size() == 1);
  std::vector<std::byte> into;
  const auto place = [&](uint64_t bytes) -> shoal::Result<std::span<std::byte>> {
    into.assign(static_cast<size_t>(bytes), std::byte{0});
    return std::span<std::byte>(into);
  };
  auto loaded = load_persisted_file(found[0].version, kJob, uint64_t{1} << 30, place);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message);
  CHECK(loaded->id.rank == 3);
  CHECK(loaded->id.step == 40);
  CHECK(into == version);

  // Listed as another world: refused, whatever the file holds.
  auto other_world = found[0].version;
  other_world.world = 2;
  auto refused = load_persisted_file(other_world, kJob, uint64_t{1} << 30, place);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().refusal == PersistRefusal::invalid);
  // Of another job: refused.
  refused = load_persisted_file(found[0].version, "another-job", uint64_t{1} << 30, place);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().refusal == PersistRefusal::invalid);
  // A data byte flipped on disk: the header still reads, the full check does not.
  {
    auto plan = plan_layout(shoal::ckpt::test::kBuffers);
    REQUIRE(plan.ok());
    std::fstream f(found[0].version.path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(plan->offsets[0]));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(plan->offsets[0]));
    f.put(static_cast<char>(c ^ 0x5a));
    REQUIRE(f.good());
  }
  CHECK(find_persisted(root.str(), kJob, uint64_t{1} << 30).size() == 1);
  refused = load_persisted_file(found[0].version, kJob, uint64_t{1} << 30, place);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().refusal == PersistRefusal::invalid);
  // Beyond the size bound: refused before a byte is read.
  refused = load_persisted_file(found[0].version, kJob, 1024, place);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().refusal == PersistRefusal::oversized);
}

TEST_CASE("a member name becomes one directory level") {
  const std::vector<std::pair<std::string, std::string>> table{{"gpu02", "gpu02"},  {"node-1.rack_2", "node-1.rack_2"},
                                                               {"a/b", "a_b"},      {"../x", ".._x"},
                                                               {".", "_."},         {"..", "_.."},
                                                               {"sp ace", "sp_ace"}};
  for (const auto& [name, dir] : table) CHECK(member_dir_name(name) == dir);
}
