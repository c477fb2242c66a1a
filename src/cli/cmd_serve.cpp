// `schedhot serve`: the live figures as Prometheus metrics over HTTP (civetweb) and/or a
// node_exporter textfile. The sampler (this thread) publishes an immutable MetricsState
// after each sample; civetweb's worker threads render from the latest one, so a scrape
// never blocks the sampler and a slow client holds only its own worker. --web-config
// (sys/web_config.h) adds TLS (civetweb's, set up by init_ssl) and basic auth (handle()).
#ifndef SCHEDHOT_NO_HTTP
#include <civetweb.h>

#include "sys/web_config.h"
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "cli/commands.h"
#include "model/interval.h"
#include "model/lines.h"
#include "probe/attach.h"
#include "sample/probe_reader.h"
#include "sample/sampler.h"
#include "view/metrics.h"
#include "view/tui_bpfstats.h"
#include "view/tui_replay.h"

namespace schedhot::cli {

namespace {

/// The latest snapshot, swapped under a lock held only for a shared_ptr copy.
class Published {
 public:
  void set(std::shared_ptr<const MetricsState> s) {
    std::lock_guard<std::mutex> g(mu_);
    s_ = std::move(s);
  }
  std::shared_ptr<const MetricsState> get() const {
    std::lock_guard<std::mutex> g(mu_);
    return s_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const MetricsState> s_;
};

#ifndef SCHEDHOT_NO_HTTP
struct HttpCtx {
  Published* pub;
  PerCpu per_cpu;
  const BasicAuth* auth;        ///< basic_auth_users (none: every request passes)
  std::string headers;          ///< http_server_config.headers as "Name: value\r\n" lines, on every answer
  const TlsServerConfig* tls;   ///< tls_server_config (init_ssl applies it)
};

void send(mg_connection* c, const HttpCtx& ctx, int code, const char* reason, const char* type, const std::string& body,
          const char* extra = "") {
  mg_printf(c,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n%s%s"
            "Connection: close\r\n\r\n",
            code, reason, type, body.size(), ctx.headers.c_str(), extra);
  // HEAD: the headers (Content-Length of what GET would send), never a body (RFC 9110 9.3.2).
  if (std::strcmp(mg_get_request_info(c)->request_method, "HEAD") != 0) mg_write(c, body.data(), body.size());
}

/// Every request: without the credentials basic_auth_users asks for, 401 (any path, any
/// method); then GET /metrics and GET / answer; other paths 404, other methods 405.
int handle(mg_connection* c, void* data) {
  const auto* ctx = static_cast<const HttpCtx*>(data);
  if (!ctx->auth->allows(mg_get_header(c, "Authorization"))) {
    send(c, *ctx, 401, "Unauthorized", "text/plain; charset=utf-8", "unauthorized\n",
         "WWW-Authenticate: Basic realm=\"schedhot\"\r\n");
    return 401;
  }
  const mg_request_info* ri = mg_get_request_info(c);
  const std::string uri = ri->local_uri ? ri->local_uri : "";
  const bool known = uri == "/" || uri == "/metrics";
  if (!known) {
    send(c, *ctx, 404, "Not Found", "text/plain; charset=utf-8", "not found: only /metrics and / are served\n");
    return 404;
  }
  if (std::strcmp(ri->request_method, "GET") != 0 && std::strcmp(ri->request_method, "HEAD") != 0) {
    send(c, *ctx, 405, "Method Not Allowed", "text/plain; charset=utf-8", "method not allowed: only GET\n", "Allow: GET, HEAD\r\n");
    return 405;
  }
  if (uri == "/") {
    send(c, *ctx, 200, "OK", "text/html; charset=utf-8",
         "<html><head><title>schedhot</title></head><body><h1>schedhot</h1>"
         "<p><a href=\"/metrics\">/metrics</a></p></body></html>\n");
    return 200;
  }
  auto st = ctx->pub->get();
  if (!st) {
    send(c, *ctx, 503, "Service Unavailable", "text/plain; charset=utf-8", "no sample yet\n");
    return 503;
  }
  const char* accept = mg_get_header(c, "Accept");
  MetricsOptions o;
  o.openmetrics = accept && wants_openmetrics(accept);
  o.per_cpu = ctx->per_cpu;
  const std::string body = render_metrics(*st, o);
  send(c, *ctx, 200, "OK", metrics_content_type(o.openmetrics), body);  // HEAD: headers only (send())
  return 200;
}

/// civetweb's own log lines go to stderr only with -v.
bool g_verbose_http = false;
int log_message(const mg_connection*, const char* msg) {
  if (g_verbose_http) err(fmt::format("http: {}", msg));
  return 1;
}

/// civetweb's init_ssl: its SSL_CTX set up from tls_server_config (1: done, -1: failed).
int init_ssl(void* ssl_ctx, void* data) {
  const std::string problem = configure_tls(ssl_ctx, *static_cast<const HttpCtx*>(data)->tls);
  if (problem.empty()) return 1;
  err(fmt::format("--web-config: {}", problem));
  return -1;
}

/// civetweb's listening_ports for TLS: "s" after each comma-separated port.
std::string tls_ports(const std::string& listen) {
  std::string out, item;
  for (size_t i = 0; i <= listen.size(); ++i) {
    if (i == listen.size() || listen[i] == ',') {
      out += (out.empty() ? "" : ",") + item + "s";
      item.clear();
    } else {
      item += listen[i];
    }
  }
  return out;
}

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

/// Loads lib/schedhot/libcrypto.so and libssl.so (src/compat/civetweb_openssl3.h) with
/// RTLD_GLOBAL, so civetweb's dlopen("libssl.so") gets them by soname: from the build
/// tree, the install prefix (SCHEDHOT_COMPAT_DIRS) or ../lib/schedhot next to this binary.
/// Returns "" or why not (one line). Only serve with TLS needs them.
std::string load_openssl_compat(std::string& loaded_from) {
  std::vector<std::string> dirs;
  for (std::string_view rest = SCHEDHOT_COMPAT_DIRS; !rest.empty();) {
    const size_t c = rest.find(':');
    dirs.emplace_back(rest.substr(0, c));
    rest = c == std::string_view::npos ? std::string_view{} : rest.substr(c + 1);
  }
  char exe[4096];
  if (ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1); n > 0) {
    std::string e(exe, size_t(n));
    e.resize(e.rfind('/'));
    dirs.push_back(e + "/../lib/schedhot");
    dirs.push_back(e + "/lib/schedhot");
  }
  std::string why;
  for (const std::string& d : dirs) {
    if (::access((d + "/libssl.so").c_str(), R_OK) != 0) continue;
    void* crypto = ::dlopen((d + "/libcrypto.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* ssl = crypto ? ::dlopen((d + "/libssl.so").c_str(), RTLD_NOW | RTLD_GLOBAL) : nullptr;
    if (ssl) {
      loaded_from = d;
      return "";
    }
    why = ::dlerror();
  }
  return why.empty() ? fmt::format("lib/schedhot/libssl.so not found in {}", fmt::join(dirs, ", ")) : why;
}

/// civetweb's library, started (with OpenSSL when tls) by start() and stopped at scope exit.
class CivetwebLibrary {
 public:
  /// False when civetweb cannot load OpenSSL (then TLS cannot be served); why() says why.
  bool start(bool tls) {
    if (tls) {
      std::string from;
      why_ = load_openssl_compat(from);
      if (!why_.empty()) return false;
      from_ = from;
    }
    const unsigned want = tls ? MG_FEATURES_TLS : 0;
    on_ = true;
    if ((mg_init_library(want) & want) == want) return true;
    why_ = "civetweb did not start its TLS (run with -v for its log)";
    return false;
  }
  const std::string& why() const { return why_; }
  const std::string& loaded_from() const { return from_; }
  ~CivetwebLibrary() {
    if (on_) mg_exit_library();
  }

 private:
  bool on_ = false;
  std::string why_, from_;
};

#endif  // SCHEDHOT_NO_HTTP

/// Writes text to dir/schedhot.prom through dir/.schedhot.prom.tmp + rename(2), so a reader
/// sees the old file or the new one, never a part. Throws std::runtime_error, one line.
void write_textfile(const std::string& dir, const std::string& text) {
  const std::string tmp = dir + "/.schedhot.prom.tmp", dst = dir + "/schedhot.prom";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("--textfile: cannot create {}: {}", tmp, std::strerror(errno)));
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(fmt::format("--textfile: cannot write {}: {}", tmp, std::strerror(e)));
    }
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), dst.c_str()) != 0)
    throw std::runtime_error(fmt::format("--textfile: cannot rename {} to {}: {}", tmp, dst, std::strerror(errno)));
}

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
  if (!o.textfile.empty() && ::access(o.textfile.c_str(), W_OK) != 0) {
    return usage_error(fmt::format("--textfile {}: not a writable directory ({})", o.textfile, std::strerror(errno)));
  }
  if (o.max_connections < 1 || o.max_connections > 1024) {
    return usage_error(fmt::format("--max-connections {}: give 1..1024", o.max_connections));
  }
