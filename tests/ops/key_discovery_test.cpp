// Where `shoal agent` finds its cluster key with no --key-file: SHOAL_KEY_FILE, the systemd credential, the
// Slurm job's key in ~/.shoal, in that order (a link there found too: loading refuses it), and nothing otherwise.
#include "ops/key_discovery.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/process.hpp"

using shoal::ops::discover_key_file;
using shoal::ops::Environment;
using shoal::ops::SlurmDefaults;

namespace {

SlurmDefaults slurm_job(const std::string& id) {
  SlurmDefaults s;
  s.under_slurm = true;
  s.job_id = id;
  return s;
}

void touch(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "key\n";
}

}  // namespace

TEST_CASE("no key anywhere: nothing is found") {
  shoal::test::TempDir dir;
  CHECK_FALSE(discover_key_file(Environment{{"HOME", dir.path()}}, slurm_job("42")).has_value());
  CHECK_FALSE(discover_key_file(Environment{}, SlurmDefaults{}).has_value());
}

TEST_CASE("SHOAL_KEY_FILE comes first, even before the file exists (its error will name it)") {
  shoal::test::TempDir dir;
  touch(dir.path() + "/creds/cluster.key");
  const auto found = discover_key_file(
      Environment{{"SHOAL_KEY_FILE", "/etc/shoal/x.key"}, {"CREDENTIALS_DIRECTORY", dir.path() + "/creds"}},
      SlurmDefaults{});
  REQUIRE(found.has_value());
  CHECK(found->path == "/etc/shoal/x.key");
  CHECK(found->from == "SHOAL_KEY_FILE");
}

TEST_CASE("the systemd credential, then the Slurm job's own key in the home directory") {
  shoal::test::TempDir dir;
  touch(dir.path() + "/.shoal/job-42.key");
  const Environment env{{"HOME", dir.path()}, {"CREDENTIALS_DIRECTORY", dir.path() + "/creds"}};
  auto slurm = discover_key_file(env, slurm_job("42"));
  REQUIRE(slurm.has_value());  // no credential file: the job's key
  CHECK(slurm->path == dir.path() + "/.shoal/job-42.key");
  CHECK_FALSE(discover_key_file(env, slurm_job("43")).has_value());  // another job's key is not ours
  CHECK_FALSE(discover_key_file(env, SlurmDefaults{}).has_value());  // and outside Slurm there is no job
  touch(dir.path() + "/creds/cluster.key");
  auto creds = discover_key_file(env, slurm_job("42"));
  REQUIRE(creds.has_value());
  CHECK(creds->path == dir.path() + "/creds/cluster.key");
}

TEST_CASE("a link in a known place is found, not passed over, so that loading it says why it is refused") {
  shoal::test::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/.shoal");
  std::filesystem::create_symlink(dir.path() + "/gone.key", dir.path() + "/.shoal/job-42.key");  // dangling
  const auto found = discover_key_file(Environment{{"HOME", dir.path()}}, slurm_job("42"));
  REQUIRE(found.has_value());
  CHECK(found->path == dir.path() + "/.shoal/job-42.key");
}
