#include "store/rotate.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace schedhot {

namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

void remove_if_there(const std::string& p) {
  if (::unlink(p.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error(fmt::format("cannot remove {} while rotating: {}", p, strerror(errno)));
}

void rename_if_there(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error(fmt::format("cannot rename {} to {} while rotating: {}", from, to, strerror(errno)));
}

/// Refuses to rotate away what is at path unless it is a regular file holding a
/// recording (the SCHEDHOT magic): a device, a directory or someone's notes are not ours
/// to move. With keep == 0 the old file would be deleted: only with --force.
void check_rotatable(const std::string& path, unsigned keep, bool force) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  bool ours = false;
  if (S_ISREG(st.st_mode)) {
    char magic[8] = {};
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      ours = std::fread(magic, 1, sizeof magic, f) == sizeof magic && std::memcmp(magic, "SCHEDHOT", 8) == 0;
      std::fclose(f);
    }
  }
  if (!ours)
    throw std::runtime_error(fmt::format("{} exists and is not a schedhot recording; rotation would move it away: "
                                         "choose another name",
                                         path));
  if (keep == 0 && !force)
    throw std::runtime_error(fmt::format("{} exists and --rotate 0 would delete it; pass --force or choose another name", path));
}

}  // namespace

std::string RotatingWriter::rotated_name(const std::string& path, unsigned k) { return fmt::format("{}.{}", path, k); }

RotatingWriter::RotatingWriter(const std::string& path, const Meta& meta, WriterOptions wo, RotateOptions rot)
    : path_(path), meta_(meta), wo_(wo), rot_(rot) {
  if (rot_.max_bytes) {
    if (path == "-") throw std::runtime_error("a size limit with rotation needs a file, not stdout");
    wo_.max_bytes = rot_.max_bytes;
    check_rotatable(path_, rot_.keep, wo_.overwrite);
    wo_.overwrite = false;
    if (exists(path_)) shift();
  }
  open_new(meta_.start_wall_ns, meta_.start_mono_ns);
}

RotatingWriter::~RotatingWriter() {
  try {
    close();
  } catch (...) {
  }
}

void RotatingWriter::shift() {
  if (rot_.keep == 0) {
    remove_if_there(path_);
    return;
  }
  remove_if_there(rotated_name(path_, rot_.keep));
  for (unsigned k = rot_.keep - 1; k >= 1; --k) rename_if_there(rotated_name(path_, k), rotated_name(path_, k + 1));
  rename_if_there(path_, rotated_name(path_, 1));
}

void RotatingWriter::open_new(uint64_t start_wall_ns, uint64_t start_mono_ns) {
  Meta m = meta_;
  m.start_wall_ns = start_wall_ns;
  m.start_mono_ns = start_mono_ns;
  w_ = std::make_unique<RecordingWriter>(path_, m, wo_);
}

void RotatingWriter::write_sample(const Sample& s) {
  if (!rotate_next_ && w_->write_sample(s)) return;
  if (!rotate_next_ && w_->samples() == 0)
    throw std::runtime_error(fmt::format("{}: a size limit of {} bytes cannot hold the metadata and one sample",
                                         path_, rot_.max_bytes));
  rotate_next_ = false;
  w_->close();
  done_bytes_ += w_->bytes();
  done_samples_ += w_->samples();
  w_.reset();
  shift();
  ++rotations_;
  open_new(s.wall_ns, s.mono_ns);
  if (!w_->write_sample(s))
    throw std::runtime_error(fmt::format("{}: a size limit of {} bytes cannot hold the metadata and one sample",
                                         path_, rot_.max_bytes));
}

void RotatingWriter::write_status(const ProbeStatus& status) {
  int i = meta_.probe_index(status.probe);
  if (i >= 0) meta_.probes[i].status = status;
  // When the NOTE does not fit, the next sample starts a new file whose META has it.
  if (!w_->write_status(status)) rotate_next_ = true;
}

void RotatingWriter::close() {
  if (w_) w_->close();
}

uint64_t RotatingWriter::bytes() const { return done_bytes_ + (w_ ? w_->bytes() : 0); }

uint32_t RotatingWriter::samples() const { return done_samples_ + (w_ ? w_->samples() : 0); }

}  // namespace schedhot
