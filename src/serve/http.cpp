#ifndef SCHEDHOT_NO_HTTP
#include "serve/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdarg>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "serve/route.h"
#include "sys/console.h"

namespace schedhot {

using Clock = std::chrono::steady_clock;

/// Parses --listen: "IPv4:PORT", "[IPv6]:PORT", "localhost:PORT" or ":PORT" (every address);
/// PORT 1..65535. Returns "" or the one-line problem (a usage error).
std::string parse_listen(const std::string& s, ListenAddr& out) {
  const std::string hint = "give ADDRESS:PORT: 127.0.0.1:9870, [::1]:9870, or :9870 for every address";
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos && !s.empty() && s.find_first_not_of("0123456789") == std::string::npos)
    return fmt::format("--listen {}: a port without an address; {}", s, hint);  // "9870"
  if (colon == std::string::npos || (!s.empty() && s.front() == '[' && s.find(']') > colon))  // "[::1]": no port
    return fmt::format("--listen {}: no port; {}", s, hint);
  std::string host = s.substr(0, colon);
  const std::string port_s = s.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  const long port = port_s.empty() ? -1 : std::strtol(port_s.c_str(), &end, 10);
  if (port_s.empty() || *end != '\0' || errno != 0 || port < 1 || port > 65535 ||
      port_s.find_first_not_of("0123456789") != std::string::npos)  // strtol took " 9870", "+9870"
    return fmt::format("--listen {}: port '{}' is not 1..65535", s, port_s);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  if (host.empty() && !bracketed) {
    out.every = true;
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&out.addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_any;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    out.len = sizeof(sockaddr_in6);
    out.shown = fmt::format("HOST:{}", port);
    return "";
  }
  if (host == "localhost" && !bracketed) host = "127.0.0.1";
  if (bracketed) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&out.addr);
    if (::inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) != 1)
      return fmt::format("--listen {}: '{}' is not an IPv6 address; {}", s, host, hint);
    if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr))  // the IPv6-only listener cannot bind it (EINVAL)
      return fmt::format("--listen {}: an IPv4-mapped address: give the IPv4 address without brackets; {}", s, hint);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    out.len = sizeof(sockaddr_in6);
    out.shown = fmt::format("[{}]:{}", host, port);
    return "";
  }
  auto* a4 = reinterpret_cast<sockaddr_in*>(&out.addr);
  if (::inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1)
    return fmt::format("--listen {}: '{}' is not an IPv4 address (IPv6 goes in brackets; host names are not looked up); {}", s,
                       host, hint);
  a4->sin_family = AF_INET;
  a4->sin_port = htons(static_cast<uint16_t>(port));
  out.len = sizeof(sockaddr_in);
  out.shown = fmt::format("{}:{}", host, port);
  return "";
}

