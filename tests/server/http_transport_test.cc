// The transport's parser and framing checks, through parse_requests (the same parser and checks a
// connection applies), on requests written byte by byte.
#include "server/http_transport.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::server {
namespace {

struct Parsed {
  int status = 0;
  std::vector<HttpRequest> requests;
};

Parsed parse(const std::string& bytes, TransportOptions options = {}) {
  Parsed out;
  out.status = parse_requests(bytes, options,
                              [&](HttpRequest&& r) { out.requests.push_back(std::move(r)); });
  return out;
}

TEST(HttpTransportParse, PipelinedRequestsComeOutInOrder) {
  const Parsed p = parse(
      "GET /health?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
      "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
      "POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(p.status, 0);
  ASSERT_EQ(p.requests.size(), 3u);
  EXPECT_EQ(p.requests[0].method, "GET");
  EXPECT_EQ(p.requests[0].path, "/health");
  EXPECT_EQ(p.requests[0].query, "x=1");
  EXPECT_EQ(p.requests[0].header("host"), "a");
  EXPECT_EQ(p.requests[1].body, "{}");
  EXPECT_EQ(p.requests[2].body, "abc");
}

TEST(HttpTransportParse, FramingMistakesGetTheirStatus) {
  TransportOptions small;
  small.max_body_bytes = 8;
  small.max_header_fields = 4;
  EXPECT_EQ(parse("POST / HTTP/1.1\r\n\r\n").status, 411);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nA").status,
            400);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").status, 400);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nA").status,
            415);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").status, 501);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n123456789", small).status, 413);
  EXPECT_EQ(
      parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n123456789\r\n0\r\n\r\n",
            small)
          .status,
      413);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\na: 1\r\nb: 1\r\nc: 1\r\nd: 1\r\ne: 1\r\n\r\n", small).status,
            431);
}

// Found by http_request_fuzz: a chunked body's trailer adds fields after the head was counted.
TEST(HttpTransportParse, TrailerFieldsCountAgainstTheFieldLimit) {
  TransportOptions small;
  small.max_header_fields = 4;
  std::string request = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
  for (int i = 0; i < 20; ++i) request += "t" + std::to_string(i) + ": x\r\n";
  const Parsed p = parse(request + "\r\n", small);
  EXPECT_EQ(p.status, 431);
  EXPECT_TRUE(p.requests.empty());
}

}  // namespace
}  // namespace strata::server
