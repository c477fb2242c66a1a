#include "sys/web_config.h"

#include <crypt.h>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <stdexcept>

namespace schedhot {

namespace {

[[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what) {
  const int line = at.Mark().line;
  throw std::invalid_argument(line >= 0 ? fmt::format("line {}: {}: {}", line + 1, key, what) : fmt::format("{}: {}", key, what));
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

/// Calls f(name, value) for each key of map (null: none), refusing a key not in known or
/// given twice. path names the map in messages ("" for the top).
template <class F>
void each_key(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> known, F f) {
  if (!map || map.IsNull()) return;
  if (!map.IsMap()) fail(map, path.empty() ? "the file" : path, "must be a map of keys");
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    const std::string full = path.empty() ? name : path + "." + name;
    bool ok = false;
    for (const char* k : known) ok = ok || name == k;
    if (!ok) {
      std::vector<std::string> ks(known.begin(), known.end());
      fail(kv.first, full, fmt::format("unknown key (known here: {})", join(ks, ", ")));
    }
    if (!seen.insert(name).second) fail(kv.first, full, "given twice");
    f(name, kv.second, full);
  }
}

std::string str(const YAML::Node& v, const std::string& key) {
  if (!v || v.IsNull()) return "";
  if (!v.IsScalar()) fail(v, key, "must be a string");
  return v.Scalar();
}

bool boolean(const YAML::Node& v, const std::string& key) {
  bool b = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b)) fail(v, key, "must be true or false");
  return b;
}

std::vector<std::string> strings(const YAML::Node& v, const std::string& key) {
  std::vector<std::string> out;
  if (!v || v.IsNull()) return out;
  if (!v.IsSequence()) fail(v, key, "must be a list");
  for (const auto& x : v) out.push_back(str(x, key));
  return out;
}

uint16_t tls_version(const YAML::Node& v, const std::string& key) {
  const std::string s = str(v, key);
  static const std::pair<const char*, uint16_t> kVersions[] = {
      {"TLS10", 0x0301}, {"TLS11", 0x0302}, {"TLS12", 0x0303}, {"TLS13", 0x0304}};
  for (const auto& [name, id] : kVersions)
    if (s == name) return id;
  fail(v, key, fmt::format("unknown TLS version '{}' (TLS10, TLS11, TLS12 or TLS13)", s));
}

std::string version_name(uint16_t v) { return fmt::format("TLS1{}", v - 0x0301); }

ClientAuth client_auth(const YAML::Node& v, const std::string& key) {
  const std::string s = str(v, key);
  if (s.empty() || s == "NoClientCert") return ClientAuth::kNone;
  if (s == "RequestClientCert") return ClientAuth::kRequest;
  if (s == "RequireAnyClientCert" || s == "RequireClientCert") return ClientAuth::kRequireAny;
  if (s == "VerifyClientCertIfGiven") return ClientAuth::kVerifyIfGiven;
  if (s == "RequireAndVerifyClientCert") return ClientAuth::kRequireAndVerify;
  fail(v, key,
       fmt::format("unknown '{}' (NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, "
                   "RequireAndVerifyClientCert)",
                   s));
}

/// Go's crypto/tls.CipherSuites() names (what exporter-toolkit 0.8 accepts) -> OpenSSL's
/// name; nullptr: a TLS 1.3 suite, which Go does not let a config choose (accepted, ignored).
const char* openssl_cipher(const std::string& go) {
  static const std::pair<const char*, const char*> kCiphers[] = {
      {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
      {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
      {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
      {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
      {"TLS_AES_128_GCM_SHA256", nullptr},
      {"TLS_AES_256_GCM_SHA384", nullptr},
      {"TLS_CHACHA20_POLY1305_SHA256", nullptr},
  };
  for (const auto& [g, o] : kCiphers)
    if (go == g) return o ? o : "";
  return nullptr;
}

/// A bcrypt hash as crypt(3) and Go's bcrypt write it: $2a$, $2b$ or $2y$, a cost of 04..16 (Go allows 31: days a check),
/// then 53 characters of bcrypt's base64 (22 of salt, 31 of hash).
bool is_bcrypt(const std::string& h) {
  if (h.size() != 60 || h.compare(0, 2, "$2") != 0 || std::strchr("aby", h[2]) == nullptr || h[3] != '$' || h[6] != '$')
    return false;
  if (!std::isdigit(static_cast<unsigned char>(h[4])) || !std::isdigit(static_cast<unsigned char>(h[5]))) return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > kBcryptMaxCost) return false;
  for (size_t i = 7; i < h.size(); ++i) {
    const char c = h[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '/')) return false;
  }
  return true;
}

void parse_tls(const YAML::Node& n, const std::string& dir, TlsServerConfig& t) {
  bool auth_given = false;
  YAML::Node ca_node;
  each_key(n, "tls_server_config",
           {"cert_file", "key_file", "client_auth_type", "client_ca_file", "cipher_suites", "curve_preferences",
            "min_version", "max_version", "prefer_server_cipher_suites"},
           [&](const std::string& k, const YAML::Node& v, const std::string& key) {
             auto path = [&] {
               std::string p = str(v, key);
               return p.empty() || p[0] == '/' || dir.empty() ? p : dir + "/" + p;
             };
             if (k == "cert_file") t.cert_file = path();
             else if (k == "key_file") t.key_file = path();
             else if (k == "client_ca_file") t.client_ca_file = path(), ca_node = v;
             else if (k == "client_auth_type") t.client_auth = client_auth(v, key), auth_given = !str(v, key).empty();
             else if (k == "min_version") t.min_version = tls_version(v, key);
             else if (k == "max_version") t.max_version = tls_version(v, key);
             else if (k == "prefer_server_cipher_suites") t.prefer_server_ciphers = boolean(v, key);
             else if (k == "cipher_suites") {
               for (const std::string& c : strings(v, key)) {
                 const char* o = openssl_cipher(c);
                 if (!o) fail(v, key, fmt::format("unknown cipher '{}' (Go's crypto/tls names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", c));
                 if (*o) t.ciphers.push_back(o);
               }
             } else if (k == "curve_preferences") {
               static const std::pair<const char*, const char*> kCurves[] = {
                   {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};
               for (const std::string& c : strings(v, key)) {
                 const char* o = nullptr;
                 for (const auto& [g, name] : kCurves)
                   if (c == g) o = name;
                 if (!o) fail(v, key, fmt::format("unknown curve '{}' (CurveP256, CurveP384, CurveP521, X25519)", c));
                 t.groups.push_back(o);
               }
             }
           });
  // As exporter-toolkit's ConfigToTLSConfig: nothing of these four is plain HTTP.
  if (t.cert_file.empty() && t.key_file.empty() && !auth_given && t.client_ca_file.empty()) return;
  if (t.cert_file.empty()) fail(n, "tls_server_config.cert_file", "missing");
  if (t.key_file.empty()) fail(n, "tls_server_config.key_file", "missing");
  if (!t.client_ca_file.empty() && t.client_auth == ClientAuth::kNone)
    fail(ca_node, "tls_server_config.client_ca_file", "given without a client_auth_type that asks for a client certificate");
  if (t.min_version > t.max_version)
    fail(n, "tls_server_config.min_version",
         fmt::format("{} is above max_version {}", version_name(t.min_version), version_name(t.max_version)));
}

void parse_http(const YAML::Node& n, WebConfig& c) {
  each_key(n, "http_server_config", {"headers", "http2"}, [&](const std::string& k, const YAML::Node& v, const std::string& key) {
    if (k == "http2") {
      boolean(v, key);  // schedhot serves HTTP/1.1 either way (so does Prometheus's scrape)
      return;
    }
    // exporter-toolkit's extraHTTPHeaders: these five, two with a fixed set of values.
    static const std::pair<const char*, std::vector<std::string>> kAllowed[] = {
        {"Strict-Transport-Security", {}},
        {"X-Content-Type-Options", {"nosniff"}},
        {"X-Frame-Options", {"deny", "sameorigin"}},
        {"X-XSS-Protection", {}},
        {"Content-Security-Policy", {}},
    };
    each_key(v, key, {"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "X-XSS-Protection", "Content-Security-Policy"},
             [&](const std::string& h, const YAML::Node& hv, const std::string& hkey) {
               const std::string val = str(hv, hkey);
               for (const auto& [name, values] : kAllowed) {
                 if (h != name || values.empty()) continue;
                 bool ok = false;
                 for (const auto& x : values) ok = ok || val == x;
                 if (!ok) fail(hv, hkey, fmt::format("'{}' is not one of: {}", val, join(values, ", ")));
               }
               for (char ch : val)
                 if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) fail(hv, hkey, "a control character in the value");
               c.headers.emplace_back(h, val);
             });
  });
}

std::string ssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no OpenSSL error";
  char b[256];
  ERR_error_string_n(e, b, sizeof b);
  return b;
}

int accept_any_certificate(int, X509_STORE_CTX*) { return 1; }

}  // namespace

WebConfig parse_web_config(const std::string& text, const std::string& dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("line {}: not YAML: {}", e.mark.line + 1, e.msg));
  }
  WebConfig c;
  each_key(root, "", {"tls_server_config", "http_server_config", "basic_auth_users"},
           [&](const std::string& k, const YAML::Node& v, const std::string& key) {
             if (k == "tls_server_config") parse_tls(v, dir, c.tls);
             else if (k == "http_server_config") parse_http(v, c);
             else {
               if (v && !v.IsNull() && !v.IsMap()) fail(v, key, "must be a map of user: bcrypt hash");
               if (!v || v.IsNull()) return;
               for (const auto& u : v) {
                 const std::string user = str(u.first, key);
                 const std::string ukey = key + "." + user;
                 const std::string hash = str(u.second, ukey);
                 if (user.empty()) fail(u.first, key, "an empty user name");
                 if (user.find(':') != std::string::npos) fail(u.first, ukey, "a ':' in the user name (basic auth splits there)");
                 if (!is_bcrypt(hash))
                   fail(u.second, ukey, "not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04..16 (a check at cost 16 takes about 3 s; 10 is usual), 60 characters; `htpasswd -nbBC 10 USER PW` makes one)");
                 if (!c.users.emplace(user, hash).second) fail(u.first, ukey, "given twice");
               }
             }
           });
  return c;
}