/// A listening TCP socket on a (":PORT": IPv6 with IPv4 mapped, or IPv4 alone where the
/// host has no IPv6). Returns the fd, or -1 with why set to one line.
int open_listener(ListenAddr& a, std::string& why) {
  int fd = ::socket(a.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 && a.every && (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT)) {
    a.addr = {};
    auto* a4 = reinterpret_cast<sockaddr_in*>(&a.addr);
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
    a4->sin_port = reinterpret_cast<sockaddr_in6*>(&a.addr)->sin6_port;
    a.len = sizeof(sockaddr_in);
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  }
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  const int one = 1, zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (a.addr.ss_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, a.every ? &zero : &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

namespace {

/// The client's address as text ("127.0.0.1", "::1"), the key of the per-client limits.
std::string client_ip(MHD_Connection* c) {
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  char b[INET6_ADDRSTRLEN] = "?";
  if (ci && ci->client_addr) {
    if (ci->client_addr->sa_family == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(ci->client_addr)->sin_addr, b, sizeof b);
    else if (ci->client_addr->sa_family == AF_INET6)
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(ci->client_addr)->sin6_addr, b, sizeof b);
  }
  return b;
}

/// Connections that have not sent their request head (or finished their TLS handshake)
/// yet, "head-pending": cut at the deadline, and evicted when too many. The deadline:
/// libmicrohttpd's own timeout counts from the last byte, so a slowloris client sending a
/// byte a second would hold its socket for ever. Eviction: a client that only opens
/// connections must not lock out a scraper, even one from its own address, so a new
/// connection is never refused for being one too many: when its address already has
/// per_address head-pending connections, that address's oldest is cut; else when
/// head-pending connections number total, the oldest of all is cut. The newest always gets
/// in, and a scraper's connection, which sends its head at once, is never the oldest for
/// long. Connections are registered when accepted (on the accepting thread: the eviction
/// there) and let go when their request head is in or they close; cutting is shutdown(2)
/// of the socket, which libmicrohttpd then closes; a thread cuts those past their deadline.
class HeadDeadlines {
 public:
  HeadDeadlines(std::chrono::milliseconds limit, size_t total, size_t per_address)
      : limit_(limit), total_(std::max<size_t>(1, total)), per_address_(std::max<size_t>(1, per_address)),
        thread_([this] { run(); }) {}
  ~HeadDeadlines() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void started(MHD_Connection* c, int fd, std::string address) {
    std::lock_guard<std::mutex> g(mu_);
    auto& mine = by_address_[address];
    if (mine.size() >= per_address_) {
      cut(mine.begin()->second, evicted_);
    } else if (open_.size() >= total_) {
      cut(order_.begin()->second, evicted_);
    }
    const uint64_t seq = ++seq_;
    auto& list = by_address_[address];  // cut() may have dropped the address's list
    open_[c] = {fd, Clock::now() + limit_, seq, std::move(address)};
    order_[seq] = c;
    list[seq] = c;
  }
  /// The request head arrived, or the connection closes (before libmicrohttpd closes its fd).
  void done(MHD_Connection* c) {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = open_.find(c); it != open_.end()) forget(it);
  }
  uint64_t cut() const { return cut_.load(); }
  uint64_t evicted() const { return evicted_.load(); }

 private:
  struct Entry {
    int fd;
    Clock::time_point deadline;
    uint64_t seq;  ///< order of acceptance: the oldest first (their deadlines too)
    std::string address;
  };
  using Open = std::unordered_map<MHD_Connection*, Entry>;
  void forget(Open::iterator it) {
    order_.erase(it->second.seq);
    auto a = by_address_.find(it->second.address);
    a->second.erase(it->second.seq);
    if (a->second.empty()) by_address_.erase(a);
    open_.erase(it);
  }
  /// Shuts the connection's socket down (libmicrohttpd closes it) and lets it go. Under mu_.
  void cut(MHD_Connection* c, std::atomic<uint64_t>& count) {
    auto it = open_.find(c);
    ::shutdown(it->second.fd, SHUT_RDWR);
    count.fetch_add(1);
    forget(it);
  }
  void run() {
    std::unique_lock<std::mutex> g(mu_);
    while (!stop_) {
      cv_.wait_for(g, std::chrono::milliseconds(100));
      const auto now = Clock::now();
      while (!order_.empty() && open_.at(order_.begin()->second).deadline <= now) cut(order_.begin()->second, cut_);
    }
  }
  const std::chrono::milliseconds limit_;
  const size_t total_, per_address_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t seq_ = 0;
  Open open_;
  std::map<uint64_t, MHD_Connection*> order_;                                           ///< seq -> connection
  std::unordered_map<std::string, std::map<uint64_t, MHD_Connection*>> by_address_;  ///< per client address
  std::atomic<uint64_t> cut_{0}, evicted_{0};
  std::thread thread_;  ///< last: started once the rest is built
};

/// The bcrypt checks of basic auth, off the HTTP threads: a request whose credentials
/// BasicAuth::quick() cannot answer is suspended (MHD_suspend_connection) and queued here;
/// one detached thread runs its bcrypt and resumes it. Bounded: at most kQueueMax checks
/// waiting, and per client address a budget of kBurst checks that did not pass, refilled
/// at kRefillPerSecond (a failed check spends one; beyond: 429 without bcrypt). stop()
/// resumes every waiting connection refused, so serve stops without waiting for a bcrypt
/// (seconds at cost 16); the thread finishes its last one alone and touches nothing after.
class AuthChecker {
 public:
  static constexpr size_t kQueueMax = 16, kClientsMax = 4096;
  static constexpr double kBurst = 5, kRefillPerSecond = 1;

  struct Job {
    BasicAuth::Pending check;
    MHD_Connection* conn = nullptr;
    std::string ip;
    enum State { kQueued, kRunning, kPassed, kFailed, kCancelled } state = kQueued;  ///< under State::mu
  };
  enum class Admit { kQueued, kClientLimited, kBusy };

  explicit AuthChecker(const BasicAuth& auth) : st_(std::make_shared<Shared>()) {
    st_->auth = &auth;
    std::thread([st = st_] { run(st); }).detach();
  }
  ~AuthChecker() { stop(); }

  /// Whether a check from ip may be queued: its client's budget (a check spent now, given
  /// back if it passes, so checks in flight count too) and the queue's room.
  Admit reserve(const std::string& ip) {
    std::lock_guard<std::mutex> g(st_->mu);
    if (st_->stopping || st_->queue.size() >= kQueueMax) return Admit::kBusy;
    Bucket& b = bucket(ip);
    if (b.tokens < 1) return Admit::kClientLimited;
    b.tokens -= 1;
    return Admit::kQueued;
  }
  /// Queues a reserved check whose connection the caller has just suspended (when serve
  /// is stopping: resumed at once, cancelled).
  void push(const std::shared_ptr<Job>& job) {
    std::lock_guard<std::mutex> g(st_->mu);
    if (st_->stopping) {
      cancel(*job);
      return;
    }
    st_->queue.push_back(job);
    st_->cv.notify_one();
  }
  /// The state of a job, read under the lock.
  Job::State state(const Job& j) const {
    std::lock_guard<std::mutex> g(st_->mu);
    return j.state;
  }
  /// Resumes every waiting or running check's connection as cancelled; later admits are busy.
  void stop() {
    std::lock_guard<std::mutex> g(st_->mu);
    if (st_->stopping) return;
    st_->stopping = true;
    for (auto& j : st_->queue) cancel(*j);
    st_->queue.clear();
    if (st_->running) cancel(*st_->running);
    st_->cv.notify_all();
  }

 private:
  struct Bucket {
    double tokens = kBurst;
    Clock::time_point at = Clock::now();
  };
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Job>> queue;
    std::shared_ptr<Job> running;
    std::map<std::string, Bucket> clients;
    const BasicAuth* auth = nullptr;  ///< valid while !stopping
    bool stopping = false;
  };

  static void cancel(Job& j) {
    if (j.state == Job::kQueued || j.state == Job::kRunning) {
      j.state = Job::kCancelled;
      MHD_resume_connection(j.conn);
    }
  }
  Bucket& bucket(const std::string& ip) {
    auto& cs = st_->clients;
    const auto now = Clock::now();
    if (cs.size() >= kClientsMax && !cs.count(ip)) {
      for (auto it = cs.begin(); it != cs.end();)  // forget the clients whose budget is whole again
        it = refill(it->second, now).tokens >= kBurst ? cs.erase(it) : std::next(it);
      if (cs.size() >= kClientsMax) {
        static Bucket empty{0, Clock::time_point::max()};
        empty.tokens = 0;
        return empty;
      }
    }
    return refill(cs[ip], now);
  }
  static Bucket& refill(Bucket& b, Clock::time_point now) {
    if (now > b.at) b.tokens = std::min(kBurst, b.tokens + std::chrono::duration<double>(now - b.at).count() * kRefillPerSecond);
    b.at = now;
    return b;
  }
  static void run(std::shared_ptr<Shared> st) {
    std::unique_lock<std::mutex> g(st->mu);
    for (;;) {
      st->cv.wait(g, [&] { return st->stopping || !st->queue.empty(); });
      if (st->stopping) return;
      std::shared_ptr<Job> j = st->queue.front();
      st->queue.pop_front();
      j->state = Job::kRunning;
      st->running = j;
      g.unlock();
      const bool ok = j->check.matches();  // seconds at cost 16: no lock held
      g.lock();
      st->running.reset();
      if (j->state != Job::kRunning) continue;  // cancelled by stop(): its connection is no longer ours
      j->state = ok ? Job::kPassed : Job::kFailed;
      if (ok) {
        st->auth->remember(j->check);
        auto it = st->clients.find(j->ip);
        if (it != st->clients.end()) it->second.tokens = std::min(kBurst, it->second.tokens + 1);
      }
      MHD_resume_connection(j->conn);
    }
  }
  std::shared_ptr<Shared> st_;
};

