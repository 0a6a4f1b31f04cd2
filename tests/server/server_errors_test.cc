// A table of malformed requests: each gets the right 4xx in OpenAI's error shape, and the server
// keeps serving afterwards.
#include <gtest/gtest.h>

#include "test_server.h"

namespace strata::server::testing {
namespace {

using nlohmann::json;

constexpr int kContext = 64;
constexpr size_t kMaxBody = 64 << 10;
const std::string kKey = "sk-test-7d1e";

struct BadRequest {
  BadRequest(std::string name, std::string method, std::string path, std::string body,
             int status = 400, std::string param = "", std::string auth = "Bearer " + kKey)
      : name(std::move(name)),
        method(std::move(method)),
        path(std::move(path)),
        body(std::move(body)),
        status(status),
        param(std::move(param)),
        auth(std::move(auth)) {}
  std::string name;
  std::string method;
  std::string path;
  std::string body;
  int status;
  std::string param;  // the field the error must name (param or message); empty: any
  std::string auth;
};

const std::string kMessages = R"([{"role": "user", "content": "Hi"}])";

// `field: value` added to an otherwise valid request (its own copy of the field replaced).
std::string with_field(bool chat, const std::string& field, const std::string& value) {
  std::string body = "{";
  if (chat && field != "messages") body += "\"messages\": " + kMessages + ", ";
  if (!chat && field != "prompt") body += "\"prompt\": \"Hi\", ";
  if (field != "max_tokens") body += "\"max_tokens\": 1, ";
  return body + "\"" + field + "\": " + value + "}";
}

std::vector<BadRequest> bad_requests() {
  std::vector<BadRequest> cases;
  const std::vector<std::string> bad_json = {
      "",
      "{",
      "}",
      "[1, 2]",
      "null",
      "42",
      "\"text\"",
      R"({"messages": [})",
      "{'messages': []}",
      R"({"a": 1,})",
      R"({"a": 1} trailing)",
      R"({"temperature": NaN})",
      R"({"temperature": Infinity})",
      "\xff\xfe{}",
      "{\"messages\": [{\"role\": \"user\", \"content\": \"a\xc3\x28\xff\"}]}",
      R"({"messages": [{"role": "user", "content": "\ud800"}]})",
      "{\"messages\": [{\"role\": \"user\", \"content\": \"a\x01b\"}]}",
      std::string(5000, '[') + std::string(5000, ']'),
  };
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    for (size_t i = 0; i < bad_json.size(); ++i) {
      cases.push_back({"bad json " + std::to_string(i) + " " + path, "POST", path, bad_json[i]});
    }
  }

