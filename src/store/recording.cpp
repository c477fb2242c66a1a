#include "store/recording.h"
#include "sys/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <zstd.h>

#include "store/crc32c.h"
#include "sys/json_text.h"

namespace schedhot {

namespace {

constexpr char kFileMagic[8] = {'S', 'C', 'H', 'E', 'D', 'H', 'O', 'T'};
constexpr uint32_t kFrameMagic = 0x52464853;  // "SHFR" little-endian
constexpr uint8_t kFlagZstd = 1;
constexpr uint8_t kFlagKeyframe = 2;

template <typename T>
void put(std::string& b, T v) {
  char tmp[sizeof(T)];
  std::memcpy(tmp, &v, sizeof(T));
  b.append(tmp, sizeof(T));
}

void put_varint(std::string& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<char>(v));
}

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

/// Bounds-checked little reader over a byte string.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
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
  size_t left() const { return static_cast<size_t>(end - p); }
};

uint64_t state_words(const Meta& m) {
  uint64_t w = 0;
  for (auto& p : m.probes) w += p.layout.slot_words;
  return w * m.ncpus;
}

uint64_t mono_ns_now() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_ns(uint64_t ns) {
  struct timespec ts {static_cast<time_t>(ns / 1'000'000'000ull), static_cast<long>(ns % 1'000'000'000ull)};
  nanosleep(&ts, nullptr);
}

/// A write() that failed: errno_value is its errno.
struct WriteError : std::runtime_error {
  WriteError(const std::string& what, int e) : std::runtime_error(what), errno_value(e) {}
  int errno_value;
};

/// errno e as the writer's messages say it.
std::string write_error_text(int e) {
  return e == ENOSPC ? std::string("disk full (ENOSPC)") : fmt::format("write failed: {}", strerror(e));
}

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      if (e == ENOSPC) throw WriteError(fmt::format("{}: disk full (ENOSPC); complete frames are kept", path), e);
      throw WriteError(fmt::format("{}: {}", path, write_error_text(e)), e);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

/// Opens path to write a recording into, following symlinks (hops counts them). Sets
/// created to the path of the regular file this call created (O_EXCL: certainly this
/// call's), or "" when it opened something that was already there: with overwrite, an
/// existing regular file (replaced: created names a new file beside it and replaces the file's
/// real path, which the writer renames it over once its META is written), a device or a FIFO
/// with a reader (written in place,
/// never truncated). A dangling symlink's target is created, the link kept. Throws a
/// one-line std::runtime_error: exists (without overwrite), a FIFO without a reader (not
/// waited on), a terminal, or the open's errno.
int open_output(const std::string& path, bool overwrite, std::string& created, std::string& replaces, int hops = 0) {
  created.clear();
  replaces.clear();
  for (int attempt = 0; attempt < 8; ++attempt) {
    // Checked before every try: a name another user planted since the last one is seen.
    if (std::string why = unsafe_output_path(path); !why.empty()) throw std::runtime_error(fmt::format("-o {}: {}", path, why));
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd >= 0) {
      created = path;
      return fd;
    }
    if (errno != EEXIST) throw std::runtime_error(fmt::format("cannot create {}: {}", path, strerror(errno)));
    if (!overwrite) throw std::runtime_error(fmt::format("{} exists; choose another name or pass --force", path));
    if (std::string why = untrusted_symlink(path); !why.empty()) throw std::runtime_error(fmt::format("-o {}: {}", path, why));
    // O_NONBLOCK: a FIFO without a reader is ENXIO instead of a wait; cleared below.
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
      struct stat lst {};
      if (::lstat(path.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) continue;  // removed since: again
      // A dangling symlink: create its target (O_EXCL there too), the link stays.
      if (hops >= 40) throw std::runtime_error(fmt::format("cannot create {}: {}", path, strerror(ELOOP)));
      std::string target(4096, '\0');
      const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
      if (n <= 0 || size_t(n) >= target.size()) continue;
      target.resize(size_t(n));
      const size_t slash = path.rfind('/');
      if (target[0] != '/' && slash != std::string::npos) target = path.substr(0, slash + 1) + target;
      return open_output(target, overwrite, created, replaces, hops + 1);
    }
    if (fd < 0 && errno == ENXIO) {
      struct stat xs {};
      if (::stat(path.c_str(), &xs) == 0 && S_ISFIFO(xs.st_mode))
        throw std::runtime_error(fmt::format("{} is a FIFO with no reader; start the reader first", path));
      throw std::runtime_error(fmt::format("cannot open {}: {} (ENXIO: a device with nothing behind it, e.g. /dev/tty "
                                           "without a controlling terminal)",
                                           path, strerror(ENXIO)));
    }
    if (fd < 0) throw std::runtime_error(fmt::format("cannot open {}: {}", path, strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot open {}: {}", path, strerror(e)));
    }
    if (isatty(fd)) {
      ::close(fd);
      throw std::runtime_error(fmt::format("{} is a terminal; a recording is binary: give a file name", path));
    }
    if (S_ISREG(st.st_mode)) {
      // An existing regular file is replaced only once the new one holds its header and
      // META: a new file next to it (its real path, so a symlink stays a symlink), renamed
      // over it by the writer. A disk too full for even that leaves the old file as it was.
      ::close(fd);
      std::string dest = path;
      if (char* rp = ::realpath(path.c_str(), nullptr)) {
        dest = rp;
        ::free(rp);
      }
      std::string tmp;
      try {
        fd = create_temp_beside(dest, tmp);  // a random name: nothing planted there is opened
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(fmt::format("cannot overwrite {}: {}", path, e.what()));
      }
      (void)::fchmod(fd, st.st_mode & 0666);
      created = tmp;
      replaces = dest;
      return fd;
    }
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
  }
  throw std::runtime_error(fmt::format("cannot create {}: it keeps appearing and disappearing", path));
}

}  // namespace

// ---- writer ------------------------------------------------------------------

RecordingWriter::RecordingWriter(const std::string& path, const Meta& meta, WriterOptions opts)
    : path_(path), opts_(opts), meta_(meta) {
  nlohmann::json j = meta;
  const std::string meta_json = json_text(j);
  if (opts.max_bytes) {
    const uint64_t least = kFileHeaderBytes + kFrameHeaderBytes + meta_json.size() + kFrameHeaderBytes + 4 + kEndFrameBytes;
    if (least > opts.max_bytes)
      throw std::runtime_error(fmt::format("{}: a size limit of {} bytes cannot hold the header and metadata ({} bytes)",
                                           path, opts.max_bytes, least));
  }
  if (path == "-") {
    fd_ = STDOUT_FILENO;
    own_fd_ = false;
  } else {
    if (opts.prepared && opts.prepared->fd_ >= 0 && opts.prepared->path_ == path) {
      // opened ahead: this writer takes its descriptor and what it created
      fd_ = std::exchange(opts.prepared->fd_, -1);
      created_ = std::move(opts.prepared->created_);
      replaces_ = std::move(opts.prepared->replaces_);
    } else {
      fd_ = open_output(path, opts.overwrite, created_, replaces_);
    }
    struct stat st {};
    if (!created_.empty() && ::fstat(fd_, &st) == 0) {
      created_dev_ = st.st_dev;
      created_ino_ = st.st_ino;
    } else {
      created_.clear();
    }
  }
  std::string h(kFileMagic, 8);
  put<uint16_t>(h, kFormatMajor);
  put<uint16_t>(h, kFormatMinor);
  put<uint32_t>(h, kFileHeaderBytes);
  put<uint64_t>(h, meta.start_wall_ns);
  put<uint32_t>(h, 0);
  put<uint32_t>(h, crc32c(h.data(), h.size()));
  try {
    write_all(fd_, h.data(), h.size(), path_);
    offset_ = h.size();
    write_frame(FrameType::meta, 0, 0, meta_json);
    if (!replaces_.empty() && ::rename(created_.c_str(), replaces_.c_str()) != 0) {
      const int e = errno;
      remove_created();
      throw std::runtime_error(fmt::format("cannot overwrite {}: {}; nothing recorded, the file is as it was", path_, strerror(e)));
    }
    if (!replaces_.empty()) created_ = replaces_;
  } catch (const WriteError& e) {
    // Without its header and META the file holds nothing: do not leave it behind, if this
    // writer created it (never a file, device or FIFO that was there before).
    const bool removed = remove_created();
    throw std::runtime_error(fmt::format("{}: cannot write the header and metadata: {}; nothing recorded{}", path_,
                                         write_error_text(e.errno_value),
                                         !replaces_.empty() ? ", the existing file is as it was"
                                         : removed          ? ", the new file removed"
                                                            : ""));
  } catch (...) {
    remove_created();
    throw;
  }
}

