// Fuzz target: the control socket's text. The input is served as a request line (ControlHandlers::
// dispatch and dispatch_async): whatever the line, the reply must be a JSON document, and an error
// document must read as an ErrorReply. The input is also parsed as a document (parse_document, never
// an exception) and read as every reply type (read_reply, never an exception): a document that parses,
// written out, parses again to the same text; a reply that reads, written out, reads again equal to
// itself and writes the same text again.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "control/handlers.hpp"
#include "control/replies.hpp"

namespace {

using namespace shoal::control;

template <class Reply>
void check_reply(const Json& doc) {
  auto first = read_reply<Reply>(doc);
  if (!first) return;
  const std::string once = write_reply(*first);
  auto reparsed = parse_document(once);
  if (!reparsed) __builtin_trap();
  auto second = read_reply<Reply>(*reparsed);
  if (!second || !(*second == *first) || write_reply(*second) != once) __builtin_trap();
}

void check_document(std::string_view text, size_t max_depth) {
  auto doc = parse_document(text, max_depth);
  if (!doc) return;
  const std::string once = dump_document(*doc);
  auto again = parse_document(once, max_depth);
  if (!again || dump_document(*again) != once) __builtin_trap();
  check_reply<ErrorReply>(*doc);
  check_reply<CommittedReply>(*doc);
  check_reply<ForceReply>(*doc);
  check_reply<MembersReply>(*doc);
  check_reply<StatsReply>(*doc);
  check_reply<ViewReply>(*doc);
  check_reply<StatusReply>(*doc);
  check_reply<ViewHistoryReply>(*doc);
  check_reply<HealthReply>(*doc);
  check_reply<CheckReply>(*doc);
  check_reply<SessionInfoReply>(*doc);
  check_reply<SessionWaitReply>(*doc);
  check_reply<CkptLsReply>(*doc);
}

// A reply of the table below: a JSON document, and an error document reads as one.
void must_parse(const std::string& reply) {
  auto doc = parse_document(reply);
  if (!doc) __builtin_trap();
  if (error_of(*doc) && !read_reply<ErrorReply>(*doc)) __builtin_trap();
}

const ControlHandlers& handlers() {
  static const ControlHandlers table = [] {
    ControlHandlers h;
    // Echoes its words as member names, so the request's bytes reach a reply.
    h.add("echo", "echo the words", [](std::span<const std::string> args) {
      MembersReply reply;
      for (const auto& a : args) reply.members.push_back({a, a, "alive", args.size(), 0});
      return write_reply(reply);
    });
    h.add("throw", "a handler that fails", [](std::span<const std::string> args) -> std::string {
      throw std::runtime_error(args.empty() ? std::string("no words") : args.front());
    });
    h.add_async("wait", "answers at once", std::chrono::milliseconds(5),
                [](std::span<const std::string> args, ControlHandlers::Reply reply) {
                  reply(write_reply(SessionWaitReply{args.size(), 0, args.empty() ? "" : args.back(), 0, {}, 0}));
                });
    h.add_async("wait-throw", "an async handler that fails", std::chrono::milliseconds(5),
                [](std::span<const std::string> args, const ControlHandlers::Reply&) {
                  throw std::runtime_error(args.empty() ? std::string("no words") : args.front());
                });
    return h;
  }();
  return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  check_document(text, kMaxDocumentDepth);
  check_document(text, 2);

  must_parse(handlers().dispatch(text));
  int replies = 0;
  const auto wait = handlers().dispatch_async(text, [&](std::string document) {
    ++replies;
    must_parse(document);
  });
  if (wait.has_value() != (replies == 1) || replies > 1) __builtin_trap();
  return 0;
}
