// sys/web_config.h: Prometheus's web-config file (`schedhot serve --web-config`) parsed
// into known values, every refusal naming its line and key, the files it loads and checks
// with GnuTLS (libmicrohttpd's TLS), the GnuTLS priority string it makes, and basic auth
// against real bcrypt hashes.
#include <crypt.h>
#include <fmt/format.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>

#include "sys/web_config.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

WebConfig parse(const std::string& yaml) { return parse_web_config(yaml, "/etc/schedhot"); }

/// The one-line message parse() throws for yaml ("" when it accepts it).
std::string refusal(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

/// A bcrypt hash of pw at cost (libxcrypt, as htpasswd -B and Python's crypt make them).
std::string bcrypt(const std::string& pw, int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  const char rnd[16] = "0123456789abcde";
  EXPECT_NE(crypt_gensalt_rn("$2b$", cost, rnd, sizeof rnd, salt, sizeof salt), nullptr);
  crypt_data d{};
  const char* h = crypt_rn(pw.c_str(), salt, &d, sizeof d);
  EXPECT_NE(h, nullptr);
  return h ? h : "";
}

std::string basic(const std::string& user_colon_pw) {
  static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(user_colon_pw.data());
  const size_t n = user_colon_pw.size();
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = uint32_t(p[i]) << 16 | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += kB64[v >> 18 & 63];
    out += kB64[v >> 12 & 63];
    out += i + 1 < n ? kB64[v >> 6 & 63] : '=';
    out += i + 2 < n ? kB64[v & 63] : '=';
  }
  return "Basic " + out;
}

/// A P-256 key and a self-signed certificate for it, as PEM files (GnuTLS).
struct Pki {
  gnutls_x509_privkey_t key = nullptr;
  Pki() {
    gnutls_x509_privkey_init(&key);
    EXPECT_EQ(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0), 0);
  }
  ~Pki() { gnutls_x509_privkey_deinit(key); }
  static void put(const std::string& path, const gnutls_datum_t& d) {
    spit(path, std::string(reinterpret_cast<const char*>(d.data), d.size));
    gnutls_free(d.data);
  }
  void write(const std::string& key_path, const std::string& cert_path, const char* cn) const {
    gnutls_x509_crt_t x = nullptr;
    gnutls_x509_crt_init(&x);
    gnutls_x509_crt_set_version(x, 3);
    const unsigned char serial = 1;
    gnutls_x509_crt_set_serial(x, &serial, 1);
    gnutls_x509_crt_set_activation_time(x, time(nullptr) - 60);
    gnutls_x509_crt_set_expiration_time(x, time(nullptr) + 3600);
    gnutls_x509_crt_set_key(x, key);
    gnutls_x509_crt_set_dn_by_oid(x, GNUTLS_OID_X520_COMMON_NAME, 0, cn, std::strlen(cn));
    gnutls_x509_crt_set_basic_constraints(x, 1, -1);
    EXPECT_EQ(gnutls_x509_crt_sign2(x, x, key, GNUTLS_DIG_SHA256, 0), 0);
    gnutls_datum_t d{};
    gnutls_x509_crt_export2(x, GNUTLS_X509_FMT_PEM, &d);
    put(cert_path, d);
    gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, nullptr, GNUTLS_PKCS_PLAIN, &d);
    put(key_path, d);
    gnutls_x509_crt_deinit(x);
  }
  /// The key encrypted with a passphrase (PKCS#8, AES-256).
  void write_encrypted(const std::string& key_path) const {
    gnutls_datum_t d{};
    EXPECT_EQ(gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, "secret", GNUTLS_PKCS_PBES2_AES_256, &d), 0);
    put(key_path, d);
  }
};

const std::string kHash = "$2b$10$wafz.W9XUiUiwwvOmeq7NOFCzIEjDNNRS6KOZYe0UUatM8loxHc2m";

}  // namespace

