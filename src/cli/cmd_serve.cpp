// `schedhot serve`'s options checked (--listen parsed, --web-config loaded, --textfile's
// directory checked), then serve/run.h's serve().
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "output/metrics.h"
#include "serve/run.h"
#include "serve/textfile.h"

namespace schedhot::cli {

namespace {

/// `schedhot serve`: metrics for Prometheus over HTTP and/or a textfile.
struct ServeCmd {
  CommonProbeOptions common;
  std::string listen = "127.0.0.1:9870";  ///< ADDRESS:PORT, [IPv6]:PORT or :PORT ("" = no HTTP)
  std::string interval = "1";
  std::string textfile;                    ///< --textfile DIR ("" = none)
  PerCpu per_cpu;                          ///< --per-cpu[=counters|all|LIST] (output/metrics.h)
  long long max_connections = 2048;              ///< open connections at most (libmicrohttpd's limit); head-pending ones evicted oldest first past 7/8, or a quarter per address
  long long timeout_ms = 2000;                   ///< ms for the request head; idle timeout after (rounded up to s)
  std::string web_config;                  ///< --web-config FILE: TLS and basic auth (sys/web_config.h; "" = none)
  bool quiet = false;
  std::string command_line;
};

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

/// --max-connections and --timeout-ms: the largest values taken (read as long long, so a
/// value past int is this range check's refusal, not CLI11's "Could not convert").
constexpr int kMaxConnections = 65536, kMaxTimeoutMs = 600000;

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
  req.max_connections = static_cast<int>(o.max_connections);
  req.timeout_ms = static_cast<int>(o.timeout_ms);
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

CommandCall define(CLI::App& c) {
  auto o = std::make_shared<ServeCmd>();
  ServeCmd& srv = *o;
  auto per_cpu = std::make_shared<std::string>();
  add_probe_options(&c, srv.common);
  add_catch_options(&c, srv.common);
  c.add_option("--listen", srv.listen, "ADDRESS:PORT to listen on: 127.0.0.1:9870 (default), [::1]:9870, localhost:9870 (127.0.0.1), :9870 (every address); '' = no HTTP");
  c.add_option("-i,--interval", srv.interval, "sample interval, e.g. 1, 250ms (default 1 s)");
  c.add_option("--textfile", srv.textfile, "also write DIR/schedhot.prom every interval (tmp + rename; removed when serve stops)")
      ->type_name("DIR");
  CLI::Option* srv_per_cpu =
      c.add_flag("--per-cpu{counters}", *per_cpu,
                 "a cpu label on every per-probe counter (tens of series a CPU: serve prints the count); =all on every "
                 "per-probe series (histograms and counter arrays too: hundreds a CPU); =LIST only on these probes' and "
                 "metric families' (e.g. --per-cpu=idle,schedhot_cpupri_set_calls_total)")
          ->check(CLI::Validator(
              [](std::string& s) -> std::string {
                try {
                  schedhot::parse_per_cpu(s);
                } catch (const std::invalid_argument& e) {
                  const std::string w = e.what();  // CLI11 names the option itself
                  return w.rfind("--per-cpu: ", 0) == 0 ? w.substr(11) : w;
                }
                return "";
              },
              "counters|all|LIST"));
  c.add_option("--max-connections", srv.max_connections, "open connections at most (default 2048); past all but a reserve (1/8, at most 256), or past a quarter from one client address, the oldest still sending its request head is cut");
  c.add_option("--timeout-ms", srv.timeout_ms, "ms a connection has to send its request head, and without a byte either way after (default 2000)");
  c.add_option("--web-config", srv.web_config,
               "Prometheus's web config YAML, as exporters' --web.config.file: tls_server_config (HTTPS on --listen, "
               "client certificates), basic_auth_users (bcrypt), http_server_config.headers")
      ->type_name("FILE")
      ->check(kNotEmpty);
  c.add_flag("-q,--quiet", srv.quiet, "no progress messages");
  return [o, per_cpu, srv_per_cpu](const CommandLine& cl) {
    o->command_line = cl.text();
    if (srv_per_cpu->count() > 1) return usage_error("--per-cpu: given more than once (one --per-cpu, =all or =LIST)");
    if (srv_per_cpu->count() > 0) {
      try {
        o->per_cpu = parse_per_cpu(per_cpu_spec(std::vector<std::string>(cl.argv + 1, cl.argv + cl.argc), *per_cpu));
      } catch (const std::invalid_argument& e) {
        return usage_error(e.what());  // "--per-cpu=": CLI11 gave it the flag's default
      }
    }
    return run_serve(*o);
  };
}

const RegisterCommand serve_cmd{{"serve", "live metrics for Prometheus: GET /metrics (OpenMetrics or 0.0.4 text), or --textfile",
                                 30, define}};

}  // namespace

}  // namespace schedhot::cli
