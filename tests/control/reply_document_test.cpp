// Writing and parsing control documents: compact text in the order written, bytes that are not UTF-8
// replaced, and untrusted text refused with a reason instead of an exception.
#include <doctest/doctest.h>

#include "control/replies/document.hpp"
#include "control/replies/members.hpp"

using shoal::control::dump_document;
using shoal::control::error_of;
using shoal::control::Json;
using shoal::control::parse_document;

TEST_CASE("a document is compact text with its members in the order they were written") {
  Json doc = Json::object();
  doc["zeta"] = 1;
  doc["alpha"] = Json::array({"x", true, nullptr});
  doc["mid"] = Json::object();
  CHECK(dump_document(doc) == R"({"zeta":1,"alpha":["x",true,null],"mid":{}})");
}

TEST_CASE("integers keep their type and full range") {
  Json doc = Json::object();
  doc["max"] = uint64_t{18446744073709551615u};
  doc["neg"] = int64_t{-3};
  doc["zero"] = uint64_t{0};
  const std::string text = dump_document(doc);
  CHECK(text == R"({"max":18446744073709551615,"neg":-3,"zero":0})");
  auto back = parse_document(text);
  REQUIRE(back.ok());
  CHECK((*back)["max"].get<uint64_t>() == 18446744073709551615u);
  CHECK((*back)["max"].is_number_unsigned());
}

TEST_CASE("quotes, backslashes and control characters are escaped") {
  const Json doc = std::string("q\"b\\s\n\t\x01/");
  CHECK(dump_document(doc) == R"("q\"b\\s\n\t\u0001/")");
}

TEST_CASE("bytes that are not UTF-8 become U+FFFD, without an exception, and the text parses again") {
  const std::string fffd = "\xef\xbf\xbd";
  CHECK(dump_document(Json(std::string("h\xc3\xa9llo \xf0\x9f\x90\x9f"))) == "\"h\xc3\xa9llo \xf0\x9f\x90\x9f\"");
  CHECK(dump_document(Json(std::string("bad\xff"))) == "\"bad" + fffd + "\"");
  CHECK(dump_document(Json(std::string("cut\xc3"))) == "\"cut" + fffd + "\"");
  for (const std::string& name : {std::string("\xc0\xaf"), std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
                                  std::string("a\xff\xfe\xfd"
                                              "b"),
                                  std::string("\x80")}) {
    shoal::control::MembersReply reply;
    reply.self = name;
    reply.members.push_back({name, "10.0.0.1:1", "alive", 0, 1});
    std::string text;
    CHECK_NOTHROW(text = shoal::control::write_reply(reply));
    auto back = shoal::control::parse_reply<shoal::control::MembersReply>(text);
    REQUIRE_MESSAGE(back.ok(), text);
    CHECK(back->self.find(fffd) != std::string::npos);
    CHECK(back->members.at(0).name == back->self);
  }
}

TEST_CASE("text that is not a JSON document is refused with where and why") {
  const std::string reply = R"({"self":"a","members":[{"name":"a"}],"rejected":{}})";
  for (const std::string& bad :
       {std::string(), std::string("{"), std::string("[1,]"), std::string(R"({"a" 1})"), std::string("{} extra"),
        std::string("\x00\xff garbage", 10), std::string("[\"raw\ncontrol\"]"), std::string("\"\xff\""),
        std::string("nul"), reply.substr(0, reply.size() / 2), reply.substr(0, reply.size() - 1)}) {
    auto doc = parse_document(bad);
    REQUIRE_MESSAGE(!doc.ok(), bad);
    CHECK_MESSAGE(doc.error().message.starts_with("not a JSON document: parse error at line "), doc.error().message);
  }
  auto cut = parse_document(reply.substr(0, 20));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().message.find("column 21") != std::string::npos);
}

TEST_CASE("nesting is bounded, also on hostile input") {
  CHECK(parse_document(std::string(16, '[') + std::string(16, ']'), 16).ok());
  CHECK_FALSE(parse_document(std::string(17, '[') + std::string(17, ']'), 16).ok());
  auto deep = parse_document(std::string(100000, '[') + std::string(100000, ']'));
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message == "JSON nested deeper than 64 levels");
  CHECK_FALSE(parse_document(std::string(100000, '[')).ok());
  CHECK_FALSE(parse_document(std::string(50000, '{') + R"("a":1)").ok());
}

TEST_CASE("an error document is told apart from a reply") {
  auto error = parse_document(R"({"error":"unknown request 'x'","requests":["members"]})");
  REQUIRE(error.ok());
  CHECK(error_of(*error) == "unknown request 'x'");
  auto odd = parse_document(R"({"error":3})");
  REQUIRE(odd.ok());
  CHECK(error_of(*odd) == "an error without a message: 3");
  for (const char* other : {R"({"self":"a"})", "[]", "7", R"("error")"}) {
    auto doc = parse_document(other);
    REQUIRE(doc.ok());
    CHECK_FALSE(error_of(*doc).has_value());
  }
}

TEST_CASE("a document of another shape is refused with what is wrong, never thrown") {
  using shoal::control::MembersReply;
  using shoal::control::parse_reply;
  const auto message = [](const std::string& text) {
    auto r = parse_reply<MembersReply>(text);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(message("[1,2]") == "the reply is not a member list (a JSON array, not an object)");
  CHECK(message(R"({"members":[]})") == R"(the reply is not a member list (it has no "self"))");
  CHECK(message(R"({"self":7,"members":[]})") == "the reply is not a member list: type must be string, but is number");
  CHECK(message(R"({"self":"a","members":{}})").starts_with("the reply is not a member list: "));
  CHECK(message(R"({"self":"a","members":[7]})").starts_with("the reply is not a member list: "));
  CHECK(message(R"({"self":"a","members":[],"rejected":[1]})") ==
        "the reply is not a member list: the rejected inputs must be an object, not array");
  CHECK(message(R"({"self":"a","members":[],"rejected":{"x":"y"}})") ==
        "the reply is not a member list: type must be an integer, but is string");
  CHECK(message(R"({"error":"the agent has not started"})") == "the agent has not started");
  CHECK(message(R"({"self":"a","members":[])").starts_with("not a JSON document: "));
}