TEST(WebConfig, EveryKeyParsed) {
  const WebConfig c = parse(R"(# every key exporter-toolkit 0.8 reads
tls_server_config:
  cert_file: tls/server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS13
  max_version: TLS13
  cipher_suites: [TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256]
  curve_preferences: [X25519, CurveP384]
  prefer_server_cipher_suites: false
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi
  alice: )" + kHash + "\n");
  EXPECT_TRUE(c.tls.enabled());
  EXPECT_EQ(c.tls.cert_file, "/etc/schedhot/tls/server.crt");  // relative to the file's directory
  EXPECT_EQ(c.tls.key_file, "/abs/server.key");
  EXPECT_EQ(c.tls.client_ca_file, "/etc/schedhot/ca.crt");
  EXPECT_EQ(c.tls.client_auth, ClientAuth::kRequireAndVerify);
  EXPECT_EQ(c.tls.min_version, 0x0304);
  EXPECT_EQ(c.tls.max_version, 0x0304);
  // TLS 1.3 suites are accepted and ignored, as Go ignores them; Go's curves as GnuTLS's groups.
  EXPECT_EQ(c.tls.groups, (std::vector<std::string>{"GROUP-X25519", "GROUP-SECP384R1"}));
  EXPECT_FALSE(c.tls.prefer_server_ciphers);
  ASSERT_EQ(c.headers.size(), 2u);
  EXPECT_EQ(c.headers[0], (std::pair<std::string, std::string>{"X-Frame-Options", "deny"}));
  EXPECT_EQ(c.headers[1].second, "max-age=31536000");
  ASSERT_EQ(c.users.size(), 2u);
  EXPECT_EQ(c.users.at("alice"), kHash);
  EXPECT_EQ(c.users.at("prometheus").substr(0, 7), "$2y$10$");
}

TEST(WebConfig, DefaultsAndPlainHttp) {
  for (const char* text : {"", "# nothing\n", "tls_server_config:\nbasic_auth_users:\n", "tls_server_config: {min_version: TLS13}\n"}) {
    const WebConfig c = parse(text);
    EXPECT_FALSE(c.tls.enabled()) << text;  // exporter-toolkit: no cert, key, CA or client auth: plain HTTP
    EXPECT_TRUE(c.users.empty());
    EXPECT_TRUE(c.headers.empty());
  }
  const WebConfig c = parse("tls_server_config: {cert_file: a, key_file: b}\n");
  EXPECT_EQ(c.tls.min_version, 0x0303);  // TLS12, as exporter-toolkit
  EXPECT_EQ(c.tls.max_version, 0x0304);
  EXPECT_EQ(c.tls.client_auth, ClientAuth::kNone);
  EXPECT_TRUE(c.tls.prefer_server_ciphers);
  EXPECT_TRUE(c.tls.groups.empty());
  EXPECT_EQ(parse_web_config("tls_server_config: {cert_file: a, key_file: b}\n", "").tls.cert_file, "a");
  EXPECT_EQ(parse("tls_server_config: {cert_file: a, key_file: b, client_auth_type: RequireClientCert, client_ca_file: c}")
                .tls.client_auth,
            ClientAuth::kRequireAny);  // the old name, kept by exporter-toolkit
}

