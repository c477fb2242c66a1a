// The frame layer of a recording: the file header, frame headers and their CRC32C, and
// zstd compression of payloads (frame.h).
#include "store/frame.h"

#include <zstd.h>

#include "store/crc32c.h"

namespace schedhot {

std::string encode_file_header(uint64_t created_wall_ns) {
  std::string h(kFileMagic, 8);
  put<uint16_t>(h, kFormatMajor);
  put<uint16_t>(h, kFormatMinor);
  put<uint32_t>(h, kFileHeaderBytes);
  put<uint64_t>(h, created_wall_ns);
  put<uint32_t>(h, 0);
  put<uint32_t>(h, crc32c(h.data(), h.size()));
  return h;
}

FrameHeader decode_frame_header(const uint8_t* h) {
  FrameHeader f;
  std::memcpy(&f.magic, h, 4);
  std::memcpy(&f.payload_bytes, h + 4, 4);
  f.type = static_cast<FrameType>(h[8]);
  f.flags = h[9];
  std::memcpy(&f.crc, h + 12, 4);
  std::memcpy(&f.mono_ns, h + 16, 8);
  return f;
}

uint32_t frame_crc(const uint8_t* h, const std::string& payload) {
  uint32_t crc = crc32c(h + 4, 8);
  crc = crc32c(h + 16, 8, crc);
  return crc32c(payload.data(), payload.size(), crc);
}

std::string encode_frame(FrameType t, uint8_t flags, uint64_t mono_ns, const std::string& payload) {
  std::string frame;
  frame.reserve(kFrameHeaderBytes + payload.size());
  put<uint32_t>(frame, kFrameMagic);
  put<uint32_t>(frame, static_cast<uint32_t>(payload.size()));
  frame.push_back(static_cast<char>(t));
  frame.push_back(static_cast<char>(flags));
  put<uint16_t>(frame, 0);
  put<uint32_t>(frame, 0);  // CRC placeholder
  put<uint64_t>(frame, mono_ns);
  const uint32_t crc = frame_crc(reinterpret_cast<const uint8_t*>(frame.data()), payload);
  std::memcpy(frame.data() + 12, &crc, 4);
  frame += payload;
  return frame;
}

void compress_if_smaller(std::string& b, uint8_t& flags, int level) {
  if (b.size() <= 256) return;
  std::string z(ZSTD_compressBound(b.size()), '\0');
  size_t n = ZSTD_compress(z.data(), z.size(), b.data(), b.size(), level);
  // Kept raw when it shrinks more than a reader accepts of a zstd frame (over 256x beyond
  // 1 MiB: reader.cpp unpack_frame takes such a ratio for a decompression bomb).
  const bool bomb_like = !ZSTD_isError(n) && b.size() > (size_t(1) << 20) && b.size() / 256 > n;
  if (!ZSTD_isError(n) && n < b.size() && !bomb_like) {
    z.resize(n);
    b.swap(z);
    flags |= kFlagZstd;
  }
}

Unzstd unzstd(const std::string& in, uint64_t limit, std::string& out, std::string& error) {
  unsigned long long sz = ZSTD_getFrameContentSize(in.data(), in.size());
  if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN || sz > limit) return Unzstd::bad_size;
  out.resize(sz);
  size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n) || n != sz) {
    error = ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short";
    return Unzstd::failed;
  }
  return Unzstd::ok;
}

}  // namespace schedhot
