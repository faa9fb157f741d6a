// HOST:PORT parsing for --bind and --seeds, and the numeric ip:port form used on the wire.
#include "net/host_port.hpp"

#include <doctest/doctest.h>

using shoal::net::HostPort;
using shoal::net::parse_host_port;
using shoal::net::parse_host_port_list;
using shoal::net::PortZero;

TEST_CASE("host:port parses names, IPv4 and bracketed IPv6") {
  CHECK(*parse_host_port("10.0.0.1:7946") == HostPort{"10.0.0.1", 7946});
  CHECK(*parse_host_port("node-01.cluster:1") == HostPort{"node-01.cluster", 1});
  CHECK(*parse_host_port("[::1]:65535") == HostPort{"::1", 65535});
  CHECK(*parse_host_port("[fe80::1%eth0]:80") == HostPort{"fe80::1%eth0", 80});
  CHECK(parse_host_port("[::1]:7946")->to_string() == "[::1]:7946");
  CHECK(parse_host_port("a:1")->to_string() == "a:1");
}

TEST_CASE("port 0 is accepted only where the OS may choose") {
  CHECK_FALSE(parse_host_port("127.0.0.1:0").ok());
  CHECK(parse_host_port("127.0.0.1:0", PortZero::allowed)->port == 0);
}

TEST_CASE("malformed host:port values are refused with the value in the message") {
  for (const char* bad : {"", "host", ":80", "host:", "host:http", "host:65536", "host:-1", "host:80x", "::1:80",
                          "[::1]80", "[::1", "ho st:80", "a/b:80", "[]:80"}) {
    auto r = parse_host_port(bad);
    CHECK_MESSAGE(!r.ok(), bad);
    if (!r.ok()) CHECK(r.error().message.find(std::string("'") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("seed lists split on commas and refuse empty entries") {
  auto list = parse_host_port_list("a:1,10.0.0.2:2,[::1]:3");
  REQUIRE(list.ok());
  CHECK(*list == std::vector<HostPort>{{"a", 1}, {"10.0.0.2", 2}, {"::1", 3}});
  CHECK_FALSE(parse_host_port_list("a:1,").ok());
  CHECK_FALSE(parse_host_port_list(",a:1").ok());
  CHECK_FALSE(parse_host_port_list("").ok());
  CHECK_FALSE(parse_host_port_list("a:1,b").ok());
}

TEST_CASE("a seed may name DNS SRV records: dns+srv:NAME, the port from the records") {
  auto list = parse_host_port_list("dns+srv:_shoal._tcp.job.default.svc.cluster.local,a:1");
  REQUIRE(list.ok());
  CHECK(*list == std::vector<HostPort>{{"_shoal._tcp.job.default.svc.cluster.local", 0, true}, {"a", 1}});
  CHECK((*list)[0].to_string() == "dns+srv:_shoal._tcp.job.default.svc.cluster.local");
  for (const char* bad : {"dns+srv:", "dns+srv:name:7946", "dns+srv:a b", "dns+srv:x/y"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_host_port_list(bad).ok());
  }
  CHECK_FALSE(parse_host_port_list("dns+srv:" + std::string(254, 'a')).ok());
}

TEST_CASE("a seed list written with spaces is told that the list is comma-separated") {
  for (const char* spaced : {"a:1 b:2", "a:1, b:2", "[::1]:1 [::2]:2"}) {
    auto r = parse_host_port_list(spaced);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          std::string("'") + spaced + "': the list is comma-separated, without spaces (HOST:PORT,HOST:PORT)");
  }
}

TEST_CASE("numeric ip:port round-trips and names are not numeric") {
  auto v4 = shoal::net::parse_ip_port("127.0.0.1:9");
  REQUIRE(v4.has_value());
  CHECK(shoal::net::ip_port_text(v4->ip, v4->port) == "127.0.0.1:9");
  auto v6 = shoal::net::parse_ip_port("[::1]:9");
  REQUIRE(v6.has_value());
  CHECK(shoal::net::ip_port_text(v6->ip, v6->port) == "[::1]:9");
  CHECK_FALSE(shoal::net::parse_ip_port("localhost:9").has_value());
  CHECK_FALSE(shoal::net::parse_ip_port("127.0.0.1").has_value());
}