#ifdef SCHEDHOT_NO_HTTP
  if (!o.listen.empty() || !o.web_config.empty()) {
    return usage_error(fmt::format("serve: this static build has no HTTP server (Debian ships no static libcivetweb){}; use --listen '' --textfile DIR",
                    o.web_config.empty() ? "" : ", so no --web-config"));
  }
#else
  WebConfig web;
  if (int st = read_web_config(o, web)) return st;
  const BasicAuth auth(web.users);
  // civetweb loads OpenSSL as its library starts: a TLS it cannot have stops us before attaching.
  CivetwebLibrary civetweb;
  if (!o.listen.empty() && !civetweb.start(web.tls.enabled())) {
    err(fmt::format("--web-config {}: civetweb cannot load OpenSSL: {} (README \"schedhot serve\")", o.web_config,
                    civetweb.why()));
    return 1;
  }
  if (web.tls.enabled() && o.common.verbose)
    err(fmt::format("TLS: civetweb's OpenSSL through {}/libssl.so", civetweb.loaded_from()));
#endif
  int status = 0;
  auto a = attach_some(o.common, status);
  if (!a) return status;
  tui::BpfRunStats stats;
  const std::vector<int> fds = a->probes->program_fds();
  ProbeSetReader reader(*a->probes);
  LiveSource src(reader, live_meta(*a, iv, o.command_line), iv, 0, &g_stop);

  Published pub;
