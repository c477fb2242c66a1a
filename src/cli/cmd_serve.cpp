// `schedhot serve`: the live figures as Prometheus metrics over HTTP (libmicrohttpd) and/or a
// node_exporter textfile. The sampler (this thread) publishes an immutable MetricsState
// after each sample; libmicrohttpd's two epoll threads render from the latest one, so a
// scrape never blocks the sampler, and an idle or slow connection holds a socket, not a
// thread: connections are bounded (--max-connections), each must send its request head
// within --timeout-ms (HeadDeadlines cuts it otherwise; and when too many connections wait
// for their head, overall or from one address, it cuts the oldest, so a new one always gets
// in), and a connection serves one request. --web-config (sys/web_config.h) adds
// TLS (GnuTLS, through libmicrohttpd) and basic auth, whose bcrypt runs on one checker
// thread (AuthChecker) while the connection waits suspended, so it holds no HTTP thread.
#ifndef SCHEDHOT_NO_HTTP
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>

#include "sys/web_config.h"
#endif
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "cli/commands.h"
#include "model/interval.h"
#include "model/lines.h"
#include "sample/sampler.h"
#include "view/metrics.h"

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
using Clock = std::chrono::steady_clock;

/// --listen parsed: where to bind, and how to print it.
struct ListenAddr {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string shown;  ///< for the URL: "127.0.0.1:9870", "[::1]:9870", "HOST:9870" (every address)
  bool every = false; ///< ":PORT": every address, IPv6 and IPv4 (node_exporter's style)
};

/// Parses --listen: "IPv4:PORT", "[IPv6]:PORT", "localhost:PORT" or ":PORT" (every address);
/// PORT 1..65535. Returns "" or the one-line problem (a usage error).
std::string parse_listen(const std::string& s, ListenAddr& out) {
  const std::string hint = "give ADDRESS:PORT: 127.0.0.1:9870, [::1]:9870, or :9870 for every address";
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || (!s.empty() && s.front() == '[' && s.find(']') > colon))  // "[::1]": no port
    return fmt::format("--listen {}: no port; {}", s, hint);
  std::string host = s.substr(0, colon);
  const std::string port_s = s.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  const long port = port_s.empty() ? -1 : std::strtol(port_s.c_str(), &end, 10);
  if (port_s.empty() || *end != '\0' || errno != 0 || port < 1 || port > 65535 || port_s[0] == '+' || port_s[0] == '-')
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

/// The path of a request target: origin-form as is; absolute-form ("http://host:port/path",
/// RFC 9112 3.2.2, which a server must accept) without its scheme and authority; the query
/// dropped. "*" (OPTIONS's asterisk-form) stays "*".
std::string target_path(const char* url) {
  std::string u = url ? url : "";
  for (const char* scheme : {"http://", "https://"}) {
    const size_t n = std::strlen(scheme);
    if (u.size() >= n && strncasecmp(u.c_str(), scheme, n) == 0) {
      const size_t slash = u.find('/', n);
      u = slash == std::string::npos ? "/" : u.substr(slash);
      break;
    }
  }
  if (const size_t q = u.find('?'); q != std::string::npos) u.resize(q);
  return u;
}

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
        if (ctx->verbose) err(fmt::format("http: {}: {}", client_ip(c), why));
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
  const std::string path = target_path(url);
  const std::string m = method ? method : "";
  if (path == "*") {
    if (m == "OPTIONS") return send(c, *ctx, MHD_HTTP_OK, kText, "", {{"Allow", "GET, HEAD, OPTIONS"}});
    return send(c, *ctx, MHD_HTTP_BAD_REQUEST, kText, "bad request: '*' is OPTIONS's target only\n");
  }
  if (path != "/" && path != "/metrics")
    return send(c, *ctx, MHD_HTTP_NOT_FOUND, kText, "not found: only /metrics and / are served\n");
  if (m == "OPTIONS") return send(c, *ctx, MHD_HTTP_OK, kText, "", {{"Allow", "GET, HEAD, OPTIONS"}});
  if (m != "GET" && m != "HEAD")
    return send(c, *ctx, MHD_HTTP_METHOD_NOT_ALLOWED, kText, "method not allowed: only GET\n", {{"Allow", "GET, HEAD, OPTIONS"}});
  if (path == "/")
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
  err(fmt::format("http: {}", line));
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

/// Head-pending connections (HeadDeadlines) kept below --max-connections by this reserve (an
/// eighth, at most 256), so libmicrohttpd, at --max-connections, never refuses or stops
/// accepting because of them: the reserve holds the connections being answered and those
/// cut but not closed yet. Per client address: a quarter of --max-connections.
size_t head_pending_total(int max_connections) {
  const int reserve = std::min(256, max_connections / 8);
  return static_cast<size_t>(std::max(1, max_connections - reserve));
}
size_t head_pending_per_address(int max_connections) { return static_cast<size_t>(std::max(1, max_connections / 4)); }