PreparedOutput::PreparedOutput(const std::string& path, bool overwrite) : path_(path) {
  fd_ = open_output(path, overwrite, created_, replaces_);
}

PreparedOutput::~PreparedOutput() {
  if (fd_ < 0) return;
  struct stat open_st {}, path_st {};
  // Never taken: the file this made goes again, only while its name still holds it.
  if (!created_.empty() && ::fstat(fd_, &open_st) == 0 && ::lstat(created_.c_str(), &path_st) == 0 &&
      S_ISREG(path_st.st_mode) && open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino)
    ::unlink(created_.c_str());
  ::close(fd_);
}

bool RecordingWriter::remove_created() {
  fail_close();
  if (created_.empty()) return false;
  // Only while created_ still names the very file this writer made.
  struct stat st {};
  if (::lstat(created_.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != created_dev_ ||
      st.st_ino != created_ino_)
    return false;
  return ::unlink(created_.c_str()) == 0;
}

RecordingWriter::~RecordingWriter() {
  try {
    close();
  } catch (...) {
  }
}

void RecordingWriter::fail_close() {
  if (fd_ < 0) return;
  if (own_fd_) {
    // Cut a partial frame off again so the file ends at a frame boundary (best effort:
    // the reader copes with a partial frame anyway).
    if (::ftruncate(fd_, static_cast<off_t>(offset_)) != 0) {
    }
    ::close(fd_);
  }
  fd_ = -1;
}

void RecordingWriter::compress_if_smaller(std::string& b, uint8_t& flags) const {
  if (!opts_.compress || b.size() <= 256) return;
  std::string z(ZSTD_compressBound(b.size()), '\0');
  size_t n = ZSTD_compress(z.data(), z.size(), b.data(), b.size(), opts_.zstd_level);
  if (!ZSTD_isError(n) && n < b.size()) {
    z.resize(n);
    b.swap(z);
    flags |= kFlagZstd;
  }
}

void RecordingWriter::write_frame(FrameType t, uint8_t flags, uint64_t mono_ns, const std::string& payload) {
  std::string frame;
  frame.reserve(kFrameHeaderBytes + payload.size());
  put<uint32_t>(frame, kFrameMagic);
  put<uint32_t>(frame, static_cast<uint32_t>(payload.size()));
  frame.push_back(static_cast<char>(t));
  frame.push_back(static_cast<char>(flags));
  put<uint16_t>(frame, 0);
  put<uint32_t>(frame, 0);  // CRC placeholder
  put<uint64_t>(frame, mono_ns);
  uint32_t crc = crc32c(frame.data() + 4, 8);
  crc = crc32c(frame.data() + 16, 8, crc);
  crc = crc32c(payload.data(), payload.size(), crc);
  std::memcpy(frame.data() + 12, &crc, 4);
  frame += payload;  // one write() per frame
  try {
    write_all(fd_, frame.data(), frame.size(), path_);
  } catch (...) {
    fail_close();
    throw;
  }
  offset_ += frame.size();
}

bool RecordingWriter::fits(size_t payload_bytes, bool keyframe) const {
  if (!opts_.max_bytes) return true;
  const uint64_t entries = index_.size() + (keyframe ? 1 : 0);
  const uint64_t after = offset_ + kFrameHeaderBytes + payload_bytes + kFrameHeaderBytes + 4 + entries * kIndexEntryBytes +
                         kEndFrameBytes;
  return after <= opts_.max_bytes;
}

bool RecordingWriter::still_at_path() const {
  if (!own_fd_ || fd_ < 0) return true;
  struct stat open_st {}, path_st {};
  if (::fstat(fd_, &open_st) != 0 || ::stat(path_.c_str(), &path_st) != 0) return false;
  return open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino;
}

bool RecordingWriter::write_sample(const Sample& s) {
  if (fd_ < 0) throw std::runtime_error(fmt::format("{}: recording already closed", path_));
  const bool key = !have_prev_ || (nsamples_ % kKeyframeEvery) == 0;
  std::string b;
  put<uint32_t>(b, s.seq);
  put<uint64_t>(b, s.mono_ns);
  put<uint64_t>(b, s.wall_ns);
  uint16_t nentries = 0;
  for (size_t i = 0; i < s.probes.size() && i < meta_.probes.size(); ++i)
    if (s.probes[i].present) ++nentries;
  put<uint16_t>(b, nentries);
  for (size_t i = 0; i < s.probes.size() && i < meta_.probes.size(); ++i) {
    const ProbeSample& cur = s.probes[i];
    if (!cur.present) continue;
    const uint32_t sw = meta_.probes[i].layout.slot_words;
    if (cur.words.size() != size_t(meta_.ncpus) * sw)
      throw std::runtime_error(fmt::format("sample for {} has {} words, expected {}", meta_.probes[i].name,
                                           cur.words.size(), size_t(meta_.ncpus) * sw));
    const ProbeSample* base = nullptr;
    if (!key && i < prev_.probes.size() && prev_.probes[i].present && prev_.probes[i].words.size() == cur.words.size())
      base = &prev_.probes[i];
    put<uint16_t>(b, static_cast<uint16_t>(i));
    std::string cpus;
    uint64_t nchanged = 0;
    int64_t last_cpu = -1;
    std::string words;
    for (uint32_t c = 0; c < meta_.ncpus; ++c) {
      const uint64_t* w = cur.words.data() + size_t(c) * sw;
      const uint64_t* o = base ? base->words.data() + size_t(c) * sw : nullptr;
      // An unchanged slot (an idle CPU) is one memcmp; in a changed one, runs of 8 equal
      // words (the empty part of a histogram) are skipped 8 at a time.
      if (o && std::memcmp(w, o, size_t(sw) * sizeof(uint64_t)) == 0) continue;
      words.clear();
      uint64_t nw = 0;
      int64_t last_w = -1;
      for (uint32_t k = 0; k < sw; ++k) {
        if (o && (k & 7) == 0 && k + 8 <= sw && std::memcmp(w + k, o + k, 8 * sizeof(uint64_t)) == 0) {
          k += 7;
          continue;
        }
        uint64_t before = o ? o[k] : 0;
        if (w[k] == before) continue;
        put_varint(words, static_cast<uint64_t>(k - last_w - 1));
        put_varint(words, zigzag(static_cast<int64_t>(w[k] - before)));
        last_w = k;
        ++nw;
      }
      if (!nw) continue;
      put_varint(cpus, static_cast<uint64_t>(c - last_cpu - 1));
      put_varint(cpus, nw);
      cpus += words;
      last_cpu = c;
      ++nchanged;
    }
    put_varint(b, nchanged);
    b += cpus;
  }
  uint8_t flags = key ? kFlagKeyframe : 0;
  compress_if_smaller(b, flags);
  // 1.3: the interval's --exact records.
  std::string exact;
  uint8_t exact_flags = 0;
  if (s.exact) {
    put<uint32_t>(exact, static_cast<uint32_t>(s.exact->records.size()));
    put<uint64_t>(exact, s.exact->lost);
    uint64_t last = have_prev_ ? prev_.mono_ns : 0;
    for (const ExactRecord& r : s.exact->records) {
      // in time order: a record before the previous one (or the previous sample) is stored
      // at the previous time rather than refused
      const uint64_t ts = std::max(r.ts_ns, last);
      put_varint(exact, ts - last);
      put_varint(exact, r.cpu);
      put_varint(exact, r.probe);
      put_varint(exact, r.word);
      last = ts;
    }
    compress_if_smaller(exact, exact_flags);
  }
  // 1.4: the interval's gap counts, as given (checked first: the reader refuses what breaks
  // the frame's rules, so such a batch is the caller's bug and nothing is written).
  std::string gaps;
  uint8_t gaps_flags = 0;
  if (s.gaps) {
    const GapBatch& g = *s.gaps;
    if (g.from_ns > s.mono_ns)
      throw std::runtime_error(fmt::format("sample {}: gap counts from {} ns, after the sample's time {} ns", s.seq,
                                           g.from_ns, s.mono_ns));
    put<uint64_t>(gaps, g.from_ns);
    put<uint64_t>(gaps, g.full);
    put<uint32_t>(gaps, static_cast<uint32_t>(g.counts.size()));
    uint32_t last_cpu = 0, last_line = 0, of_cpu = 0;
    for (size_t i = 0; i < g.counts.size(); ++i) {
      const GapCounts& e = g.counts[i];
      if (e.cpu >= meta_.ncpus || e.line >= meta_.gap_lines.size())
        throw std::runtime_error(fmt::format("sample {}: gap entry {} (CPU {}, line {}) is out of range ({} CPUs, {} gap lines)",
                                             s.seq, i, e.cpu, e.line, meta_.ncpus, meta_.gap_lines.size()));
      if (i && (e.cpu < last_cpu || (e.cpu == last_cpu && e.line <= last_line)))
        throw std::runtime_error(fmt::format("sample {}: gap entry {} (CPU {}, line {}) is not after the one before it (CPU {}, line {})",
                                             s.seq, i, e.cpu, e.line, last_cpu, last_line));
      of_cpu = i && e.cpu == last_cpu ? of_cpu + 1 : 1;
      if (of_cpu > kMaxGapEntriesPerCpu)
        throw std::runtime_error(fmt::format("sample {}: more than {} gap entries of CPU {}", s.seq,
                                             kMaxGapEntriesPerCpu, e.cpu));
      put_varint(gaps, e.cpu - (i ? last_cpu : 0));
      put_varint(gaps, e.line);
      for (const auto* h : {&e.ww, &e.wa, &e.ra}) {
        uint64_t nz = 0;
        for (uint32_t v : *h) nz += v != 0;
        put_varint(gaps, nz);
        int64_t last_b = -1;
        for (size_t b = 0; b < h->size(); ++b) {
          if (!(*h)[b]) continue;
          put_varint(gaps, static_cast<uint64_t>(int64_t(b) - last_b - 1));
          put_varint(gaps, (*h)[b]);
          last_b = int64_t(b);
        }
      }
      last_cpu = e.cpu;
      last_line = e.line;
    }
    compress_if_smaller(gaps, gaps_flags);
  }
  // 1.2: the online CPUs, when they changed, and before every keyframe (a seek lands there).
  std::string online;
  if (s.online.empty()) {
    online_written_.clear();
  } else if (key || s.online != online_written_) {
    online.assign(online_bitmap_bytes(meta_.ncpus), '\0');
    for (int c : s.online)
      if (c >= 0 && static_cast<uint32_t>(c) < meta_.ncpus) online[size_t(c) / 8] |= static_cast<char>(1u << (c % 8));
  }
  if (!fits(b.size() + (online.empty() ? 0 : kFrameHeaderBytes + online.size()) +
                (s.exact ? kFrameHeaderBytes + exact.size() : 0) + (s.gaps ? kFrameHeaderBytes + gaps.size() : 0),
            key))
    return false;
  if (s.exact) write_frame(FrameType::exact, exact_flags, s.mono_ns, exact);
  if (s.gaps) write_frame(FrameType::gaps, gaps_flags, s.mono_ns, gaps);
  if (!online.empty()) {
    write_frame(FrameType::online, 0, s.mono_ns, online);
    online_written_ = s.online;
  }
  const uint64_t at = offset_;
  write_frame(FrameType::sample, flags, s.mono_ns, b);
  if (key) index_.push_back({nsamples_, s.seq, s.mono_ns, at});
  if (!nsamples_) first_mono_ = s.mono_ns;
  last_mono_ = s.mono_ns;
  prev_ = s;
  have_prev_ = true;
  ++nsamples_;
  return true;
}

bool RecordingWriter::write_status(const ProbeStatus& status) {
  if (fd_ < 0) throw std::runtime_error(fmt::format("{}: recording already closed", path_));
  nlohmann::json j = {{"probe", status.probe}, {"status", status}};
  std::string payload = json_text(j);
  if (!fits(payload.size(), false)) return false;
  write_frame(FrameType::note, 0, 0, payload);
  return true;
}

void RecordingWriter::close() {
  if (fd_ < 0) return;
  std::string idx;
  put<uint32_t>(idx, static_cast<uint32_t>(index_.size()));
  for (auto& e : index_) {
    put<uint32_t>(idx, e.ordinal);
    put<uint32_t>(idx, e.seq);
    put<uint64_t>(idx, e.mono_ns);
    put<uint64_t>(idx, e.offset);
  }
  const uint64_t index_at = offset_;
  std::string end;
  put<uint32_t>(end, nsamples_);
  put<uint32_t>(end, 0);
  put<uint64_t>(end, index_at);
  put<uint64_t>(end, first_mono_);
  put<uint64_t>(end, last_mono_);
  write_frame(FrameType::index, 0, 0, idx);  // on failure: closed, partial frame cut off
  write_frame(FrameType::end, 0, 0, end);
  int fd = fd_;
  fd_ = -1;
  if (own_fd_) {
    if (::fsync(fd) != 0 && errno != EINVAL) {
      int e = errno;
      ::close(fd);
      throw std::runtime_error(fmt::format("{}: fsync failed: {}", path_, strerror(e)));
    }
    ::close(fd);
  }
}

// ---- reader: opening -----------------------------------------------------------

std::unique_ptr<RecordingReader> RecordingReader::open(const std::string& path) { return open(path, FollowOptions{}); }

std::unique_ptr<RecordingReader> RecordingReader::open(const std::string& path, const FollowOptions& follow) {
  if (path == "-")  // record -o - exists; a reader seeks (INDEX, END), so a pipe cannot be read
    throw std::runtime_error("'-': a recording is read from a file, not from standard input (save record -o -'s "
                             "output to a file and give its path)");
  std::unique_ptr<RecordingReader> r(new RecordingReader());
  r->path_ = path;
  r->follow_ = follow;
  std::string why;
  while (!r->try_open(why)) {
    if (!follow.enabled) throw std::runtime_error(why);
    Wait w = r->wait_for_growth();
    if (w == Wait::stopped) throw std::runtime_error(why + " (stopped while waiting for it)");
    if (w == Wait::timeout) throw std::runtime_error(why + " (gave up waiting for it)");
  }
  r->idle_since_ns_ = 0;
  if (r->minor_ >= 1) r->load_index();
  return r;
}

bool RecordingReader::try_open(std::string& why) {
  const std::string& path = path_;
  if (fd_ < 0) {
    // O_NONBLOCK: a FIFO without a writer must not hang the open; it is refused below.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) {
      why = fmt::format("cannot open {}: {}", path, strerror(errno));
      if (errno == ENOENT && follow_.enabled) return false;
      throw std::runtime_error(why);
    }
    struct stat st {};
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      const char* kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                       : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
      ::close(fd_);
      fd_ = -1;
      throw std::runtime_error(fmt::format("{} is {}: a recording is a regular file (reads seek)", path, kind));
    }
  }
  refresh_size();
  uint8_t h[kFileHeaderBytes];
  ssize_t n = ::pread(fd_, h, sizeof h, 0);
  if (n < 0) throw std::runtime_error(fmt::format("cannot read {}: {}", path, strerror(errno)));
  const size_t got = static_cast<size_t>(n);
  if (got < 8 && follow_.enabled && std::memcmp(h, kFileMagic, got) == 0) {
    why = fmt::format("{}: no file header yet ({} of {} bytes)", path, got, kFileHeaderBytes);
    return false;
  }
  if (got < 8 || std::memcmp(h, kFileMagic, 8) != 0)
    throw std::runtime_error(fmt::format("{} is not a schedhot recording ({})", path,
                                         got < 8 ? "too short or no SCHEDHOT magic" : "no SCHEDHOT magic"));
  if (got < sizeof h) {
    why = fmt::format("{}: truncated file header ({} of {} bytes)", path, got, sizeof h);
    if (follow_.enabled) return false;
    throw std::runtime_error(why);
  }
  uint32_t crc;
  std::memcpy(&crc, h + 28, 4);
  if (crc32c(h, 28) != crc) throw std::runtime_error(fmt::format("{}: file header fails its CRC32C", path));
  std::memcpy(&major_, h + 8, 2);
  std::memcpy(&minor_, h + 10, 2);
  uint32_t hb;
  std::memcpy(&hb, h + 12, 4);
  if (major_ > kFormatMajor)
    throw std::runtime_error(fmt::format("{} is format {}.{}, newer than this schedhot reads ({}.x): upgrade schedhot",
                                         path, major_, minor_, kFormatMajor));
  if (major_ == 0 || hb < kFileHeaderBytes || hb > 4096)
    throw std::runtime_error(fmt::format("{}: bad file header (format {}.{}, {} header bytes)", path, major_, minor_, hb));
  Frame f;
  ReadStatus st = read_frame_at(hb, f, why);
  if (st == ReadStatus::eof || st == ReadStatus::incomplete) {
    why = fmt::format("{}: no readable metadata frame ({})", path, st == ReadStatus::eof ? "empty" : why);
    if (follow_.enabled) return false;
    throw std::runtime_error(why);
  }
  if (st != ReadStatus::ok) throw std::runtime_error(fmt::format("{}: no readable metadata frame ({})", path, why));
  if (f.type != FrameType::meta) throw std::runtime_error(fmt::format("{}: first frame is not metadata", path));
  ++frames_;
  data_start_ = hb + f.bytes;
  pos_ = data_start_;
  try {
    meta_ = parse_file_json(f.payload).get<Meta>();
  } catch (const JsonTooDeep& e) {
    throw std::runtime_error(fmt::format("{}: not readable metadata: {}", path, e.what()));
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: bad metadata: {}", path, e.what()));
  }
  if (meta_.ncpus == 0 || meta_.ncpus > kMaxCpus)
    throw std::runtime_error(fmt::format("{}: bad metadata: {} CPUs (a kernel has 1 to {})", path, meta_.ncpus, kMaxCpus));
  if (state_words(meta_) > kMaxStateWords)
    throw std::runtime_error(fmt::format("{}: metadata describes {} words per sample, more than this reader allows",
                                         path, state_words(meta_)));
  return true;
}

