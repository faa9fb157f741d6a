// torchrun_env: the variable list for one rank, device visibility, and refusals.
#include "ranks/torchrun_env.hpp"

#include <doctest/doctest.h>

#include <optional>

#include "view_builders.hpp"

using shoal::ranks::DeviceVisibility;
using shoal::ranks::EnvVar;
using shoal::ranks::RankTable;
using shoal::ranks::torchrun_env;
using shoal::ranks::TorchrunSettings;
using shoal::testing::member;
using shoal::testing::view;

namespace {

// Two hosts: "a" (2 slots, rank 0, address 10.0.0.1) and "b" (3 slots), plus a witness.
RankTable two_hosts() {
  auto a = member("a", "ha", 2, 0);
  a.addr = "10.0.0.1:7946";
  return RankTable(view(3, {a, member("b", "hb", 3, 1), member("w", "hw", 0, 0)}));
}

TorchrunSettings settings() {
  TorchrunSettings s;
  s.master_port = 29600;
  s.restart_count = 2;
  s.max_restarts = 5;
  s.run_id = "job-17";
  return s;
}

std::optional<std::string> value_of(const std::vector<EnvVar>& env, const std::string& name) {
  for (const auto& [k, v] : env) {
    if (k == name) return v;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("one rank's environment lists torchrun's variables in a fixed order") {
  const auto env = torchrun_env(two_hosts(), "b", 1, settings());
  REQUIRE(env.ok());
  CHECK(*env == std::vector<EnvVar>{
                    {"RANK", "3"},
                    {"LOCAL_RANK", "1"},
                    {"WORLD_SIZE", "5"},
                    {"LOCAL_WORLD_SIZE", "3"},
                    {"GROUP_RANK", "1"},
                    {"GROUP_WORLD_SIZE", "2"},
                    {"ROLE_RANK", "3"},
                    {"ROLE_WORLD_SIZE", "5"},
                    {"ROLE_NAME", "default"},
                    {"MASTER_ADDR", "10.0.0.1"},
                    {"MASTER_PORT", "29600"},
                    {"TORCHELASTIC_RESTART_COUNT", "2"},
                    {"TORCHELASTIC_MAX_RESTARTS", "5"},
                    {"TORCHELASTIC_RUN_ID", "job-17"},
                    {"CUDA_VISIBLE_DEVICES", "1"},
                });
}

TEST_CASE("with one role, ROLE_RANK and ROLE_WORLD_SIZE equal RANK and WORLD_SIZE for every rank") {
  const RankTable t = two_hosts();
  for (const auto& r : t.ranks()) {
    const auto env = torchrun_env(t, r.member, r.local_rank, settings());
    REQUIRE(env.ok());
    CHECK(value_of(*env, "ROLE_RANK") == value_of(*env, "RANK"));
    CHECK(value_of(*env, "ROLE_WORLD_SIZE") == value_of(*env, "WORLD_SIZE"));
    CHECK(value_of(*env, "RANK") == std::to_string(r.global_rank));
    CHECK(value_of(*env, "MASTER_ADDR") == "10.0.0.1");  // the same for every rank
  }
}

TEST_CASE("a custom role name is passed through") {
  TorchrunSettings s = settings();
  s.role_name = "trainer";
  const auto env = torchrun_env(two_hosts(), "a", 0, s);
  REQUIRE(env.ok());
  CHECK(value_of(*env, "ROLE_NAME") == "trainer");
}

TEST_CASE("CUDA_VISIBLE_DEVICES is the slot's device, the member's devices, or left out") {
  const RankTable t = two_hosts();
  TorchrunSettings s = settings();
  SUBCASE("one device per slot, by slot index") {
    CHECK(value_of(*torchrun_env(t, "b", 2, s), "CUDA_VISIBLE_DEVICES") == "2");
  }
  SUBCASE("one device per slot, from a device list") {
    s.device_ids = {"4", "5", "7"};
    CHECK(value_of(*torchrun_env(t, "b", 2, s), "CUDA_VISIBLE_DEVICES") == "7");
    CHECK(value_of(*torchrun_env(t, "b", 0, s), "CUDA_VISIBLE_DEVICES") == "4");
  }
  SUBCASE("every device of the member, as torchrun leaves it") {
    s.devices = DeviceVisibility::all_of_member;
    CHECK(value_of(*torchrun_env(t, "b", 2, s), "CUDA_VISIBLE_DEVICES") == "0,1,2");
    s.device_ids = {"GPU-aa", "GPU-bb", "GPU-cc", "GPU-dd"};
    CHECK(value_of(*torchrun_env(t, "b", 0, s), "CUDA_VISIBLE_DEVICES") == "GPU-aa,GPU-bb,GPU-cc");
  }
  SUBCASE("inherited: the variable is not set at all") {
    s.devices = DeviceVisibility::inherit;
    const auto env = torchrun_env(t, "b", 2, s);
    CHECK_FALSE(value_of(*env, "CUDA_VISIBLE_DEVICES").has_value());
    CHECK(env->size() == 14);
  }
}

TEST_CASE("the environment is refused for unknown members and slots and for unusable settings") {
  const RankTable t = two_hosts();
  auto refusal = [&](std::string_view name, uint32_t slot, const TorchrunSettings& s) {
    const auto env = torchrun_env(t, name, slot, s);
    REQUIRE_FALSE(env.ok());
    return env.error().message;
  };
  CHECK(refusal("nobody", 0, settings()).find("'nobody' holds no ranks") != std::string::npos);
  CHECK(refusal("w", 0, settings()).find("'w' holds no ranks") != std::string::npos);
  CHECK(refusal("a", 2, settings()).find("has 2 slots, not slot 2") != std::string::npos);
  TorchrunSettings port0 = settings();
  port0.master_port = 0;
  CHECK(refusal("a", 0, port0).find("MASTER_PORT") != std::string::npos);
  TorchrunSettings no_run = settings();
  no_run.run_id.clear();
  CHECK(refusal("a", 0, no_run).find("TORCHELASTIC_RUN_ID") != std::string::npos);
  TorchrunSettings no_role = settings();
  no_role.role_name.clear();
  CHECK(refusal("a", 0, no_role).find("ROLE_NAME") != std::string::npos);
  TorchrunSettings few_devices = settings();
  few_devices.device_ids = {"0", "1"};
  CHECK(refusal("b", 0, few_devices).find("only 2 device ids") != std::string::npos);
}

TEST_CASE("the defaults match torchrun's: port 29500, run id none, role default") {
  const auto env = torchrun_env(two_hosts(), "a", 0, TorchrunSettings{});
  REQUIRE(env.ok());
  CHECK(value_of(*env, "MASTER_PORT") == "29500");
  CHECK(value_of(*env, "TORCHELASTIC_RUN_ID") == "none");
  CHECK(value_of(*env, "ROLE_NAME") == "default");
  CHECK(value_of(*env, "TORCHELASTIC_RESTART_COUNT") == "0");
}
