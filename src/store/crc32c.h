// CRC32C (Castagnoli), the checksum of recording frames. Computed by Intel ISA-L's
// crc32_iscsi (Debian libisal), which uses the SSE4.2 crc32 instruction where present.
#pragma once
#include <cstddef>
#include <cstdint>

namespace schedhot {

/// Standard CRC32C of data (initial value ~0, final xor ~0): crc32c("123456789") ==
/// 0xE3069283. Pass a previous result as seed to extend it over more bytes.
uint32_t crc32c(const void* data, size_t len, uint32_t seed = 0);

}  // namespace schedhot
