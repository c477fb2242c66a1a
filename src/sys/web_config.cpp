#include "sys/web_config.h"

#include <crypt.h>
#include <fmt/format.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
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
#include <tuple>

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
      // A top-level key is not quoted: a file that is no web config (--web-config /etc/shadow)
      // keeps its content out of the message; below a known key the file is one, and the
      // unknown key is named (a typo: tls_server_config.min_verison).
      if (path.empty()) fail(kv.first, "the file", fmt::format("a key that is not one of: {}", join(ks, ", ")));
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

/// Go's crypto/tls.CipherSuites() names (what exporter-toolkit 0.8 accepts): 13 for a TLS 1.3
/// suite (Go does not let a config choose those: accepted, ignored), 12 for a TLS 1.0-1.2
/// suite, 0 for a name Go does not know.
int go_cipher_version(const std::string& go) {
  static const char* const kTls12[] = {
      "TLS_RSA_WITH_AES_128_CBC_SHA",
      "TLS_RSA_WITH_AES_256_CBC_SHA",
      "TLS_RSA_WITH_AES_128_GCM_SHA256",
      "TLS_RSA_WITH_AES_256_GCM_SHA384",
      "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
      "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
      "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
      "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
      "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
      "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
      "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
      "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
      "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
  };
  static const char* const kTls13[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"};
  for (const char* n : kTls12)
    if (go == n) return 12;
  for (const char* n : kTls13)
    if (go == n) return 13;
  return 0;
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
                 const int version = go_cipher_version(c);
                 if (version == 0)
                   fail(v, key, fmt::format("unknown cipher '{}' (Go's crypto/tls names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", c));
                 // GnuTLS (libmicrohttpd's TLS) enables key exchanges, ciphers and MACs, not
                 // single suites: a list of suites cannot be kept exactly, so it is refused.
                 if (version == 12)
                   fail(v, key, fmt::format("'{}': schedhot's TLS (GnuTLS) cannot choose TLS 1.0-1.2 suites one by one; "
                                            "leave cipher_suites out (GnuTLS's defaults) or list only TLS 1.3 suites", c));
               }
             } else if (k == "curve_preferences") {
               static const std::pair<const char*, const char*> kCurves[] = {
                   {"CurveP256", "GROUP-SECP256R1"}, {"CurveP384", "GROUP-SECP384R1"}, {"CurveP521", "GROUP-SECP521R1"},
                   {"X25519", "GROUP-X25519"}};
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

/// Constant-time comparison of n bytes.
bool same_bytes(const void* a, const void* b, size_t n) {
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  unsigned char d = 0;
  for (size_t i = 0; i < n; ++i) d |= static_cast<unsigned char>(x[i] ^ y[i]);
  return d == 0;
}

void wipe(std::string& s) {
  if (!s.empty()) ::explicit_bzero(s.data(), s.size());
}

}  // namespace

WebConfig parse_web_config(const std::string& text, const std::string& dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's message without what it quotes of the file ("unknown escape character: q")
    throw std::invalid_argument(fmt::format("line {} column {}: not YAML: {}", e.mark.line + 1, e.mark.column + 1,
                                            e.msg.substr(0, e.msg.find(": "))));
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

namespace {

/// The whole of a file not_a_small_file() accepts, or why not.
std::string slurp(const std::string& path, off_t max_bytes, std::string& out) {
  if (std::string why = not_a_small_file(path, max_bytes); !why.empty()) return why;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::strerror(errno);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::strerror(errno);
  out = ss.str();
  return "";
}

gnutls_datum_t datum(const std::string& s) {
  return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())), static_cast<unsigned>(s.size())};
}

