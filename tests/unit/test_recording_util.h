// Helpers shared by the recording tests (test_recording*.cpp): temporary files, writing
// a synthetic recording, comparing samples.
#pragma once
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "store/crc32c.h"
#include "store/recording.h"
#include "test_util.h"

namespace schedhot::testing {

/// A path in gtest's temporary directory, unique to this process.
inline std::string tmp_path(const std::string& name) {
  return fmt::format("{}/schedhot_test_{}_{}", ::testing::TempDir(), getpid(), name);
}

/// A fresh temporary directory, removed with everything in it at scope exit.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& name) : path(tmp_path(name)) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& f) const { return path + "/" + f; }
};

inline std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void spit(const std::string& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

/// An in-memory file (memfd) with a path a reader can open: fast for tests that write
/// thousands of variants of a recording.
struct MemFile {
  int fd = memfd_create("schedhot-test", MFD_CLOEXEC);
  ~MemFile() {
    if (fd >= 0) ::close(fd);
  }
  std::string path() const { return fmt::format("/proc/self/fd/{}", fd); }
  void set(const std::string& bytes) {
    ASSERT_EQ(::ftruncate(fd, 0), 0);
    ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }
};

/// n synthetic samples of m, 1 s apart from mono 5 s, advanced by advance() with seed.
inline std::vector<Sample> make_samples(const Meta& m, int n, uint64_t seed = 7, double busy = 0.3) {
  std::mt19937_64 rng(seed);
  std::vector<Sample> out;
  Sample s = make_sample(m);
  s.mono_ns = 5'000'000'000;
  s.wall_ns = 1'700'000'000'000'000'000ull;
  for (int i = 0; i < n; ++i) {
    if (i) advance(m, s, rng, busy);
    out.push_back(s);
  }
  return out;
}

/// n samples like make_samples(), with CPU hotplug: the CPUs of m.host.online are online
/// throughout, except `cpu`, which is online in samples [online_from, online_to) only
/// (Sample::online says so). A CPU's counters move only into a sample where it is online,
/// as a real offline CPU's per-CPU slots keep their values.
inline std::vector<Sample> make_hotplug_samples(const Meta& m, int n, int cpu, int online_from, int online_to,
                                                uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::vector<Sample> out;
  Sample s = make_sample(m);
  s.mono_ns = 5'000'000'000;
  s.wall_ns = 1'700'000'000'000'000'000ull;
  for (int i = 0; i < n; ++i) {
    const bool on = i >= online_from && i < online_to;
    s.online.clear();
    for (uint32_t c = 0; c < m.ncpus; ++c) {
      const bool base = std::find(m.host.online.begin(), m.host.online.end(), int(c)) != m.host.online.end();
      if (int(c) == cpu ? on : base) s.online.push_back(int(c));
    }
    if (i) {
      Sample before = s;
      advance(m, s, rng, 0.8);
      for (uint32_t c = 0; c < m.ncpus; ++c) {
        if (std::binary_search(s.online.begin(), s.online.end(), int(c))) continue;
        for (size_t p = 0; p < m.probes.size(); ++p) {
          const size_t sw = m.probes[p].slot.slot_words;
          if (s.probes[p].present)
            std::copy_n(before.probes[p].words.cpu(c), sw, s.probes[p].words.mut_cpu(c));
        }
      }
    }
    out.push_back(s);
  }
  return out;
}

/// Writes samples to path (overwriting), closed.
inline void write_samples(const std::string& path, const Meta& m, const std::vector<Sample>& samples,
                          bool compress = true) {
  WriterOptions wo;
  wo.compress = compress;
  wo.overwrite = true;
  RecordingWriter w(path, m, wo);
  for (auto& s : samples) w.write_sample(s);
  w.close();
}

/// Writes n samples (make_samples) to path, closed; returns them.
inline std::vector<Sample> write_recording(const std::string& path, const Meta& m, int n, bool compress,
                                           uint64_t seed = 7) {
  std::vector<Sample> out = make_samples(m, n, seed);
  WriterOptions wo;
  wo.compress = compress;
  wo.overwrite = true;
  RecordingWriter w(path, m, wo);
  for (auto& s : out) w.write_sample(s);
  w.close();
  return out;
}

inline void expect_same(const Sample& a, const Sample& b) {
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.mono_ns, b.mono_ns);
  EXPECT_EQ(a.wall_ns, b.wall_ns);
  ASSERT_EQ(a.probes.size(), b.probes.size());
  for (size_t p = 0; p < a.probes.size(); ++p) {
    EXPECT_EQ(a.probes[p].present, b.probes[p].present) << p;
    EXPECT_TRUE(a.probes[p].words == b.probes[p].words) << "probe " << p << " words differ";
  }
}

