#include "serve/run.h"

#include <memory>

#include <fmt/format.h>

#include "model/interval.h"
#include "model/lines.h"
#include "serve/textfile.h"

namespace schedhot {

int serve(const ServeRequest& req) {
  const auto& say = req.say;
  Published pub;
#ifndef SCHEDHOT_NO_HTTP
  const WebConfig& web = req.web;
  const BasicAuth auth(web.users);
  // The address is taken and the server started before any probe attaches: a port in use
  // or a TLS setup GnuTLS refuses stops here (scrapes get 503 until the first sample).
  std::unique_ptr<HttpServer> http;
  if (!req.listen_text.empty()) {
    std::string why;
    ListenAddr listen = req.listen;
    const int fd = open_listener(listen, why);
    if (fd < 0) {
      say(fmt::format("--listen {}: cannot listen there: {}", req.listen_text, why));
      return 1;
    }
    const bool verbose = req.live.probes.verbose;
    const HttpLimits limits{fit_connections(req.max_connections), req.timeout_ms, verbose};
    http = std::make_unique<HttpServer>(HttpSetup{&pub, req.per_cpu, &auth, web.headers, &web.tls, verbose},
                                        std::chrono::milliseconds(req.timeout_ms), limits.max_connections);
    if (std::string problem = http->start(fd, limits, web.tls); !problem.empty()) {
      say(fmt::format("--listen {}: {}", req.listen_text, problem));
      return 1;
    }
  }
#endif
  LiveOptions lo = req.live;
  lo.run_stats = true;
  auto sess = std::make_unique<LiveSession>(std::move(lo));  // LiveError: the caller prints it

  std::string where;
#ifndef SCHEDHOT_NO_HTTP
  if (!req.listen_text.empty())
    where = fmt::format(" on {}://{}/metrics{}{}", web.tls.enabled() ? "https" : "http", req.listen.shown,
                        req.listen.every ? " (every address)" : "",
                        web.users.empty() ? "" : fmt::format(" (basic auth: {} user{})", web.users.size(), web.users.size() == 1 ? "" : "s"));
#endif
  const std::string& textfile = req.textfile;
  if (!req.quiet)
    say(fmt::format("serving {} of {} probes{}{} every {:.3f} s (BPF run time {}); Ctrl-C or SIGTERM stops",
                    sess->attached_count(), sess->statuses().size(), where,
                    textfile.empty() ? "" : fmt::format(" to {}/schedhot.prom", textfile), req.live.interval_ns / 1e9,
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
    if (n == 1 && req.per_cpu.on) say(per_cpu_notice(*st, req.per_cpu));
    if (!textfile.empty()) {
      // A directory gone or full does not stop serving (HTTP goes on): said once, retried
      // every interval, said again when it works.
      try {
        write_textfile(textfile, render_metrics(*st, MetricsOptions{false, req.per_cpu}), textfile_written);
        if (textfile_failing) say(fmt::format("--textfile {}: written again", textfile));
        textfile_failing = false;
      } catch (const std::exception& e) {
        if (!textfile_failing) say(fmt::format("warning: {}; serving on, retrying every interval", e.what()));
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
  if (!textfile.empty()) remove_textfile(textfile, textfile_written);
  if (!req.quiet) say(fmt::format("served {} samples{}", n, req.live.stop && req.live.stop->load() ? " (stopped by signal)" : ""));
  return 0;
}

}  // namespace schedhot