namespace {

/// "" when path names a regular file of at most max_bytes (checked on the opened file, so
/// a FIFO or device never blocks or streams for ever), else why not.
std::string not_a_small_file(const std::string& path, off_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat st {};
  const int r = ::fstat(fd, &st);
  const int e = errno;
  ::close(fd);
  if (r != 0) return std::strerror(e);
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_size > max_bytes) return fmt::format("{} bytes, more than the {} allowed", st.st_size, max_bytes);
  return "";
}

}  // namespace

WebConfig load_web_config(const std::string& path) {
  if (std::string why = not_a_small_file(path, kWebConfigMaxBytes); !why.empty())
    throw std::invalid_argument(fmt::format("{}: cannot read: {}", path, why));
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::invalid_argument(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  WebConfig c;
  try {
    c = parse_web_config(ss.str(), dir);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", path, e.what()));
  }
  if (c.tls.enabled()) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) throw std::invalid_argument(fmt::format("{}: OpenSSL: {}", path, ssl_error()));
    const std::string problem = configure_tls(ctx, c.tls);
    SSL_CTX_free(ctx);
    if (!problem.empty()) throw std::invalid_argument(fmt::format("{}: {}", path, problem));
  }
  return c;
}

std::string configure_tls(void* p, const TlsServerConfig& t) {
  SSL_CTX* ctx = static_cast<SSL_CTX*>(p);
  ERR_clear_error();
  for (const auto& [key, file] : {std::pair{"cert_file", &t.cert_file}, {"key_file", &t.key_file}, {"client_ca_file", &t.client_ca_file}})
    if (!file->empty())
      if (std::string why = not_a_small_file(*file, kTlsFileMaxBytes); !why.empty())
        return fmt::format("tls_server_config.{} {}: {}", key, *file, why);
  if (SSL_CTX_use_certificate_chain_file(ctx, t.cert_file.c_str()) != 1)
    return fmt::format("tls_server_config.cert_file {}: no PEM certificate ({})", t.cert_file, ssl_error());
  const bool key_loaded = SSL_CTX_use_PrivateKey_file(ctx, t.key_file.c_str(), SSL_FILETYPE_PEM) == 1;
  if (!key_loaded && ERR_GET_REASON(ERR_peek_error()) != X509_R_KEY_VALUES_MISMATCH)
    return fmt::format("tls_server_config.key_file {}: no PEM private key ({})", t.key_file, ssl_error());
  if (!key_loaded || SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return fmt::format("tls_server_config.key_file {} does not belong to cert_file {}", t.key_file, t.cert_file);
  }
  // The options a fresh context has, plus no renegotiation; then min/max_version decide the
  // versions. civetweb 1.15, built for the OpenSSL 1.1 API, sets SSL_OP_ALL as OpenSSL 1.0's
  // 0x80000BFF and SSL_OP_NO_SSLv2 as 0x01000000: in OpenSSL 3 those bits are kernel TLS,
  // client-initiated renegotiation, no anti-replay and more, and SSL_OP_DISABLE_TLSEXT_CA_NAMES,
  // with which Go's TLS 1.3 client (Prometheus) refuses a request for its certificate
  // ("local error: tls: unexpected message"; so does `openssl s_server -no_ca_names`).
  SSL_CTX* fresh = SSL_CTX_new(TLS_server_method());
  const uint64_t defaults = fresh ? SSL_CTX_get_options(fresh) : SSL_OP_NO_COMPRESSION;
  SSL_CTX_free(fresh);
  SSL_CTX_clear_options(ctx, ~defaults);
  SSL_CTX_set_options(ctx, defaults | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(ctx, t.min_version) != 1 || SSL_CTX_set_max_proto_version(ctx, t.max_version) != 1)
    return fmt::format("tls_server_config.min_version/max_version: OpenSSL refuses them ({})", ssl_error());
  if (!t.ciphers.empty() && SSL_CTX_set_cipher_list(ctx, join(t.ciphers, ":").c_str()) != 1)
    return fmt::format("tls_server_config.cipher_suites: OpenSSL has none of them ({})", ssl_error());
  if (!t.groups.empty() && SSL_CTX_set1_groups_list(ctx, join(t.groups, ":").c_str()) != 1)
    return fmt::format("tls_server_config.curve_preferences: OpenSSL refuses them ({})", ssl_error());
  if (t.prefer_server_ciphers) SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  else SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (!t.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, t.client_ca_file.c_str(), nullptr) != 1)
      return fmt::format("tls_server_config.client_ca_file {}: no PEM certificate ({})", t.client_ca_file, ssl_error());
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(t.client_ca_file.c_str())) SSL_CTX_set_client_CA_list(ctx, names);
  } else if (t.client_auth == ClientAuth::kVerifyIfGiven || t.client_auth == ClientAuth::kRequireAndVerify) {
    SSL_CTX_set_default_verify_paths(ctx);  // Go verifies against the system's roots then
  }
  switch (t.client_auth) {
    case ClientAuth::kNone: SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr); break;
    case ClientAuth::kRequest: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any_certificate); break;
    case ClientAuth::kRequireAny:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any_certificate);
      break;
    case ClientAuth::kVerifyIfGiven: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr); break;
    case ClientAuth::kRequireAndVerify: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr); break;
  }
  // Session resumption with client verification needs an id context (civetweb sets one only
  // when it loads the certificate itself).
  static const unsigned char kSid[] = "schedhot";
  SSL_CTX_set_session_id_context(ctx, kSid, sizeof kSid - 1);
  return "";
}

