#include "store/recording.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <zstd.h>

#include "store/crc32c.h"

namespace schedhot {

namespace {

constexpr char kFileMagic[8] = {'S', 'C', 'H', 'E', 'D', 'H', 'O', 'T'};
constexpr uint32_t kFrameMagic = 0x52464853;  // "SHFR" little-endian
constexpr uint32_t kFileHeaderBytes = 32;
constexpr uint32_t kFrameHeaderBytes = 24;
constexpr uint8_t kFlagZstd = 1;
constexpr uint8_t kFlagKeyframe = 2;
constexpr uint64_t kMaxStateWords = 64ull << 20;  // 512 MiB of slot words per sample

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

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC) throw std::runtime_error(fmt::format("{}: disk full (ENOSPC); complete frames are kept", path));
      throw std::runtime_error(fmt::format("{}: write failed: {}", path, strerror(errno)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

// ---- writer ------------------------------------------------------------------

RecordingWriter::RecordingWriter(const std::string& path, const Meta& meta, WriterOptions opts)
    : path_(path), opts_(opts), meta_(meta) {
  if (path == "-") {
    fd_ = STDOUT_FILENO;
    own_fd_ = false;
  } else {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (opts.overwrite ? O_TRUNC : O_EXCL);
    fd_ = ::open(path.c_str(), flags, 0644);
    if (fd_ < 0) {
      if (errno == EEXIST)
        throw std::runtime_error(fmt::format("{} exists; choose another name or pass --force", path));
      throw std::runtime_error(fmt::format("cannot create {}: {}", path, strerror(errno)));
    }
  }
  std::string h(kFileMagic, 8);
  put<uint16_t>(h, kFormatMajor);
  put<uint16_t>(h, kFormatMinor);
  put<uint32_t>(h, kFileHeaderBytes);
  put<uint64_t>(h, meta.start_wall_ns);
  put<uint32_t>(h, 0);
  put<uint32_t>(h, crc32c(h.data(), h.size()));
  write_all(fd_, h.data(), h.size(), path_);
  offset_ = h.size();
  nlohmann::json j = meta;
  write_frame(FrameType::meta, 0, 0, j.dump());
}

RecordingWriter::~RecordingWriter() {
  try {
    close();
  } catch (...) {
  }
}

void RecordingWriter::write_frame(FrameType t, uint8_t flags, uint64_t mono_ns, const std::string& payload) {
  std::string h;
  put<uint32_t>(h, kFrameMagic);
  put<uint32_t>(h, static_cast<uint32_t>(payload.size()));
  h.push_back(static_cast<char>(t));
  h.push_back(static_cast<char>(flags));
  put<uint16_t>(h, 0);
  put<uint32_t>(h, 0);  // CRC placeholder
  put<uint64_t>(h, mono_ns);
  uint32_t crc = crc32c(h.data() + 4, 8);
  crc = crc32c(h.data() + 16, 8, crc);
  crc = crc32c(payload.data(), payload.size(), crc);
  std::memcpy(h.data() + 12, &crc, 4);
  std::string frame = h + payload;  // one write() per frame
  write_all(fd_, frame.data(), frame.size(), path_);
  offset_ += frame.size();
}

void RecordingWriter::write_sample(const Sample& s) {
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
    for (uint32_t c = 0; c < meta_.ncpus; ++c) {
      const uint64_t* w = cur.words.data() + size_t(c) * sw;
      const uint64_t* o = base ? base->words.data() + size_t(c) * sw : nullptr;
      std::string words;
      uint64_t nw = 0;
      int64_t last_w = -1;
      for (uint32_t k = 0; k < sw; ++k) {
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
  if (opts_.compress && b.size() > 256) {
    std::string z(ZSTD_compressBound(b.size()), '\0');
    size_t n = ZSTD_compress(z.data(), z.size(), b.data(), b.size(), opts_.zstd_level);
    if (!ZSTD_isError(n) && n < b.size()) {
      z.resize(n);
      b.swap(z);
      flags |= kFlagZstd;
    }
  }
  if (key) index_.push_back({s.seq, s.mono_ns, offset_});
  write_frame(FrameType::sample, flags, s.mono_ns, b);
  prev_ = s;
  have_prev_ = true;
  ++nsamples_;
}

void RecordingWriter::write_status(const ProbeStatus& status) {
  nlohmann::json j = {{"probe", status.probe}, {"status", status}};
  write_frame(FrameType::note, 0, 0, j.dump());
}

void RecordingWriter::close() {
  if (fd_ < 0) return;
  std::string idx;
  put<uint32_t>(idx, static_cast<uint32_t>(index_.size()));
  for (auto& e : index_) {
    put<uint32_t>(idx, e.seq);
    put<uint64_t>(idx, e.mono_ns);
    put<uint64_t>(idx, e.offset);
  }
  std::string end;
  put<uint32_t>(end, nsamples_);
  try {
    write_frame(FrameType::index, 0, 0, idx);
    write_frame(FrameType::end, 0, 0, end);
  } catch (...) {
    if (own_fd_) ::close(fd_);
    fd_ = -1;
    throw;
  }
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

// ---- reader ------------------------------------------------------------------

std::unique_ptr<RecordingReader> RecordingReader::open(const std::string& path) {
  std::unique_ptr<RecordingReader> r(new RecordingReader());
  r->path_ = path;
  r->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r->fd_ < 0) throw std::runtime_error(fmt::format("cannot open {}: {}", path, strerror(errno)));
  struct stat st {};
  if (fstat(r->fd_, &st) == 0) r->file_bytes_ = static_cast<uint64_t>(st.st_size);
  uint8_t h[kFileHeaderBytes];
  ssize_t n = ::pread(r->fd_, h, sizeof h, 0);
  if (n < static_cast<ssize_t>(sizeof h) && (n < 8 || std::memcmp(h, kFileMagic, 8) != 0))
    throw std::runtime_error(fmt::format("{} is not a schedhot recording (too short or no SCHEDHOT magic)", path));
  if (std::memcmp(h, kFileMagic, 8) != 0)
    throw std::runtime_error(fmt::format("{} is not a schedhot recording (no SCHEDHOT magic)", path));
  if (n < static_cast<ssize_t>(sizeof h))
    throw std::runtime_error(fmt::format("{}: truncated file header ({} of {} bytes)", path, n, sizeof h));
  uint32_t crc;
  std::memcpy(&crc, h + 28, 4);
  if (crc32c(h, 28) != crc) throw std::runtime_error(fmt::format("{}: file header fails its CRC32C", path));
  std::memcpy(&r->major_, h + 8, 2);
  std::memcpy(&r->minor_, h + 10, 2);
  uint32_t hb;
  std::memcpy(&hb, h + 12, 4);
  if (r->major_ > kFormatMajor)
    throw std::runtime_error(fmt::format("{} is format {}.{}, newer than this schedhot reads ({}.x): upgrade schedhot",
                                         path, r->major_, r->minor_, kFormatMajor));
  if (r->major_ == 0 || hb < kFileHeaderBytes || hb > 4096)
    throw std::runtime_error(fmt::format("{}: bad file header (format {}.{}, {} header bytes)", path, r->major_, r->minor_, hb));
  r->pos_ = hb;
  FrameType t;
  uint8_t flags;
  uint64_t mono, at;
  std::string payload;
  if (!r->read_frame(t, flags, mono, payload, at))
    throw std::runtime_error(fmt::format("{}: no readable metadata frame ({})", path,
                                         r->damage_ ? r->damage_->reason : "empty"));
  if (t != FrameType::meta) throw std::runtime_error(fmt::format("{}: first frame is not metadata", path));
  r->data_start_ = r->pos_;
  try {
    nlohmann::json j = nlohmann::json::parse(payload);
    r->meta_ = j.get<Meta>();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: bad metadata: {}", path, e.what()));
  }
  if (state_words(r->meta_) > kMaxStateWords)
    throw std::runtime_error(fmt::format("{}: metadata describes {} words per sample, more than this reader allows",
                                         path, state_words(r->meta_)));
  return r;
}

RecordingReader::~RecordingReader() {
  if (fd_ >= 0) ::close(fd_);
}

void RecordingReader::set_damage(uint64_t at, std::string why) {
  if (!damage_) damage_ = Damage{at, std::move(why)};
}

bool RecordingReader::read_frame(FrameType& type, uint8_t& flags, uint64_t& mono, std::string& payload, uint64_t& at) {
  if (damage_) return false;
  at = pos_;
  uint8_t h[kFrameHeaderBytes];
  ssize_t n = ::pread(fd_, h, sizeof h, static_cast<off_t>(pos_));
  if (n == 0) return false;  // clean EOF
  if (n < 0) {
    set_damage(at, fmt::format("read error: {}", strerror(errno)));
    return false;
  }
  if (n < static_cast<ssize_t>(sizeof h)) {
    set_damage(at, fmt::format("truncated frame header ({} of {} bytes)", n, sizeof h));
    return false;
  }
  uint32_t magic, len, crc;
  std::memcpy(&magic, h, 4);
  std::memcpy(&len, h + 4, 4);
  std::memcpy(&crc, h + 12, 4);
  std::memcpy(&mono, h + 16, 8);
  type = static_cast<FrameType>(h[8]);
  flags = h[9];
  if (magic != kFrameMagic) {
    set_damage(at, "no frame magic (garbage or overwritten data)");
    return false;
  }
  if (len > kMaxFramePayload) {
    set_damage(at, fmt::format("frame claims {} payload bytes, over the {} limit", len, kMaxFramePayload));
    return false;
  }
  if (pos_ + sizeof h + len > file_bytes_) {
    struct stat st {};
    if (fstat(fd_, &st) == 0) file_bytes_ = static_cast<uint64_t>(st.st_size);
    if (pos_ + sizeof h + len > file_bytes_) {
      set_damage(at, fmt::format("truncated frame: {} payload bytes announced, {} present", len,
                                 file_bytes_ > pos_ + sizeof h ? file_bytes_ - pos_ - sizeof h : 0));
      return false;
    }
  }
  payload.resize(len);
  ssize_t got = len ? ::pread(fd_, payload.data(), len, static_cast<off_t>(pos_ + sizeof h)) : 0;
  if (got != static_cast<ssize_t>(len)) {
    set_damage(at, fmt::format("truncated frame: {} of {} payload bytes", got < 0 ? 0 : got, len));
    return false;
  }
  uint32_t c = crc32c(h + 4, 8);
  c = crc32c(h + 16, 8, c);
  c = crc32c(payload.data(), payload.size(), c);
  if (c != crc) {
    set_damage(at, fmt::format("frame fails its CRC32C (stored {:08x}, computed {:08x})", crc, c));
    return false;
  }
  pos_ += sizeof h + len;
  ++frames_;
  return true;
}

bool RecordingReader::decode_sample(const std::string& raw, bool keyframe, Sample& out, std::string& why) {
  Cursor cur{reinterpret_cast<const uint8_t*>(raw.data()), reinterpret_cast<const uint8_t*>(raw.data()) + raw.size()};
  if (!keyframe && !have_state_) {
    why = "delta sample with no keyframe before it";
    return false;
  }
  if (!have_state_) state_ = make_sample(meta_);
  Sample next;
  next.seq = cur.get<uint32_t>();
  next.mono_ns = cur.get<uint64_t>();
  next.wall_ns = cur.get<uint64_t>();
  uint16_t nentries = cur.get<uint16_t>();
  if (!cur.ok) {
    why = "sample header truncated";
    return false;
  }
  next.probes.resize(meta_.probes.size());
  std::vector<bool> listed(meta_.probes.size(), false);
  for (uint16_t e = 0; e < nentries; ++e) {
    uint16_t pi = cur.get<uint16_t>();
    if (!cur.ok || pi >= meta_.probes.size() || listed[pi]) {
      why = fmt::format("bad probe index {} in sample", pi);
      return false;
    }
    listed[pi] = true;
    const uint32_t sw = meta_.probes[pi].layout.slot_words;
    ProbeSample& ps = next.probes[pi];
    ps.present = true;
    const ProbeSample& old = state_.probes[pi];
    if (!keyframe && old.present && old.words.size() == size_t(meta_.ncpus) * sw)
      ps.words = old.words;
    else
      ps.words.assign(size_t(meta_.ncpus) * sw, 0);
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
      }
    }
  }
  if (cur.left() != 0) {
    why = fmt::format("{} trailing bytes in sample", cur.left());
    return false;
  }
  state_ = next;
  have_state_ = true;
  out = std::move(next);
  return true;
}

bool RecordingReader::next(Sample& out) {
  FrameType t;
  uint8_t flags;
  uint64_t mono, at;
  std::string payload;
  while (read_frame(t, flags, mono, payload, at)) {
    switch (t) {
      case FrameType::sample: {
        std::string raw;
        if (flags & kFlagZstd) {
          unsigned long long sz = ZSTD_getFrameContentSize(payload.data(), payload.size());
          uint64_t limit = state_words(meta_) * 22 + (1u << 20);
          if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN || sz > limit) {
            set_damage(at, "compressed sample with a bad or oversized content size");
            return false;
          }
          raw.resize(sz);
          size_t n = ZSTD_decompress(raw.data(), raw.size(), payload.data(), payload.size());
          if (ZSTD_isError(n) || n != sz) {
            set_damage(at, fmt::format("compressed sample does not decompress: {}",
                                       ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
            return false;
          }
        } else {
          raw.swap(payload);
        }
        std::string why;
        if (!decode_sample(raw, flags & kFlagKeyframe, out, why)) {
          set_damage(at, why);
          return false;
        }
        return true;
      }
      case FrameType::note: {
        try {
          auto j = nlohmann::json::parse(payload);
          ProbeStatus s = j.at("status").get<ProbeStatus>();
          int i = meta_.probe_index(s.probe);
          if (i >= 0) meta_.probes[i].status = s;
          notes_.push_back(s);
        } catch (const std::exception& e) {
          set_damage(at, fmt::format("bad note frame: {}", e.what()));
          return false;
        }
        break;
      }
      case FrameType::end: saw_end_ = true; break;
      case FrameType::index: break;
      case FrameType::meta:
        set_damage(at, "second metadata frame");
        return false;
      default:
        break;  // unknown frame types of later minor versions are skipped
    }
  }
  return false;
}

const std::vector<RecordingReader::SamplePos>& RecordingReader::sample_positions() {
  if (scanned_) return positions_;
  const uint64_t saved_pos = pos_;
  const bool saved_have = have_state_;
  Sample saved_state = state_;
  pos_ = data_start_;
  FrameType t;
  uint8_t flags;
  uint64_t mono, at;
  std::string payload;
  while (read_frame(t, flags, mono, payload, at)) {
    if (t != FrameType::sample || payload.size() < 4) continue;
    SamplePos sp;
    sp.mono_ns = mono;
    sp.offset = at;
    sp.keyframe = flags & kFlagKeyframe;
    sp.seq = static_cast<uint32_t>(positions_.size());
    positions_.push_back(sp);
  }
  // A delta frame before any keyframe cannot be decoded: drop leading ones.
  while (!positions_.empty() && !positions_.front().keyframe) positions_.erase(positions_.begin());
  scanned_ = true;
  pos_ = saved_pos;
  have_state_ = saved_have;
  state_ = std::move(saved_state);
  return positions_;
}

bool RecordingReader::seek_sample(size_t i) {
  const auto& pos = sample_positions();
  if (i >= pos.size()) return false;
  size_t k = i;
  while (k > 0 && !pos[k].keyframe) --k;
  pos_ = pos[k].offset;
  have_state_ = false;
  Sample skip;
  for (size_t n = k; n < i; ++n)
    if (!next(skip)) return false;
  return true;
}

bool RecordingReader::seek_time(uint64_t mono_ns) {
  const auto& pos = sample_positions();
  auto it = std::lower_bound(pos.begin(), pos.end(), mono_ns,
                             [](const SamplePos& p, uint64_t t) { return p.mono_ns < t; });
  if (it == pos.end()) return false;
  return seek_sample(static_cast<size_t>(it - pos.begin()));
}

}  // namespace schedhot