RecordingReader::~RecordingReader() {
  if (fd_ >= 0) ::close(fd_);
}

void RecordingReader::set_damage(uint64_t at, std::string why) {
  if (!damage_) damage_ = Damage{at, scrub_controls(why)};
}

uint64_t RecordingReader::refresh_size() {
  struct stat st {};
  if (fd_ >= 0 && fstat(fd_, &st) == 0) file_bytes_ = static_cast<uint64_t>(st.st_size);
  return file_bytes_;
}

bool RecordingReader::path_replaced() const {
  struct stat open_st {}, path_st {};
  if (fd_ < 0 || fstat(fd_, &open_st) != 0) return false;
  if (stat(path_.c_str(), &path_st) != 0) return true;
  return path_st.st_dev != open_st.st_dev || path_st.st_ino != open_st.st_ino;
}

// ---- reader: frames --------------------------------------------------------------

RecordingReader::ReadStatus RecordingReader::read_frame_at(uint64_t at, Frame& f, std::string& why, bool want_payload) {
  uint8_t h[kFrameHeaderBytes];
  ssize_t n = ::pread(fd_, h, sizeof h, static_cast<off_t>(at));
  if (n == 0) return ReadStatus::eof;
  if (n < 0) {
    why = fmt::format("read error: {}", strerror(errno));
    return ReadStatus::bad;
  }
  if (n < static_cast<ssize_t>(sizeof h)) {
    why = fmt::format("truncated frame header ({} of {} bytes)", n, sizeof h);
    return ReadStatus::incomplete;
  }
  uint32_t magic, len, crc;
  std::memcpy(&magic, h, 4);
  std::memcpy(&len, h + 4, 4);
  std::memcpy(&crc, h + 12, 4);
  std::memcpy(&f.mono_ns, h + 16, 8);
  f.type = static_cast<FrameType>(h[8]);
  f.flags = h[9];
  f.at = at;
  f.bytes = uint64_t{kFrameHeaderBytes} + len;
  if (magic != kFrameMagic) {
    why = "no frame magic (garbage or overwritten data)";
    return ReadStatus::bad;
  }
  if (len > kMaxFramePayload) {
    why = fmt::format("frame claims {} payload bytes, over the {} limit", len, kMaxFramePayload);
    return ReadStatus::bad;
  }
  // at + 24 <= file size here (24 bytes were read) and len <= 256 MiB: no overflow.
  if (at + f.bytes > file_bytes_ && at + f.bytes > refresh_size()) {
    why = fmt::format("truncated frame: {} payload bytes announced, {} present", len,
                      file_bytes_ > at + kFrameHeaderBytes ? file_bytes_ - at - kFrameHeaderBytes : 0);
    return ReadStatus::incomplete;
  }
  if (!want_payload) {
    f.payload.clear();
    return ReadStatus::ok;
  }
  f.payload.resize(len);
  ssize_t got = len ? ::pread(fd_, f.payload.data(), len, static_cast<off_t>(at + kFrameHeaderBytes)) : 0;
  if (got != static_cast<ssize_t>(len)) {
    why = fmt::format("truncated frame: {} of {} payload bytes", got < 0 ? 0 : got, len);
    return ReadStatus::incomplete;
  }
  uint32_t c = crc32c(h + 4, 8);
  c = crc32c(h + 16, 8, c);
  c = crc32c(f.payload.data(), f.payload.size(), c);
  if (c != crc) {
    why = fmt::format("frame fails its CRC32C (stored {:08x}, computed {:08x})", crc, c);
    return ReadStatus::crc;
  }
  return ReadStatus::ok;
}