bool decode_basic_auth(std::string_view h, std::string& user, std::string& password) {
  if (h.size() < 6 || strncasecmp(h.data(), "basic ", 6) != 0) return false;
  h.remove_prefix(6);
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
  if (h.empty() || h.size() % 4 != 0) return false;
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < h.size(); i += 4) {
    const bool last = i + 4 == h.size();
    const int pad = last ? (h[i + 3] == '=') + (h[i + 2] == '=') : 0;
    if (pad == 1 && h[i + 2] == '=') return false;  // "x=y=" or the like
    uint32_t v = 0;
    for (int j = 0; j < 4; ++j) {
      const int d = j >= 4 - pad ? 0 : val(h[i + j]);
      if (d < 0) return false;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    out += static_cast<char>(v >> 16);
    if (pad < 2) out += static_cast<char>(v >> 8 & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  const size_t colon = out.find(':');
  if (colon == std::string::npos) return false;
  user = out.substr(0, colon);
  password = out.substr(colon + 1);
  return true;
}

struct BasicAuth::Scratch {
  crypt_data data;
};

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)), scratch_(std::make_unique<Scratch>()) {
  std::memset(&scratch_->data, 0, sizeof scratch_->data);
  if (RAND_bytes(salt_.data(), int(salt_.size())) != 1) throw std::runtime_error("basic auth: no random bytes from OpenSSL");
}