  // Wrong types and out-of-range values, field by field, for both APIs.
  const std::vector<std::string> not_numbers = {"\"x\"", "true", "[]", "{}", "1e300", "-1e300"};
  const std::vector<std::string> not_integers = {
      "\"5\"", "1.5", "true", "[1]", "{}", "1e300", "99999999999999999999999"};
  const std::vector<std::string> not_booleans = {"\"true\"", "1", "[]", "{}"};
  const std::vector<std::string> not_strings = {"5", "true", "[]", "{}"};
  for (bool chat : {true, false}) {
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    auto add = [&](const std::string& field, const std::string& value,
                   const std::string& param = "") {
      cases.push_back({field + " = " + value.substr(0, 40) + " " + path, "POST", path,
                       with_field(chat, field, value), 400, param.empty() ? field : param});
    };
    for (const char* f : {"temperature", "top_p", "presence_penalty", "frequency_penalty", "min_p",
                          "repeat_penalty"}) {
      for (const std::string& v : not_numbers) add(f, v);
    }
    for (const char* f : {"max_tokens", "max_completion_tokens", "n", "top_k", "seed"}) {
      for (const std::string& v : not_integers) add(f, v);
    }
    for (const char* f : {"stream", "ignore_eos"}) {
      for (const std::string& v : not_booleans) add(f, v);
    }
    for (const char* f : {"model", "user", "grammar"}) {
      for (const std::string& v : not_strings) add(f, v);
    }
    for (const char* f : {"attn_budget", "attn_window", "attn_sinks"}) {
      for (const std::string& v : not_integers) add(f, v);
    }
    for (const std::string& v : not_strings) add("attn", v);
    add("attn", "\"sometimes\"");
    add("attn_budget", "0");
    add("attn_sinks", "-1");
    add("attn", "\"sparse\"");  // this server reads every page: no key summaries to select by
    add("max_tokens", "0");
    add("max_tokens", "-5");
    add("n", "0");
    add("n", "17");
    add("top_k", "-1");
    add("temperature", "-1");
    add("temperature", "2.5");
    add("top_p", "1.5");
    for (const char* v : {"5", "true", "{}", "[1]", R"(["a", 2])"}) add("stop", v);
    std::string many_stops = "[";
    for (int i = 0; i < 17; ++i) many_stops += std::string(i ? "," : "") + "\"s\"";
    add("stop", many_stops + "]");
    for (const char* v : {"[1]", "\"x\"", R"({"abc": 1})", R"({"-1": 1})", R"({"5": "x"})",
                          R"({"5": 1000})", R"({"5": -101})", R"({"1.5": 1})", R"({"": 1})"}) {
      add("logit_bias", v);
    }
    add("stream_options", "5");
    add("stream_options", "\"x\"");
    add("stream_options", R"({"include_usage": "yes"})", "stream_options");
    for (const char* v :
         {"5", "\"json\"", "{}", R"({"type": 5})", R"({"type": "xml"})",
          R"({"type": "json_schema"})", R"({"type": "json_schema", "json_schema": {}})",
          R"({"type": "json_schema", "json_schema": {"schema": 5}})"}) {
      add("response_format", v, "response_format");
    }
  }
  // Chat messages.
  for (const char* v :
       {"\"Hi\"", "[]", "5", "{}", "[5]", "[{}]", R"([{"role": 5, "content": "x"}])",
        R"([{"role": "robot", "content": "x"}])", R"([{"role": "user"}])",
        R"([{"role": "user", "content": 5}])", R"([{"role": "user", "content": [5]}])",
        R"([{"role": "user", "content": [{"type": "text"}]}])",
        R"([{"role": "user", "content": [{"text": "x"}]}])",
        R"([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])"}) {
    cases.push_back({std::string("messages = ") + v, "POST", "/v1/chat/completions",
                     with_field(true, "messages", v), 400, "messages"});
  }
  cases.push_back({"logprobs not a boolean", "POST", "/v1/chat/completions",
                   with_field(true, "logprobs", "1"), 400, "logprobs"});
  cases.push_back({"top_logprobs without logprobs", "POST", "/v1/chat/completions",
                   with_field(true, "top_logprobs", "3"), 400, "top_logprobs"});
  cases.push_back({"top_logprobs too many", "POST", "/v1/chat/completions",
                   R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true,
                       "top_logprobs": 21})",
                   400, "top_logprobs"});
  // Completions prompts and logprobs.
  for (const char* v : {"5", "true", "{}", "[]", "[true]", "[[]]", R"(["a", 5])", "[-1]", "[1.5]",
                        "[[1, -2]]", "[99999999999]", "[100000]", "[[1], [100000]]"}) {
    cases.push_back({std::string("prompt = ") + v, "POST", "/v1/completions",
                     with_field(false, "prompt", v), 400, "prompt"});
  }
  for (const char* v : {"6", "-1", "true", "\"2\"", "1.5"}) {
    cases.push_back({std::string("completions logprobs = ") + v, "POST", "/v1/completions",
                     with_field(false, "logprobs", v), 400, "logprobs"});
  }
  cases.push_back({"missing messages", "POST", "/v1/chat/completions", R"({"max_tokens": 4})", 400,
                   "messages"});
  cases.push_back(
      {"missing prompt", "POST", "/v1/completions", R"({"max_tokens": 4})", 400, "prompt"});
  const std::string long_text = [] {
    std::string s;
    for (int i = 0; i < 40; ++i) s += "Once upon a time there was a little cat. ";
    return s;
  }();
  cases.push_back({"chat prompt longer than the context", "POST", "/v1/chat/completions",
                   json{{"messages", {{{"role", "user"}, {"content", long_text}}}}}.dump(), 400,
                   std::to_string(kContext)});
  cases.push_back({"prompt longer than the context", "POST", "/v1/completions",
                   json{{"prompt", long_text}}.dump(), 400, std::to_string(kContext)});
  // Tokenize and detokenize.
  for (const char* body : {"{}", R"({"content": 5})", R"({"content": "a", "add_special": "x"})",
                           R"({"content": "a", "with_pieces": 1})", "[]"}) {
    cases.push_back({std::string("tokenize ") + body, "POST", "/tokenize", body, 400});
  }
  for (const char* body :
       {"{}", R"({"tokens": "x"})", R"({"tokens": [-1]})", R"({"tokens": [1.5]})",
        R"({"tokens": [999999]})", R"({"tokens": [1, "a"]})"}) {
    cases.push_back(
        {std::string("detokenize ") + body, "POST", "/detokenize", body, 400, "tokens"});
  }
  // Authentication.
  for (const char* path : {"/v1/chat/completions", "/v1/completions", "/tokenize"}) {
    for (const char* auth : {"", "Bearer wrong", "Bearer ", "Bearersk-test-7d1e",
                             "Basic c2stdGVzdC03ZDFl", "Bearer sk-test-7d1e-and-more"}) {
      cases.push_back({std::string("auth '") + auth + "' " + path, "POST", path,
                       with_field(true, "n", "1"), 401, "", auth});
    }
  }
  cases.push_back({"models without a key", "GET", "/v1/models", "", 401, "", ""});
  // Unknown routes and methods.
  for (const char* path : {"/v1/nothing", "/v2/chat/completions", "/v1/chat", "/admin",
                           "/v1/completions/x", "/v1/models/a/b"}) {
    cases.push_back({std::string("no route ") + path, "POST", path, "{}", 404});
  }
  cases.push_back({"GET on a POST route", "GET", "/v1/chat/completions", "", 405});
  // Bodies over the limit.
  cases.push_back({"body over the limit", "POST", "/v1/chat/completions",
                   "{\"messages\": [{\"role\": \"user\", \"content\": \"" +
                       std::string(kMaxBody, 'a') + "\"}]}",
                   413});
  cases.push_back(
      {"body far over the limit", "POST", "/v1/completions", std::string(4 * kMaxBody, ' '), 413});
  return cases;
}

