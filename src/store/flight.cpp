#include "store/flight.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "probe/catalog.h"
#include "sys/output_file.h"
#include "sys/units.h"

namespace schedhot {

namespace {

std::string probe_name(uint16_t id) {
  for (const ProbeSpec& p : probe_catalog())
    if (uint16_t(p.id) == id) return p.name;
  return fmt::format("probe{}", id);
}

}  // namespace

int open_flight_dir(const std::string& dir, bool* created) {
  if (created) *created = false;
  if (dir.empty()) throw std::runtime_error("--flight needs -o DIR");
  if (std::string why = unsafe_output_path(dir); !why.empty())
    throw std::runtime_error(fmt::format("-o {}: {}", dir, why));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) throw std::runtime_error(fmt::format("-o {}: {}", dir, strerror(errno)));
    if (::mkdir(dir.c_str(), 0755) != 0) {
      if (errno != EEXIST)
        throw std::runtime_error(fmt::format("-o {}: cannot create the directory: {}", dir, strerror(errno)));
    } else if (created) {
      *created = true;
    }
  } else if (S_ISLNK(st.st_mode)) {
    throw std::runtime_error(
        fmt::format("-o {} is a symlink: not followed (name the directory itself)", dir));
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP) throw std::runtime_error(fmt::format("-o {} is a symlink: not followed (name the directory itself)", dir));
    if (e == ENOTDIR) throw std::runtime_error(fmt::format("-o {} is not a directory (--flight writes files into DIR)", dir));
    throw std::runtime_error(fmt::format("-o {}: {}", dir, strerror(e)));
  }
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = strerror(errno);
  } else if (!S_ISDIR(st.st_mode)) {
    why = "not a directory (--flight writes files into DIR)";
  } else if (!trusted_owner(st.st_uid)) {
    why = fmt::format("belongs to uid {}, another user, who could plant names in it: use a directory of your own", st.st_uid);
  } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    why = fmt::format("is writable by {}: another user could plant names in it; chmod go-w it or use another directory",
                      (st.st_mode & S_IWOTH) ? "others" : "its group");
  }
  if (!why.empty()) {
    ::close(fd);
    throw std::runtime_error(fmt::format("-o {} {}", dir, why));
  }
  return fd;
}

size_t flight_held_cap(uint64_t window_ns, uint64_t interval_ns) {
  if (!interval_ns) interval_ns = 1;
  return size_t((window_ns + interval_ns - 1) / interval_ns) + 2;
}

