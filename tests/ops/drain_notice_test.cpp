// The clouds' preemption notices (ops/drain_notice.hpp): what each answer means, the requests (their headers,
// AWS's IMDSv2 token), and the base URLs --drain-notice-url admits.
#include "ops/drain_notice.hpp"

#include <doctest/doctest.h>

using shoal::ops::Cloud;
using shoal::ops::NoticeEndpoint;
using shoal::ops::read_notice;

TEST_CASE("each cloud's answer: a notice drains, its absence and answers not understood do not") {
  struct Row {
    Cloud cloud;
    unsigned status;
    const char* body;
    bool drain;
  };
  const Row table[] = {
      {Cloud::aws, 404, "<html>Not Found</html>", false},  // no notice yet
      {Cloud::aws, 200, R"({"action": "terminate", "time": "2026-12-02T03:00:00Z"})", true},
      {Cloud::aws, 200, R"({"action": "stop", "time": "2026-12-02T03:00:00Z"})", true},
      {Cloud::aws, 200, R"({"time": "2026-12-02T03:00:00Z"})", false},
      {Cloud::aws, 200, "not json", false},
      {Cloud::aws, 401, "", false},  // an expired token
      {Cloud::aws, 500, "", false},
      {Cloud::gcp, 200, "FALSE", false},
      {Cloud::gcp, 200, "TRUE", true},
      {Cloud::gcp, 200, "TRUE\n", true},
      {Cloud::gcp, 200, "true-ish", false},
      {Cloud::gcp, 503, "TRUE", false},
      {Cloud::azure, 200, R"({"DocumentIncarnation": 1, "Events": []})", false},
      {Cloud::azure, 200,
       R"({"DocumentIncarnation": 2, "Events": [{"EventId": "A1", "EventType": "Freeze", "ResourceType": "VirtualMachine"}]})",
       false},
      {Cloud::azure, 200,
       R"({"DocumentIncarnation": 3, "Events": [{"EventId": "B2", "EventType": "Preempt", "ResourceType": "VirtualMachine", "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT"}]})",
       true},
      {Cloud::azure, 200, R"({"Events": "Preempt"})", false},
      {Cloud::azure, 200, "[]", false},
  };
  for (const auto& row : table) {
    CAPTURE(row.body);
    CAPTURE(row.status);
    const auto v = read_notice(row.cloud, row.status, row.body);
    CHECK(v.drain == row.drain);
    CHECK(!v.why.empty());
  }
  CHECK(read_notice(Cloud::azure, 200, R"({"Events": [{"EventId": "B2", "EventType": "Preempt"}]})").why.find("B2") !=
        std::string::npos);
}

TEST_CASE("the documented requests: AWS asks for an IMDSv2 token first, GCP and Azure send their metadata headers") {
  const auto token = shoal::ops::aws_token_request();
  CHECK(token.method == "PUT");
  CHECK(token.target == "/latest/api/token");
  const auto aws = shoal::ops::notice_request(Cloud::aws, "tok");
  CHECK(aws.target == "/latest/meta-data/spot/instance-action");
  CHECK(aws.headers.at(0) == std::pair<std::string, std::string>{"X-aws-ec2-metadata-token", "tok"});
  const auto gcp = shoal::ops::notice_request(Cloud::gcp, "");
  CHECK(gcp.target == "/computeMetadata/v1/instance/preempted");
  CHECK(gcp.headers.at(0) == std::pair<std::string, std::string>{"Metadata-Flavor", "Google"});
  const auto azure = shoal::ops::notice_request(Cloud::azure, "");
  CHECK(azure.target == "/metadata/scheduledevents?api-version=2020-07-01");
  CHECK(azure.headers.at(0) == std::pair<std::string, std::string>{"Metadata", "true"});
  CHECK(shoal::ops::default_notice_endpoint(Cloud::gcp).host == "metadata.google.internal");
  CHECK(shoal::ops::default_notice_endpoint(Cloud::aws) == NoticeEndpoint{"169.254.169.254", 80});
}

TEST_CASE("--drain-notice-url takes http://HOST[:PORT] alone") {
  CHECK(shoal::ops::parse_notice_url("http://127.0.0.1:8080").value() == NoticeEndpoint{"127.0.0.1", 8080});
  CHECK(shoal::ops::parse_notice_url("http://127.0.0.1:8080/").value() == NoticeEndpoint{"127.0.0.1", 8080});
  CHECK(shoal::ops::parse_notice_url("http://metadata.local").value() == NoticeEndpoint{"metadata.local", 80});
  for (const char* bad : {"https://127.0.0.1", "127.0.0.1:80", "http://", "http://:80", "http://h:0", "http://h:70000",
                          "http://h:x", "http://h/latest", "http://h?x=1"}) {
    CAPTURE(bad);
    CHECK(!shoal::ops::parse_notice_url(bad));
  }
}
