// schedhot recordings: a versioned, append-only file of CRC32C-checked frames.
//
// File = FileHeader, then frames. All integers little-endian.
//
//   FileHeader, 32 bytes
//     0  char[8] magic "SCHEDHOT"
//     8  u16 major (kFormatMajor)      10 u16 minor (kFormatMinor)
//    12  u32 header bytes (32)         16 u64 created, wall clock ns since the epoch
//    24  u32 flags (0)                 28 u32 CRC32C of bytes 0..27
//
//   Frame = FrameHeader (24 bytes) + payload
//     0  u32 magic "SHFR"              4  u32 payload bytes (as stored)
//     8  u8 type                       9  u8 flags (1 = zstd, 2 = keyframe)
//    10  u16 reserved (0)             12  u32 CRC32C of header bytes 4..11 and 16..23 and the payload
//    16  u64 CLOCK_MONOTONIC ns of the sample (0 for other frames)
//
//   Frame types
//     1 META    JSON (schema in README "Recording format"): host, topology, probes with
//               status and slot layout, interval, start times. First frame.
//     2 SAMPLE  binary, zstd-compressed when that is smaller:
//                 u32 seq, u64 mono_ns, u64 wall_ns, u16 probe entries, then per entry
//                 u16 probe index, varint changed CPUs, then per CPU: varint CPU gap,
//                 varint changed words, then per word: varint word gap, zigzag varint delta.
//               A keyframe's deltas are against zero, the others against the previous
//               sample, so idle CPUs cost nothing. A keyframe every kKeyframeEvery samples.
//     3 INDEX   at close: u32 n, then n x (u32 seq, u64 mono_ns, u64 file offset) of keyframes
//     4 END     at close: u32 samples written. Its absence means the writer did not finish.
//     5 NOTE    JSON {"probe": name, "status": {...}}: a probe's status changed mid-run
//               (e.g. tick_broadcast_lock's address learned).
//
// A reader stops at the first frame that is truncated or fails its CRC, says where and
// why, and keeps everything before it.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sample/sample.h"

namespace schedhot {

inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 0;
inline constexpr uint32_t kKeyframeEvery = 64;
inline constexpr uint32_t kMaxFramePayload = 256u << 20;  ///< reader's limit, bytes

enum class FrameType : uint8_t { meta = 1, sample = 2, index = 3, end = 4, note = 5 };

/// Writer options.
struct WriterOptions {
  bool compress = true;      ///< zstd sample payloads when smaller
  int zstd_level = 3;
  bool overwrite = false;    ///< replace an existing file (default: refuse)
};

/// Appends a recording. Every frame goes to the kernel with one write() as soon as it is
/// complete, so a killed writer leaves every complete frame readable.
class RecordingWriter {
 public:
  /// Creates path ("-" = stdout) and writes the header and META frame. Throws
  /// std::runtime_error with a one-line message (exists, no space, permission...).
  RecordingWriter(const std::string& path, const Meta& meta, WriterOptions opts = {});
  ~RecordingWriter();
  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  /// Appends one sample (shaped like the Meta's probes). Throws std::runtime_error on a
  /// write error; frames already written stay valid.
  void write_sample(const Sample& s);
  /// Appends a NOTE frame: probe's status changed.
  void write_status(const ProbeStatus& status);
  /// Writes INDEX and END and closes. Idempotent. Throws on a write error.
  void close();

  uint64_t bytes() const { return offset_; }
  uint32_t samples() const { return nsamples_; }
  const std::string& path() const { return path_; }

 private:
  void write_frame(FrameType t, uint8_t flags, uint64_t mono_ns, const std::string& payload);
  int fd_ = -1;
  bool own_fd_ = true;
  std::string path_;
  WriterOptions opts_;
  Meta meta_;
  Sample prev_;
  bool have_prev_ = false;
  uint64_t offset_ = 0;
  uint32_t nsamples_ = 0;
  struct IndexEntry { uint32_t seq; uint64_t mono_ns; uint64_t offset; };
  std::vector<IndexEntry> index_;
};

/// Where and why reading stopped early.
struct Damage {
  uint64_t offset = 0;   ///< byte offset of the bad frame
  std::string reason;    ///< one line
};

/// Reads a recording: report, replay, export and info all use this one reader. It never
/// trusts a length or count from the file.
class RecordingReader : public SampleSource {
 public:
  /// Opens path and reads the header and META. Throws std::runtime_error with a one-line
  /// message: not a recording, future major version, damaged header or metadata.
  static std::unique_ptr<RecordingReader> open(const std::string& path);
  ~RecordingReader() override;

  const Meta& meta() const override { return meta_; }
  /// Next sample, false at the end or at the first damaged frame (see damage()).
  bool next(Sample& out) override;

  /// Set when reading stopped at a bad frame.
  const std::optional<Damage>& damage() const { return damage_; }
  bool saw_end() const { return saw_end_; }
  uint16_t major() const { return major_; }
  uint16_t minor() const { return minor_; }
  uint64_t frames() const { return frames_; }
  uint64_t file_bytes() const { return file_bytes_; }
  /// Status changes read so far (NOTE frames), in order.
  const std::vector<ProbeStatus>& status_notes() const { return notes_; }

  /// Where one sample frame is.
  struct SamplePos {
    uint32_t seq = 0;
    uint64_t mono_ns = 0;
    uint64_t offset = 0;   ///< of its frame header
    bool keyframe = false;
  };
  /// Every readable sample's position, found once by scanning the frames (stops at the
  /// first damaged frame, like next()).
  const std::vector<SamplePos>& sample_positions();
  /// Makes the next next() return readable sample number i (0-based): decodes forward
  /// from the keyframe at or before it. false when i is out of range.
  bool seek_sample(size_t i);
  /// Makes the next next() return the first sample with mono_ns >= t. false if none.
  bool seek_time(uint64_t mono_ns);

 private:
  RecordingReader() = default;
  /// Reads one frame; false at EOF or damage.
  bool read_frame(FrameType& type, uint8_t& flags, uint64_t& mono, std::string& payload, uint64_t& at);
  bool decode_sample(const std::string& payload, bool keyframe, Sample& out, std::string& why);
  void set_damage(uint64_t at, std::string why);

  int fd_ = -1;
  std::string path_;
  uint64_t pos_ = 0;
  uint64_t file_bytes_ = 0;
  uint16_t major_ = 0, minor_ = 0;
  Meta meta_;
  Sample state_;
  bool have_state_ = false;
  std::optional<Damage> damage_;
  bool saw_end_ = false;
  uint64_t frames_ = 0;
  std::vector<ProbeStatus> notes_;
  uint64_t data_start_ = 0;  ///< first frame after META
  bool scanned_ = false;
  std::vector<SamplePos> positions_;
};


}  // namespace schedhot