BasicAuth::~BasicAuth() = default;

std::array<unsigned char, 32> BasicAuth::cache_key(const std::string& user, const std::string& password) const {
  std::array<unsigned char, 32> out{};
  std::string msg(reinterpret_cast<const char*>(salt_.data()), salt_.size());
  msg += user;
  msg.push_back('\0');
  msg += password;
  unsigned int n = 0;
  EVP_Digest(msg.data(), msg.size(), out.data(), &n, EVP_sha256(), nullptr);
  OPENSSL_cleanse(msg.data(), msg.size());
  return out;
}

bool BasicAuth::allows(const char* authorization) const {
  if (users_.empty()) return true;
  std::string user, password;
  if (!authorization || !decode_basic_auth(authorization, user, password)) return false;
  // Credentials that passed before skip bcrypt (as exporter-toolkit caches them), so a
  // flood of wrong guesses, each a bcrypt in turn, does not hold up the real scraper.
  const auto key = cache_key(user, password);
  {
    std::lock_guard<std::mutex> g(cache_mu_);
    for (const auto& k : passed_)
      if (CRYPTO_memcmp(k.data(), key.data(), key.size()) == 0) return true;
  }
  const auto it = users_.find(user);
  const bool known = it != users_.end();
  // An unknown user costs a bcrypt too (against the first user's hash, then refused), so
  // the time does not tell which users exist.
  const std::string& hash = known ? it->second : users_.begin()->second;
  bool same = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    const char* out = crypt_rn(password.c_str(), hash.c_str(), &scratch_->data, sizeof scratch_->data);
    same = out && std::strlen(out) == hash.size() && CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  }
  // crypt(3) stops at a NUL byte: "pw\0anything" must not pass as "pw".
  const bool ok = same && known && password.find('\0') == std::string::npos;
  if (ok) {
    std::lock_guard<std::mutex> g(cache_mu_);
    if (passed_.size() >= kPassedMax) passed_.erase(passed_.begin());
    passed_.push_back(key);
  }
  OPENSSL_cleanse(password.data(), password.size());
  return ok;
}

}  // namespace schedhot