/// "" when the PEM files of t load into GnuTLS credentials as libmicrohttpd will load
/// them, else the one-line problem naming the key and file.
std::string check_tls(const TlsServerConfig& t) {
  gnutls_x509_crt_t* chain = nullptr;
  unsigned n = 0;
  const gnutls_datum_t cert = datum(t.cert_pem), key = datum(t.key_pem);
  int r = gnutls_x509_crt_list_import2(&chain, &n, &cert, GNUTLS_X509_FMT_PEM, 0);
  for (unsigned i = 0; r >= 0 && i < n; ++i) gnutls_x509_crt_deinit(chain[i]);
  gnutls_free(chain);
  if (r < 0 || n == 0)
    return fmt::format("tls_server_config.cert_file {}: no PEM certificate ({})", t.cert_file, r < 0 ? gnutls_strerror(r) : "none");
  // An encrypted key would need a passphrase: schedhot, a service, asks for none (as
  // `promtool check web-config` and exporter-toolkit refuse such a key).
  if (t.key_pem.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string::npos ||
      t.key_pem.find("Proc-Type: 4,ENCRYPTED") != std::string::npos)
    return fmt::format("tls_server_config.key_file {}: an encrypted private key; schedhot asks for no passphrase "
                       "(decrypt it into a file only root reads: openssl pkey -in KEY -out PLAIN)",
                       t.key_file);
  gnutls_x509_privkey_t pk = nullptr;
  gnutls_x509_privkey_init(&pk);
  r = gnutls_x509_privkey_import2(pk, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  gnutls_x509_privkey_deinit(pk);
  if (r < 0) return fmt::format("tls_server_config.key_file {}: no PEM private key ({})", t.key_file, gnutls_strerror(r));
  gnutls_certificate_credentials_t cred = nullptr;
  if (gnutls_certificate_allocate_credentials(&cred) < 0) return "GnuTLS: cannot allocate credentials";
  std::string problem;
  r = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  if (r == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
    problem = fmt::format("tls_server_config.key_file {} does not belong to cert_file {}", t.key_file, t.cert_file);
  else if (r < 0)
    problem = fmt::format("tls_server_config.cert_file {} with key_file {}: GnuTLS refuses them ({})", t.cert_file, t.key_file,
                          gnutls_strerror(r));
  if (problem.empty() && !t.ca_pem.empty()) {
    const gnutls_datum_t ca = datum(t.ca_pem);
    r = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
    if (r <= 0)
      problem = fmt::format("tls_server_config.client_ca_file {}: no PEM certificate ({})",
                            t.client_ca_file.empty() ? system_ca_bundle() : t.client_ca_file, r < 0 ? gnutls_strerror(r) : "none");
  }
  gnutls_certificate_free_credentials(cred);
  if (!problem.empty()) return problem;
  gnutls_priority_t prio = nullptr;
  const char* where = nullptr;
  const std::string p = tls_priorities(t);
  r = gnutls_priority_init(&prio, p.c_str(), &where);
  if (r < 0)
    return fmt::format("tls_server_config.min_version/max_version/curve_preferences: GnuTLS refuses '{}' at '{}' ({})", p,
                       where ? where : "?", gnutls_strerror(r));
  gnutls_priority_deinit(prio);
  return "";
}

}  // namespace

std::string system_ca_bundle() {
  for (const char* p : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"})
    if (::access(p, R_OK) == 0) return p;
  return "";
}

WebConfig load_web_config(const std::string& path) {
  std::string text;
  if (std::string why = slurp(path, kWebConfigMaxBytes, text); !why.empty())
    throw std::invalid_argument(fmt::format("{}: cannot read: {}", path, why));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  WebConfig c;
  try {
    c = parse_web_config(text, dir);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", path, e.what()));
  }
  if (c.tls.enabled()) {
    TlsServerConfig& t = c.tls;
    for (const auto& [key, file, pem] : {std::tuple{"cert_file", &t.cert_file, &t.cert_pem}, {"key_file", &t.key_file, &t.key_pem},
                                         {"client_ca_file", &t.client_ca_file, &t.ca_pem}})
      if (!file->empty())
        if (std::string why = slurp(*file, kTlsFileMaxBytes, *pem); !why.empty())
          throw std::invalid_argument(fmt::format("{}: tls_server_config.{} {}: {}", path, key, *file, why));
    // libmicrohttpd asks for a client certificate only with CAs to trust: without
    // client_ca_file, the system's roots (what Go verifies against then).
    if (t.client_auth != ClientAuth::kNone && t.ca_pem.empty()) {
      const std::string bundle = system_ca_bundle();
      if (bundle.empty() || !slurp(bundle, kTlsFileMaxBytes * 4, t.ca_pem).empty())
        throw std::invalid_argument(fmt::format("{}: tls_server_config.client_auth_type without client_ca_file needs the system's CA "
                                                "bundle (/etc/ssl/certs/ca-certificates.crt), which cannot be read",
                                                path));
    }
    if (std::string problem = check_tls(t); !problem.empty()) throw std::invalid_argument(fmt::format("{}: {}", path, problem));
  }
  return c;
}

std::string tls_priorities(const TlsServerConfig& t) {
  std::string p = "NORMAL:-VERS-ALL";
  // Highest first: GnuTLS takes the first version both sides have.
  for (uint16_t v = t.max_version; v >= t.min_version && v >= 0x0301; --v) p += fmt::format(":+VERS-TLS1.{}", v - 0x0301);
  if (!t.groups.empty()) {
    p += ":-GROUP-ALL";
    for (const auto& g : t.groups) p += ":+" + g;
  }
  if (t.prefer_server_ciphers) p += ":%SERVER_PRECEDENCE";
  return p;
}

std::string verify_client(void* session, ClientAuth auth) {
  if (auth == ClientAuth::kNone || auth == ClientAuth::kRequest) return "";
  auto* s = static_cast<gnutls_session_t>(session);
  if (!s) return "no TLS session";
  unsigned n = 0;
  const bool has = gnutls_certificate_get_peers(s, &n) != nullptr && n > 0;
  if (!has) return auth == ClientAuth::kVerifyIfGiven ? "" : "no client certificate (client_auth_type asks for one)";
  if (auth == ClientAuth::kRequireAny) return "";
  gnutls_typed_vdata_st purpose{};
  purpose.type = GNUTLS_DT_KEY_PURPOSE_OID;
  purpose.data = reinterpret_cast<unsigned char*>(const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT));
  unsigned status = 0;
  const int r = gnutls_certificate_verify_peers(s, &purpose, 1, &status);
  if (r < 0) return fmt::format("client certificate not verified ({})", gnutls_strerror(r));
  if (status != 0) {
    gnutls_datum_t out{};
    std::string why = "not verified";
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) >= 0) {
      why.assign(reinterpret_cast<const char*>(out.data), out.size);
      gnutls_free(out.data);
      while (!why.empty() && (why.back() == ' ' || why.back() == '\0')) why.pop_back();  // GnuTLS ends it with a space
    }
    return "client certificate refused: " + why;
  }
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

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {
  if (gnutls_rnd(GNUTLS_RND_KEY, salt_.data(), salt_.size()) != 0) throw std::runtime_error("basic auth: no random bytes from GnuTLS");
}

