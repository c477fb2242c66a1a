#include "serve/textfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "sys/console.h"

namespace schedhot {

/// Writes text to dir/schedhot.prom through a new temporary file of an unpredictable name
/// (create_temp: O_EXCL, so never a planted link, FIFO or file) renamed over it, so a reader
/// sees the old file or the new one, never a part, and a link planted at schedhot.prom is
/// replaced, not written through. On failure only that temporary file is removed. Throws
/// std::runtime_error, one line.
void write_textfile(const std::string& dir, const std::string& text, TextfileWritten& written) {
  const std::string dst = dir + "/schedhot.prom";
  OwnedFile tmp;
  const int fd = create_temp(dir + "/.schedhot.prom.XXXXXX", tmp);
  if (fd < 0) throw std::runtime_error(fmt::format("--textfile: cannot create a file in {}: {}", dir, std::strerror(errno)));
  auto fail = [&](const char* what, int e) {
    ::close(fd);
    tmp.remove();
    return std::runtime_error(fmt::format("--textfile: cannot {} {}: {}", what, tmp.path(), std::strerror(e)));
  };
  if (::fchmod(fd, 0644) != 0) throw fail("chmod", errno);  // mkostemp's 0600: node_exporter may run as another user
  if (const int e = write_fully(fd, text.data(), text.size())) throw fail("write", e);
  ::close(fd);
  if (const int e = tmp.replace(dst))  // the temporary file removed
    throw std::runtime_error(fmt::format("--textfile: cannot rename {} to {}: {}", tmp.path(), dst, std::strerror(e)));
  written = tmp;
}

/// At exit: dir/schedhot.prom removed if it is still the file serve last put there.
void remove_textfile(const std::string& dir, const TextfileWritten& written) {
  if (written.path() == dir + "/schedhot.prom") written.remove();
}

void check_textfile_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(dir.c_str(), W_OK) != 0) {
    const int e = errno;
    throw UsageError(fmt::format("--textfile {}: not a writable directory ({})", dir,
                                 ::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) ? "not a directory" : std::strerror(e)));
  }
  if (std::string why = unsafe_output_path(dir); !why.empty())
    throw std::runtime_error(fmt::format("--textfile {}: {}", dir, why));
  std::string why;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    why = fmt::format("writable by {} without the sticky bit (mode {:04o})",
                      (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777);
  else if (st.st_uid != 0 && st.st_uid != ::geteuid())
    why = fmt::format("owned by uid {}", st.st_uid);
  if (!why.empty())
    say(fmt::format("warning: --textfile {}: {}: another user can replace or remove schedhot.prom there "
                    "(node_exporter's textfile directory should be root's, mode 0755)",
                    dir, why));
}

}  // namespace schedhot