RecordingReader::Wait RecordingReader::wait_for_growth() {
  if (!follow_.enabled) return Wait::timeout;
  if (follow_.stop && follow_.stop->load()) return Wait::stopped;
  const uint64_t now = mono_ns_now();
  const uint64_t size = refresh_size();
  if (idle_since_ns_ == 0 || size != idle_size_) {
    idle_since_ns_ = now;
    idle_size_ = size;
  } else if (follow_.idle_timeout_ns && now - idle_since_ns_ >= follow_.idle_timeout_ns) {
    return Wait::timeout;
  }
  // Sleep in slices so a stop request is seen within 10 ms.
  const uint64_t slice = 10'000'000;
  for (uint64_t slept = 0; slept < follow_.poll_ns; slept += slice) {
    sleep_ns(std::min(slice, follow_.poll_ns - slept));
    if (follow_.stop && follow_.stop->load()) return Wait::stopped;
  }
  return Wait::retry;
}

bool RecordingReader::read_next_frame(Frame& f) {
  for (;;) {
    if (damage_ && pos_ >= damage_->offset) return false;
    std::string why;
    ReadStatus st = read_frame_at(pos_, f, why);
    if (st == ReadStatus::ok) {
      pos_ += f.bytes;
      ++frames_;
      crc_retries_ = 0;
      idle_since_ns_ = 0;
      return true;
    }
    if (follow_.enabled && !saw_end_) {
      // A frame still being written reads as the end of the file or an incomplete frame;
      // a CRC mismatch at the tail is retried a few times (network filesystems).
      bool may_wait = st == ReadStatus::eof || st == ReadStatus::incomplete || (st == ReadStatus::crc && crc_retries_ < 3);
      if (may_wait) {
        if (st == ReadStatus::crc) ++crc_retries_;
        Wait w = wait_for_growth();
        if (w == Wait::retry) continue;
        if (w == Wait::stopped) return false;
      }
    }
    if (st == ReadStatus::eof) return false;
    set_damage(pos_, why);
    return false;
  }
}

// ---- reader: samples -------------------------------------------------------------