/// Every sample next() gives, until it returns false.
inline std::vector<Sample> read_all(RecordingReader& r) {
  std::vector<Sample> out;
  Sample s;
  while (r.next(s)) out.push_back(s);
  return out;
}

/// Offset of sample i's frame in the recording at path.
inline uint64_t sample_offset(const std::string& path, size_t i) {
  return RecordingReader::open(path)->sample_positions().at(i).offset;
}

/// Copies the recording src to dst cut `into` bytes into sample i's frame, as a writer
/// killed mid-frame leaves it. Returns the offset of that (now incomplete) frame.
inline uint64_t copy_cut_inside(const std::string& src, const std::string& dst, size_t i, size_t into) {
  const uint64_t at = sample_offset(src, i);
  spit(dst, slurp(src).substr(0, at + into));
  return at;
}

/// A frame as the writer lays it out (recording.h), for hand-made recordings.
inline std::string make_frame(FrameType type, uint8_t flags, uint64_t mono_ns, const std::string& payload) {
  std::string h(kFrameHeaderBytes, '\0');
  uint32_t magic = 0x52464853, len = static_cast<uint32_t>(payload.size());
  std::memcpy(h.data(), &magic, 4);
  std::memcpy(h.data() + 4, &len, 4);
  h[8] = static_cast<char>(type);
  h[9] = static_cast<char>(flags);
  std::memcpy(h.data() + 16, &mono_ns, 8);
  uint32_t crc = crc32c(h.data() + 4, 8);
  crc = crc32c(h.data() + 16, 8, crc);
  crc = crc32c(payload.data(), payload.size(), crc);
  std::memcpy(h.data() + 12, &crc, 4);
  return h + payload;
}

/// Recomputes the CRC of the frame at offset at of a recording's bytes (after an edit).
inline void fix_frame_crc(std::string& data, size_t at) {
  uint32_t len;
  std::memcpy(&len, data.data() + at + 4, 4);
  uint32_t crc = crc32c(data.data() + at + 4, 8);
  crc = crc32c(data.data() + at + 16, 8, crc);
  crc = crc32c(data.data() + at + kFrameHeaderBytes, len, crc);
  std::memcpy(data.data() + at + 12, &crc, 4);
}

/// The bytes of the closed recording at path with frame inserted just before sample i's
/// frame, and without the INDEX and END frames (whose offsets the insertion would make
/// wrong): an unclosed file whose samples 0..i-1 precede the frame.
inline std::string with_frame_before_sample(const std::string& path, size_t i, const std::string& frame) {
  auto r = RecordingReader::open(path);
  const uint64_t at = r->sample_positions().at(i).offset;
  const uint64_t end = r->index() ? r->index()->index_offset : r->file_bytes();
  const std::string d = slurp(path);
  return d.substr(0, at) + frame + d.substr(at, end - at);
}

/// JSON nested depth levels deep: `[` x depth then `]` x depth (the crafted META or NOTE
/// that once overflowed the stack at 40000).
inline std::string nested_json(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace schedhot::testing
