// The JSON writer's escaping and nesting, and the reader that parses what it writes.
#include <doctest/doctest.h>

#include "control/json_reader.hpp"
#include "control/json_writer.hpp"

using shoal::control::json_quote;
using shoal::control::JsonValue;
using shoal::control::JsonWriter;
using shoal::control::parse_json;

TEST_CASE("json_quote escapes quotes, backslashes and control characters") {
  CHECK(json_quote("plain") == "\"plain\"");
  CHECK(json_quote("a\"b") == "\"a\\\"b\"");
  CHECK(json_quote("a\\b") == "\"a\\\\b\"");
  CHECK(json_quote("line\nnext\ttab\rcr\bbs\fff") == "\"line\\nnext\\ttab\\rcr\\bbs\\fff\"");
  CHECK(json_quote(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
  CHECK(json_quote("\x01\x1f\x7f") == "\"\\u0001\\u001f\\u007f\"");
  CHECK(json_quote("/") == "\"/\"");
}

TEST_CASE("json_quote keeps valid UTF-8 and replaces invalid bytes with U+FFFD") {
  CHECK(json_quote("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x9f") == "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x9f\"");
  CHECK(json_quote("\xff") == "\"\\ufffd\"");
  CHECK(json_quote("a\xc3") == "\"a\\ufffd\"");                                 // cut-off sequence
  CHECK(json_quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");                        // overlong '/'
  CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");             // a UTF-16 surrogate
  CHECK(json_quote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
}

TEST_CASE("the writer places commas and colons and nests objects and arrays") {
  JsonWriter w;
  w.begin_object();
  w.key("name").value("a");
  w.key("n").value(uint64_t{18446744073709551615u});
  w.key("neg").value(int64_t{-3});
  w.key("ok").value(true);
  w.key("none").null();
  w.key("list").begin_array().value(1).value("two").begin_object().end_object().begin_array().end_array().end_array();
  w.key("x").value(0.5);
  w.end_object();
  CHECK(w.complete());
  CHECK(w.str() ==
        R"({"name":"a","n":18446744073709551615,"neg":-3,"ok":true,"none":null,"list":[1,"two",{},[]],"x":0.5})");
}

TEST_CASE("non-finite doubles are written as null") {
  JsonWriter w;
  w.begin_array().value(1.0 / 0.0).value(0.0 / 0.0).end_array();
  CHECK(w.str() == "[null,null]");
}

TEST_CASE("the reader parses what the writer writes, escapes included") {
  const std::string tricky = std::string("q\"b\\s\n\x01 h\xc3\xa9 \xf0\x9f\x90\x9f");
  JsonWriter w;
  w.begin_object().key(tricky).value(tricky).key("n").value(uint64_t{42}).end_object();
  auto doc = parse_json(w.str());
  REQUIRE(doc.ok());
  REQUIRE(doc->members().size() == 2);
  CHECK(doc->members()[0].first == tricky);
  CHECK(doc->find(tricky)->as_string() == tricky);
  CHECK(doc->find("n")->as_uint64() == 42u);
}

TEST_CASE("the reader decodes \\u escapes, surrogate pairs included") {
  auto doc = parse_json(R"(["\u00e9\u20ac\ud83d\udc1f\/"])");
  REQUIRE(doc.ok());
  CHECK(doc->items()[0].as_string() == "\xc3\xa9\xe2\x82\xac\xf0\x9f\x90\x9f/");
}

TEST_CASE("the reader refuses malformed documents with an offset") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "\"unterminated", "[01]", "[1.]", "[-]", "tru",
                          "[\"\\x\"]", "[\"\\ud800\"]", "{} extra", "[\"raw\ncontrol\"]", "{1:2}"}) {
    auto r = parse_json(bad);
    CHECK_MESSAGE(!r.ok(), bad);
    if (!r.ok()) CHECK(r.error().message.find("offset") != std::string::npos);
  }
}

TEST_CASE("the reader bounds nesting depth") {
  CHECK(parse_json(std::string(10, '[') + std::string(10, ']'), 16).ok());
  CHECK_FALSE(parse_json(std::string(100, '[') + std::string(100, ']'), 16).ok());
  CHECK_FALSE(parse_json(std::string(100000, '[')).ok());  // no stack overflow on hostile input
}

TEST_CASE("typed access says nullopt for the wrong kind") {
  auto doc = parse_json(R"({"s":"x","n":-1,"f":1.5,"b":false,"z":null})");
  REQUIRE(doc.ok());
  CHECK_FALSE(doc->find("s")->as_uint64().has_value());
  CHECK_FALSE(doc->find("n")->as_uint64().has_value());
  CHECK(doc->find("f")->as_double() == doctest::Approx(1.5));
  CHECK(doc->find("b")->as_bool() == false);
  CHECK(doc->find("z")->is_null());
  CHECK(doc->find("missing") == nullptr);
}