namespace {
/// The damage reason of a sample at mono_ns after one at prev_ns > mono_ns.
std::string backwards_time(uint64_t mono_ns, uint64_t prev_ns) {
  if (mono_ns == prev_ns) return "sample time does not advance (the same as the previous sample's)";
  return fmt::format("sample time goes backwards ({:.3f} s before the previous sample's)",
                     static_cast<double>(prev_ns - mono_ns) / 1e9);
}
}  // namespace

bool RecordingReader::unpack_sample(Frame& f, std::string& raw, std::string& why) const {
  if (!(f.flags & kFlagZstd)) {
    raw.swap(f.payload);
    return true;
  }
  unsigned long long sz = ZSTD_getFrameContentSize(f.payload.data(), f.payload.size());
  // A delta costs at most 10 (value) + 10 (gap) bytes per word, plus per-CPU overhead.
  const uint64_t limit = state_words(meta_) * 22 + (1u << 20);
  if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN || sz > limit) {
    why = "compressed sample with a bad or oversized content size";
    return false;
  }
  raw.resize(sz);
  size_t n = ZSTD_decompress(raw.data(), raw.size(), f.payload.data(), f.payload.size());
  if (ZSTD_isError(n) || n != sz) {
    why = fmt::format("compressed sample does not decompress: {}", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short");
    return false;
  }
  return true;
}

bool RecordingReader::decode_sample(const std::string& raw, bool keyframe, std::string& why) {
  Cursor cur{reinterpret_cast<const uint8_t*>(raw.data()), reinterpret_cast<const uint8_t*>(raw.data()) + raw.size()};
  if (!keyframe && !have_state_) {
    why = "delta sample with no keyframe before it";
    return false;
  }
  const uint32_t seq = cur.get<uint32_t>();
  const uint64_t mono = cur.get<uint64_t>();
  const uint64_t wall = cur.get<uint64_t>();
  const uint16_t nentries = cur.get<uint16_t>();
  if (!cur.ok) {
    why = "sample header truncated";
    return false;
  }
  // Deltas are applied to state_ in place; until the sample decodes completely the state
  // is not valid (a seek starts again from a keyframe).
  if (!have_state_ || state_.probes.size() != meta_.probes.size()) state_.probes.assign(meta_.probes.size(), {});
  if (keyframe || nonzero_cpu_.size() != meta_.ncpus) nonzero_cpu_.assign(meta_.ncpus, 0);
  have_state_ = false;
  std::vector<bool> listed(meta_.probes.size(), false);
  for (uint16_t e = 0; e < nentries; ++e) {
    uint16_t pi = cur.get<uint16_t>();
    if (!cur.ok || pi >= meta_.probes.size() || listed[pi]) {
      why = fmt::format("bad probe index {} in sample", pi);
      return false;
    }
    listed[pi] = true;
    const uint32_t sw = meta_.probes[pi].layout.slot_words;
    const size_t need = size_t(meta_.ncpus) * sw;
    ProbeSample& ps = state_.probes[pi];
    if (keyframe || !ps.present || ps.words.size() != need) ps.words.assign(need, 0);
    ps.present = true;
    uint64_t ncpu = cur.varint();
    if (!cur.ok || ncpu > meta_.ncpus) {
      why = fmt::format("probe {}: {} changed CPUs out of {}", meta_.probes[pi].name, ncpu, meta_.ncpus);
      return false;
    }
    uint64_t cpu = 0;
    bool first_cpu = true;
    for (uint64_t k = 0; k < ncpu; ++k) {
      uint64_t gap = cur.varint();
      cpu = first_cpu ? gap : cpu + 1 + gap;
      first_cpu = false;
      uint64_t nw = cur.varint();
      if (!cur.ok || gap >= meta_.ncpus || cpu >= meta_.ncpus || nw > sw) {
        why = fmt::format("probe {}: bad CPU entry", meta_.probes[pi].name);
        return false;
      }
      uint64_t w = 0;
      bool first_w = true;
      uint64_t* slot = ps.words.data() + size_t(cpu) * sw;
      for (uint64_t x = 0; x < nw; ++x) {
        uint64_t wg = cur.varint();
        w = first_w ? wg : w + 1 + wg;
        first_w = false;
        int64_t d = unzigzag(cur.varint());
        if (!cur.ok || wg >= sw || w >= sw) {
          why = fmt::format("probe {}: bad word entry on CPU {}", meta_.probes[pi].name, cpu);
          return false;
        }
        slot[w] += static_cast<uint64_t>(d);
        if (slot[w]) nonzero_cpu_[cpu] = 1;
      }
    }
  }
  if (cur.left() != 0) {
    why = fmt::format("{} trailing bytes in sample", cur.left());
    return false;
  }
  for (size_t pi = 0; pi < listed.size(); ++pi)
    if (!listed[pi]) {
      state_.probes[pi].present = false;
      state_.probes[pi].words.clear();
    }
  state_.seq = seq;
  state_.mono_ns = mono;
  state_.wall_ns = wall;
  set_state_online();
  have_state_ = true;
  return true;
}

bool RecordingReader::decode_online(const std::string& payload, std::string& why) {
  std::vector<int> cpus;
  if (!parse_online(payload, cpus, why)) return false;
  online_ = std::move(cpus);
  have_online_ = true;
  return true;
}

bool RecordingReader::unpack_frame(const Frame& f, const char* what, std::string& raw, std::string& why) {
  if (!(f.flags & kFlagZstd)) {
    raw = f.payload;
    return true;
  }
  unsigned long long sz = ZSTD_getFrameContentSize(f.payload.data(), f.payload.size());
  // Records are timestamps and ids that differ from record to record: the writer's frames
  // shrink 3-6x. A far higher ratio is a decompression bomb (a 34 KB frame claiming 67 M
  // records and 2 GB of memory, an attacker's finding): refused. GAPS frames get the same
  // bound (a content size up to 1 MiB is always accepted).
  const uint64_t cap = std::min<uint64_t>(kMaxFramePayload, std::max<uint64_t>(uint64_t(1) << 20, uint64_t(f.payload.size()) * 256));
  if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN || sz > cap) {
    why = fmt::format("compressed {} frame with a bad or oversized content size", what);
    return false;
  }
  raw.resize(sz);
  size_t n = ZSTD_decompress(raw.data(), raw.size(), f.payload.data(), f.payload.size());
  if (ZSTD_isError(n) || n != sz) {
    why = fmt::format("compressed {} frame does not decompress", what);
    return false;
  }
  return true;
}

namespace {
/// The writer writes at most one EXACT and one GAPS frame per sample, before it: a second for
/// the same sample (pending, at pending_ns) is damage (info would count it, report use only
/// the last). false and why when the frame at mono_ns is such a second frame.
bool first_for_its_sample(bool pending, uint64_t pending_ns, uint64_t mono_ns, const char* what, std::string& why) {
  if (!pending || pending_ns != mono_ns) return true;
  why = fmt::format("bad {} frame: a second one for the sample at {} ns", what, mono_ns);
  return false;
}
}  // namespace

