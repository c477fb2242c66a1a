#include "store/crc32c.h"

#include <climits>

#include <isa-l/crc.h>

namespace schedhot {

uint32_t crc32c(const void* data, size_t len, uint32_t seed) {
  // crc32_iscsi works on the raw register: pre- and post-invert for the standard form.
  uint32_t crc = ~seed;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (len > 0) {
    int n = len > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(len);
    crc = crc32_iscsi(p, n, crc);
    p += n;
    len -= static_cast<size_t>(n);
  }
  return ~crc;
}

}  // namespace schedhot
