// Size-limited recording with rotation, for long-running recorders (a service).
//
// Naming: FILE is always the file being written (the newest); the closed ones are
// FILE.1 (newest closed) .. FILE.N (oldest). When FILE would grow past max_bytes it is
// closed properly (INDEX + END), FILE.N is deleted, FILE.k is renamed FILE.k+1, FILE
// becomes FILE.1, and a new FILE starts with its own META (the current probe statuses,
// start times of its first sample) and a keyframe, so every file reads on its own.
// An existing FILE at start is rotated the same way first: nothing is overwritten.
//
// No interval is lost at a rotation: the new FILE begins with the sample that ended the
// closed one, written again (as its keyframe), then the new sample. Every interval of the
// run is in exactly one file; consecutive files share one sample (same seq, times and
// counters; the new file's copy without its gap counts, Sample::gaps, which belong to the
// closed file's last interval).
//
// A rotation moves or deletes only recordings (regular files starting with the SCHEDHOT
// magic). FILE and FILE.1 .. FILE.N are checked at start: anything else there is refused
// (one line naming it). One that appears later stops the recording at the next rotation:
// FILE is closed complete, nothing is moved or deleted, and write_sample() throws naming
// it. Renames never replace an existing file (RENAME_NOREPLACE).
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
  /// rot.max_bytes > 0. Throws std::runtime_error with a one-line message, also when
  /// something that is not a recording is at path or at path.1 .. path.keep.
  RotatingWriter(const std::string& path, const Meta& meta, WriterOptions wo, RotateOptions rot);
  ~RotatingWriter();
  RotatingWriter(const RotatingWriter&) = delete;
  RotatingWriter& operator=(const RotatingWriter&) = delete;

  /// Appends a sample, rotating first when the current file is full (the new file starts
  /// with the previous sample again, then s). Throws std::runtime_error on a write or
  /// rename error, when max_bytes cannot hold the metadata and two samples, or when a
  /// non-recording has appeared at FILE.k (then FILE is closed and nothing is moved);
  /// every complete frame written stays readable.
  void write_sample(const Sample& s);
  /// Records a probe's status change (NOTE frame; the next file's META carries it).
  void write_status(const ProbeStatus& status);
  /// Closes the current file (INDEX + END). Idempotent.
  void close();

  /// The name of closed file k (1 = newest): "FILE.k".
  static std::string rotated_name(const std::string& path, unsigned k);

  uint64_t bytes() const;        ///< bytes written to all files
  /// Distinct samples written to all files: the sample a rotated file repeats from the
  /// previous one counts once.
  uint32_t samples() const;
  unsigned rotations() const { return rotations_; }
  const std::string& path() const { return path_; }

 private:
  /// Throws (one line naming it, ending with why) if anything at FILE.1 .. FILE.keep is
  /// not a recording.
  void check_rotated(const std::string& why) const;
  void shift();  ///< FILE -> FILE.1 -> ... ; drops the oldest
  void open_new(uint64_t start_wall_ns, uint64_t start_mono_ns);

  std::string path_;
  Meta meta_;
  WriterOptions wo_;
  RotateOptions rot_;
  std::unique_ptr<RecordingWriter> w_;
  uint64_t done_bytes_ = 0;    ///< in closed files
  uint32_t done_samples_ = 0;  ///< distinct, in closed files
  unsigned rotations_ = 0;
  bool rotate_next_ = false;   ///< a NOTE did not fit: start a new file before the next sample
  Sample last_;                ///< the last sample written (kept only when rotating)
  bool have_last_ = false;
  uint32_t repeated_ = 0;      ///< 1 when w_'s first sample is the previous file's last
};

}  // namespace schedhot