struct HttpCtx {
  Published* pub;
  PerCpu per_cpu;
  const BasicAuth* auth;            ///< basic_auth_users (none: every request passes)
  AuthChecker* checker;             ///< its bcrypt checks (null without users)
  std::vector<std::pair<std::string, std::string>> headers;  ///< http_server_config.headers, on every answer
  const TlsServerConfig* tls;       ///< tls_server_config (enabled(): client_auth_type checked per request)
  HeadDeadlines* deadlines;
  bool verbose;
};

/// Per request (libmicrohttpd's con_cls): the auth check in flight, if any.
struct Request {
  std::shared_ptr<AuthChecker::Job> job;
};

MHD_Result send(MHD_Connection* c, const HttpCtx& ctx, unsigned code, const char* type, const std::string& body,
                std::initializer_list<std::pair<const char*, const char*>> extra = {}) {
  MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  for (const auto& [name, value] : ctx.headers) MHD_add_response_header(r, name.c_str(), value.c_str());
  for (const auto& [name, value] : extra) MHD_add_response_header(r, name, value);
  MHD_add_response_header(r, "Connection", "close");  // one request per connection
  // HEAD: libmicrohttpd sends the headers (Content-Length of the body GET gets), no body.
  const MHD_Result q = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return q;
}

constexpr const char* kText = "text/plain; charset=utf-8";