BasicAuth::~BasicAuth() { ::explicit_bzero(salt_.data(), salt_.size()); }

BasicAuth::Pending::~Pending() { wipe(password); }

std::array<unsigned char, 32> BasicAuth::cache_key(const std::string& user, const std::string& password) const {
  std::array<unsigned char, 32> out{};
  std::string msg(reinterpret_cast<const char*>(salt_.data()), salt_.size());
  msg += user;
  msg.push_back('\0');
  msg += password;
  gnutls_hash_fast(GNUTLS_DIG_SHA256, msg.data(), msg.size(), out.data());
  wipe(msg);
  return out;
}

BasicAuth::Quick BasicAuth::quick(const char* authorization, Pending& p) const {
  if (users_.empty()) return Quick::kAllowed;
  if (!authorization || !decode_basic_auth(authorization, p.user, p.password)) return Quick::kRefused;
  // Credentials that passed before skip bcrypt (as exporter-toolkit caches them), so a
  // flood of wrong guesses, each a bcrypt in turn, does not hold up the real scraper.
  p.key = cache_key(p.user, p.password);
  {
    std::lock_guard<std::mutex> g(cache_mu_);
    for (const auto& k : passed_)
      if (same_bytes(k.data(), p.key.data(), k.size())) return Quick::kAllowed;
  }
  const auto it = users_.find(p.user);
  p.known = it != users_.end();
  // An unknown user costs a bcrypt too (against the first user's hash, then refused), so
  // the time does not tell which users exist.
  p.hash = p.known ? it->second : users_.begin()->second;
  return Quick::kNeedsBcrypt;
}

bool BasicAuth::Pending::matches() const {
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof *data);
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
  const bool same = out && std::strlen(out) == hash.size() && same_bytes(out, hash.data(), hash.size());
  ::explicit_bzero(data.get(), sizeof *data);
  // crypt(3) stops at a NUL byte: "pw\0anything" must not pass as "pw".
  return same && known && password.find('\0') == std::string::npos;
}

void BasicAuth::remember(const Pending& p) const {
  std::lock_guard<std::mutex> g(cache_mu_);
  for (const auto& k : passed_)
    if (same_bytes(k.data(), p.key.data(), k.size())) return;
  if (passed_.size() >= kPassedMax) passed_.erase(passed_.begin());
  passed_.push_back(p.key);
}

bool BasicAuth::allows(const char* authorization) const {
  Pending p;
  switch (quick(authorization, p)) {
    case Quick::kAllowed: return true;
    case Quick::kRefused: return false;
    case Quick::kNeedsBcrypt: break;
  }
  if (!p.matches()) return false;
  remember(p);
  return true;
}

}  // namespace schedhot
