// DNS SRV answers (daemon/srv_lookup.hpp): records taken in order and bounded, "no service" targets and other
// types skipped, malformed and truncated messages refused; built byte by byte as a server sends them.
#include "daemon/srv_lookup.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using shoal::daemon::parse_srv_answer;
using shoal::daemon::SrvRecord;

namespace {

struct Message {
  std::vector<unsigned char> bytes;
  void u16(unsigned v) {
    bytes.push_back(static_cast<unsigned char>(v >> 8));
    bytes.push_back(static_cast<unsigned char>(v & 0xff));
  }
  void name(const std::string& dotted) {  // uncompressed labels, then the root
    size_t start = 0;
    while (start < dotted.size()) {
      const size_t dot = dotted.find('.', start);
      const std::string label = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      bytes.push_back(static_cast<unsigned char>(label.size()));
      bytes.insert(bytes.end(), label.begin(), label.end());
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    bytes.push_back(0);
  }
};

// A response to a query of SRV for `qname` with `answers` records (each appended by the caller).
Message response(const std::string& qname, unsigned answers) {
  Message m;
  m.u16(0x1234);  // id
  m.u16(0x8180);  // response, recursion desired and available, no error
  m.u16(1);       // one question
  m.u16(answers);
  m.u16(0);
  m.u16(0);
  m.name(qname);
  m.u16(33);  // SRV
  m.u16(1);   // IN
  return m;
}

void srv(Message& m, unsigned priority, unsigned weight, unsigned port, const std::string& target) {
  m.u16(0xc00c);  // the question's name, compressed
  m.u16(33);
  m.u16(1);
  m.u16(0);
  m.u16(30);  // ttl
  Message rdata;
  rdata.u16(priority);
  rdata.u16(weight);
  rdata.u16(port);
  if (target == ".") {
    rdata.bytes.push_back(0);
  } else {
    rdata.name(target);
  }
  m.u16(static_cast<unsigned>(rdata.bytes.size()));
  m.bytes.insert(m.bytes.end(), rdata.bytes.begin(), rdata.bytes.end());
}

void a_record(Message& m) {
  m.u16(0xc00c);
  m.u16(1);  // A
  m.u16(1);
  m.u16(0);
  m.u16(30);
  m.u16(4);
  for (unsigned char b : {10, 0, 0, 1}) m.bytes.push_back(b);
}

}  // namespace

TEST_CASE("an SRV answer gives its records in order, skipping other types and targets of \".\"") {
  Message m = response("_shoal._tcp.job.lab.test", 4);
  srv(m, 10, 5, 7946, "h1.lab.test");
  a_record(m);
  srv(m, 0, 0, 7947, ".");  // "no service here"
  srv(m, 20, 1, 7948, "h2.lab.test");
  const auto got = parse_srv_answer(m.bytes, 64);
  REQUIRE(got.ok());
  CHECK(*got == std::vector<SrvRecord>{{10, 5, 7946, "h1.lab.test"}, {20, 1, 7948, "h2.lab.test"}});
  const auto bounded = parse_srv_answer(m.bytes, 1);
  REQUIRE(bounded.ok());
  CHECK(bounded->size() == 1);
}

TEST_CASE("malformed SRV answers are refused, never read past their end") {
  Message good = response("_s._tcp.x", 1);
  srv(good, 1, 1, 7946, "h.x");
  struct Row {
    const char* what;
    std::vector<unsigned char> bytes;
  };
  std::vector<Row> rows;
  for (size_t cut : {size_t{3}, size_t{12}, good.bytes.size() - 5, good.bytes.size() - 1}) {
    rows.push_back({"truncated", std::vector<unsigned char>(good.bytes.begin(), good.bytes.begin() + cut)});
  }
  Message short_rdata = response("_s._tcp.x", 1);
  short_rdata.u16(0xc00c);
  short_rdata.u16(33);
  short_rdata.u16(1);
  short_rdata.u16(0);
  short_rdata.u16(30);
  short_rdata.u16(4);  // four bytes: no room for priority, weight, port and a target
  for (int i = 0; i < 4; ++i) short_rdata.bytes.push_back(0);
  rows.push_back({"an SRV record shorter than its fixed part", short_rdata.bytes});
  Message loop = response("_s._tcp.x", 1);
  for (unsigned v : {0xc00cu, 33u, 1u, 0u, 30u, 8u, 1u, 1u, 7946u}) loop.u16(v);  // rdlength 8: 6 + a pointer
  loop.u16(0xc000 | static_cast<unsigned>(loop.bytes.size()));                    // the target: a pointer to itself
  rows.push_back({"a target that points at itself", loop.bytes});
  for (const Row& r : rows) {
    CAPTURE(r.what);
    CHECK_FALSE(parse_srv_answer(r.bytes, 64).ok());
  }
}