/// libmicrohttpd's unescape callback: leaves the target as it came (route_target() decodes
/// it). Its default decoded "%00" to a NUL, which cut the C string the handler gets: a
/// request for "/metrics%00.txt" was answered as /metrics.
size_t keep_escaped(void*, MHD_Connection*, char* s) { return std::strlen(s); }

/// Every request: client_auth_type (403), HTTP/1.1 without Host (400), then without the credentials basic_auth_users
/// asks for, 401 (any path, any method; 429 when the client's failed checks are over its
/// budget, 503 when the checks queue is full or serve stops); then GET/HEAD /metrics and /
/// answer, OPTIONS (also "OPTIONS *") lists the methods; other paths 404, other methods 405.
MHD_Result handle(void* cls, MHD_Connection* c, const char* url, const char* method, const char* version, const char*,
                  size_t* upload_size, void** con_cls) {
  const auto* ctx = static_cast<const HttpCtx*>(cls);
  auto* req = static_cast<Request*>(*con_cls);
  if (!req) {
    req = new Request;
    *con_cls = req;
    ctx->deadlines->done(c);  // the request head is in
    if (ctx->tls->enabled()) {
      const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
      const std::string why = verify_client(ci ? ci->tls_session : nullptr, ctx->tls->client_auth);
      if (!why.empty()) {
        if (ctx->verbose) say(fmt::format("http: {}: {}", client_ip(c), why));
        return send(c, *ctx, MHD_HTTP_FORBIDDEN, kText, "forbidden: " + why + "\n");
      }
    }
  }
  // RFC 9112 3.2: an HTTP/1.1 request without Host is answered 400 (libmicrohttpd lets it by).
  if (version && std::strcmp(version, "HTTP/1.1") == 0 && !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"))
    return send(c, *ctx, MHD_HTTP_BAD_REQUEST, kText, "bad request: HTTP/1.1 without Host\n");
  if (*upload_size != 0) {  // a body: not read (nothing here takes one), answered below
    *upload_size = 0;
    return MHD_YES;
  }
  if (ctx->auth->enabled()) {
    bool allowed = false;
    if (req->job) {
      switch (ctx->checker->state(*req->job)) {
        case AuthChecker::Job::kPassed: allowed = true; break;
        case AuthChecker::Job::kCancelled:
          return send(c, *ctx, MHD_HTTP_SERVICE_UNAVAILABLE, kText, "serve is stopping\n");
        case AuthChecker::Job::kQueued:
        case AuthChecker::Job::kRunning: return MHD_YES;  // not resumed yet
        case AuthChecker::Job::kFailed: break;
      }
    } else {
      auto job = std::make_shared<AuthChecker::Job>();
      switch (ctx->auth->quick(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"), job->check)) {
        case BasicAuth::Quick::kAllowed: allowed = true; break;
        case BasicAuth::Quick::kRefused: break;
        case BasicAuth::Quick::kNeedsBcrypt:
          job->conn = c;
          job->ip = client_ip(c);
          switch (ctx->checker->reserve(job->ip)) {
            case AuthChecker::Admit::kQueued:
              req->job = job;
              MHD_suspend_connection(c);  // before it is queued: the checker may resume it at once
              ctx->checker->push(job);
              return MHD_YES;
            case AuthChecker::Admit::kClientLimited:
              return send(c, *ctx, MHD_HTTP_TOO_MANY_REQUESTS, kText, "too many failed authentications from this address\n",
                          {{"Retry-After", "1"}});
            case AuthChecker::Admit::kBusy:
              return send(c, *ctx, MHD_HTTP_SERVICE_UNAVAILABLE, kText, "too many authentications under way\n",
                          {{"Retry-After", "1"}});
          }
      }
    }
    if (!allowed)
      return send(c, *ctx, MHD_HTTP_UNAUTHORIZED, kText, "unauthorized\n", {{"WWW-Authenticate", "Basic realm=\"schedhot\""}});
  }
  const Route route = route_target(url ? url : "");
  const std::string m = method ? method : "";
  if (route == Route::asterisk) {
    if (m == "OPTIONS") return send(c, *ctx, MHD_HTTP_OK, kText, "", {{"Allow", "GET, HEAD, OPTIONS"}});
    return send(c, *ctx, MHD_HTTP_BAD_REQUEST, kText, "bad request: '*' is OPTIONS's target only\n");
  }
  if (route == Route::bad) return send(c, *ctx, MHD_HTTP_BAD_REQUEST, kText, "bad request: malformed percent-escape\n");
  if (route == Route::not_found)
    return send(c, *ctx, MHD_HTTP_NOT_FOUND, kText, "not found: only /metrics and / are served\n");
  if (m == "OPTIONS") return send(c, *ctx, MHD_HTTP_OK, kText, "", {{"Allow", "GET, HEAD, OPTIONS"}});
  if (m != "GET" && m != "HEAD")
    return send(c, *ctx, MHD_HTTP_METHOD_NOT_ALLOWED, kText, "method not allowed: only GET\n", {{"Allow", "GET, HEAD, OPTIONS"}});
  if (route == Route::index)
    return send(c, *ctx, MHD_HTTP_OK, "text/html; charset=utf-8",
                "<html><head><title>schedhot</title></head><body><h1>schedhot</h1>"
                "<p><a href=\"/metrics\">/metrics</a></p></body></html>\n");
  auto st = ctx->pub->get();
  if (!st) return send(c, *ctx, MHD_HTTP_SERVICE_UNAVAILABLE, kText, "no sample yet\n");
  const char* accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
  MetricsOptions o;
  o.openmetrics = accept && wants_openmetrics(accept);
  o.per_cpu = ctx->per_cpu;
  return send(c, *ctx, MHD_HTTP_OK, metrics_content_type(o.openmetrics), render_metrics(*st, o));
}

void request_done(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
  delete static_cast<Request*>(*con_cls);
  *con_cls = nullptr;
}

void connection_event(void* cls, MHD_Connection* c, void**, MHD_ConnectionNotificationCode code) {
  auto* d = static_cast<HeadDeadlines*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) d->started(c, ci->connect_fd, client_ip(c));
  } else {
    d->done(c);
  }
}

