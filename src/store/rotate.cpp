#include "store/rotate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "sys/output_file.h"

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

/// Renames from to to if from is there, never replacing a file at to: the shift runs from
/// the oldest down, so to has just been vacated, and one that appeared since is left alone.
void rename_if_there(const std::string& from, const std::string& to) {
  int rc = ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
    // A file system (or kernel) without RENAME_NOREPLACE: check, then rename.
    if (exists(to)) {
      errno = EEXIST;
    } else {
      rc = ::rename(from.c_str(), to.c_str());
    }
  }
  if (rc != 0 && errno != ENOENT)
    throw std::runtime_error(fmt::format("cannot rename {} to {} while rotating: {}", from, to, strerror(errno)));
}

/// Throws (one line naming path, ending with why) when something is at path that is not a
/// regular file holding a recording (the SCHEDHOT magic): a device, a directory, a symlink
/// or someone's notes are not ours to move or delete. Nothing at path is fine.
void refuse_foreign(const std::string& path, const std::string& why) {
  // The output-file policy first: nothing is moved or deleted through a directory or link
  // another user planted, nor another user's file in a directory others can write.
  if (std::string unsafe = unsafe_output_path(path); !unsafe.empty())
    throw std::runtime_error(fmt::format("-o {}: {}", path, unsafe));
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
  if (!ours) throw std::runtime_error(fmt::format("{} exists and is not a schedhot recording; {}", path, why));
}

/// Refuses to rotate away what is at path unless it is a recording (refuse_foreign). With
/// keep == 0 the old file would be deleted: only with --force.
void check_rotatable(const std::string& path, unsigned keep, bool force) {
  refuse_foreign(path, "rotation would move it away: choose another name");
  if (keep == 0 && !force && exists(path))
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
    check_rotated("rotation would move or delete it: choose another name");
    wo_.overwrite = false;
    wo_.prepared = nullptr;  // FILE is rotated away first: opened here, after the shift
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

void RotatingWriter::check_rotated(const std::string& why) const {
  for (unsigned k = 1; k <= rot_.keep; ++k) refuse_foreign(rotated_name(path_, k), why);
}

void RotatingWriter::shift() {
  if (rot_.keep == 0) {
    remove_if_there(path_);
    return;
  }
  // FILE.keep was checked (check_rotated) just before: a recording, or nothing.
  remove_if_there(rotated_name(path_, rot_.keep));
  for (unsigned k = rot_.keep - 1; k >= 1; --k) rename_if_there(rotated_name(path_, k), rotated_name(path_, k + 1));
  rename_if_there(path_, rotated_name(path_, 1));
}

void RotatingWriter::open_new(uint64_t start_wall_ns, uint64_t start_mono_ns) {
  Meta m = meta_;
  m.start_wall_ns = start_wall_ns;
  m.start_mono_ns = start_mono_ns;
  repeated_ = 0;
  w_ = std::make_unique<RecordingWriter>(path_, m, wo_);
  wo_.prepared = nullptr;  // the first file only: a rotation opens its new FILE then
}

void RotatingWriter::write_sample(const Sample& s) {
  if (rotate_next_ || !w_->write_sample(s)) {
    if (!rotate_next_ && w_->samples() == 0)
      throw std::runtime_error(fmt::format("{}: a size limit of {} bytes cannot hold the metadata and one sample",
                                           path_, rot_.max_bytes));
    // Before anything is closed or moved: FILE must still be the file being written (a
    // file of the user's moved over it is not ours to move), and a non-recording that
    // appeared at FILE.k since the start stops the recording here, every file left in place.
    if (!w_->still_at_path()) {
      w_->close();
      w_.reset();  // its samples went with it: samples() counts the rotated files' only
      throw std::runtime_error(fmt::format(
          "{} is no longer the file being written (moved or replaced while recording): rotation stopped, nothing "
          "moved or deleted, the samples since the last rotation went with the old file",
          path_));
    }
    try {
      check_rotated(fmt::format("it appeared after recording began: rotation stopped, {} closed complete, nothing "
                                "moved or deleted",
                                path_));
    } catch (...) {
      w_->close();
      throw;
    }
    rotate_next_ = false;
    w_->close();
    done_bytes_ += w_->bytes();
    done_samples_ += w_->samples() - std::min(w_->samples(), repeated_);
    w_.reset();
    shift();
    ++rotations_;
    // The new file starts where the closed one ended (that sample again, its keyframe),
    // so the interval up to s is in this file.
    const Sample* first = have_last_ ? &last_ : &s;
    open_new(first->wall_ns, first->mono_ns);
    // Without its gap counts and caught events: their interval ended the closed file (and
    // no reader gives gap counts to a file's first sample, which has nothing before it);
    // every caught event is in exactly one file.
    std::optional<Sample> bare;
    if (first->gaps || first->caught) {
      bare = *first;
      bare->gaps.reset();
      bare->caught.reset();
      first = &*bare;
    }
    if (!w_->write_sample(*first))
      throw std::runtime_error(fmt::format("{}: a size limit of {} bytes cannot hold the metadata and one sample",
                                           path_, rot_.max_bytes));
    if (have_last_) {
      repeated_ = 1;
      if (!w_->write_sample(s))
        throw std::runtime_error(fmt::format("{}: a size limit of {} bytes cannot hold the metadata and two samples",
                                             path_, rot_.max_bytes));
    }
  }
  if (rot_.max_bytes) {
    last_ = s;
    have_last_ = true;
  }
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

uint32_t RotatingWriter::samples() const {
  return done_samples_ + (w_ ? w_->samples() - std::min(w_->samples(), repeated_) : 0);
}

}  // namespace schedhot
