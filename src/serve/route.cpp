#include "serve/route.h"

#include <strings.h>

#include <cstring>

namespace schedhot {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Route route_target(const std::string& raw_target) {
  if (raw_target == "*") return Route::asterisk;
  std::string u = raw_target;
  for (const char* scheme : {"http://", "https://"}) {
    const size_t n = std::strlen(scheme);
    if (u.size() >= n && strncasecmp(u.c_str(), scheme, n) == 0) {
      const size_t slash = u.find('/', n);
      u = slash == std::string::npos ? "/" : u.substr(slash);
      break;
    }
  }
  if (const size_t q = u.find('?'); q != std::string::npos) u.resize(q);  // the query, before decoding
  if (u.empty() || u[0] != '/') return Route::not_found;                    // not origin-form ("%2Fmetrics")
  std::string path;
  path.reserve(u.size());
  for (size_t i = 0; i < u.size(); ++i) {
    if (u[i] != '%') {
      path += u[i];
      continue;
    }
    const int hi = i + 2 < u.size() ? hex_value(u[i + 1]) : -1, lo = i + 2 < u.size() ? hex_value(u[i + 2]) : -1;
    if (hi < 0 || lo < 0) return Route::bad;
    path += static_cast<char>(hi * 16 + lo);  // a NUL stays in the string: it is compared, never cuts
    i += 2;
  }
  if (path == "/") return Route::index;
  if (path == "/metrics") return Route::metrics;
  return Route::not_found;
}

}  // namespace schedhot
