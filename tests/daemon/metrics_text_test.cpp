// The Prometheus text format as shoal writes it: one HELP/TYPE pair per family, labels escaped,
// histograms cumulative with +Inf, _sum and _count.
#include "daemon/reports/metrics_text.hpp"

#include <doctest/doctest.h>

using shoal::daemon::escape_label;
using shoal::daemon::PromText;

TEST_CASE("families get HELP and TYPE once, samples carry their labels") {
  PromText m;
  m.gauge("shoal_members", "members by state", 3, {{"state", "alive"}});
  m.gauge("shoal_members", "members by state", 1, {{"state", "dead"}});
  m.counter("shoal_bytes_total", "bytes", 1234567, {{"direction", "in"}, {"peer", "a"}});
  m.gauge("shoal_ratio", "a fraction", 0.25);
  CHECK(m.str() ==
        "# HELP shoal_members members by state\n# TYPE shoal_members gauge\n"
        "shoal_members{state=\"alive\"} 3\nshoal_members{state=\"dead\"} 1\n"
        "# HELP shoal_bytes_total bytes\n# TYPE shoal_bytes_total counter\n"
        "shoal_bytes_total{direction=\"in\",peer=\"a\"} 1234567\n"
        "# HELP shoal_ratio a fraction\n# TYPE shoal_ratio gauge\nshoal_ratio 0.25\n");
}

TEST_CASE("a histogram's buckets are cumulative and end with +Inf, _sum and _count") {
  PromText m;
  m.histogram("shoal_x_seconds", "x", {0.5, 1}, {2, 3, 4}, 7.5);
  CHECK(m.str() ==
        "# HELP shoal_x_seconds x\n# TYPE shoal_x_seconds histogram\n"
        "shoal_x_seconds_bucket{le=\"0.5\"} 2\nshoal_x_seconds_bucket{le=\"1\"} 5\n"
        "shoal_x_seconds_bucket{le=\"+Inf\"} 9\nshoal_x_seconds_sum 7.5\nshoal_x_seconds_count 9\n");
}

TEST_CASE("label values are escaped") {
  CHECK(escape_label("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  CHECK(escape_label("plain") == "plain");
}
