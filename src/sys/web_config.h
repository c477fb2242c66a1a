// `schedhot serve --web-config FILE`: Prometheus's web configuration file, the format of
// exporter-toolkit 0.8 (what Debian 12's `promtool check web-config` checks and every
// Prometheus exporter reads with --web.config.file), read with yaml-cpp:
//
//   tls_server_config:            # absent, or cert_file and key_file both empty: plain HTTP
//     cert_file: server.crt       # PEM, the chain after the leaf; relative to FILE's directory
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # NoClientCert (default), RequestClientCert,
//                                 # RequireAnyClientCert, VerifyClientCertIfGiven
//     client_ca_file: ca.crt      # only with a client_auth_type other than NoClientCert
//     min_version: TLS12          # TLS10..TLS13 (default TLS12); max_version (default TLS13)
//     cipher_suites: [...]        # Go's names; TLS 1.3 suites are accepted and ignored, as in Go
//     curve_preferences: [...]    # CurveP256, CurveP384, CurveP521, X25519
//     prefer_server_cipher_suites: true
//   http_server_config:
//     headers: {X-Frame-Options: deny}   # the five headers exporter-toolkit allows
//     http2: true                 # accepted; schedhot serves HTTP/1.1 only
//   basic_auth_users:
//     prometheus: $2b$10$...      # user -> bcrypt hash ($2a$, $2b$ or $2y$, cost 4..16)
//
// Errors: parse_web_config and load_web_config throw std::invalid_argument with one line
// naming the YAML line and the key (load_web_config: the file too), for an unknown key,
// a value of the wrong shape, a hash that is not bcrypt, a header exporter-toolkit refuses,
// or a certificate, key or CA file that cannot be read or loaded. configure_tls returns its
// problem as a one-line string. BasicAuth::allows never throws.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <array>
#include <mutex>
#include <vector>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedhot {

/// tls_server_config.client_auth_type, as Go's crypto/tls names them.
enum class ClientAuth { kNone, kRequest, kRequireAny, kVerifyIfGiven, kRequireAndVerify };

/// tls_server_config. Paths are resolved against the config file's directory.
struct TlsServerConfig {
  std::string cert_file, key_file, client_ca_file;
  ClientAuth client_auth = ClientAuth::kNone;
  uint16_t min_version = 0x0303;  ///< TLS record version: 0x0301 TLS 1.0 .. 0x0304 TLS 1.3
  uint16_t max_version = 0x0304;
  std::vector<std::string> ciphers;  ///< OpenSSL names of the TLS <= 1.2 suites given; empty: OpenSSL's
  std::vector<std::string> groups;   ///< OpenSSL group names (P-256, X25519, ...); empty: OpenSSL's
  bool prefer_server_ciphers = true;
  /// True when TLS is configured (cert_file given; parse_web_config requires key_file then).
  bool enabled() const { return !cert_file.empty(); }
};

/// The whole file. Empty (or only comments): plain HTTP, no authentication.
struct WebConfig {
  TlsServerConfig tls;
  std::map<std::string, std::string> users;                  ///< basic_auth_users: user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;  ///< http_server_config.headers, in file order
};

/// Parses the YAML text of a web-config file; relative paths are joined to dir. Checks
/// the shapes only (no file is opened). Throws std::invalid_argument "line N: KEY: problem".
WebConfig parse_web_config(const std::string& text, const std::string& dir);

/// Reads and parses path, then loads its certificate, key and client CA into a throwaway
/// OpenSSL context (so a bad file stops the command before it starts). Throws
/// std::invalid_argument "PATH: line N: KEY: problem" or "PATH: KEY FILE: problem".
WebConfig load_web_config(const std::string& path);

/// Sets up an OpenSSL SSL_CTX (given as void*, as civetweb's init_ssl callback passes it)
/// from tls: certificate chain and key, protocol versions, ciphers, groups, client
/// verification and the client CA list. Returns "" or a one-line problem.
std::string configure_tls(void* ssl_ctx, const TlsServerConfig& tls);

/// Decodes an Authorization header value "Basic base64(user:password)" (scheme in any
/// case). False when it is another scheme, not base64, or has no ':'.
bool decode_basic_auth(std::string_view header, std::string& user, std::string& password);

/// The largest web-config file read (bytes), and certificate/key/CA file.
inline constexpr long kWebConfigMaxBytes = 1 << 20, kTlsFileMaxBytes = 16 << 20;
/// The highest bcrypt cost accepted (Go's bcrypt allows 31: days per check, which would
/// hold serve's one checker and its stop for as long).
inline constexpr int kBcryptMaxCost = 16;

/// HTTP basic authentication against bcrypt hashes (libxcrypt's crypt_rn). Every check
/// of credentials not seen to pass costs one bcrypt at the user's cost, an unknown
/// user's too (hashed against the first user's hash and refused), so no wrong guess is
/// cheaper than another. Checks run one at a time (a flood of guesses takes one core).
/// Credentials that passed are remembered (the last kPassedMax, as salted SHA-256, in
/// memory only), so the real scraper is not queued behind a flood of wrong guesses.
class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);
  ~BasicAuth();
  /// True when there are users, i.e. requests must authenticate.
  bool enabled() const { return !users_.empty(); }
  /// True when the Authorization header value (nullptr: absent) names a user and its
  /// password. The comparison of the hash is constant-time.
  bool allows(const char* authorization) const;

 private:
  struct Scratch;
  static constexpr size_t kPassedMax = 16;
  std::array<unsigned char, 32> cache_key(const std::string& user, const std::string& password) const;
  std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  std::unique_ptr<Scratch> scratch_;  ///< crypt_rn's work area, used under mu_
  std::array<unsigned char, 16> salt_{};  ///< random per process: the cache's keys mean nothing elsewhere
  mutable std::mutex cache_mu_;
  mutable std::vector<std::array<unsigned char, 32>> passed_;  ///< under cache_mu_
};

}  // namespace schedhot