#ifndef SCHEDHOT_NO_HTTP
  HttpCtx hctx{&pub, o.per_cpu, &auth, "", &web.tls};
  for (const auto& [name, value] : web.headers) hctx.headers += fmt::format("{}: {}\r\n", name, value);
  const std::string ports = web.tls.enabled() ? tls_ports(o.listen) : o.listen;
  mg_context* ctx = nullptr;
  if (!o.listen.empty()) {
    g_verbose_http = o.common.verbose;
    const std::string threads = fmt::format("{}", o.max_connections);
    const std::string timeout = fmt::format("{}", o.timeout_ms);
    const char* opts[] = {"listening_ports", ports.c_str(),
                          "num_threads", threads.c_str(),         // at most this many connections served at once
                          "connection_queue", "64",               // accepted, waiting for a worker
                          "listen_backlog", "64",
                          "request_timeout_ms", timeout.c_str(),  // read and write timeouts
                          "linger_timeout_ms", "0",
                          "max_request_size", "16384",            // request line + headers (and at most 64 headers)
                          "enable_keep_alive", "no",
                          nullptr};
    mg_callbacks cb{};
    cb.log_message = log_message;
    if (web.tls.enabled()) cb.init_ssl = init_ssl;
    char ebuf[256] = "";
    unsigned ecode = 0;
    mg_error_data ed{&ecode, ebuf, sizeof ebuf};
    mg_init_data id{&cb, &hctx, opts};
    ctx = mg_start2(&id, &ed);
    if (!ctx) {
      err(fmt::format("--listen {}: {}", o.listen, ebuf[0] ? ebuf : "cannot start the HTTP server"));
      return 1;
    }
    mg_set_request_handler(ctx, "**", handle, &hctx);
  }
#endif
  std::string where;
#ifndef SCHEDHOT_NO_HTTP
  if (!o.listen.empty())
    where = fmt::format(" on {}://{}/metrics{}", web.tls.enabled() ? "https" : "http", o.listen,
                        web.users.empty() ? "" : fmt::format(" (basic auth: {} user{})", web.users.size(), web.users.size() == 1 ? "" : "s"));
#endif
  if (!o.quiet)
    err(fmt::format("serving {} of {} probes{}{} every {:.3f} s (BPF run time {}); Ctrl-C or SIGTERM stops",
                    std::count_if(a->probes->statuses().begin(), a->probes->statuses().end(),
                                  [](const ProbeStatus& p) { return p.attached; }),
                    a->probes->statuses().size(),
                    where,
                    o.textfile.empty() ? "" : fmt::format(" to {}/schedhot.prom", o.textfile), iv / 1e9,
                    stats.on() ? "measured" : "absent: " + stats.error()));

  if (o.per_cpu.on) err(per_cpu_notice(src.meta(), o.per_cpu));  // hundreds of series a CPU: say how many

  int rc = 0;
  Sample s, prev;
  bool have_prev = false;
  uint64_t lost = 0, n = 0;
  std::unique_ptr<CoherenceAccumulator> acc;
  LineTransferTotals line_totals;
  while (src.next(s)) {
    auto st = std::make_shared<MetricsState>();
    st->meta = src.meta();
    if (!acc) acc = std::make_unique<CoherenceAccumulator>(src.meta());
    if (have_prev) {
      lost += tui::missed_samples(s.mono_ns - prev.mono_ns, src.interval());
      const Interval last(src.meta(), prev, s);
      st->lines = line_totals.add(acc->of(last));
    }
    st->lost_samples = lost;
    st->samples = ++n;
    if (stats.on()) {
      const tui::BpfRunTotals t = tui::BpfRunStats::read(fds);
      st->bpf_run_ns = t.run_ns;
      st->bpf_runs = t.runs;
    }
    st->last = s;
    if (!o.textfile.empty()) {
      try {
        write_textfile(o.textfile, render_metrics(*st, MetricsOptions{false, o.per_cpu}));
      } catch (const std::exception& e) {
        err(e.what());
        rc = 1;
        break;
      }
    }
    pub.set(std::move(st));
    prev = s;
    have_prev = true;
  }
#ifndef SCHEDHOT_NO_HTTP
  if (ctx) mg_stop(ctx);
#endif
  if (!o.quiet && rc == 0) err(fmt::format("served {} samples{}", n, g_stop.load() ? " (stopped by signal)" : ""));
  return rc;
}

}  // namespace schedhot::cli
