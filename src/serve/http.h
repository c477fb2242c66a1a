// serve's HTTP side (libmicrohttpd): --listen parsed and bound, and the server that renders
// the latest published MetricsState for each scrape. libmicrohttpd's two epoll threads render
// from the latest snapshot, so a scrape never blocks the sampler, and an idle or slow
// connection holds a socket, not a thread: connections are bounded (--max-connections), each
// must send its request head within --timeout-ms (HeadDeadlines cuts it otherwise; and when
// too many connections wait for their head, overall or from one address, it cuts the oldest,
// so a new one always gets in), and a connection serves one request. --web-config
// (sys/web_config.h) adds TLS (GnuTLS, through libmicrohttpd) and basic auth, whose bcrypt
// runs on one checker thread (AuthChecker) while the connection waits suspended, so it holds
// no HTTP thread. The static (VM) build has no HTTP server (SCHEDHOT_NO_HTTP): only Published.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#ifndef SCHEDHOT_NO_HTTP
#include <sys/socket.h>

#include "sys/web_config.h"
#endif
#include "output/metrics.h"

namespace schedhot {

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
/// --listen parsed: where to bind, and how to print it.
struct ListenAddr {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string shown;  ///< for the URL: "127.0.0.1:9870", "[::1]:9870", "HOST:9870" (every address)
  bool every = false; ///< ":PORT": every address, IPv6 and IPv4 (node_exporter's style)
};

/// Parses --listen: "IPv4:PORT", "[IPv6]:PORT", "localhost:PORT" or ":PORT" (every address);
/// PORT 1..65535. Returns "" or the one-line problem (a usage error).
std::string parse_listen(const std::string& s, ListenAddr& out);
/// Binds and listens on a (SO_REUSEADDR; ":PORT" on IPv6 with IPv4 mapped, else IPv4).
/// Returns the socket, or -1 with why set to one line.
int open_listener(ListenAddr& a, std::string& why);

/// What every answer is made from.
struct HttpSetup {
  Published* pub = nullptr;
  PerCpu per_cpu;                   ///< --per-cpu (output/metrics.h)
  const BasicAuth* auth = nullptr;  ///< basic_auth_users (none: every request passes)
  std::vector<std::pair<std::string, std::string>> headers;  ///< http_server_config.headers, on every answer
  const TlsServerConfig* tls = nullptr;  ///< tls_server_config (enabled(): client_auth_type checked per request)
  bool verbose = false;             ///< -v: each refused request and libmicrohttpd's log on stderr
};

/// --max-connections (1..65536), --timeout-ms (ms for the request head; the idle timeout
/// after it, rounded up to s) and -v.
struct HttpLimits {
  int max_connections = 2048;
  int timeout_ms = 2000;
  bool verbose = false;
};

/// The HTTP server: libmicrohttpd on the listening socket, with its deadlines and checker.
class HttpServer {
 public:
  HttpServer(HttpSetup setup, std::chrono::milliseconds head_limit, int max_connections);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  /// Starts serving on listen_fd (taken over). Returns "" or why not (one line).
  std::string start(int listen_fd, const HttpLimits& limits, const TlsServerConfig& tls);
  /// Refuses the checks under way (their connections get 503), then stops libmicrohttpd.
  void stop();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Raises RLIMIT_NOFILE's soft limit to hold want descriptors (within the hard limit).
/// Returns the connections that fit (want, or fewer with a warning on stderr).
int fit_connections(int want);
#endif  // SCHEDHOT_NO_HTTP

}  // namespace schedhot