/// libmicrohttpd's log lines go to stderr only with -v.
void log_message(void* cls, const char* format, va_list ap) {
  if (!*static_cast<const bool*>(cls)) return;
  char b[512];
  std::vsnprintf(b, sizeof b, format, ap);
  std::string line(b);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  say(fmt::format("http: {}", line));
}

/// Head-pending connections (HeadDeadlines) kept below --max-connections by this reserve (an
/// eighth, at most 256), so libmicrohttpd, at --max-connections, never refuses or stops
/// accepting because of them: the reserve holds the connections being answered and those
/// cut but not closed yet. Per client address: a quarter of --max-connections.
size_t head_pending_total(int max_connections) {
  const int reserve = std::min(256, max_connections / 8);
  return static_cast<size_t>(std::max(1, max_connections - reserve));
}
size_t head_pending_per_address(int max_connections) { return static_cast<size_t>(std::max(1, max_connections / 4)); }

}  // namespace

/// The HTTP server: libmicrohttpd on the listening socket, with its deadlines and checker.
class HttpServer::Impl {
 public:
  Impl(HttpCtx ctx, std::chrono::milliseconds head_limit, int max_connections)
      : ctx_(std::move(ctx)),
        deadlines_(head_limit, head_pending_total(max_connections), head_pending_per_address(max_connections)) {
    ctx_.deadlines = &deadlines_;
    if (ctx_.auth->enabled()) {
      checker_ = std::make_unique<AuthChecker>(*ctx_.auth);
      ctx_.checker = checker_.get();
    }
  }
  /// Starts serving on listen_fd (taken over). Returns "" or why not (one line).
  std::string start(int listen_fd, const HttpLimits& o, const TlsServerConfig& tls) {
    verbose_ = o.verbose;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (tls.enabled()) flags |= MHD_USE_TLS;
    priorities_ = tls_priorities(tls);
    const unsigned limit = static_cast<unsigned>(o.max_connections);
    std::vector<MHD_OptionItem> opts = {
        {MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr},
        {MHD_OPTION_THREAD_POOL_SIZE, 2, nullptr},
        // The hard bound, above HeadDeadlines' caps; no per-IP limit (0): libmicrohttpd would refuse
        // a scraper sharing an address with idle connections, where HeadDeadlines evicts the idle.
        {MHD_OPTION_CONNECTION_LIMIT, limit, nullptr},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0, nullptr},
        // Seconds without a byte either way; the request head's own deadline is HeadDeadlines'.
        {MHD_OPTION_CONNECTION_TIMEOUT, std::max(1, (o.timeout_ms + 999) / 1000), nullptr},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 32 * 1024, nullptr},  // request line + headers, then the reply's headers
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&request_done), nullptr},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&connection_event), &deadlines_},
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&log_message), &verbose_},
        {MHD_OPTION_UNESCAPE_CALLBACK, reinterpret_cast<intptr_t>(&keep_escaped), nullptr},
    };
    if (tls.enabled()) {
      opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(tls.cert_pem.c_str())});
      opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(tls.key_pem.c_str())});
      opts.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(priorities_.c_str())});
      if (tls.client_auth != ClientAuth::kNone)  // libmicrohttpd then asks for a client certificate
        opts.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(tls.ca_pem.c_str())});
    }
    opts.push_back({MHD_OPTION_END, 0, nullptr});
    d_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &handle, &ctx_, MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
    if (!d_) {
      ::close(listen_fd);
      return "libmicrohttpd did not start (run with -v for its log)";
    }
    return "";
  }
  /// Refuses the checks under way (their connections get 503), then stops libmicrohttpd.
  void stop() {
    if (checker_) checker_->stop();
    if (d_) {
      MHD_stop_daemon(d_);
      if (verbose_)
        say(fmt::format("http: connections without a request head: {} cut at the deadline, {} evicted by newer ones",
                        deadlines_.cut(), deadlines_.evicted()));
    }
    d_ = nullptr;
  }
  ~Impl() { stop(); }

 private:
  HttpCtx ctx_;
  HeadDeadlines deadlines_;
  std::unique_ptr<AuthChecker> checker_;
  std::string priorities_;
  bool verbose_ = false;
  MHD_Daemon* d_ = nullptr;
};

