// sys/web_config.h: Prometheus's web-config file (`schedhot serve --web-config`) parsed
// into known values, every refusal naming its line and key, the OpenSSL context it sets
// up (read back from a real SSL_CTX), and basic auth against real bcrypt hashes.
#include <crypt.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

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
  std::string out(4 * ((user_colon_pw.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(user_colon_pw.data()), static_cast<int>(user_colon_pw.size()));
  out.resize(static_cast<size_t>(n));
  return "Basic " + out;
}

/// A P-256 key and a certificate for it (self-signed when issuer_key is null), as PEM files.
struct Pki {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ~Pki() { EVP_PKEY_free(key); }
  void write(const std::string& key_path, const std::string& cert_path, const char* cn) const {
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME* n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
    X509_set_issuer_name(x, n);
    X509_sign(x, key, EVP_sha256());
    FILE* f = std::fopen(cert_path.c_str(), "w");
    PEM_write_X509(f, x);
    std::fclose(f);
    f = std::fopen(key_path.c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(x);
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
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_256_CBC_SHA]
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
  // Go's names to OpenSSL's; the TLS 1.3 suite is accepted and left out, as Go ignores it.
  EXPECT_EQ(c.tls.ciphers, (std::vector<std::string>{"ECDHE-RSA-AES128-GCM-SHA256", "AES256-SHA"}));
  EXPECT_EQ(c.tls.groups, (std::vector<std::string>{"X25519", "P-384"}));
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
  EXPECT_TRUE(c.tls.ciphers.empty());
  EXPECT_EQ(parse_web_config("tls_server_config: {cert_file: a, key_file: b}\n", "").tls.cert_file, "a");
  EXPECT_EQ(parse("tls_server_config: {cert_file: a, key_file: b, client_auth_type: RequireClientCert, client_ca_file: c}")
                .tls.client_auth,
            ClientAuth::kRequireAny);  // the old name, kept by exporter-toolkit
}

TEST(WebConfig, RefusalsNameLineAndKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"foo: 1\n", "line 1: foo: unknown key (known here: tls_server_config, http_server_config, basic_auth_users)"},
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
  EXPECT_EQ(refused("foo: 1\n").rfind(d / "web.yml" + ": line 1: foo: unknown key", 0), 0u);
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

TEST(WebConfig, ConfigureTlsSetsTheContext) {
  TempDir d("web_config_tls");
  Pki server, ca;
  server.write(d / "server.key", d / "server.crt", "127.0.0.1");
  ca.write(d / "ca.key", d / "ca.crt", "schedhot test CA");
  WebConfig c = parse_web_config(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_ca_file: ca.crt\n  min_version: TLS13\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n"
      "  curve_preferences: [CurveP256]\n",
      d.path);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  const uint64_t fresh = SSL_CTX_get_options(ctx);
  SSL_CTX_set_options(ctx, 0x80000BFFul | 0x01000000ul);  // what civetweb 1.15 sets: OpenSSL 1.0's SSL_OP_ALL and NO_SSLv2
  ASSERT_EQ(configure_tls(ctx, c.tls), "");
  // Those bits cleared (in OpenSSL 3 they are kernel TLS, no CA names, no anti-replay, ...).
  EXPECT_EQ(SSL_CTX_get_options(ctx), fresh | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_max_proto_version(ctx), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  EXPECT_EQ(SSL_CTX_get_verify_callback(ctx), nullptr);  // OpenSSL's chain verification
  STACK_OF(X509_NAME)* cas = SSL_CTX_get_client_CA_list(ctx);
  ASSERT_EQ(sk_X509_NAME_num(cas), 1);
  char name[128];
  X509_NAME_oneline(sk_X509_NAME_value(cas, 0), name, sizeof name);
  EXPECT_STREQ(name, "/CN=schedhot test CA");
  EXPECT_TRUE(SSL_CTX_get_options(ctx) & SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The TLS 1.2 list is the one suite given (TLS 1.3's own suites stay OpenSSL's).
  int tls12 = 0;
  STACK_OF(SSL_CIPHER)* cs = SSL_CTX_get_ciphers(ctx);
  for (int i = 0; i < sk_SSL_CIPHER_num(cs); ++i) {
    const SSL_CIPHER* ci = sk_SSL_CIPHER_value(cs, i);
    if (std::strncmp(SSL_CIPHER_get_name(ci), "TLS_", 4) != 0) {  // OpenSSL names TLS 1.3's suites TLS_*
      ++tls12;
      EXPECT_STREQ(SSL_CIPHER_get_name(ci), "ECDHE-ECDSA-AES256-GCM-SHA384");
    }
  }
  EXPECT_EQ(tls12, 1);
  SSL_CTX_free(ctx);

  // Request and require-any take any certificate: a callback that accepts every chain.
  for (const auto& [type, mode] : {std::pair{"RequestClientCert", SSL_VERIFY_PEER},
                                   {"RequireAnyClientCert", SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT}}) {
    c = parse_web_config(fmt::format("tls_server_config: {{cert_file: server.crt, key_file: server.key, client_auth_type: {}}}", type),
                         d.path);
    ctx = SSL_CTX_new(TLS_server_method());
    ASSERT_EQ(configure_tls(ctx, c.tls), "");
    EXPECT_EQ(SSL_CTX_get_verify_mode(ctx), mode) << type;
    ASSERT_NE(SSL_CTX_get_verify_callback(ctx), nullptr) << type;
    EXPECT_EQ(SSL_CTX_get_verify_callback(ctx)(0, nullptr), 1) << type;
    EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
    SSL_CTX_free(ctx);
  }
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
  const BasicAuth auth({{"alice", bcrypt("s3cret", 10)}});
  auto fastest = [&](const std::string& h) {
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_FALSE(auth.allows(h.c_str()));
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double known = fastest(basic("alice:wrong")), unknown = fastest(basic("mallory:wrong"));
  std::printf("bcrypt cost 10: known user %.1f ms, unknown user %.1f ms\n", known * 1e3, unknown * 1e3);
  EXPECT_GT(known, 0.005);
  EXPECT_GT(unknown, known * 0.5);
  EXPECT_LT(unknown, known * 2);
}
