// The frame layer of a recording (layout in recording.h): the file header, a frame's
// 24-byte header and CRC32C, zstd compression of payloads, and the little-endian byte
// codec every payload is written and read with (put, put_varint, zigzag, ByteReader).
// Internal to src/store.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "store/recording.h"

namespace schedhot {

inline constexpr char kFileMagic[8] = {'S', 'C', 'H', 'E', 'D', 'H', 'O', 'T'};
inline constexpr uint32_t kFrameMagic = 0x52464853;  // "SHFR" little-endian
inline constexpr uint8_t kFlagZstd = 1;              ///< frame flag: payload stored zstd-compressed
inline constexpr uint8_t kFlagKeyframe = 2;          ///< frame flag: a SAMPLE whose deltas are against zero

// ---- byte codec -------------------------------------------------------------------

/// Appends v to b as its sizeof(T) little-endian bytes.
template <typename T>
void put(std::string& b, T v) {
  char tmp[sizeof(T)];
  std::memcpy(tmp, &v, sizeof(T));
  b.append(tmp, sizeof(T));
}

/// Appends v to b as a LEB128 varint: 7 bits a byte, low first, 1 to 10 bytes.
inline void put_varint(std::string& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<char>(v));
}

/// Signed to unsigned so that small magnitudes make short varints: 0, -1, 1, -2 -> 0, 1, 2, 3.
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

/// Bounds-checked reader over a byte string, the inverse of put() and put_varint(). A read
/// past the end (or a varint over 10 bytes) returns 0 and clears ok for good: callers read
/// a whole group of fields, then check ok once.
struct ByteReader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  explicit ByteReader(const std::string& b)
      : p(reinterpret_cast<const uint8_t*>(b.data())), end(reinterpret_cast<const uint8_t*>(b.data()) + b.size()) {}

  template <typename T>
  T get() {
    T v{};
    if (static_cast<size_t>(end - p) < sizeof(T)) {
      ok = false;
      return v;
    }
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) break;
      uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  /// Bytes not read yet.
  size_t left() const { return static_cast<size_t>(end - p); }
};

// ---- file header and frames --------------------------------------------------------

/// The 32-byte file header of a recording written now: magic, kFormatMajor.kFormatMinor,
/// created (wall clock ns since the epoch), flags 0, its CRC32C.
std::string encode_file_header(uint64_t created_wall_ns);

/// A frame's header as stored (layout in recording.h).
struct FrameHeader {
  uint32_t magic = 0;
  uint32_t payload_bytes = 0;  ///< as stored (compressed when flags has kFlagZstd)
  FrameType type{};
  uint8_t flags = 0;
  uint32_t crc = 0;
  uint64_t mono_ns = 0;  ///< CLOCK_MONOTONIC ns of the sample, 0 for other frames
};

/// Reads the kFrameHeaderBytes bytes at h (no check: the caller checks magic and length).
FrameHeader decode_frame_header(const uint8_t* h);

/// The CRC32C a frame stores: over header bytes 4..11 and 16..23 (h: the 24 header bytes)
/// and the payload as stored.
uint32_t frame_crc(const uint8_t* h, const std::string& payload);

/// A whole frame, header (with its CRC) and payload, ready for one write().
std::string encode_frame(FrameType t, uint8_t flags, uint64_t mono_ns, const std::string& payload);

// ---- compression -------------------------------------------------------------------

/// Replaces payload by its zstd compression at level (and sets kFlagZstd in flags) when it
/// is over 256 bytes and compression makes it smaller; else leaves both as they are.
void compress_if_smaller(std::string& payload, uint8_t& flags, int level);

/// Why a zstd payload did not decompress.
enum class Unzstd { ok, bad_size, failed };

/// Decompresses the zstd frame in into out. bad_size: its content size is missing,
/// unreadable or over limit bytes (nothing allocated); failed: it does not decompress to
/// that size (error: zstd's error name, or "short").
Unzstd unzstd(const std::string& in, uint64_t limit, std::string& out, std::string& error);

}  // namespace schedhot