TEST(ServerErrors, EveryMalformedRequestGetsItsStatusAndTheServerKeepsServing) {
  TestServerConfig config;
  config.context = kContext;
  config.api_key = kKey;
  config.max_body_bytes = kMaxBody;
  TestServer server(config);
  ASSERT_TRUE(server.ok());
  const std::vector<BadRequest> cases = bad_requests();
  ASSERT_GE(cases.size(), 200u);
  auto client = server.client();
  for (const BadRequest& c : cases) {
    httplib::Headers headers;
    if (!c.auth.empty()) headers.emplace("Authorization", c.auth);
    auto res = c.method == "GET"
                   ? client->Get(c.path.c_str(), headers)
                   : client->Post(c.path.c_str(), headers, c.body, "application/json");
    ASSERT_TRUE(res) << c.name << ": no response (" << httplib::to_string(res.error()) << ")";
    EXPECT_EQ(res->status, c.status) << c.name << ": " << res->body;
    json body = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << c.name << ": " << res->body;
    const json& error = body["error"];
    for (const char* key : {"message", "type", "param", "code"}) {
      EXPECT_TRUE(error.contains(key)) << c.name << " lacks " << key;
    }
    ASSERT_TRUE(error["message"].is_string());
    EXPECT_FALSE(error["message"].get<std::string>().empty());
    if (!c.param.empty()) {
      const bool named = (error["param"].is_string() &&
                          error["param"].get<std::string>().rfind(c.param, 0) == 0) ||
                         error["message"].get<std::string>().find(c.param) != std::string::npos;
      EXPECT_TRUE(named) << c.name << " does not name " << c.param << ": " << res->body;
    }
    if (c.status == 401) {
      EXPECT_EQ(error["type"], "authentication_error") << c.name;
    }
    if (c.status == 400) {
      EXPECT_EQ(error["type"], "invalid_request_error") << c.name;
    }
  }
  httplib::Headers auth = {{"Authorization", "Bearer " + kKey}};
  auto ok =
      client->Post("/v1/chat/completions", auth, with_field(true, "n", "1"), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
}  // namespace strata::server::testing
