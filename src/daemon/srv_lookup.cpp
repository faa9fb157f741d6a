// SRV lookups through glibc's resolver (see srv_lookup.hpp).
#include "daemon/srv_lookup.hpp"

#include <arpa/nameser.h>
#include <netdb.h>
#include <resolv.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>

#include "net/host_port.hpp"

namespace shoal::daemon {

Result<std::vector<SrvRecord>> parse_srv_answer(std::span<const unsigned char> msg, size_t max) {
  ns_msg handle;
  if (msg.size() > 65535 || ns_initparse(msg.data(), static_cast<int>(msg.size()), &handle) != 0) {
    return fail("a DNS answer that does not parse");
  }
  std::vector<SrvRecord> out;
  const int count = ns_msg_count(handle, ns_s_an);
  for (int i = 0; i < count && out.size() < max; ++i) {
    ns_rr rr;
    if (ns_parserr(&handle, ns_s_an, i, &rr) != 0) return fail("a DNS answer with a record that does not parse");
    if (ns_rr_type(rr) != ns_t_srv) continue;
    const unsigned char* rd = ns_rr_rdata(rr);
    if (ns_rr_rdlen(rr) < 7) return fail("an SRV record shorter than its fixed part");
    SrvRecord r;
    r.priority = static_cast<uint16_t>(ns_get16(rd));
    r.weight = static_cast<uint16_t>(ns_get16(rd + 2));
    r.port = static_cast<uint16_t>(ns_get16(rd + 4));
    char target[NS_MAXDNAME];
    if (dn_expand(ns_msg_base(handle), ns_msg_end(handle), rd + 6, target, sizeof target) < 0) {
      return fail("an SRV record whose target does not parse");
    }
    r.target = target;
    if (r.target.empty() || r.target == "." || r.port == 0) continue;  // "no such service here"
    out.push_back(std::move(r));
  }
  return out;
}

void append_ip_ports(const boost::asio::ip::tcp::resolver::results_type& results, uint16_t port, size_t max,
                     std::vector<std::string>& out) {
  for (const auto& r : results) {
    if (out.size() >= max) break;
    std::string text = net::ip_port_text(r.endpoint().address(), port);
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(std::move(text));
  }
}

Result<std::vector<std::string>> lookup_srv(const std::string& name, size_t max) {
  struct __res_state state {};
  if (res_ninit(&state) != 0) return fail("the resolver's configuration (/etc/resolv.conf) could not be read");
  state.retrans = 2;  // seconds per try; one try per server: a lookup is retried by the caller, with backoff
  state.retry = 1;
  std::vector<unsigned char> answer(65535);
  const int n = res_nquery(&state, name.c_str(), ns_c_in, ns_t_srv, answer.data(), static_cast<int>(answer.size()));
  const int herr = state.res_h_errno;
  res_nclose(&state);
  if (n < 0)
    return fail(herr == HOST_NOT_FOUND ? "no such name" : herr == NO_DATA ? "no SRV records" : hstrerror(herr));
  auto records = parse_srv_answer({answer.data(), std::min<size_t>(static_cast<size_t>(n), answer.size())}, max);
  if (!records) return fail(records.error().message);
  std::stable_sort(records->begin(), records->end(),
                   [](const SrvRecord& a, const SrvRecord& b) { return a.priority < b.priority; });
  std::vector<std::string> out;
  boost::asio::io_context io;  // this thread's own: the lookups below block, as the SRV query did
  boost::asio::ip::tcp::resolver resolver(io);
  for (const SrvRecord& r : *records) {
    if (out.size() >= max) break;
    boost::system::error_code ec;
    const auto results = resolver.resolve(r.target, std::to_string(r.port), ec);
    if (!ec) append_ip_ports(results, r.port, max, out);
  }
  if (out.empty()) return fail(records->empty() ? "no SRV records" : "no target of its SRV records resolves");
  return out;
}

}  // namespace shoal::daemon