TEST(WebConfig, RefusalsNameLineAndKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"foo: 1\n", "line 1: the file: a key that is not one of: tls_server_config, http_server_config, basic_auth_users"},
      {"tls_server_config:\n  cert_file: a\n  keyfile: b\n", "line 3: tls_server_config.keyfile: unknown key"},
      {"tls_server_config:\n  cert_file: a\n", "tls_server_config.key_file: missing"},
      {"tls_server_config: {key_file: b}\n", "tls_server_config.cert_file: missing"},
      {"tls_server_config: {client_auth_type: RequireAndVerifyClientCert}\n", "tls_server_config.cert_file: missing"},
      {"tls_server_config: {cert_file: a, key_file: b, client_ca_file: c}\n",
       "tls_server_config.client_ca_file: given without a client_auth_type"},
      {"tls_server_config: {cert_file: a, key_file: b, client_auth_type: Always}\n",
       "tls_server_config.client_auth_type: unknown 'Always'"},
      {"tls_server_config: {cert_file: a, key_file: b, min_version: TLS14}\n",
       "tls_server_config.min_version: unknown TLS version 'TLS14'"},
      {"tls_server_config: {cert_file: a, key_file: b, min_version: TLS13, max_version: TLS12}\n",
       "tls_server_config.min_version: TLS13 is above max_version TLS12"},
      {"tls_server_config: {cert_file: a, key_file: b, cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]}\n",
       "tls_server_config.cipher_suites: unknown cipher 'TLS_RSA_WITH_RC4_128_SHA'"},
      {"tls_server_config: {cert_file: a, key_file: b, cipher_suites: TLS_AES_128_GCM_SHA256}\n",
       "tls_server_config.cipher_suites: must be a list"},
      {"tls_server_config: {cert_file: a, key_file: b, curve_preferences: [P256]}\n",
       "tls_server_config.curve_preferences: unknown curve 'P256'"},
      {"tls_server_config: {cert_file: a, key_file: b, prefer_server_cipher_suites: maybe}\n",
       "tls_server_config.prefer_server_cipher_suites: must be true or false"},
      {"tls_server_config: {cert_file: [a], key_file: b}\n", "line 1: tls_server_config.cert_file: must be a string"},
      {"tls_server_config: [a]\n", "line 1: tls_server_config: must be a map of keys"},
      {"http_server_config:\n  headers:\n    Foo: bar\n", "line 3: http_server_config.headers.Foo: unknown key"},
      {"http_server_config:\n  headers: {X-Frame-Options: allow}\n",
       "http_server_config.headers.X-Frame-Options: 'allow' is not one of: deny, sameorigin"},
      {"http_server_config:\n  headers: {X-XSS-Protection: \"1\\r\\nSet-Cookie: x\"}\n",
       "http_server_config.headers.X-XSS-Protection: a control character in the value"},
      {"http_server_config: {http2: sometimes}\n", "http_server_config.http2: must be true or false"},
      {"basic_auth_users:\n  alice: secret\n", "line 2: basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $2y$03$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n",
       "basic_auth_users.alice: not a bcrypt hash"},  // cost 3
      {"basic_auth_users:\n  alice: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LD\n",
       "basic_auth_users.alice: not a bcrypt hash"},  // short
      {"basic_auth_users:\n  alice: $1$salt$qJH7.N4xYta3aEG/dfqo/0\n", "basic_auth_users.alice: not a bcrypt hash"},  // MD5-crypt
      {"basic_auth_users:\n  alice:\n", "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  a: " + kHash + "\n  a: " + kHash + "\n", "line 3: basic_auth_users.a: given twice"},
      {"basic_auth_users:\n  \"a:b\": " + kHash + "\n", "basic_auth_users.a:b: a ':' in the user name"},
      {"basic_auth_users: [alice]\n", "basic_auth_users: must be a map of user: bcrypt hash"},
      {"tls_server_config: {}\ntls_server_config: {}\n", "line 2: tls_server_config: given twice"},
      {"- a\n", "line 1: the file: must be a map of keys"},
      {"tls_server_config: {cert_file: a\n", "not YAML"},
  };
  for (const auto& [yaml, want] : cases) {
    const std::string got = refusal(yaml);
    EXPECT_NE(got.find(want), std::string::npos) << "yaml: " << yaml << "\ngot: " << got << "\nwant: " << want;
    EXPECT_EQ(got.find('\n'), std::string::npos) << "one line: " << got;
  }
}

// A file that is no web config (serve --web-config /etc/shadow) is refused by line, never
// quoting its content: not its top-level keys, not what yaml-cpp quotes of a bad escape.
TEST(WebConfig, RefusalsOfAFileThatIsNoWebConfigQuoteNothingOfIt) {
  const std::pair<std::string, std::string> cases[] = {
      {"root:$6$secret:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n",
       "line 1: the file: a key that is not one of: tls_server_config, http_server_config, basic_auth_users"},
      {"password: secret\n", "line 1: the file: a key that is not one of: "},
      {"x: 1\nkey: \"\\qsecret\"\n", "line 2 column 9: not YAML: unknown escape character"},
      {"{secret: [1, 2\n", "line 2 column 1: not YAML: end of sequence flow not found"},
      {"- secret\n", "line 1: the file: must be a map of keys"},
  };
  for (const auto& [yaml, want] : cases) {
    const std::string got = refusal(yaml);
    EXPECT_EQ(got.find("secret"), std::string::npos) << got;
    EXPECT_EQ(got.find("root"), std::string::npos) << got;
    EXPECT_NE(got.find(want), std::string::npos) << "yaml: " << yaml << "\ngot: " << got << "\nwant: " << want;
  }
}

