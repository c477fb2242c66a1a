// serve's router: which answer a request target gets. Pure (no libmicrohttpd), so the
// unit tests check it byte by byte; serve/http.cpp hands it the target as it came on the
// request line (libmicrohttpd's own unescaping is off: it decoded "%00" to a NUL that cut
// the C string, so "/metrics%00.txt" answered as /metrics).
#pragma once
#include <string>

namespace schedhot {

/// What a request target names.
enum class Route {
  index,      ///< "/": the link page
  metrics,    ///< "/metrics" (any query string)
  asterisk,   ///< "*" (OPTIONS's asterisk-form)
  not_found,  ///< any other path: 404
  bad,        ///< a malformed percent-escape ("%zz", "%4"): 400
};

/// Routes the raw request target of a request line (not percent-decoded): origin-form
/// ("/metrics?x=1"), absolute-form ("http://host:port/metrics", RFC 9112 3.2.2: scheme and
/// authority dropped) or "*". The query ('?' and what follows, raw) is ignored, as
/// Prometheus' Go exporters (net/http + promhttp) ignore it; the path is then
/// percent-decoded (RFC 3986 2.1: "/metric%73" is "/metrics", as Go's URL.Path decodes it)
/// and must be exactly "/" or "/metrics" (a path not starting with '/' is no origin-form
/// target: not_found): a decoded NUL, '?', '/', a trailing byte or a
/// doubled slash ("//metrics", "/metrics/") is another path (not_found).
Route route_target(const std::string& raw_target);

}  // namespace schedhot
