// libFuzzer target: the input is the bytes a client sends on one connection. The transport's
// parser (server::parse_requests: Boost.Beast's parser with strata's limits and framing checks)
// must never crash or hang; every request it passes on respects the limits, and every refusal is
// one of the statuses the transport documents.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

#include "server/http_transport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  strata::server::TransportOptions options;
  options.max_body_bytes = 4096;  // small, so that the fuzzer reaches the limits
  options.max_header_bytes = 2048;
  options.max_header_fields = 16;
  options.max_target_bytes = 256;
  const int status =
      strata::server::parse_requests(bytes, options, [&](strata::server::HttpRequest&& request) {
        if (request.body.size() > options.max_body_bytes ||
            request.headers.size() > options.max_header_fields || request.method.empty()) {
          std::fprintf(
              stderr,
              "a request past the limits was let through (body %zu, fields %zu, method \"%s\")\n",
              request.body.size(), request.headers.size(), request.method.c_str());
          std::abort();
        }
      });
  static const std::set<int> kRefusals = {0, 400, 411, 413, 414, 415, 431, 501};
  if (kRefusals.count(status) == 0) {
    std::fprintf(stderr, "unexpected refusal status %d\n", status);
    std::abort();
  }
  return 0;
}