TEST(WebConfig, LoadChecksTheFilesItNames) {
  TempDir d("web_config_load");
  Pki server, other;
  server.write(d / "server.key", d / "server.crt", "127.0.0.1");
  other.write(d / "other.key", d / "other.crt", "other");
  spit(d / "ok.yml", "tls_server_config: {cert_file: server.crt, key_file: server.key}\n");
  EXPECT_EQ(load_web_config(d / "ok.yml").tls.cert_file, d / "server.crt");

  auto refused = [&](const std::string& yaml) {
    spit(d / "web.yml", yaml);
    try {
      load_web_config(d / "web.yml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refused("tls_server_config: {cert_file: nope.crt, key_file: server.key}\n"),
            d / "web.yml" + ": tls_server_config.cert_file " + d / "nope.crt" + ": No such file or directory");
  EXPECT_EQ(refused("tls_server_config: {cert_file: server.crt, key_file: other.key}\n"),
            d / "web.yml" + ": tls_server_config.key_file " + d / "other.key" + " does not belong to cert_file " + d / "server.crt");
  EXPECT_NE(refused("tls_server_config: {cert_file: web.yml, key_file: server.key}\n")
                .find("tls_server_config.cert_file " + d / "web.yml" + ": no PEM certificate"),
            std::string::npos);
  EXPECT_NE(refused("tls_server_config: {cert_file: server.crt, key_file: server.key, client_auth_type: "
                    "RequireAndVerifyClientCert, client_ca_file: server.key}\n")
                .find("tls_server_config.client_ca_file " + d / "server.key" + ": no PEM certificate"),
            std::string::npos);
  EXPECT_EQ(refused("foo: 1\n").rfind(d / "web.yml" + ": line 1: the file: a key that is not one of: ", 0), 0u);
  try {
    load_web_config(d / "absent.yml");
    ADD_FAILURE() << "absent file accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), d / "absent.yml" + ": cannot read: No such file or directory");
  }
  // An attacker's findings: a directory read as an empty file meant plain HTTP without auth;
  // a FIFO blocked; /dev/zero grew until bad_alloc; a FIFO as key_file blocked at start.
  auto load_error = [&](const std::string& path) {
    try {
      load_web_config(path);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(load_error(d.path), d.path + ": cannot read: is a directory");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(load_error(d / "fifo"), d / "fifo" + ": cannot read: not a regular file");
  EXPECT_EQ(load_error("/dev/zero"), "/dev/zero: cannot read: not a regular file");
  spit(d / "big.yml", std::string(kWebConfigMaxBytes + 1, '#'));
  EXPECT_NE(load_error(d / "big.yml").find("more than the 1048576 allowed"), std::string::npos);
  EXPECT_EQ(refused("tls_server_config: {cert_file: server.crt, key_file: fifo}\n"),
            d / "web.yml" + ": tls_server_config.key_file " + d / "fifo" + ": not a regular file");
}

TEST(WebConfig, TlsPrioritiesAndRefusals) {
  TlsServerConfig t;
  EXPECT_EQ(tls_priorities(t), "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE");
  t.min_version = t.max_version = 0x0304;
  t.groups = {"GROUP-SECP256R1"};
  t.prefer_server_ciphers = false;
  EXPECT_EQ(tls_priorities(t), "NORMAL:-VERS-ALL:+VERS-TLS1.3:-GROUP-ALL:+GROUP-SECP256R1");
  // Every string tls_priorities makes from a valid file is one GnuTLS accepts.
  for (const char* yaml : {"tls_server_config: {cert_file: a, key_file: b}\n",
                           "tls_server_config: {cert_file: a, key_file: b, min_version: TLS13, curve_preferences: [CurveP256, X25519]}\n",
                           "tls_server_config: {cert_file: a, key_file: b, max_version: TLS12, prefer_server_cipher_suites: false}\n",
                           "tls_server_config: {cert_file: a, key_file: b, curve_preferences: [CurveP384, CurveP521]}\n"}) {
    const std::string p = tls_priorities(parse(yaml).tls);
    gnutls_priority_t prio = nullptr;
    const char* where = nullptr;
    EXPECT_EQ(gnutls_priority_init(&prio, p.c_str(), &where), 0) << p << " at " << (where ? where : "?");
    if (prio) gnutls_priority_deinit(prio);
  }
  // GnuTLS cannot keep a list of TLS 1.2 suites exactly: one line says so; TLS 1.3 suites pass.
  EXPECT_NE(refusal("tls_server_config: {cert_file: a, key_file: b, cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]}\n")
                .find("line 1: tls_server_config.cipher_suites: 'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384': schedhot's TLS (GnuTLS) "
                      "cannot choose TLS 1.0-1.2 suites one by one"),
            std::string::npos);
  EXPECT_EQ(refusal("tls_server_config: {cert_file: a, key_file: b, cipher_suites: [TLS_AES_256_GCM_SHA384]}\n"), "");

  // load_web_config reads the files into memory for libmicrohttpd, refuses an encrypted key
  // in one line (never a passphrase prompt), and takes the system's roots for client
  // verification without client_ca_file.
  TempDir d("web_config_tls");
  Pki server, ca;
  server.write(d / "server.key", d / "server.crt", "127.0.0.1");
  ca.write(d / "ca.key", d / "ca.crt", "schedhot test CA");
  server.write_encrypted(d / "server-enc.key");
  spit(d / "web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n"
                      "  client_ca_file: ca.crt\n  min_version: TLS13\n");
  const WebConfig c = load_web_config(d / "web.yml");
  EXPECT_EQ(c.tls.cert_pem, slurp(d / "server.crt"));
  EXPECT_EQ(c.tls.key_pem, slurp(d / "server.key"));
  EXPECT_EQ(c.tls.ca_pem, slurp(d / "ca.crt"));
  spit(d / "enc.yml", "tls_server_config: {cert_file: server.crt, key_file: server-enc.key}\n");
  try {
    load_web_config(d / "enc.yml");
    ADD_FAILURE() << "an encrypted key accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(d / "enc.yml" + ": tls_server_config.key_file " + d / "server-enc.key" +
                                              ": an encrypted private key; schedhot asks for no passphrase",
                                          0),
              0u)
        << e.what();
  }
  if (!system_ca_bundle().empty()) {
    spit(d / "sys.yml", "tls_server_config: {cert_file: server.crt, key_file: server.key, client_auth_type: VerifyClientCertIfGiven}\n");
    EXPECT_EQ(load_web_config(d / "sys.yml").tls.ca_pem, slurp(system_ca_bundle()));
  }
  spit(d / "none.yml", "tls_server_config: {cert_file: server.crt, key_file: server.key}\n");
  EXPECT_EQ(load_web_config(d / "none.yml").tls.ca_pem, "");  // NoClientCert: no certificate asked for
  EXPECT_EQ(verify_client(nullptr, ClientAuth::kNone), "");
  EXPECT_EQ(verify_client(nullptr, ClientAuth::kRequest), "");
  EXPECT_EQ(verify_client(nullptr, ClientAuth::kRequireAndVerify), "no TLS session");
}

TEST(WebConfig, DecodeBasicAuth) {
  std::string u, p;
  ASSERT_TRUE(decode_basic_auth(basic("alice:pa:ss word"), u, p));
  EXPECT_EQ(u, "alice");
  EXPECT_EQ(p, "pa:ss word");  // split at the first ':' only
  ASSERT_TRUE(decode_basic_auth("basic YWxpY2U6", u, p));  // scheme in any case; "alice:"
  EXPECT_EQ(u, "alice");
  EXPECT_EQ(p, "");
  ASSERT_TRUE(decode_basic_auth("BASIC   YTpi  ", u, p));  // "a:b", spaces around
  EXPECT_EQ(u + "|" + p, "a|b");
  for (const char* bad : {"", "Basic", "Basic ", "Bearer YWxpY2U6eA==", "Digest username=\"a\"", "Basic YWxpY2U",
                          "Basic YWxpY2U6eA=", "Basic YW=pY2U6eA==", "Basic YWxp*2U6eA==", "Basic YWxpY2U=" /* "alice", no ':' */,
                          "BasicYWxpY2U6eA=="}) {
    EXPECT_FALSE(decode_basic_auth(bad, u, p)) << bad;
  }
}

TEST(WebConfig, BasicAuthChecksBcrypt) {
  const BasicAuth none({});
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.allows(nullptr));  // no users: no authentication

  const BasicAuth auth({{"alice", bcrypt("s3cret", 4)}, {"bob", bcrypt("hunter2", 5)}});
  ASSERT_TRUE(auth.enabled());
  EXPECT_TRUE(auth.allows(basic("alice:s3cret").c_str()));
  EXPECT_TRUE(auth.allows(basic("bob:hunter2").c_str()));
  EXPECT_TRUE(auth.allows(("basic " + basic("bob:hunter2").substr(6)).c_str()));
  EXPECT_FALSE(auth.allows(basic("alice:hunter2").c_str()));  // another user's password
  EXPECT_FALSE(auth.allows(basic("alice:s3cre").c_str()));
  EXPECT_FALSE(auth.allows(basic("alice:s3cret ").c_str()));
  EXPECT_FALSE(auth.allows(basic("Alice:s3cret").c_str()));  // user names are case-sensitive
  EXPECT_FALSE(auth.allows(basic("carol:s3cret").c_str()));
  EXPECT_FALSE(auth.allows(basic(std::string("alice:s3cret\0x", 14)).c_str()));  // crypt(3) would stop at the NUL
  EXPECT_FALSE(auth.allows(nullptr));
  EXPECT_FALSE(auth.allows(""));
  EXPECT_FALSE(auth.allows("Bearer abc"));
  // The $2y$ hashes of htpasswd and Go's bcrypt check the same way.
  std::string y = bcrypt("pw", 4);
  y[2] = 'y';
  crypt_data cd{};
  const std::string y_hash = crypt_rn("pw", y.c_str(), &cd, sizeof cd);
  EXPECT_TRUE(BasicAuth({{"u", y_hash}}).allows(basic("u:pw").c_str()));
}

TEST(WebConfig, PassedCredentialsSkipTheQueueWrongOnesDoNot) {
  // Cost 12 (~200 ms here): the first right check pays it, the next is remembered; a wrong
  // password right after still pays a bcrypt.
  const BasicAuth auth({{"alice", bcrypt("s3cret", 12)}});
  auto seconds = [&](const std::string& h, bool want) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(auth.allows(h.c_str()), want) << h;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double first = seconds(basic("alice:s3cret"), true), again = seconds(basic("alice:s3cret"), true);
  const double wrong = seconds(basic("alice:s3cret2"), false), other = seconds(basic("bob:s3cret"), false);
  std::printf("bcrypt cost 12: first right %.1f ms, remembered %.3f ms, wrong %.1f ms, unknown %.1f ms\n", first * 1e3,
              again * 1e3, wrong * 1e3, other * 1e3);
  EXPECT_LT(again, first / 20);
  EXPECT_GT(wrong, first / 4);
  EXPECT_GT(other, first / 4);
  // A cost above 16 is refused when the file is read (Go allows 31: days a check).
  EXPECT_THROW(parse_web_config("basic_auth_users: {u: '" + std::string("$2b$17$") + std::string(53, 'a') + "'}\n", "."),
               std::invalid_argument);
}

TEST(WebConfig, UnknownUserCostsABcryptToo) {
  // Cost 10 (~50 ms here): an unknown user takes as long as a known one with a wrong
  // password, so the time tells nothing about which users exist.
  // Interleaved and the fastest of each kept: a loaded host (CI runs this under ASan beside a
  // QEMU guest) slows whole stretches, and three known tries in a row once all took twice
  // the unknown ones (126 vs 61 ms).
  const BasicAuth auth({{"alice", bcrypt("s3cret", 10)}});
  const std::string known_h = basic("alice:wrong"), unknown_h = basic("mallory:wrong");
  auto seconds = [&](const std::string& h) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(auth.allows(h.c_str()));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double known = 1e9, unknown = 1e9;
  for (int i = 0; i < 6; ++i) {
    known = std::min(known, seconds(known_h));
    unknown = std::min(unknown, seconds(unknown_h));
  }
  std::printf("bcrypt cost 10: known user %.1f ms, unknown user %.1f ms\n", known * 1e3, unknown * 1e3);
  EXPECT_GT(known, 0.005);
  EXPECT_GT(unknown, known * 0.5);
  EXPECT_LT(unknown, known * 2);
}

TEST(WebConfig, QuickAnswersOnlyWhatNeedsNoBcrypt) {
  // serve's HTTP threads call quick() only: no users, no header and remembered credentials
  // are answered there; anything else is a Pending for the checker thread, which outlives
  // nothing it needs (copies of the user, password and hash).
  const BasicAuth none({});
  BasicAuth::Pending p0;
  EXPECT_EQ(none.quick(nullptr, p0), BasicAuth::Quick::kAllowed);
  const BasicAuth auth({{"alice", bcrypt("s3cret", 4)}});
  BasicAuth::Pending p1, p2, p3, p4;
  EXPECT_EQ(auth.quick(nullptr, p1), BasicAuth::Quick::kRefused);
  EXPECT_EQ(auth.quick("Bearer x", p1), BasicAuth::Quick::kRefused);
  ASSERT_EQ(auth.quick(basic("alice:s3cret").c_str(), p2), BasicAuth::Quick::kNeedsBcrypt);
  EXPECT_TRUE(p2.known);
  EXPECT_TRUE(p2.matches());
  auth.remember(p2);
  EXPECT_EQ(auth.quick(basic("alice:s3cret").c_str(), p3), BasicAuth::Quick::kAllowed);
  ASSERT_EQ(auth.quick(basic("mallory:s3cret").c_str(), p4), BasicAuth::Quick::kNeedsBcrypt);
  EXPECT_FALSE(p4.known);
  EXPECT_FALSE(p4.matches());  // the first user's hash, then refused: an unknown user costs a bcrypt too
}
