// lib/schedhot/libssl.so (soname "libssl.so"): see civetweb_openssl3.h.
#include <openssl/ssl.h>

#include "civetweb_openssl3.h"

#undef SSL_get_peer_certificate
X509* SSL_get_peer_certificate(const SSL* s);
X509* SSL_get_peer_certificate(const SSL* s) { return SSL_get1_peer_certificate(s); }

int schedhot_civetweb_libssl_compat(void) { return (int)(OpenSSL_version_num() >> 28); }
