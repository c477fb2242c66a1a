// `schedhot serve`'s run: the HTTP server (serve/http.h) started before any probe attaches,
// then a LiveSession sampled every interval, each sample published as an immutable
// MetricsState (output/metrics.h) for the scrapes and, with --textfile, written to
// DIR/schedhot.prom (serve/textfile.h); at the stop, the server stopped and the file removed.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "live/session.h"
#include "output/metrics.h"
#include "serve/http.h"  // Published; ListenAddr and WebConfig unless SCHEDHOT_NO_HTTP

namespace schedhot {

/// One `schedhot serve`, parsed and checked (cli/cmd_serve.cpp).
struct ServeRequest {
  LiveOptions live;             ///< probes, interval, command line, stop; run_stats is turned on
#ifndef SCHEDHOT_NO_HTTP
  std::string listen_text;      ///< --listen as given, for messages ("" = no HTTP)
  ListenAddr listen;            ///< parse_listen() of it
  WebConfig web;                ///< --web-config, loaded (default: no TLS, no users)
  int max_connections = 2048;   ///< as given (fit_connections() applies the process's limit)
  int timeout_ms = 2000;
#endif
  std::string textfile;         ///< --textfile DIR ("" = none), checked (check_textfile_dir)
  PerCpu per_cpu;               ///< --per-cpu
  bool quiet = false;           ///< no progress lines
  std::function<void(const std::string&)> say;  ///< one line on stderr (progress, warnings)
};

/// Serves until req.live.stop is set: 0 then. 1 with one line said when the address cannot
/// be listened on or the TLS setup is refused (before any probe attaches). Throws LiveError
/// when no probe attaches (live/session.h). A textfile that cannot be written is said once
/// and retried every interval; serving goes on.
int serve(const ServeRequest& req);

}  // namespace schedhot
