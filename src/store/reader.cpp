// The recording reader: opening a file (header, META), reading and checking frames one
// after another (following a file still being written), and decoding them into samples,
// status notes, online sets, --exact records, gap counts and caught events (next(), skip()). The trailer
// and seeks are in index.cpp, the payload codecs in sample_codec.cpp.
#include "store/recording.h"

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

#include "store/crc32c.h"
#include "store/frame.h"
#include "store/sample_codec.h"
#include "sys/json_text.h"

namespace schedhot {

namespace {

uint64_t mono_ns_now() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_ns(uint64_t ns) {
  struct timespec ts {static_cast<time_t>(ns / 1'000'000'000ull), static_cast<long>(ns % 1'000'000'000ull)};
  nanosleep(&ts, nullptr);
}

}  // namespace

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
  if (f.payload.size() > kMaxJsonFramePayload)
    throw std::runtime_error(fmt::format("{}: bad metadata: {} bytes, more than the {} bytes a META may hold", path,
                                         f.payload.size(), kMaxJsonFramePayload));
  ++frames_;
  data_start_ = hb + f.bytes;
  pos_ = data_start_;
  try {
    meta_ = parse_file_json(f.payload).get<Meta>();
  } catch (const JsonTooDeep& e) {
    throw std::runtime_error(fmt::format("{}: not readable metadata: {}", path, e.what()));
  } catch (const nlohmann::json::exception& e) {  // the syntax error: said by byte, the file's bytes not quoted
    throw std::runtime_error(fmt::format("{}: bad metadata: {}", path, json_shape_error(e).what()));
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

std::string damage_line(const std::string& file, const Damage& d, const char* verb, uint64_t samples) {
  return fmt::format("{} is damaged at byte {}: {}; {} the {} samples before it", file, d.offset, d.reason, verb, samples);
}

void RecordingReader::set_damage(uint64_t at, std::string why) {
  // The first bad frame of the file wins, whichever way it was found: the frame scan
  // (check_all_frames, CRCs and what it can check without decoding) may have named a later
  // one before decoding from the start found this one.
  if (damage_ && damage_->offset <= at) return;
  damage_ = Damage{at, scrub_controls(why)};
  while (!positions_.empty() && positions_.back().offset >= at) positions_.pop_back();
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
  const FrameHeader fh = decode_frame_header(h);
  const uint32_t len = fh.payload_bytes, crc = fh.crc;
  f.mono_ns = fh.mono_ns;
  f.type = fh.type;
  f.flags = fh.flags;
  f.at = at;
  f.bytes = uint64_t{kFrameHeaderBytes} + len;
  if (fh.magic != kFrameMagic) {
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
  const uint32_t c = frame_crc(h, f.payload);
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

bool RecordingReader::unpack_sample(Frame& f, std::string& raw, std::string& why) const {
  if (!(f.flags & kFlagZstd)) {
    raw.swap(f.payload);
    return true;
  }
  // A delta costs at most 10 (value) + 10 (gap) bytes per word, plus per-CPU overhead.
  const uint64_t limit = state_words(meta_) * 22 + (1u << 20);
  std::string error;
  switch (unzstd(f.payload, limit, raw, error)) {
    case Unzstd::ok: return true;
    case Unzstd::bad_size: why = "compressed sample with a bad or oversized content size"; return false;
    case Unzstd::failed: why = fmt::format("compressed sample does not decompress: {}", error); return false;
  }
  return false;
}

bool RecordingReader::decode_sample(const std::string& raw, bool keyframe, std::string& why) {
  if (!schedhot::decode_sample(raw, keyframe, meta_, state_, have_state_, nonzero_cpu_, why)) return false;
  set_state_online();
  return true;
}

bool RecordingReader::decode_online(const std::string& payload, std::string& why) {
  std::vector<int> cpus;
  if (!schedhot::decode_online(payload, meta_.ncpus, cpus, why)) return false;
  online_ = std::move(cpus);
  have_online_ = true;
  return true;
}

bool RecordingReader::unpack_frame(const Frame& f, const char* what, std::string& raw, std::string& why) {
  if (!(f.flags & kFlagZstd)) {
    raw = f.payload;
    return true;
  }
  // Records are timestamps and ids that differ from record to record: the writer's frames
  // shrink 3-6x. A far higher ratio is a decompression bomb (a 34 KB frame claiming 67 M
  // records and 2 GB of memory, an attacker's finding): refused. GAPS frames get the same
  // bound (a content size up to 1 MiB is always accepted).
  const uint64_t cap = std::min<uint64_t>(kMaxFramePayload, std::max<uint64_t>(uint64_t(1) << 20, uint64_t(f.payload.size()) * 256));
  std::string error;
  switch (unzstd(f.payload, cap, raw, error)) {
    case Unzstd::ok: return true;
    case Unzstd::bad_size: why = fmt::format("compressed {} frame with a bad or oversized content size", what); return false;
    case Unzstd::failed: why = fmt::format("compressed {} frame does not decompress", what); return false;
  }
  return false;
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
  ExactBatch b;
  if (!schedhot::decode_exact(raw, have_state_ ? state_.mono_ns : 0, f.mono_ns, meta_.ncpus, b, why)) return false;
  ++stats_.exact_frames;
  stats_.exact_records += b.records.size();
  stats_.exact_lost = b.lost > UINT64_MAX - stats_.exact_lost ? UINT64_MAX : stats_.exact_lost + b.lost;
  pending_exact_ = std::move(b);
  pending_exact_ns_ = f.mono_ns;
  return true;
}

bool RecordingReader::decode_gaps(const Frame& f, std::string& why) {
  if (!first_for_its_sample(pending_gaps_.has_value(), pending_gaps_ns_, f.mono_ns, "gaps", why)) return false;
  std::string raw;
  if (!unpack_frame(f, "gaps", raw, why)) return false;
  GapBatch b;
  if (!schedhot::decode_gaps(raw, f.mono_ns, meta_, b, why)) return false;
  ++stats_.gap_frames;
  stats_.gap_entries += b.counts.size();
  pending_gaps_ = std::move(b);
  pending_gaps_ns_ = f.mono_ns;
  return true;
}

bool RecordingReader::decode_caught(const Frame& f, std::string& why) {
  if (!first_for_its_sample(pending_caught_.has_value(), pending_caught_ns_, f.mono_ns, "catch", why)) return false;
  std::string raw;
  if (!unpack_frame(f, "catch", raw, why)) return false;
  CatchBatch b;
  if (!schedhot::decode_caught(raw, have_state_ ? state_.mono_ns : 0, f.mono_ns, meta_.ncpus, meta_.probes.size(), b,
                               why))
    return false;
  ++stats_.caught_frames;
  stats_.caught_events += b.events.size();
  stats_.caught_lost = b.lost > UINT64_MAX - stats_.caught_lost ? UINT64_MAX : stats_.caught_lost + b.lost;
  pending_caught_ = std::move(b);
  pending_caught_ns_ = f.mono_ns;
  pending_steal_ = false;
  return true;
}

bool RecordingReader::decode_steal(const Frame& f, std::string& why) {
  why = steal_frame_misplaced(pending_caught_ ? std::optional<uint64_t>(pending_caught_ns_) : std::nullopt, pending_steal_,
                              f.mono_ns);
  if (!why.empty()) return false;
  std::string raw;
  if (!unpack_frame(f, "steal", raw, why)) return false;
  if (!schedhot::decode_steal(raw, *pending_caught_, why)) return false;
  ++stats_.steal_frames;
  pending_steal_ = true;
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

bool RecordingReader::parse_note(const std::string& payload, ProbeStatus& out, std::string& why) const {
  if (payload.size() > kMaxJsonFramePayload) {
    why = fmt::format("bad note frame: {} bytes, more than the {} bytes a NOTE may hold", payload.size(), kMaxJsonFramePayload);
    return false;
  }
  try {
    const nlohmann::json j = parse_file_json(payload);
    out = json_at<ProbeStatus>(j, "status");  // a wrong key said by its path
    // The writer names the probe twice (write_status); a frame whose two names disagree,
    // or whose probe the META does not list, is not one schedhot wrote.
    if (j.contains("probe") && !(j["probe"].is_string() && j["probe"].get<std::string>() == out.probe)) {
      why = "bad note frame: probe is not its status's probe";
      return false;
    }
    if (meta_.probe_index(out.probe) < 0) {
      why = "bad note frame: a probe the metadata does not list";
      return false;
    }
    return true;
  } catch (const nlohmann::json::exception& e) {  // the syntax error: said by byte, the frame's bytes not quoted
    why = fmt::format("bad note frame: {}", json_shape_error(e).what());
    return false;
  } catch (const std::exception& e) {
    why = fmt::format("bad note frame: {}", e.what());
    return false;
  }
}

std::vector<int> RecordingReader::take_status_changes() {
  std::vector<int> out;
  for (; notes_taken_ < notes_.size(); ++notes_taken_)
    if (int i = meta_.probe_index(notes_[notes_taken_].probe); i >= 0) out.push_back(i);
  return out;
}

bool RecordingReader::continues(const Sample& s) const {
  if (!have_state_ || s.probes.size() != state_.probes.size()) return false;
  for (size_t p = 0; p < s.probes.size(); ++p) {
    const ProbeSample &a = s.probes[p], &b = state_.probes[p];
    if (a.present != b.present) return false;
    if (a.present && (!a.words.stamp() || a.words.stamp() != b.words.stamp() || b.words.is_hollow())) return false;
  }
  return true;
}

bool RecordingReader::restore(Sample& s) {
  // The state is s's, or one step after it by its kept delta (a sample refused after it
  // decoded), or a failed step's, already undone by decode_sample. Not written here.
  return refill_hollow(s, state_);
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
        // The caught events of its interval, but not for the first sample a seek hands out.
        state_.caught.reset();
        if (pending_caught_ && pending_caught_ns_ == state_.mono_ns && returned && !after_seek_)
          state_.caught = std::move(pending_caught_);
        pending_caught_.reset();
        if (returned) after_seek_ = false;
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
      case FrameType::gaps:
      case FrameType::caught:
      case FrameType::steal: {
        // 1.3 EXACT, 1.4 GAPS, 1.5 CATCH, 1.6 STEAL: unknown to a file of an earlier minor (skipped as such).
        const int since_minor = f.type == FrameType::exact    ? 3
                                : f.type == FrameType::gaps   ? 4
                                : f.type == FrameType::caught ? 5
                                                              : 6;
        if (minor_ < since_minor) {
          ++stats_.unknown_frames;
          break;
        }
        std::string why;
        const bool ok = f.type == FrameType::exact  ? decode_exact(f, why)
                        : f.type == FrameType::gaps   ? decode_gaps(f, why)
                        : f.type == FrameType::caught ? decode_caught(f, why)
                                                      : decode_steal(f, why);
        if (!ok) {
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

}  // namespace schedhot