HttpServer::HttpServer(HttpSetup s, std::chrono::milliseconds head_limit, int max_connections)
    : impl_(std::make_unique<Impl>(HttpCtx{s.pub, s.per_cpu, s.auth, nullptr, std::move(s.headers), s.tls, nullptr, s.verbose},
                                   head_limit, max_connections)) {}

HttpServer::~HttpServer() = default;

std::string HttpServer::start(int listen_fd, const HttpLimits& limits, const TlsServerConfig& tls) {
  return impl_->start(listen_fd, limits, tls);
}

void HttpServer::stop() { impl_->stop(); }

/// Raises RLIMIT_NOFILE's soft limit to hold want descriptors (within the hard limit).
/// Returns the connections that fit (want, or fewer with a warning).
int fit_connections(int want) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return want;
  const rlim_t need = static_cast<rlim_t>(want) + 128;  // the BPF maps and programs, the files
  if (rl.rlim_cur < need) {
    rl.rlim_cur = std::min(need, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur >= need) return want;
  const int fit = std::max(1, static_cast<int>(rl.rlim_cur) - 128);
  say(fmt::format("warning: --max-connections {}: the file descriptor limit ({}) holds {}", want, rl.rlim_cur, fit));
  return fit;
}


}  // namespace schedhot
#endif  // SCHEDHOT_NO_HTTP
