// `schedhot serve`: the live figures as Prometheus metrics over HTTP (src/serve/http.h)
// and/or a node_exporter textfile (src/serve/textfile.h). The sampler (this thread) drives a
// LiveSession and publishes an immutable MetricsState after each sample.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "model/interval.h"
#include "model/lines.h"
#include "serve/http.h"
#include "serve/textfile.h"
#include "output/metrics.h"

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
#ifdef SCHEDHOT_NO_HTTP
  if (!o.listen.empty() || !o.web_config.empty()) {
    return usage_error(fmt::format("serve: this static build has no HTTP server (libmicrohttpd and GnuTLS are not linked statically){}; use --listen '' --textfile DIR",
                    o.web_config.empty() ? "" : ", so no --web-config"));
  }
#else
  ListenAddr listen;
  if (!o.listen.empty())
    if (std::string why = parse_listen(o.listen, listen); !why.empty()) return usage_error(why);
  WebConfig web;
  if (int st = read_web_config(o, web)) return st;
  const BasicAuth auth(web.users);
  Published pub;
  // The address is taken and the server started before any probe attaches: a port in use
  // or a TLS setup GnuTLS refuses stops here (scrapes get 503 until the first sample).
  std::unique_ptr<HttpServer> http;
  if (!o.listen.empty()) {
    std::string why;
    const int fd = open_listener(listen, why);
    if (fd < 0) {
      err(fmt::format("--listen {}: cannot listen there: {}", o.listen, why));
      return 1;
    }
    const HttpLimits limits{fit_connections(o.max_connections), o.timeout_ms, o.common.verbose};
    http = std::make_unique<HttpServer>(HttpSetup{&pub, o.per_cpu, &auth, web.headers, &web.tls, o.common.verbose},
                                        std::chrono::milliseconds(o.timeout_ms), limits.max_connections);
    if (std::string problem = http->start(fd, limits, web.tls); !problem.empty()) {
      err(fmt::format("--listen {}: {}", o.listen, problem));
      return 1;
    }
  }
#endif
  LiveOptions lo;
  lo.probes = o.common;
  lo.interval_ns = iv;
  lo.command_line = o.command_line;
  lo.run_stats = true;
  lo.stop = &g_stop;
  lo.warn = err;
  auto sess = std::make_unique<LiveSession>(std::move(lo));  // LiveError: main prints it
#ifdef SCHEDHOT_NO_HTTP
  Published pub;
#endif

  std::string where;
#ifndef SCHEDHOT_NO_HTTP
  if (!o.listen.empty())
    where = fmt::format(" on {}://{}/metrics{}{}", web.tls.enabled() ? "https" : "http", listen.shown,
                        listen.every ? " (every address)" : "",
                        web.users.empty() ? "" : fmt::format(" (basic auth: {} user{})", web.users.size(), web.users.size() == 1 ? "" : "s"));
#endif
  if (!o.quiet)
    err(fmt::format("serving {} of {} probes{}{} every {:.3f} s (BPF run time {}); Ctrl-C or SIGTERM stops",
                    sess->attached_count(), sess->statuses().size(), where,
                    o.textfile.empty() ? "" : fmt::format(" to {}/schedhot.prom", o.textfile), iv / 1e9,
                    sess->run_stats_on() ? "measured" : "absent: " + sess->run_stats_error()));

  Sample s, prev;
  bool have_prev = false, textfile_failing = false;
  TextfileWritten textfile_written;
  uint64_t n = 0;
  std::unique_ptr<CoherenceAccumulator> acc;
  LineTransferTotals line_totals(sess->meta());  // every line the attached probes can touch, at 0
  while (sess->next(s)) {
    auto st = std::make_shared<MetricsState>();
    st->meta = sess->meta();
    if (!acc) acc = std::make_unique<CoherenceAccumulator>(sess->meta());
    if (have_prev) {
      const Interval last(sess->meta(), prev, s);
      line_totals.add(acc->of(last));
    }
    st->lines = line_totals.totals();
    st->lost_samples = sess->lost_samples();
    st->samples = ++n;
    if (sess->run_stats_on()) {
      st->bpf_run_ns = sess->run_totals().run_ns;
      st->bpf_runs = sess->run_totals().runs;
    }
    st->last = s;
    // Hundreds of series a CPU: say how many, counted on the first scrape's own rendering.
    if (n == 1 && o.per_cpu.on) err(per_cpu_notice(*st, o.per_cpu));
    if (!o.textfile.empty()) {
      // A directory gone or full does not stop serving (HTTP goes on): said once, retried
      // every interval, said again when it works.
      try {
        write_textfile(o.textfile, render_metrics(*st, MetricsOptions{false, o.per_cpu}), textfile_written);
        if (textfile_failing) err(fmt::format("--textfile {}: written again", o.textfile));
        textfile_failing = false;
      } catch (const std::exception& e) {
        if (!textfile_failing) err(fmt::format("warning: {}; serving on, retrying every interval", e.what()));
        textfile_failing = true;
      }
    }
    pub.set(std::move(st));
    prev = s;
    have_prev = true;
  }
#ifndef SCHEDHOT_NO_HTTP
  if (http) http->stop();
#endif
  // The file would go on showing the last figures as live (node_exporter exports them as
  // they are): it leaves with serve (only the file serve put there).
  if (!o.textfile.empty()) remove_textfile(o.textfile, textfile_written);
  if (!o.quiet) err(fmt::format("served {} samples{}", n, g_stop.load() ? " (stopped by signal)" : ""));
  return 0;
}

}  // namespace schedhot::cli
