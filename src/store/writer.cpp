// The recording writer (RecordingWriter) and its output opened ahead (PreparedOutput):
// the file header and META, then per sample its EXACT, GAPS, ONLINE and SAMPLE frames
// (payloads from sample_codec.cpp), NOTE frames, and at close the INDEX and END frames.
#include "store/recording.h"
#include "sys/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "store/frame.h"
#include "store/index.h"
#include "store/sample_codec.h"
#include "sys/json_text.h"

namespace schedhot {

namespace {

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
  if (const int e = write_fully(fd, p, n)) {
    if (e == ENOSPC) throw WriteError(fmt::format("{}: disk full (ENOSPC); complete frames are kept", path), e);
    throw WriteError(fmt::format("{}: {}", path, write_error_text(e)), e);
  }
}

/// Opens path to write a recording into, following symlinks (hops counts them), by the
/// output-file policy (sys/output_file.h). Sets created to the regular file this call
/// created (O_EXCL: certainly this call's), or leaves it empty when it opened something
/// that was already there: with overwrite, an existing regular file (replaced: created is a
/// new file beside it and replaces the file's real path, which the writer renames it over
/// once its META is written), a device or a FIFO with a reader (written in place, never
/// truncated). A dangling symlink's target is created, the link kept. Throws a one-line
/// std::runtime_error: exists (without overwrite), a FIFO without a reader (not waited on),
/// a terminal, or the open's errno.
int open_output(const std::string& path, bool overwrite, OwnedFile& created, std::string& replaces, int hops = 0) {
  created = {};
  replaces.clear();
  auto terminal = [&] { return std::runtime_error(fmt::format("{} is a terminal; a recording is binary: give a file name", path)); };
  for (int attempt = 0; attempt < 8; ++attempt) {
    // Checked before every try: a name another user planted since the last one is seen.
    if (std::string why = unsafe_output_path(path); !why.empty()) throw std::runtime_error(fmt::format("-o {}: {}", path, why));
    int fd = create_exclusive(path, created);
    if (fd >= 0) return fd;
    if (errno != EEXIST) throw std::runtime_error(fmt::format("cannot create {}: {}", path, strerror(errno)));
    if (!overwrite) {
      // A terminal is refused with or without --force: said first, not after --force.
      struct stat cs {};
      if (::stat(path.c_str(), &cs) == 0 && S_ISCHR(cs.st_mode)) {
        const int t = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        const bool tty = t >= 0 && isatty(t);
        if (t >= 0) ::close(t);
        if (tty) throw terminal();
      }
      throw std::runtime_error(fmt::format("{} exists; choose another name or pass --force", path));
    }
    if (std::string why = untrusted_symlink(path); !why.empty()) throw std::runtime_error(fmt::format("-o {}: {}", path, why));
    // Not a link when checked: opened without following one, so a link renamed over the
    // name since is not opened (ELOOP: checked again). O_NONBLOCK: a FIFO without a reader
    // is ENXIO instead of a wait; cleared below.
    struct stat pre {};
    const bool link_now = ::lstat(path.c_str(), &pre) == 0 && S_ISLNK(pre.st_mode);
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (link_now ? 0 : O_NOFOLLOW));
    if (fd < 0 && errno == ELOOP && !link_now) continue;
    if (fd < 0 && errno == ENOENT) {
      struct stat lst {};
      if (::lstat(path.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) continue;  // removed since: again
      // A dangling symlink: create its target (O_EXCL there too), the link stays.
      if (hops >= 40) throw std::runtime_error(fmt::format("cannot create {}: {}", path, strerror(ELOOP)));
      std::string target;
      if (!symlink_target(path, target)) continue;
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
      throw terminal();
    }
    if (S_ISREG(st.st_mode)) {
      // An existing regular file is replaced only once the new one holds its header and
      // META: a new file next to it (its real path, so a symlink stays a symlink), renamed
      // over it by the writer. A disk too full for even that leaves the old file as it was.
      ::close(fd);
      // The file opened must be one root may replace (another user's, in a directory
      // others write, could become a link at any moment), and the new file goes over the
      // name (or a link's target only while the link may be followed).
      if (std::string why = unsafe_output_path(path); !why.empty()) throw std::runtime_error(fmt::format("-o {}: {}", path, why));
      const std::string dest = replacement_target(path);
      if (dest.empty()) throw std::runtime_error(fmt::format("-o {}: {}", path, untrusted_symlink(path)));
      try {
        fd = create_temp_beside(dest, created);  // a random name: nothing planted there is opened
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(fmt::format("cannot overwrite {}: {}", path, e.what()));
      }
      (void)::fchmod(fd, st.st_mode & 0666);
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
  }
  const std::string h = encode_file_header(meta.start_wall_ns);
  try {
    write_all(fd_, h.data(), h.size(), path_);
    offset_ = h.size();
    write_frame(FrameType::meta, 0, 0, meta_json);
    if (!replaces_.empty())
      if (const int e = created_.replace(replaces_)) {  // the new file removed
        fail_close();
        throw std::runtime_error(fmt::format("cannot overwrite {}: {}; nothing recorded, the file is as it was", path_, strerror(e)));
      }
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

PreparedOutput::PreparedOutput(const std::string& path, int fd, OwnedFile made)
    : path_(path), fd_(fd), created_(std::move(made)) {}

PreparedOutput::~PreparedOutput() {
  if (fd_ < 0) return;
  created_.remove();  // never taken: the file this made goes again, only while its name still holds it
  ::close(fd_);
}

bool RecordingWriter::remove_created() {
  fail_close();
  return created_.remove();
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
  if (opts_.compress) schedhot::compress_if_smaller(b, flags, opts_.zstd_level);
}

void RecordingWriter::write_frame(FrameType t, uint8_t flags, uint64_t mono_ns, const std::string& payload) {
  const std::string frame = encode_frame(t, flags, mono_ns, payload);  // one write() per frame
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
  bool key = !have_prev_ || (nsamples_ % kKeyframeEvery) == 0;
  // A probe the previous sample kept hollow (below) can only be written from what changed.
  for (size_t i = 0; !key && i < s.probes.size() && i < prev_.probes.size(); ++i) {
    const SlotWords &was = prev_.probes[i].words, &now = s.probes[i].words;
    if (s.probes[i].present && prev_.probes[i].present && was.is_hollow() && was.stamp() != now.stamp() &&
        !now.delta_from(was))
      key = true;
  }
  std::string b = encode_sample(s, meta_, key ? nullptr : &prev_);
  uint8_t flags = key ? kFlagKeyframe : 0;
  compress_if_smaller(b, flags);
  // 1.3: the interval's --exact records.
  std::string exact;
  uint8_t exact_flags = 0;
  if (s.exact) {
    exact = encode_exact(*s.exact, have_prev_ ? prev_.mono_ns : 0);
    compress_if_smaller(exact, exact_flags);
  }
  // 1.4: the interval's gap counts, as given (checked first: the reader refuses what breaks
  // the frame's rules, so such a batch is the caller's bug and nothing is written).
  std::string gaps;
  uint8_t gaps_flags = 0;
  if (s.gaps) {
    gaps = encode_gaps(s, meta_);
    compress_if_smaller(gaps, gaps_flags);
  }
  // 1.5: the interval's caught events, as given (checked first, as GAPS: the reader refuses
  // what breaks the frame's rules).
  std::string caught, steal;
  uint8_t caught_flags = 0, steal_flags = 0;
  if (s.caught) {
    const uint64_t since = have_prev_ ? prev_.mono_ns : 0;
    for (size_t i = 0; i < s.caught->events.size(); ++i) {
      const CaughtEvent& e = s.caught->events[i];
      if (e.ts_ns > s.mono_ns || e.cpu >= meta_.ncpus || e.probe >= meta_.probes.size())
        throw std::runtime_error(fmt::format("sample {}: caught event {} at {} ns on CPU {} probe {} is after the "
                                             "sample's time {} ns or names a CPU or probe the metadata does not have "
                                             "({} CPUs, {} probes)",
                                             s.seq, i, e.ts_ns, e.cpu, e.probe, s.mono_ns, meta_.ncpus,
                                             meta_.probes.size()));
    }
    try {
      caught = encode_caught(*s.caught, since);
      steal = encode_steal(*s.caught);  // 1.6: "" when no event has a steal time
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("sample {}: {}", s.seq, e.what()));
    }
    compress_if_smaller(caught, caught_flags);
    if (!steal.empty()) compress_if_smaller(steal, steal_flags);
  }
  // 1.2: the online CPUs, when they changed, and before every keyframe (a seek lands there).
  std::string online;
  if (s.online.empty()) {
    online_written_.clear();
  } else if (key || s.online != online_written_) {
    online = encode_online(s.online, meta_.ncpus);
  }
  if (!fits(b.size() + (online.empty() ? 0 : kFrameHeaderBytes + online.size()) +
                (s.exact ? kFrameHeaderBytes + exact.size() : 0) + (s.gaps ? kFrameHeaderBytes + gaps.size() : 0) +
                (s.caught ? kFrameHeaderBytes + caught.size() : 0) +
                (steal.empty() ? 0 : kFrameHeaderBytes + steal.size()),
            key))
    return false;
  if (s.exact) write_frame(FrameType::exact, exact_flags, s.mono_ns, exact);
  if (s.gaps) write_frame(FrameType::gaps, gaps_flags, s.mono_ns, gaps);
  if (s.caught) write_frame(FrameType::caught, caught_flags, s.mono_ns, caught);
  if (!steal.empty()) write_frame(FrameType::steal, steal_flags, s.mono_ns, steal);
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
  // A producer that keeps what changed (the sampler, the decoder) gives the next sample
  // with its changes from this one: only this one's stamp is needed, and its words are
  // let go of, so the producer writes its next state in place (issue 32) rather than a
  // copy of every block that changed.
  for (ProbeSample& p : prev_.probes)
    if (p.present && p.words.kept_delta()) p.words.hollow();
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
  const uint64_t index_at = offset_;
  write_frame(FrameType::index, 0, 0, encode_index(index_));  // on failure: closed, partial frame cut off
  write_frame(FrameType::end, 0, 0, encode_end(nsamples_, index_at, first_mono_, last_mono_));
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

}  // namespace schedhot
