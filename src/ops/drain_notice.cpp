// The clouds' notice endpoints and the meaning of their answers (see drain_notice.hpp).
#include "ops/drain_notice.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

namespace shoal::ops {

std::optional<Cloud> cloud_named(std::string_view name) {
  if (name == "aws") return Cloud::aws;
  if (name == "gcp") return Cloud::gcp;
  if (name == "azure") return Cloud::azure;
  return std::nullopt;
}

std::string_view cloud_name(Cloud cloud) {
  switch (cloud) {
    case Cloud::aws: return "aws";
    case Cloud::gcp: return "gcp";
    case Cloud::azure: return "azure";
  }
  return "?";
}

Result<NoticeEndpoint> parse_notice_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  const std::string shown(url);
  if (url.substr(0, kScheme.size()) != kScheme) return fail("'" + shown + "' is not an http://HOST[:PORT] URL");
  std::string_view rest = url.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos || rest.find('?') != std::string_view::npos) {
    return fail("'" + shown + "' has a path: give the base URL alone, http://HOST[:PORT]");
  }
  NoticeEndpoint e;
  const size_t colon = rest.rfind(':');
  e.host = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos) {
    const std::string_view port = rest.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return fail("'" + shown + "' has no valid port");
    }
    e.port = static_cast<uint16_t>(value);
  }
  if (e.host.empty()) return fail("'" + shown + "' names no host");
  return e;
}

NoticeEndpoint default_notice_endpoint(Cloud cloud) {
  return cloud == Cloud::gcp ? NoticeEndpoint{"metadata.google.internal", 80} : NoticeEndpoint{"169.254.169.254", 80};
}

NoticeRequest aws_token_request() {
  return {"PUT", "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}}};
}

NoticeRequest notice_request(Cloud cloud, const std::string& aws_token) {
  switch (cloud) {
    case Cloud::aws:
      return {"GET", "/latest/meta-data/spot/instance-action", {{"X-aws-ec2-metadata-token", aws_token}}};
    case Cloud::gcp:
      return {"GET", "/computeMetadata/v1/instance/preempted", {{"Metadata-Flavor", "Google"}}};
    case Cloud::azure:
      return {"GET", "/metadata/scheduledevents?api-version=2020-07-01", {{"Metadata", "true"}}};
  }
  return {};
}

NoticeVerdict read_notice(Cloud cloud, unsigned status, std::string_view body) {
  if (cloud == Cloud::aws && status == 404) return {false, "no spot interruption notice"};
  if (status != 200) return {false, "the metadata service answered HTTP " + std::to_string(status)};
  switch (cloud) {
    case Cloud::aws: {
      const auto doc = nlohmann::json::parse(body, nullptr, false);
      const auto action = doc.is_object() ? doc.find("action") : doc.end();
      if (doc.is_object() && action != doc.end() && action->is_string()) {
        const auto when = doc.find("time");
        return {true, "AWS spot interruption: " + action->get<std::string>() +
                          (when != doc.end() && when->is_string() ? " at " + when->get<std::string>() : "")};
      }
      return {false, "an instance-action answer without an action"};
    }
    case Cloud::gcp: {
      std::string_view word = body;
      while (!word.empty() && (word.back() == '\n' || word.back() == '\r' || word.back() == ' ')) word.remove_suffix(1);
      if (word == "TRUE") return {true, "GCP preemption: instance/preempted is TRUE"};
      if (word == "FALSE") return {false, "not preempted"};
      return {false, "instance/preempted answered neither TRUE nor FALSE"};
    }
    case Cloud::azure: {
      const auto doc = nlohmann::json::parse(body, nullptr, false);
      const auto events = doc.is_object() ? doc.find("Events") : doc.end();
      if (!doc.is_object() || events == doc.end() || !events->is_array()) {
        return {false, "a scheduled-events answer without Events"};
      }
      for (const auto& e : *events) {
        const auto type = e.is_object() ? e.find("EventType") : e.end();
        if (e.is_object() && type != e.end() && type->is_string() && type->get<std::string>() == "Preempt") {
          const auto id = e.find("EventId");
          return {true, "Azure scheduled event Preempt" +
                            (id != e.end() && id->is_string() ? " (" + id->get<std::string>() + ")" : std::string())};
        }
      }
      return {false, "no Preempt event scheduled"};
    }
  }
  return {false, "unknown cloud"};
}

}  // namespace shoal::ops
