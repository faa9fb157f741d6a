// A Kubernetes pod's environment as agent defaults: nothing outside a pod, each downward-API variable
// to its default, the GPUs the device plugin gave, and errors that name the bad variable.
#include "ops/kubernetes_env.hpp"

#include <doctest/doctest.h>

#include <string>

using shoal::ops::Environment;
using shoal::ops::kubernetes_defaults;
using shoal::ops::KubernetesDefaults;

namespace {

// The environment of a pod of deploy/kubernetes/shoal-job.yaml on a node with eight GPUs.
Environment pod_env() {
  return {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
          {"SHOAL_POD_NAME", "shoal-train-3-x7k2p"},
          {"SHOAL_NODE_NAME", "gpu-node-17"},
          {"SHOAL_JOB", "llama-70b"},
          {"SHOAL_POD_IP", "10.244.3.9"},
          {"NVIDIA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}};
}

KubernetesDefaults defaults(const Environment& env) {
  auto d = kubernetes_defaults(env);
  REQUIRE_MESSAGE(d, d.error().message);
  return *d;
}

std::string refusal(const Environment& env) {
  auto d = kubernetes_defaults(env);
  REQUIRE_MESSAGE(!d, "expected the environment to be refused");
  return d.error().message;
}

}  // namespace

TEST_CASE("outside a pod nothing is taken, whatever SHOAL_ variables are set") {
  Environment env = pod_env();
  env.erase("KUBERNETES_SERVICE_HOST");
  const auto d = defaults(env);
  CHECK_FALSE(d.under_kubernetes);
  CHECK(d.name.empty());
  CHECK(d.job.empty());
  CHECK_FALSE(d.slots);
  env["KUBERNETES_SERVICE_HOST"] = "";  // set but empty counts as unset
  CHECK_FALSE(defaults(env).under_kubernetes);
}

TEST_CASE("in a pod each downward-API variable gives its default, and a log line says where from") {
  const auto d = defaults(pod_env());
  CHECK(d.under_kubernetes);
  CHECK(d.name == "shoal-train-3-x7k2p");
  CHECK(d.host == "gpu-node-17");
  CHECK(d.job == "llama-70b");
  CHECK(d.advertise == "10.244.3.9");
  REQUIRE(d.slots);
  CHECK(*d.slots == 8);
  REQUIRE(d.notes.size() == 5);
  CHECK(d.notes[0] == "member name shoal-train-3-x7k2p from SHOAL_POD_NAME");
  CHECK(d.notes[4] == "slots 8 from NVIDIA_VISIBLE_DEVICES");
}

TEST_CASE("a pod without the downward API is still a pod: only what is set is taken") {
  const auto d = defaults({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}});
  CHECK(d.under_kubernetes);
  CHECK(d.name.empty());  // the pod's host name stays the default
  CHECK(d.host.empty());
  CHECK(d.advertise.empty());
  CHECK_FALSE(d.slots);
  CHECK(d.notes.empty());
}

TEST_CASE("NVIDIA_VISIBLE_DEVICES: indexes and UUIDs count, the toolkit's words say nothing") {
  struct Row {
    const char* value;
    int slots;  // -1: no count
  };
  const Row rows[] = {{"0", 1},     {"2,3", 2},    {"GPU-5d1f2b9e-7a61-4c3a-9f0e-1b2c3d4e5f60,GPU-aa", 2},
                      {"all", -1},  {"none", -1},  {"void", -1},
                      {"", -1}};
  for (const Row& r : rows) {
    Environment env = pod_env();
    env["NVIDIA_VISIBLE_DEVICES"] = r.value;
    const auto d = defaults(env);
    CAPTURE(r.value);
    if (r.slots < 0) {
      CHECK_FALSE(d.slots);
    } else {
      REQUIRE(d.slots);
      CHECK(*d.slots == static_cast<uint32_t>(r.slots));
    }
  }
  for (const char* bad : {",", "0,", ",1", "0,,1"}) {
    Environment env = pod_env();
    env["NVIDIA_VISIBLE_DEVICES"] = bad;
    const std::string why = refusal(env);
    CAPTURE(bad);
    CHECK(why.find("NVIDIA_VISIBLE_DEVICES") != std::string::npos);
    CHECK(why.find("empty entry") != std::string::npos);
  }
}

TEST_CASE("a control character or an over-long value is refused, naming the variable") {
  Environment env = pod_env();
  env["SHOAL_JOB"] = std::string("job\nFAKE LOG LINE");
  CHECK(refusal(env) == "SHOAL_JOB holds a control character");
  env = pod_env();
  env["SHOAL_NODE_NAME"] = std::string(254, 'n');
  CHECK(refusal(env) == "SHOAL_NODE_NAME has 254 bytes, more than a Kubernetes name's 253");
  env["SHOAL_NODE_NAME"] = std::string(253, 'n');
  CHECK(defaults(env).host.size() == 253);
}
