// Size-limited recording with rotation, for long-running recorders (a service).
//
// Naming: FILE is always the file being written (the newest); the closed ones are
// FILE.1 (newest closed) .. FILE.N (oldest). When FILE would grow past max_bytes it is
// closed properly (INDEX + END), FILE.N is deleted, FILE.k is renamed FILE.k+1, FILE
// becomes FILE.1, and a new FILE starts with its own META (the current probe statuses,
// start times of its first sample) and a keyframe, so every file reads on its own.
// An existing FILE at start is rotated the same way first: nothing is overwritten.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "store/recording.h"

namespace schedhot {

/// Rotation settings. max_bytes == 0: one file, no limit, no rotation.
struct RotateOptions {
  uint64_t max_bytes = 0;  ///< size limit of each file, bytes, INDEX and END included
  unsigned keep = 0;       ///< closed files kept: FILE.1 .. FILE.keep (0: only FILE)
};

/// A RecordingWriter that starts a new file when the current one is full.
class RotatingWriter {
 public:
  /// Creates path with meta (like RecordingWriter). path must not be "-" when
  /// rot.max_bytes > 0. Throws std::runtime_error with a one-line message.
  RotatingWriter(const std::string& path, const Meta& meta, WriterOptions wo, RotateOptions rot);
  ~RotatingWriter();
  RotatingWriter(const RotatingWriter&) = delete;
  RotatingWriter& operator=(const RotatingWriter&) = delete;

  /// Appends a sample, rotating first when the current file is full. Throws
  /// std::runtime_error on a write or rename error, or when max_bytes cannot hold the
  /// metadata and one sample; every complete frame written stays readable.
  void write_sample(const Sample& s);
  /// Records a probe's status change (NOTE frame; the next file's META carries it).
  void write_status(const ProbeStatus& status);
  /// Closes the current file (INDEX + END). Idempotent.
  void close();

  /// The name of closed file k (1 = newest): "FILE.k".
  static std::string rotated_name(const std::string& path, unsigned k);

  uint64_t bytes() const;        ///< bytes written to all files
  uint32_t samples() const;      ///< samples written to all files
  unsigned rotations() const { return rotations_; }
  const std::string& path() const { return path_; }

 private:
  void shift();  ///< FILE -> FILE.1 -> ... ; drops the oldest
  void open_new(uint64_t start_wall_ns, uint64_t start_mono_ns);

  std::string path_;
  Meta meta_;
  WriterOptions wo_;
  RotateOptions rot_;
  std::unique_ptr<RecordingWriter> w_;
  uint64_t done_bytes_ = 0;    ///< in closed files
  uint32_t done_samples_ = 0;
  unsigned rotations_ = 0;
  bool rotate_next_ = false;   ///< a NOTE did not fit: start a new file before the next sample
};

}  // namespace schedhot
