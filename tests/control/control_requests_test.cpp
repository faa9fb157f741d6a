// The control request table: dispatch by name, arguments, and error documents for bad requests.
#include <doctest/doctest.h>

#include <stdexcept>

#include "control/handlers.hpp"
#include "control/replies/errors_and_acks.hpp"

using shoal::control::ControlHandlers;
using shoal::control::ErrorReply;

namespace {

ControlHandlers table() {
  ControlHandlers h;
  h.add("members", "list",
        [](std::span<const std::string> args) { return "{\"members\":" + std::to_string(args.size()) + "}"; });
  h.add("ckpt", "checkpoints", [](std::span<const std::string> args) {
    return std::string("{\"sub\":\"") + (args.empty() ? "" : args[0]) + "\"}";
  });
  h.add("boom", "throws", [](std::span<const std::string>) -> std::string { throw std::runtime_error("broken"); });
  return h;
}

ErrorReply error_reply_of(const std::string& reply) {
  auto error = shoal::control::parse_reply<ErrorReply>(reply);
  REQUIRE_MESSAGE(error.ok(), reply);
  return *error;
}

std::string error_of(const std::string& reply) { return error_reply_of(reply).error; }

}  // namespace

TEST_CASE("a request line reaches its handler with the words after its name") {
  const auto h = table();
  CHECK(h.dispatch("members") == "{\"members\":0}");
  CHECK(h.dispatch("  members  a\tb \r") == "{\"members\":2}");
  CHECK(h.dispatch("ckpt ls") == "{\"sub\":\"ls\"}");
}

TEST_CASE("unknown, empty, binary and oversized requests get an error document listing the requests") {
  const auto h = table();
  CHECK(error_of(h.dispatch("frobnicate")).find("frobnicate") != std::string::npos);
  CHECK(error_of(h.dispatch("")) == "empty request");
  CHECK(error_of(h.dispatch(std::string("mem\0bers", 8))).find("printable") != std::string::npos);
  CHECK(error_of(h.dispatch("members \xff")).find("printable") != std::string::npos);
  CHECK(error_of(h.dispatch(std::string(5000, 'm'))).find("longer") != std::string::npos);
  CHECK(h.dispatch("nope") == R"({"error":"unknown request 'nope'","requests":["members","ckpt","boom"]})");
  CHECK(error_reply_of(h.dispatch("nope")).requests == std::vector<std::string>{"members", "ckpt", "boom"});
}

TEST_CASE("a handler that throws yields an error document, not a crash") {
  const auto h = table();
  CHECK(error_of(h.dispatch("boom")).find("broken") != std::string::npos);
}

TEST_CASE("registering a name again replaces its handler") {
  auto h = table();
  h.add("members", "list", [](std::span<const std::string>) { return std::string("{}"); });
  CHECK(h.dispatch("members") == "{}");
}
