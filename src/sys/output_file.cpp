#include "sys/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace schedhot {

namespace {

/// The umask, read without changing it (umask(2) sets it: racy with other threads).
mode_t process_umask() {
  FILE* f = std::fopen("/proc/self/status", "re");
  unsigned m = 022;
  char line[256];
  while (f && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "Umask: %o", &m) == 1) break;
  if (f) std::fclose(f);
  return static_cast<mode_t>(m & 0777);
}

}  // namespace

std::string untrusted_symlink(const std::string& path) {
  struct stat link {}, dir {};
  if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return "";
  if (link.st_uid == ::geteuid()) return "";
  const size_t slash = path.rfind('/');
  const std::string d = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(d.c_str(), &dir) != 0) return fmt::format("a symlink in {}, which cannot be read ({}): not followed", d, strerror(errno));
  const bool shared = (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (!shared) return "";
  if ((dir.st_mode & S_ISVTX) && link.st_uid == dir.st_uid) return "";
  return fmt::format("a symlink owned by uid {} in {}, a directory others can write: not followed (a link another user "
                     "planted would make this write elsewhere); remove it or write elsewhere",
                     link.st_uid, d);
}

int create_temp_beside(const std::string& dest, std::string& tmp) {
  std::vector<char> name(dest.begin(), dest.end());
  for (char c : std::string(".XXXXXX")) name.push_back(c);
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}.XXXXXX: {}", dest, strerror(errno)));
  (void)::fchmod(fd, 0666 & ~process_umask());  // mkostemp's 0600, as open(2) would have made it
  tmp = name.data();
  return fd;
}

}  // namespace schedhot