bool RecordingReader::decode_exact(const Frame& f, std::string& why) {
  if (!first_for_its_sample(pending_exact_.has_value(), pending_exact_ns_, f.mono_ns, "exact", why)) return false;
  std::string raw;
  if (!unpack_frame(f, "exact", raw, why)) return false;
  Cursor c{reinterpret_cast<const uint8_t*>(raw.data()), reinterpret_cast<const uint8_t*>(raw.data()) + raw.size()};
  const uint32_t n = c.get<uint32_t>();
  ExactBatch b;
  b.lost = c.get<uint64_t>();
  if (!c.ok || uint64_t(n) * 4 > c.left()) {  // a record takes at least 4 bytes
    why = "bad exact frame: record count larger than its payload";
    return false;
  }
  b.records.reserve(n);
  uint64_t ts = have_state_ ? state_.mono_ns : 0;
  for (uint32_t i = 0; i < n && c.ok; ++i) {
    ExactRecord r;
    const uint64_t gap = c.varint();
    if (ts + gap < ts) c.ok = false;
    ts += gap;
    r.ts_ns = ts;
    const uint64_t cpu = c.varint(), probe = c.varint(), word = c.varint();
    if (!c.ok) break;  // said below: truncated
    if (ts > f.mono_ns) {  // the writer takes a sample's records up to its time
      why = fmt::format("bad exact frame: record {} at {} ns, after its sample's time {} ns", i, ts, f.mono_ns);
      return false;
    }
    if (cpu >= meta_.ncpus || probe > 0xffff || word > 0xffff) {
      why = fmt::format("bad exact frame: record {} names CPU {} probe {} word {}", i, cpu, probe, word);
      return false;
    }
    r.cpu = static_cast<uint32_t>(cpu);
    r.probe = static_cast<uint16_t>(probe);
    r.word = static_cast<uint16_t>(word);
    b.records.push_back(r);
  }
  if (!c.ok || c.left()) {
    why = "bad exact frame: truncated or trailing bytes";
    return false;
  }
  ++stats_.exact_frames;
  stats_.exact_records += n;
  stats_.exact_lost = b.lost > UINT64_MAX - stats_.exact_lost ? UINT64_MAX : stats_.exact_lost + b.lost;
  pending_exact_ = std::move(b);
  pending_exact_ns_ = f.mono_ns;
  return true;
}

bool RecordingReader::decode_gaps(const Frame& f, std::string& why) {
  if (!first_for_its_sample(pending_gaps_.has_value(), pending_gaps_ns_, f.mono_ns, "gaps", why)) return false;
  std::string raw;
  if (!unpack_frame(f, "gaps", raw, why)) return false;
  Cursor c{reinterpret_cast<const uint8_t*>(raw.data()), reinterpret_cast<const uint8_t*>(raw.data()) + raw.size()};
  GapBatch b;
  b.from_ns = c.get<uint64_t>();
  b.full = c.get<uint64_t>();
  const uint32_t n = c.get<uint32_t>();
  if (!c.ok) {
    why = "bad gaps frame: truncated header";
    return false;
  }
  if (b.from_ns > f.mono_ns) {
    why = fmt::format("bad gaps frame: counts from {} ns, after its sample's time {} ns", b.from_ns, f.mono_ns);
    return false;
  }
  // An entry takes at least 5 bytes (CPU gap, line, three empty histograms), and no CPU has
  // more than kMaxGapEntriesPerCpu of them (distinct lines): both bound n before allocating.
  const uint64_t most = uint64_t(meta_.ncpus) * std::min<uint64_t>(meta_.gap_lines.size(), kMaxGapEntriesPerCpu);
  if (uint64_t(n) * 5 > c.left() || n > most) {
    why = fmt::format("bad gaps frame: {} entries, more than its payload or {} CPUs x {} lines hold", n, meta_.ncpus,
                      std::min<uint64_t>(meta_.gap_lines.size(), kMaxGapEntriesPerCpu));
    return false;
  }
  b.counts.reserve(n);
  uint64_t cpu = 0, line = 0, of_cpu = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t gap = c.varint();
    const uint64_t l = c.varint();
    if (!c.ok) break;  // said below: truncated
    if (gap >= meta_.ncpus || (i ? cpu + gap : gap) >= meta_.ncpus || l >= meta_.gap_lines.size()) {
      why = fmt::format("bad gaps frame: entry {} names CPU {} line {} ({} CPUs, {} gap lines)", i,
                        gap >= meta_.ncpus ? gap : (i ? cpu + gap : gap), l, meta_.ncpus, meta_.gap_lines.size());
      return false;
    }
    const uint64_t e_cpu = i ? cpu + gap : gap;
    if (i && gap == 0 && l <= line) {
      why = fmt::format("bad gaps frame: entry {} (CPU {} line {}) is not after the one before it (line {})", i, e_cpu, l,
                        line);
      return false;
    }
    of_cpu = i && gap == 0 ? of_cpu + 1 : 1;
    if (of_cpu > kMaxGapEntriesPerCpu) {
      why = fmt::format("bad gaps frame: more than {} entries of CPU {}", kMaxGapEntriesPerCpu, e_cpu);
      return false;
    }
    cpu = e_cpu;
    line = l;
    GapCounts& e = b.counts.emplace_back();
    e.cpu = static_cast<uint32_t>(cpu);
    e.line = static_cast<uint32_t>(line);
    static constexpr const char* kHist[] = {"ww", "wa", "ra"};
    int hi = 0;
    for (auto* h : {&e.ww, &e.wa, &e.ra}) {
      const uint64_t nz = c.varint();
      if (!c.ok) break;
      if (nz > h->size()) {
        why = fmt::format("bad gaps frame: entry {} (CPU {} line {}) {}: {} buckets of {}", i, cpu, line, kHist[hi], nz,
                          h->size());
        return false;
      }
      uint64_t bucket = 0;
      for (uint64_t k = 0; k < nz; ++k) {
        const uint64_t bg = c.varint();
        const uint64_t v = c.varint();
        if (!c.ok) break;
        bucket = k ? bucket + 1 + bg : bg;
        if (bg >= h->size() || bucket >= h->size() || v == 0 || v > UINT32_MAX) {
          why = fmt::format("bad gaps frame: entry {} (CPU {} line {}) {}: bucket {} of {} with value {}", i, cpu, line,
                            kHist[hi], bg >= h->size() ? bg : bucket, h->size(), v);
          return false;
        }
        (*h)[bucket] = static_cast<uint32_t>(v);
      }
      ++hi;
    }
  }
  if (!c.ok || c.left()) {
    why = "bad gaps frame: truncated or trailing bytes";
    return false;
  }
  ++stats_.gap_frames;
  stats_.gap_entries += n;
  pending_gaps_ = std::move(b);
  pending_gaps_ns_ = f.mono_ns;
  return true;
}

bool RecordingReader::parse_online(const std::string& payload, std::vector<int>& cpus, std::string& why) const {
  if (payload.size() != online_bitmap_bytes(meta_.ncpus)) {
    why = fmt::format("online frame of {} bytes for {} CPUs", payload.size(), meta_.ncpus);
    return false;
  }
  for (size_t i = 0; i < payload.size(); ++i) {
    const auto byte = static_cast<uint8_t>(payload[i]);
    for (int bit = 0; bit < 8; ++bit) {
      if (!(byte & (1u << bit))) continue;
      const size_t c = i * 8 + size_t(bit);
      if (c >= meta_.ncpus) {
        why = fmt::format("online frame names CPU {} of {}", c, meta_.ncpus);
        return false;
      }
      cpus.push_back(static_cast<int>(c));
    }
  }
  return true;
}

void RecordingReader::set_state_online() {
  if (have_online_) {
    state_.online = online_;
    return;
  }
  // No ONLINE frame (1.0/1.1, or a writer that did not know): the CPUs online at the
  // start, and any that counted something since.
  state_.online.clear();
  if (meta_.host.online.empty()) return;  // nothing known: every CPU counts
  std::vector<char> on(meta_.ncpus, 0);
  for (int c : meta_.host.online)
    if (c >= 0 && static_cast<uint32_t>(c) < meta_.ncpus) on[size_t(c)] = 1;
  for (size_t c = 0; c < nonzero_cpu_.size() && c < on.size(); ++c) on[c] |= nonzero_cpu_[c];
  for (size_t c = 0; c < on.size(); ++c)
    if (on[c]) state_.online.push_back(static_cast<int>(c));
}

bool RecordingReader::parse_note(const std::string& payload, ProbeStatus& out, std::string& why) {
  try {
    out = parse_file_json(payload).at("status").get<ProbeStatus>();
    return true;
  } catch (const std::exception& e) {
    why = fmt::format("bad note frame: {}", e.what());
    return false;
  }
}

bool RecordingReader::next(Sample& out) {
  if (!next_state()) return false;
  out = state_;
  return true;
}

