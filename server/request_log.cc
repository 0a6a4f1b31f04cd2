#include "server/request_log.h"

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

namespace strata::server {

bool CorsPolicy::allows(std::string_view origin) const {
  if (origin.empty()) return false;
  return std::any_of(origins_.begin(), origins_.end(),
                     [origin](const std::string& o) { return o == "*" || o == origin; });
}

HttpHeaders CorsPolicy::headers(std::string_view origin) const {
  if (!allows(origin)) return {};
  // The origin itself rather than "*": credentials (the API key) may then be sent too.
  return {{"Access-Control-Allow-Origin", std::string(origin)},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers", "Retry-After"}};
}

HttpResponse CorsPolicy::preflight(const HttpRequest& request) const {
  const std::string origin = request.header("Origin");
  if (!allows(origin)) {
    return {403,
            "application/json",
            {},
            R"({"error":{"message":"this origin may not call the API: start the server with )"
            R"(--cors-origins naming it","type":"invalid_request_error","param":null,)"
            R"("code":null}})"};
  }
  HttpHeaders h = headers(origin);
  h.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  h.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
  h.emplace_back("Access-Control-Max-Age", "600");
  return {204, "text/plain", std::move(h), ""};
}

bool RoutedExchange::respond(HttpResponse response) {
  response.headers.insert(response.headers.end(), extra_.begin(), extra_.end());
  return inner_.respond(std::move(response));
}

bool RoutedExchange::begin_stream(const HttpResponse& head) {
  HttpResponse with = head;
  with.headers.insert(with.headers.end(), extra_.begin(), extra_.end());
  return inner_.begin_stream(with);
}

std::string RoutedExchange::log_line(LogFormat format) const {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const HttpRequest& r = request();
  if (format == LogFormat::kJson) {
    nlohmann::ordered_json j = {{"time", when},
                                {"method", r.method},
                                {"path", r.path},
                                {"status", status()},
                                {"duration_ms", ms}};
    for (const auto& [key, value] : annotations()) j[key] = value;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  char head[64];
  std::snprintf(head, sizeof head, " %d %.1fms", status(), ms);
  std::string line = std::string(when) + " " + r.method + " " + r.path + head;
  for (const auto& [key, value] : annotations()) line += " " + key + "=" + value;
  return line;
}

}  // namespace strata::server
