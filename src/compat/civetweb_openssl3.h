// Debian 12's civetweb (libcivetweb1 1.15+dfsg-4) is built for the OpenSSL 1.1 API and loads
// OpenSSL at run time with dlopen("libssl.so") and dlopen("libcrypto.so"), then looks up
// every function it uses by name. OpenSSL 3 (Debian 12's only libssl) no longer exports
// SSL_get_peer_certificate (it became a macro for SSL_get1_peer_certificate), so civetweb's
// TLS refuses to start ("load_tls_dll: libssl.so: cannot find SSL_get_peer_certificate"),
// and the unversioned names exist only where libssl-dev is installed.
//
// schedhot dlopen()s (RTLD_GLOBAL, only to serve TLS: cmd_serve.cpp load_openssl_compat())
// two tiny libraries from lib/schedhot whose sonames are "libssl.so" and "libcrypto.so":
// the dynamic loader hands an already loaded object to a dlopen() of its soname, so
// civetweb gets them, and its lookups fall through to their dependencies, the
// real libssl.so.3 and libcrypto.so.3. The libssl one adds SSL_get_peer_certificate (the
// same function: a counted reference that civetweb frees with X509_free).
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
/// The running OpenSSL's major version (3), from the libssl.so compat library.
int schedhot_civetweb_libssl_compat(void);
/// The same, from the libcrypto.so compat library.
int schedhot_civetweb_libcrypto_compat(void);
#ifdef __cplusplus
}
#endif