bool RecordingReader::next_state(bool returned) {
  Frame f;
  while (read_next_frame(f)) {
    switch (f.type) {
      case FrameType::sample: {
        std::string why;
        std::string& raw = raw_;  // reused: a 480-CPU sample's payload is not faulted in afresh each time
        const bool had_prev = have_state_;
        const uint64_t prev_mono = state_.mono_ns;
        if (!unpack_sample(f, raw, why) || !decode_sample(raw, f.flags & kFlagKeyframe, why)) {
          set_damage(f.at, why);
          return false;
        }
        // A writer's samples are in time order: one earlier than the sample before it (or
        // not at its frame header's time, which scans and seeks go by) is damage.
        if (state_.mono_ns != f.mono_ns || (had_prev && state_.mono_ns <= prev_mono)) {
          set_damage(f.at, state_.mono_ns != f.mono_ns
                               ? fmt::format("sample time {} ns differs from its frame header's {} ns", state_.mono_ns,
                                             f.mono_ns)
                               : backwards_time(state_.mono_ns, prev_mono));
          have_state_ = false;
          return false;
        }
        state_.exact.reset();
        if (pending_exact_ && pending_exact_ns_ == state_.mono_ns) state_.exact = std::move(pending_exact_);
        pending_exact_.reset();
        // The gap counts since the sample returned before this one, or none (after a seek,
        // the first of a file): never counts over an interval the caller did not see start.
        state_.gaps.reset();
        if (pending_gaps_ && pending_gaps_ns_ == state_.mono_ns && returned_ns_ && pending_gaps_->from_ns == *returned_ns_)
          state_.gaps = std::move(pending_gaps_);
        pending_gaps_.reset();
        if (returned)
          returned_ns_ = state_.mono_ns;
        else
          returned_ns_.reset();
        if (!stats_.sample_frames) stats_.first_mono_ns = state_.mono_ns;
        stats_.last_mono_ns = state_.mono_ns;
        ++stats_.sample_frames;
        stats_.keyframes += (f.flags & kFlagKeyframe) ? 1 : 0;
        stats_.compressed += (f.flags & kFlagZstd) ? 1 : 0;
        stats_.sample_bytes += f.bytes;
        stats_.raw_bytes += raw.size();
        return true;
      }
      case FrameType::note: {
        ProbeStatus s;
        std::string why;
        if (!parse_note(f.payload, s, why)) {
          set_damage(f.at, why);
          return false;
        }
        int i = meta_.probe_index(s.probe);
        if (i >= 0) meta_.probes[i].status = s;
        notes_.push_back(s);
        ++stats_.note_frames;
        break;
      }
      case FrameType::online: {
        if (minor_ < 2) {
          ++stats_.unknown_frames;
          break;
        }
        std::string why;
        if (!decode_online(f.payload, why)) {
          set_damage(f.at, why);
          return false;
        }
        ++stats_.online_frames;
        break;
      }
      case FrameType::exact:
      case FrameType::gaps: {
        // 1.3 EXACT, 1.4 GAPS: unknown to a file of an earlier minor (skipped as such).
        const bool exact = f.type == FrameType::exact;
        if (minor_ < (exact ? 3 : 4)) {
          ++stats_.unknown_frames;
          break;
        }
        std::string why;
        if (!(exact ? decode_exact(f, why) : decode_gaps(f, why))) {
          set_damage(f.at, why);
          return false;
        }
        break;
      }
      case FrameType::end: saw_end_ = true; break;
      case FrameType::index: break;
      case FrameType::meta:
        set_damage(f.at, "second metadata frame");
        return false;
      default:
        ++stats_.unknown_frames;  // frame types of later minor versions are skipped
        break;
    }
  }
  return false;
}

// ---- reader: index and seeking -------------------------------------------------

void RecordingReader::load_index() {
  if (file_bytes_ < data_start_ + kEndFrameBytes) return;
  const uint64_t end_at = file_bytes_ - kEndFrameBytes;
  Frame e;
  std::string why;
  if (read_frame_at(end_at, e, why) != ReadStatus::ok || e.type != FrameType::end) return;  // no trailer
  if (e.payload.size() != kEndPayloadBytes) {
    index_problem_ = fmt::format("END frame has {} bytes, not {}", e.payload.size(), kEndPayloadBytes);
    return;
  }
  Cursor ec{reinterpret_cast<const uint8_t*>(e.payload.data()),
            reinterpret_cast<const uint8_t*>(e.payload.data()) + e.payload.size()};
  IndexInfo info;
  info.samples = ec.get<uint32_t>();
  ec.get<uint32_t>();
  info.index_offset = ec.get<uint64_t>();
  info.first_mono_ns = ec.get<uint64_t>();
  info.last_mono_ns = ec.get<uint64_t>();
  info.end_offset = end_at;
  auto bad = [&](std::string w) {
    index_problem_ = std::move(w);
    index_entries_.clear();
  };
  if (info.index_offset < data_start_ || info.index_offset >= end_at || end_at - info.index_offset < kFrameHeaderBytes + 4)
    return bad(fmt::format("END names an INDEX at byte {}, outside the frames", info.index_offset));
  Frame x;
  if (read_frame_at(info.index_offset, x, why) != ReadStatus::ok || x.type != FrameType::index ||
      info.index_offset + x.bytes != end_at)
    return bad(fmt::format("no valid INDEX frame at byte {}{}", info.index_offset, why.empty() ? "" : ": " + why));
  const size_t len = x.payload.size();
  if (len < 4 || (len - 4) % kIndexEntryBytes != 0) return bad(fmt::format("INDEX of {} bytes", len));
  Cursor c{reinterpret_cast<const uint8_t*>(x.payload.data()), reinterpret_cast<const uint8_t*>(x.payload.data()) + len};
  const uint32_t n = c.get<uint32_t>();
  if (n != (len - 4) / kIndexEntryBytes) return bad(fmt::format("INDEX says {} entries in {} bytes", n, len));
  if (info.samples == 0 ? n != 0 : (n == 0 || n > info.samples))
    return bad(fmt::format("INDEX has {} entries for {} samples", n, info.samples));
  if (info.first_mono_ns > info.last_mono_ns) return bad("END's time span runs backwards");
  index_entries_.reserve(n);
  for (uint32_t k = 0; k < n; ++k) {
    IndexEntry ie;
    ie.ordinal = c.get<uint32_t>();
    ie.seq = c.get<uint32_t>();
    ie.mono_ns = c.get<uint64_t>();
    ie.offset = c.get<uint64_t>();
    const IndexEntry* prev = index_entries_.empty() ? nullptr : &index_entries_.back();
    bool ok = ie.ordinal < info.samples && ie.offset >= data_start_ && ie.offset < info.index_offset &&
              (prev ? ie.ordinal > prev->ordinal && ie.offset > prev->offset && ie.mono_ns >= prev->mono_ns
                    : ie.ordinal == 0);
    if (!ok) return bad(fmt::format("INDEX entry {} is out of order or out of bounds", k));
    index_entries_.push_back(ie);
  }
  info.entries = n;
  index_ = info;
}

bool RecordingReader::positions_from_index() {
  // Walk the frame headers between the first frame and the INDEX (payloads are not read)
  // and check them against the index; any disagreement means scanning instead.
  std::vector<SamplePos> pos;
  pos.reserve(index_->samples);
  uint64_t at = data_start_;
  size_t k = 0;
  Frame f;
  std::string why;
  while (at < index_->index_offset) {
    if (read_frame_at(at, f, why, false) != ReadStatus::ok) break;
    if (f.type == FrameType::sample) {
      const bool key = f.flags & kFlagKeyframe;
      if (key) {
        if (k >= index_entries_.size() || index_entries_[k].offset != at || index_entries_[k].ordinal != pos.size()) break;
        ++k;
      }
      if (pos.size() >= index_->samples || (!pos.empty() && f.mono_ns <= pos.back().mono_ns)) break;
      pos.push_back({static_cast<uint32_t>(pos.size()), f.mono_ns, at, key});
    }
    at += f.bytes;
  }
  if (at != index_->index_offset || pos.size() != index_->samples || k != index_entries_.size()) {
    index_problem_ = "INDEX does not match the frames; scanned them instead";
    index_.reset();
    index_entries_.clear();
    return false;
  }
  positions_ = std::move(pos);
  return true;
}

