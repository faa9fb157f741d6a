// A pod's environment as agent defaults (see kubernetes_env.hpp).
#include "ops/kubernetes_env.hpp"

#include <string_view>

namespace shoal::ops {
namespace {

constexpr size_t kMaxValueBytes = 253;

const std::string* env_value(const Environment& env, const std::string& key) {
  const auto it = env.find(key);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

Result<std::string> read(const Environment& env, const std::string& key) {
  const std::string* value = env_value(env, key);
  if (value == nullptr) return std::string();
  for (const char c : *value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return fail(key + " holds a control character");
  }
  if (value->size() > kMaxValueBytes) {
    return fail(key + " has " + std::to_string(value->size()) + " bytes, more than a Kubernetes name's " +
                std::to_string(kMaxValueBytes));
  }
  return *value;
}

// NVIDIA_VISIBLE_DEVICES as the device plugin sets it: a comma-separated list of GPU indexes or UUIDs.
// "all", "none" and "void" (the container toolkit's words) say nothing about this container's count.
Result<std::optional<uint32_t>> read_gpus(const Environment& env) {
  auto text = read(env, "NVIDIA_VISIBLE_DEVICES");
  if (!text) return fail(text.error().message);
  if (text->empty() || *text == "all" || *text == "none" || *text == "void") return std::optional<uint32_t>();
  uint32_t count = 0;
  std::string_view rest(*text);
  while (true) {
    const auto comma = rest.find(',');
    if (rest.substr(0, comma).empty()) {
      return fail("NVIDIA_VISIBLE_DEVICES='" + *text + "' has an empty entry; expected GPU indexes or UUIDs");
    }
    ++count;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return std::optional<uint32_t>(count);
}

}  // namespace

Result<KubernetesDefaults> kubernetes_defaults(const Environment& env) {
  KubernetesDefaults d;
  if (env_value(env, "KUBERNETES_SERVICE_HOST") == nullptr) return d;
  d.under_kubernetes = true;
  struct Field {
    const char* key;
    std::string* into;
    const char* what;
  };
  const Field fields[] = {{"SHOAL_POD_NAME", &d.name, "member name"},
                          {"SHOAL_NODE_NAME", &d.host, "host (failure domain)"},
                          {"SHOAL_JOB", &d.job, "cluster id and checkpoint job"},
                          {"SHOAL_POD_IP", &d.advertise, "advertised address"}};
  for (const Field& f : fields) {
    auto value = read(env, f.key);
    if (!value) return fail(value.error().message);
    *f.into = *value;
    if (!f.into->empty()) d.notes.push_back(std::string(f.what) + " " + *f.into + " from " + f.key);
  }
  auto gpus = read_gpus(env);
  if (!gpus) return fail(gpus.error().message);
  d.slots = *gpus;
  if (d.slots) d.notes.push_back("slots " + std::to_string(*d.slots) + " from NVIDIA_VISIBLE_DEVICES");
  return d;
}

}  // namespace shoal::ops
