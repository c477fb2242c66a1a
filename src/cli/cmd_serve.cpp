// `schedhot serve`'s options checked (--listen parsed, --web-config loaded, --textfile's
// directory checked), then serve/run.h's serve().
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "serve/run.h"
#include "serve/textfile.h"

namespace schedhot::cli {

namespace {

#ifndef SCHEDHOT_NO_HTTP
/// --web-config FILE read, checked and its certificates loaded (else one line, exit 2), and
/// the warning for basic auth without TLS. Returns 0 or the exit status.
int read_web_config(const ServeCmd& o, WebConfig& web) {
  if (o.web_config.empty()) return 0;
  if (o.listen.empty()) {
    return usage_error("--web-config with --listen '': there is no HTTP server to configure");
  }
  try {
    web = load_web_config(o.web_config);
  } catch (const std::invalid_argument& e) {
    return usage_error(fmt::format("--web-config {}", e.what()));
  }
  if (!web.users.empty() && !web.tls.enabled())
    err(fmt::format("warning: --web-config {}: basic auth without tls_server_config sends the passwords in clear text",
                    o.web_config));
  return 0;
}

#endif

/// --max-connections and --timeout-ms: the largest values taken.
constexpr int kMaxConnections = 65536, kMaxTimeoutMs = 600000;

}  // namespace

int run_serve(const ServeCmd& o) {
  uint64_t iv = 0;
  try {
    iv = parse_interval_ns(o.interval);
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  if (o.listen.empty() && o.textfile.empty()) {
    return usage_error("--listen '' and no --textfile: nothing to serve");
  }
  if (!o.textfile.empty()) check_textfile_dir(o.textfile);  // UsageError, runtime_error: main prints them
  if (o.max_connections < 1 || o.max_connections > kMaxConnections) {
    return usage_error(fmt::format("--max-connections {}: give 1..{}", o.max_connections, kMaxConnections));
  }
  if (o.timeout_ms < 1 || o.timeout_ms > kMaxTimeoutMs) {
    return usage_error(fmt::format("--timeout-ms {}: give 1..{} (ms)", o.timeout_ms, kMaxTimeoutMs));
  }
  ServeRequest req;
#ifdef SCHEDHOT_NO_HTTP
  if (!o.listen.empty() || !o.web_config.empty()) {
    return usage_error(fmt::format("serve: this static build has no HTTP server (libmicrohttpd and GnuTLS are not linked statically){}; use --listen '' --textfile DIR",
                    o.web_config.empty() ? "" : ", so no --web-config"));
  }
#else
  if (!o.listen.empty())
    if (std::string why = parse_listen(o.listen, req.listen); !why.empty()) return usage_error(why);
  if (int st = read_web_config(o, req.web)) return st;
  req.listen_text = o.listen;
  req.max_connections = o.max_connections;
  req.timeout_ms = o.timeout_ms;
#endif
  req.live.probes = o.common;
  req.live.interval_ns = iv;
  req.live.command_line = o.command_line;
  req.live.stop = &g_stop;
  req.live.warn = err;
  req.textfile = o.textfile;
  req.per_cpu = o.per_cpu;
  req.quiet = o.quiet;
  req.say = err;
  return serve(req);  // LiveError: main prints it
}

}  // namespace schedhot::cli
