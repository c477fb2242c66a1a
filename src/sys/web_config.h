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
//     cipher_suites: [...]        # Go's names: TLS 1.3 suites are accepted and ignored, as in Go;
//                                 # a TLS 1.0-1.2 suite is refused (GnuTLS cannot choose suites one by one)
//     curve_preferences: [...]    # CurveP256, CurveP384, CurveP521, X25519
//     prefer_server_cipher_suites: true
//   http_server_config:
//     headers: {X-Frame-Options: deny}   # the five headers exporter-toolkit allows
//     http2: true                 # accepted; schedhot serves HTTP/1.1 only
//   basic_auth_users:
//     prometheus: $2b$10$...      # user -> bcrypt hash ($2a$, $2b$ or $2y$, cost 4..16)
//
// TLS is GnuTLS's (libmicrohttpd's): load_web_config reads the certificate, key and CA files
// into memory and checks them with GnuTLS; tls_priorities() is the GnuTLS priority string of
// the versions, curves and preference; verify_client() applies client_auth_type to a session.
//
// Errors: parse_web_config and load_web_config throw std::invalid_argument with one line
// naming the YAML line and the key (load_web_config: the file too), for an unknown key,
// a value of the wrong shape, a hash that is not bcrypt, a header exporter-toolkit refuses,
// a TLS 1.2 cipher suite, or a certificate, key or CA file that cannot be read or loaded
// (an encrypted key too: schedhot never asks for a passphrase). verify_client returns its
// problem as a one-line string. BasicAuth never throws after construction.
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
  std::vector<std::string> groups;   ///< GnuTLS group names (GROUP-SECP256R1, GROUP-X25519, ...); empty: GnuTLS's
  bool prefer_server_ciphers = true;
  /// The PEM text of cert_file, key_file and the client CAs (client_ca_file, or the system's
  /// roots when a client_auth_type asks for a certificate without one), read by
  /// load_web_config (parse_web_config leaves them empty).
  std::string cert_pem, key_pem, ca_pem;
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

/// Reads and parses path, then reads its certificate, key and client CA files into the
/// TlsServerConfig's *_pem and checks them with GnuTLS (the chain parses, the key is not
/// encrypted and belongs to the certificate, the CA file holds a certificate, the priority
/// string is accepted), so a bad file stops the command before it starts. Throws
/// std::invalid_argument "PATH: line N: KEY: problem" or "PATH: KEY FILE: problem".
WebConfig load_web_config(const std::string& path);

/// The GnuTLS priority string for tls: "NORMAL", the versions min_version..max_version,
/// the groups of curve_preferences, %SERVER_PRECEDENCE when prefer_server_cipher_suites.
std::string tls_priorities(const TlsServerConfig& tls);

/// The system's CA bundle (Go verifies client certificates against the system's roots when
/// client_ca_file is absent): its path, or "" when there is none.
std::string system_ca_bundle();

/// client_auth_type applied to a finished handshake: session is the gnutls_session_t of
/// the connection (libmicrohttpd's MHD_CONNECTION_INFO_GNUTLS_SESSION), whose credentials
/// trust ca_pem. Returns "" when the client may go on, else why not (one line): no
/// certificate where one is required, or one that does not verify (chain to the trusted
/// CAs, validity, the TLS web client purpose) where verification is asked for.
std::string verify_client(void* session, ClientAuth auth);

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
/// cheaper than another. Credentials that passed are remembered (the last kPassedMax, as
/// salted SHA-256, in memory only): quick() answers them without bcrypt, so the real
/// scraper is not queued behind a flood of wrong guesses. serve runs the bcrypt part
/// (Pending::matches) on its own bounded checker thread (cli/cmd_serve.cpp).
class BasicAuth {
 public:
  /// Throws std::runtime_error when GnuTLS gives no random bytes for the cache's salt.
  explicit BasicAuth(std::map<std::string, std::string> users);
  ~BasicAuth();
  /// True when there are users, i.e. requests must authenticate.
  bool enabled() const { return !users_.empty(); }

  /// A check that needs bcrypt: copies of what it needs, so it can run on another thread
  /// after this BasicAuth is gone; the password is wiped when it is destroyed.
  struct Pending {
    std::string user, password, hash;
    bool known = false;                   ///< user is in basic_auth_users (else hash is the first user's)
    std::array<unsigned char, 32> key{};  ///< the cache key of (user, password)
    Pending() = default;
    Pending(const Pending&) = delete;
    Pending& operator=(const Pending&) = delete;
    ~Pending();
    /// One bcrypt at the hash's cost (milliseconds at cost 10, seconds at 16); true when
    /// the password is the user's. Thread-safe; blocks; never throws.
    bool matches() const;
  };
  enum class Quick { kAllowed, kRefused, kNeedsBcrypt };
  /// The cheap part of a check: no users or remembered credentials: kAllowed; no or a
  /// malformed header (nullptr: absent): kRefused; else kNeedsBcrypt with out filled.
  Quick quick(const char* authorization, Pending& out) const;
  /// Remembers credentials that passed (drops the oldest past kPassedMax).
  void remember(const Pending& passed) const;
  /// quick(), then the bcrypt in this thread: true when the Authorization header value
  /// (nullptr: absent) names a user and its password. The hash comparison is constant-time.
  bool allows(const char* authorization) const;

 private:
  static constexpr size_t kPassedMax = 16;
  std::array<unsigned char, 32> cache_key(const std::string& user, const std::string& password) const;
  std::map<std::string, std::string> users_;
  std::array<unsigned char, 16> salt_{};  ///< random per process: the cache's keys mean nothing elsewhere
  mutable std::mutex cache_mu_;
  mutable std::vector<std::array<unsigned char, 32>> passed_;  ///< under cache_mu_
};

}  // namespace schedhot
