// A cloud's spot/preemption notice, read from its metadata service (pure: what to ask, and what an answer
// means). `shoal agent --drain-on aws|gcp|azure` polls it (notice_watcher) and drains when it says so:
//   aws    GET /latest/meta-data/spot/instance-action, with an IMDSv2 token from PUT /latest/api/token:
//          404 until a notice, then 200 and {"action": "terminate"|"stop"|"hibernate", "time": ...}
//   gcp    GET /computeMetadata/v1/instance/preempted with Metadata-Flavor: Google: TRUE or FALSE
//   azure  GET /metadata/scheduledevents?api-version=2020-07-01 with Metadata: true: {"Events": [...]},
//          an event of EventType Preempt
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace shoal::ops {

enum class Cloud { aws, gcp, azure };

std::optional<Cloud> cloud_named(std::string_view name);
std::string_view cloud_name(Cloud cloud);

// Where the metadata service is: http://HOST[:PORT] and nothing else (no path, no https: the services are
// plain HTTP on a link-local address).
struct NoticeEndpoint {
  std::string host;
  uint16_t port = 80;
  bool operator==(const NoticeEndpoint&) const = default;
};
Result<NoticeEndpoint> parse_notice_url(std::string_view url);
NoticeEndpoint default_notice_endpoint(Cloud cloud);

struct NoticeRequest {
  std::string method;  // GET or PUT
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
};
// AWS's IMDSv2 token request (the other clouds need none).
NoticeRequest aws_token_request();
// The request whose answer says whether a notice came; `aws_token`: the IMDSv2 token (AWS only).
NoticeRequest notice_request(Cloud cloud, const std::string& aws_token);

struct NoticeVerdict {
  bool drain = false;
  std::string why;  // drain: the notice, for the log; else why not (no notice yet, an answer not understood)
  bool operator==(const NoticeVerdict&) const = default;
};
// What the answer (its HTTP status and body) to notice_request means.
NoticeVerdict read_notice(Cloud cloud, unsigned status, std::string_view body);

}  // namespace shoal::ops