std::string flight_file_name(uint64_t wall_ns, const std::string& probe) {
  const time_t t = time_t(wall_ns / 1'000'000'000ull);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return fmt::format("{}-{}.shot", buf, probe);
}

FlightRecorder::FlightRecorder(const std::string& dir, FlightOptions o) : dir_(dir), o_(std::move(o)) {
  if (!o_.window_ns) throw std::runtime_error("--flight needs a duration above 0");
  dirfd_ = open_flight_dir(dir_, &created_);
  cap_ = flight_held_cap(o_.window_ns, o_.interval_ns);
  o_.writer.overwrite = false;
  o_.writer.max_bytes = 0;
}

FlightRecorder::~FlightRecorder() {
  close();
  if (dirfd_ >= 0) ::close(dirfd_);
  // A DIR made by this run that got no file (a rule refused at attach, no firing) goes
  // again; rmdir leaves it when anything is in it.
  if (created_ && files_.empty()) ::rmdir(dir_.c_str());
}

void FlightRecorder::failed(const std::exception& e) {
  ++st_.failed;
  const std::string what = e.what();
  // The writer's errors name the file already: not twice.
  const bool named = what.rfind(path_, 0) == 0;
  if (auto& f = o_.error ? o_.error : o_.say)
    f(named ? fmt::format("flight: {}; the run goes on", what) : fmt::format("flight: {}: {}; the run goes on", path_, what));
  if (w_) {
    st_.bytes += w_->bytes();
    try {
      w_->close();
    } catch (...) {
    }
  }
  w_.reset();
}

void FlightRecorder::write(const Sample& s) {
  if (!w_) return;
  try {
    w_->write_sample(s);
  } catch (const std::exception& e) {
    failed(e);
  }
}

void FlightRecorder::start(const CaughtEvent& e, const Sample& s, const Meta& meta) {
  (void)s;
  probe_ = probe_name(e.probe);
  const uint64_t wall = s.wall_ns - std::min(s.wall_ns, s.mono_ns > e.ts_ns ? s.mono_ns - e.ts_ns : 0);
  // The first sample: the latest held at or before firing - D, else the oldest held.
  const uint64_t from = e.ts_ns > o_.window_ns ? e.ts_ns - o_.window_ns : 0;
  size_t first = 0;
  for (size_t i = 0; i < held_.size(); ++i)
    if (held_[i].mono_ns <= from) first = i;
  const Sample& f = held_[first];
  const bool short_before = f.mono_ns > from && st_.trimmed;
  Meta m = meta;
  m.start_wall_ns = f.wall_ns;
  m.start_mono_ns = f.mono_ns;
  m.command = fmt::format(
      "{}  # flight recorder: {} fired at {} (CLOCK_MONOTONIC {:.6f} s); this file covers [firing - {}, firing + {}]; "
      "caught events after the firing are in its CATCH frames and started no file{}",
      meta.command, probe_, format_utc_time(wall), e.ts_ns / 1e9, format_ns(double(o_.window_ns)),
      format_ns(double(o_.window_ns)),
      short_before ? fmt::format("; it starts {} before the firing: --flight-mem {} dropped the older samples",
                                 format_ns(double(e.ts_ns - std::min(e.ts_ns, f.mono_ns))),
                                 format_bytes(o_.max_held_bytes))
                   : std::string());
  const std::string base = flight_file_name(wall, probe_);
  int fd = -1, err = 0;
  std::string name;
  for (int k = 0; k < 100 && fd < 0; ++k) {
    name = k ? fmt::format("{}-{}.shot", base.substr(0, base.size() - 5), k) : base;
    fd = ::openat(dirfd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    err = errno;
    if (fd < 0 && err != EEXIST) break;
  }
  path_ = dir_ + "/" + name;
  ++st_.files;
  files_.push_back(path_);
  fire_ns_ = last_fire_ns_ = e.ts_ns;
  // The firing's wall time, from the sample's pair of clocks (both read together).
  fire_wall_ns_ = s.wall_ns + e.ts_ns >= s.mono_ns ? s.wall_ns + e.ts_ns - s.mono_ns : 0;
  have_fire_ = true;
  until_ns_ = e.ts_ns + o_.window_ns;
  inside_now_ = 0;
  if (fd < 0) {
    failed(std::runtime_error(fmt::format("cannot create it: {}", strerror(err))));
    return;
  }
  try {
    PreparedOutput prepared(path_, fd, OwnedFile(path_, fd));
    WriterOptions wo = o_.writer;
    wo.prepared = &prepared;
    w_ = std::make_unique<RecordingWriter>(path_, m, wo);
  } catch (const std::exception& ex) {
    failed(ex);
    return;
  }
  // The first sample without what belongs to its interval, which lies before the file.
  std::optional<Sample> bare;
  const Sample* first_s = &f;
  if (f.caught || f.gaps || f.exact) {
    bare = f;
    bare->caught.reset();
    bare->gaps.reset();
    bare->exact.reset();
    first_s = &*bare;
  }
  write(*first_s);
  for (size_t i = first + 1; i < held_.size() && w_; ++i) write(held_[i]);
}

void FlightRecorder::finish() {
  if (!w_) return;
  try {
    w_->close();
  } catch (const std::exception& e) {
    failed(e);
    return;
  }
  st_.bytes += w_->bytes();
  if (o_.say)
    o_.say(fmt::format("flight: wrote {}: {} samples, {} bytes, {} firing at {} (CLOCK_MONOTONIC {:.3f} s){}", path_,
                       w_->samples(), w_->bytes(), probe_, format_utc_time(fire_wall_ns_), fire_ns_ / 1e9,
                       inside_now_ ? fmt::format(" ({} later firing{} inside)", inside_now_, inside_now_ == 1 ? "" : "s")
                                   : std::string()));
  w_.reset();
}

void FlightRecorder::pop_held() {
  held_bytes_ -= held_size_.front();
  held_size_.pop_front();
  held_.pop_front();
}

void FlightRecorder::add(const Sample& s, const Meta& meta, const std::vector<int>& changed) {
  held_.push_back(s);
  held_size_.push_back(sample_bytes(held_.back()));
  held_bytes_ += held_size_.back();
  if (w_) {
    for (int i : changed)
      if (i >= 0 && size_t(i) < meta.probes.size()) try {
          w_->write_status(meta.probes[size_t(i)].status);
        } catch (const std::exception& e) {
          failed(e);
        }
    write(s);
  }
  if (s.caught)
    for (const CaughtEvent& e : s.caught->events) {
      ++st_.firings;
      if (w_ && e.ts_ns > until_ns_) finish();  // s ends the file in progress: e comes after it
      if (w_) {
        ++st_.inside;
        ++inside_now_;
        continue;
      }
      if (have_fire_ && e.ts_ns <= until_ns_) {  // inside a file a write error cut short
        ++st_.inside;
        continue;
      }
      if (st_.files >= o_.max_files) {
        ++st_.skipped_cap;
        if (!cap_said_ && o_.say)
          o_.say(fmt::format("flight: --flight-max {} files written: no more files (the run goes on)", o_.max_files));
        cap_said_ = true;
        continue;
      }
      if (have_fire_ && e.ts_ns < last_fire_ns_ + o_.window_ns) {
        ++st_.skipped_rate;
        continue;
      }
      start(e, s, meta);
    }
  if (w_ && s.mono_ns >= until_ns_) finish();
  // Keep the latest sample at or before s - D (a later firing is after s) and what follows.
  const uint64_t keep_from = s.mono_ns > o_.window_ns ? s.mono_ns - o_.window_ns : 0;
  while (held_.size() >= 2 && held_[1].mono_ns <= keep_from) pop_held();
  while (held_.size() > cap_) pop_held();
  // --flight-mem: the oldest go first; the newest sample always stays.
  while (held_.size() >= 2 && held_bytes_ > o_.max_held_bytes) {
    pop_held();
    ++st_.trimmed;
    if (!mem_said_ && o_.say)
      o_.say(fmt::format("flight: the held samples reached --flight-mem {}: the oldest are dropped, so a file starts "
                         "less than {} before its firing (the run goes on)",
                         format_bytes(o_.max_held_bytes), format_ns(double(o_.window_ns))));
    mem_said_ = true;
  }
}

void FlightRecorder::close() { finish(); }

std::string FlightRecorder::summary() const {
  return fmt::format("flight: {} firing{}, {} file{} in {}, {} inside a file in progress, {} skipped (--flight-max){}",
                     st_.firings, st_.firings == 1 ? "" : "s", st_.files, st_.files == 1 ? "" : "s", dir_, st_.inside,
                     st_.skipped_cap,
                     (st_.trimmed ? fmt::format(", {} held samples dropped early (--flight-mem)", st_.trimmed)
                                  : std::string()) +
                     (st_.failed ? fmt::format(", {} cut short by a write error", st_.failed) : std::string()));
}

}  // namespace schedhot