void RecordingReader::scan_positions() {
  if (scan_pos_ == 0) scan_pos_ = data_start_;
  Frame f;
  std::string why;
  for (;;) {
    if (damage_ && scan_pos_ >= damage_->offset) {
      scan_done_ = true;
      return;
    }
    ReadStatus st = read_frame_at(scan_pos_, f, why);
    if (st == ReadStatus::ok) {
      if (f.type == FrameType::sample && f.payload.size() >= 4) {
        if (!positions_.empty() && f.mono_ns <= positions_.back().mono_ns) {
          set_damage(scan_pos_, backwards_time(f.mono_ns, positions_.back().mono_ns));
          scan_done_ = true;
          return;
        }
        const bool key = f.flags & kFlagKeyframe;
        // A delta frame before any keyframe cannot be decoded: leave leading ones out.
        if (key || !positions_.empty())
          positions_.push_back({static_cast<uint32_t>(positions_.size()), f.mono_ns, scan_pos_, key});
      }
      if (f.type == FrameType::end) saw_end_ = true;
      std::vector<int> online;
      if (f.type == FrameType::online && minor_ >= 2 && !parse_online(f.payload, online, why)) {
        set_damage(scan_pos_, why);  // as next() finds it (replay's positions stop there too)
        scan_done_ = true;
        return;
      }
      ProbeStatus note;
      if (f.type == FrameType::note && !parse_note(f.payload, note, why)) {
        set_damage(scan_pos_, why);  // as next() finds it (a NOTE too deep, not JSON...)
        scan_done_ = true;
        return;
      }
      scan_pos_ += f.bytes;
      continue;
    }
    if (st == ReadStatus::eof) {
      if (!follow_.enabled) scan_done_ = true;
      return;
    }
    if (follow_.enabled && st != ReadStatus::bad) return;  // still being written: look again next time
    set_damage(scan_pos_, why);
    scan_done_ = true;
    return;
  }
}

const std::vector<RecordingReader::SamplePos>& RecordingReader::sample_positions() {
  if (scan_done_) return positions_;
  if (index_ && positions_.empty() && scan_pos_ == 0 && positions_from_index()) {
    scan_done_ = true;
    return positions_;
  }
  scan_positions();
  return positions_;
}

void RecordingReader::check_all_frames() {
  if (scan_done_ && scan_pos_ != 0) return;  // already scanned frame by frame
  positions_.clear();                          // (rebuilt by the scan, as without an index)
  scan_pos_ = 0;
  scan_done_ = false;
  scan_positions();
}

size_t RecordingReader::sample_count() { return index_ ? index_->samples : sample_positions().size(); }

bool RecordingReader::seek_sample(size_t i) {
  size_t k = i;
  if (index_) {
    if (i >= index_->samples) return false;
    auto it = std::upper_bound(index_entries_.begin(), index_entries_.end(), i,
                               [](size_t v, const IndexEntry& e) { return v < e.ordinal; });
    --it;  // entries start at ordinal 0, so one is <= i
    k = it->ordinal;
    pos_ = it->offset;
  } else {
    const auto& pos = sample_positions();
    if (i >= pos.size()) return false;
    while (k > 0 && !pos[k].keyframe) --k;
    pos_ = pos[k].offset;
  }
  have_state_ = false;
  have_online_ = false;
  pending_exact_.reset();
  pending_gaps_.reset();
  returned_ns_.reset();  // the sample before the one a seek returns was not returned
  if (minor_ >= 2) {
    // A 1.2 keyframe's online set is the ONLINE frame right before it (fixed size).
    const uint64_t back = kFrameHeaderBytes + online_bitmap_bytes(meta_.ncpus);
    Frame key, on;
    std::string why;
    if (pos_ >= data_start_ + back && read_frame_at(pos_, key, why, false) == ReadStatus::ok &&
        read_frame_at(pos_ - back, on, why, false) == ReadStatus::ok && on.type == FrameType::online &&
        on.bytes == back && on.mono_ns == key.mono_ns)
      pos_ -= back;
  }
  for (size_t n = k; n < i; ++n)
    if (!next_state(false)) return false;
  return true;
}

std::vector<int> RecordingReader::online_cpus(uint64_t from_ns, uint64_t to_ns) {
  std::vector<char> on(meta_.ncpus, 0);
  auto mark = [&](const std::vector<int>& cpus) {
    for (int c : cpus)
      if (c >= 0 && static_cast<uint32_t>(c) < meta_.ncpus) on[size_t(c)] = 1;
  };
  mark(meta_.host.online);
  if (minor_ >= 2) {
    // Walk the frame headers; read only the ONLINE frames' payloads.
    const uint64_t end = index_ ? index_->index_offset : file_bytes_;
    std::vector<int> before;  // the set in effect at from_ns
    uint64_t at = data_start_;
    Frame f;
    std::string why;
    while (at < end && read_frame_at(at, f, why, false) == ReadStatus::ok) {
      if (f.type == FrameType::online && f.mono_ns <= to_ns && read_frame_at(at, f, why) == ReadStatus::ok &&
          decode_online(f.payload, why)) {
        if (f.mono_ns <= from_ns)
          before = online_;
        else
          mark(online_);
      }
      at += f.bytes;
    }
    mark(before);
    have_online_ = false;
  }
  // Every CPU that counted something in the window ran in it.
  Sample a, b;
  bool have_a = seek_time(from_ns) && next(a) && a.mono_ns <= to_ns;
  if (have_a) {
    b = a;
    // The window's last sample: found among the positions (frame headers with an index),
    // decoded from its keyframe.
    const auto& pos = sample_positions();
    auto it = std::upper_bound(pos.begin(), pos.end(), to_ns,
                               [](uint64_t t, const SamplePos& p) { return t < p.mono_ns; });
    Sample s;
    if (it != pos.begin() && seek_sample(static_cast<size_t>(it - pos.begin()) - 1) && next(s) && s.mono_ns > a.mono_ns)
      b = std::move(s);
    mark(a.online);
    mark(b.online);
    for (size_t p = 0; p < a.probes.size() && p < b.probes.size() && p < meta_.probes.size(); ++p) {
      const auto& wa = a.probes[p].words;
      const auto& wb = b.probes[p].words;
      const size_t sw = meta_.probes[p].layout.slot_words;
      if (!a.probes[p].present || !b.probes[p].present || wa.size() != wb.size() || !sw) continue;
      for (size_t c = 0; c < meta_.ncpus && (c + 1) * sw <= wa.size(); ++c)
        if (!on[c] && !std::equal(wa.begin() + long(c * sw), wa.begin() + long((c + 1) * sw), wb.begin() + long(c * sw)))
          on[c] = 1;
    }
  }
  std::vector<int> out;
  for (size_t c = 0; c < on.size(); ++c)
    if (on[c]) out.push_back(static_cast<int>(c));
  return out;
}

std::vector<int> RecordingReader::take_status_changes() {
  std::vector<int> out;
  for (; notes_taken_ < notes_.size(); ++notes_taken_)
    if (int i = meta_.probe_index(notes_[notes_taken_].probe); i >= 0) out.push_back(i);
  return out;
}

bool RecordingReader::seek_time(uint64_t mono_ns) {
  if (index_) {
    if (index_->samples == 0 || mono_ns > index_->last_mono_ns) return false;
    // Start at the last keyframe before t and walk the frame headers to the sample.
    auto it = std::lower_bound(index_entries_.begin(), index_entries_.end(), mono_ns,
                               [](const IndexEntry& e, uint64_t t) { return e.mono_ns < t; });
    if (it != index_entries_.begin()) --it;
    uint64_t at = it->offset;
    size_t ordinal = it->ordinal;
    Frame f;
    std::string why;
    while (at < index_->index_offset && read_frame_at(at, f, why, false) == ReadStatus::ok) {
      if (f.type == FrameType::sample) {
        if (f.mono_ns >= mono_ns) return seek_sample(ordinal);
        ++ordinal;
      }
      at += f.bytes;
    }
    return false;
  }
  const auto& pos = sample_positions();
  auto it = std::lower_bound(pos.begin(), pos.end(), mono_ns,
                             [](const SamplePos& p, uint64_t t) { return p.mono_ns < t; });
  if (it == pos.end()) return false;
  return seek_sample(static_cast<size_t>(it - pos.begin()));
}

}  // namespace schedhot