/// The HTTP server: libmicrohttpd on the listening socket, with its deadlines and checker.
class HttpServer {
 public:
  HttpServer(HttpCtx ctx, std::chrono::milliseconds head_limit, int max_connections)
      : ctx_(std::move(ctx)),
        deadlines_(head_limit, head_pending_total(max_connections), head_pending_per_address(max_connections)) {
    ctx_.deadlines = &deadlines_;
    if (ctx_.auth->enabled()) {
      checker_ = std::make_unique<AuthChecker>(*ctx_.auth);
      ctx_.checker = checker_.get();
    }
  }
  /// Starts serving on listen_fd (taken over). Returns "" or why not (one line).
  std::string start(int listen_fd, const ServeCmd& o, const TlsServerConfig& tls) {
    verbose_ = o.common.verbose;
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
        err(fmt::format("http: connections without a request head: {} cut at the deadline, {} evicted by newer ones",
                        deadlines_.cut(), deadlines_.evicted()));
    }
    d_ = nullptr;
  }
  ~HttpServer() { stop(); }

 private:
  HttpCtx ctx_;
  HeadDeadlines deadlines_;
  std::unique_ptr<AuthChecker> checker_;
  std::string priorities_;
  bool verbose_ = false;
  MHD_Daemon* d_ = nullptr;
};

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
  err(fmt::format("warning: --max-connections {}: the file descriptor limit ({}) holds {}", want, rl.rlim_cur, fit));
  return fit;
}

#endif  // SCHEDHOT_NO_HTTP

/// --max-connections and --timeout-ms: the largest values taken.
constexpr int kMaxConnections = 65536, kMaxTimeoutMs = 600000;

/// dir/schedhot.prom as serve last renamed it there: removed at exit only if it is still that
/// file (another user's file or link put there since is left alone).
using TextfileWritten = OwnedFile;

/// Writes text to dir/schedhot.prom through a new temporary file of an unpredictable name
/// (create_temp: O_EXCL, so never a planted link, FIFO or file) renamed over it, so a reader
/// sees the old file or the new one, never a part, and a link planted at schedhot.prom is
/// replaced, not written through. On failure only that temporary file is removed. Throws
/// std::runtime_error, one line.
void write_textfile(const std::string& dir, const std::string& text, TextfileWritten& written) {
  const std::string dst = dir + "/schedhot.prom";
  OwnedFile tmp;
  const int fd = create_temp(dir + "/.schedhot.prom.XXXXXX", tmp);
  if (fd < 0) throw std::runtime_error(fmt::format("--textfile: cannot create a file in {}: {}", dir, std::strerror(errno)));
  auto fail = [&](const char* what, int e) {
    ::close(fd);
    tmp.remove();
    return std::runtime_error(fmt::format("--textfile: cannot {} {}: {}", what, tmp.path(), std::strerror(e)));
  };
  if (::fchmod(fd, 0644) != 0) throw fail("chmod", errno);  // mkostemp's 0600: node_exporter may run as another user
  if (const int e = write_fully(fd, text.data(), text.size())) throw fail("write", e);
  ::close(fd);
  if (const int e = tmp.replace(dst))  // the temporary file removed
    throw std::runtime_error(fmt::format("--textfile: cannot rename {} to {}: {}", tmp.path(), dst, std::strerror(e)));
  written = tmp;
}

/// At exit: dir/schedhot.prom removed if it is still the file serve last put there.
void remove_textfile(const std::string& dir, const TextfileWritten& written) {
  if (written.path() == dir + "/schedhot.prom") written.remove();
}

/// A --textfile directory others may write to without the sticky bit (or owned by another
/// user) lets them replace or remove schedhot.prom: said once at start-up.
void warn_textfile_dir(const std::string& dir, const struct stat& st) {
  std::string why;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    why = fmt::format("writable by {} without the sticky bit (mode {:04o})",
                      (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777);
  else if (st.st_uid != 0 && st.st_uid != ::geteuid())
    why = fmt::format("owned by uid {}", st.st_uid);
  if (!why.empty())
    err(fmt::format("warning: --textfile {}: {}: another user can replace or remove schedhot.prom there "
                    "(node_exporter's textfile directory should be root's, mode 0755)",
                    dir, why));
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
  if (!o.textfile.empty()) {
    struct stat st {};
    if (::stat(o.textfile.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(o.textfile.c_str(), W_OK) != 0) {
      const int e = errno;
      return usage_error(fmt::format("--textfile {}: not a writable directory ({})", o.textfile,
                                     ::stat(o.textfile.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) ? "not a directory" : std::strerror(e)));
    }
    warn_textfile_dir(o.textfile, st);
  }
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
    ServeCmd fitted = o;
    fitted.max_connections = fit_connections(o.max_connections);
    http = std::make_unique<HttpServer>(HttpCtx{&pub, o.per_cpu, &auth, nullptr, web.headers, &web.tls, nullptr, o.common.verbose},
                                        std::chrono::milliseconds(o.timeout_ms), fitted.max_connections);
    if (std::string problem = http->start(fd, fitted, web.tls); !problem.empty()) {
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
