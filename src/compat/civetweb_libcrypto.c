// lib/schedhot/libcrypto.so (soname "libcrypto.so"): see civetweb_openssl3.h. Only its
// dependency on libcrypto.so.3 matters (the call below keeps it); civetweb finds every
// function there.
#include <openssl/crypto.h>

#include "civetweb_openssl3.h"

int schedhot_civetweb_libcrypto_compat(void) { return (int)(OpenSSL_version_num() >> 28); }
