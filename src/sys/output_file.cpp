// The output-file policy (output_file.h): OwnedFile, O_EXCL and temporary creation, the
// symlink rules and the path check for files written into directories others may share.
#include "sys/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <cstdlib>
#include <deque>
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

OwnedFile::OwnedFile(const std::string& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return;
  path_ = path;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
}

bool OwnedFile::remove() const {
  if (path_.empty()) return false;
  // Only while path_ still names the very file this process made.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != dev_ || st.st_ino != ino_) return false;
  return ::unlink(path_.c_str()) == 0;
}

int OwnedFile::replace(const std::string& dest) {
  if (::rename(path_.c_str(), dest.c_str()) != 0) {
    const int e = errno;
    remove();
    return e;
  }
  path_ = dest;
  return 0;
}

int create_exclusive(const std::string& path, OwnedFile& made) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd >= 0) made = OwnedFile(path, fd);
  return fd;
}

int create_temp(const std::string& pattern, OwnedFile& made) {
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return -1;
  made = OwnedFile(name.data(), fd);
  if (made.empty()) {  // its identity unknown: not removed, not used
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int create_temp_beside(const std::string& dest, OwnedFile& tmp) {
  const int fd = create_temp(dest + ".XXXXXX", tmp);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}.XXXXXX: {}", dest, strerror(errno)));
  (void)::fchmod(fd, 0666 & ~process_umask());  // mkostemp's 0600, as open(2) would have made it
  return fd;
}

int write_fully(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

bool symlink_target(const std::string& link, std::string& target) {
  target.assign(4096, '\0');
  const ssize_t n = ::readlink(link.c_str(), target.data(), target.size());
  if (n <= 0 || size_t(n) >= target.size()) {
    if (n > 0) errno = ENAMETOOLONG;
    return false;
  }
  target.resize(size_t(n));
  const size_t slash = link.rfind('/');
  if (target[0] != '/' && slash != std::string::npos) target = link.substr(0, slash + 1) + target;
  return true;
}

std::string replacement_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  if (!untrusted_symlink(path).empty()) return "";
  return real_path(path);
}

std::string real_path(const std::string& path) {
  std::string out = path;
  if (char* rp = ::realpath(path.c_str(), nullptr)) {
    out = rp;
    ::free(rp);
  }
  return out;
}

bool trusted_owner(uid_t uid) {
  if (uid == 0 || uid == ::geteuid() || uid == ::getuid()) return true;
  if (::geteuid() == 0)
    if (const char* su = std::getenv("SUDO_UID"); su && *su) {
      char* end = nullptr;
      const unsigned long v = std::strtoul(su, &end, 10);
      if (end && *end == '\0' && v == uid) return true;
    }
  return false;
}

namespace {

bool others_write(const struct stat& st) { return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0; }

std::deque<std::string> components(const std::string& p) {
  std::deque<std::string> out;
  size_t i = 0;
  while (i <= p.size()) {
    const size_t j = p.find('/', i);
    const std::string c = p.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (!c.empty() && c != ".") out.push_back(c);
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return out;
}

/// The directory dir (an absolute, already walked path) may be passed through.
std::string check_dir(const std::string& dir, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return "";  // not a directory: open() will say so
  if (!trusted_owner(st.st_uid))
    return fmt::format("{} belongs to uid {}, another user, who could redirect the write: write elsewhere", dir, st.st_uid);
  if (others_write(st) && !(st.st_mode & S_ISVTX))
    return fmt::format("{} is writable by {} without the sticky bit: another user could redirect the write; write elsewhere",
                       dir, (st.st_mode & S_IWOTH) ? "others" : "its group");
  return "";
}

}  // namespace

std::string unsafe_output_path(const std::string& path) {
  std::string dir = "/";
  std::deque<std::string> pending;
  if (path.empty() || path[0] != '/') {
    char buf[4096];
    if (!::getcwd(buf, sizeof buf)) return "";
    pending = components(buf);
  }
  for (auto& c : components(path)) pending.push_back(c);
  int hops = 0;
  struct stat dst {};
  if (::stat("/", &dst) != 0) return "";
  while (!pending.empty()) {
    if (std::string why = check_dir(dir, dst); !why.empty()) return why;
    const std::string c = pending.front();
    pending.pop_front();
    if (c == "..") {
      const size_t slash = dir.rfind('/');
      dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
      if (::stat(dir.c_str(), &dst) != 0) return "";
      continue;
    }
    const std::string next = dir == "/" ? "/" + c : dir + "/" + c;
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) return "";  // missing: created with O_EXCL, or open() says why
    if (S_ISLNK(st.st_mode)) {
      // In a directory only its (trusted) owner writes, any link is the owner's doing; in a
      // sticky shared one, a link nobody else can remove: a trusted user's or the owner's.
      const bool ok = !others_write(dst) || trusted_owner(st.st_uid) || st.st_uid == dst.st_uid;
      if (!ok)
        return fmt::format("{} is a symlink owned by uid {} in a directory others can write: not followed (another "
                           "user could make it point anywhere); write elsewhere",
                           next, st.st_uid);
      if (++hops > 40) return fmt::format("{}: {}", path, strerror(ELOOP));
      std::string target(4096, '\0');
      const ssize_t n = ::readlink(next.c_str(), target.data(), target.size());
      if (n <= 0 || size_t(n) >= target.size()) return "";
      target.resize(size_t(n));
      auto tc = components(target);
      for (auto it = tc.rbegin(); it != tc.rend(); ++it) pending.push_front(*it);
      if (target[0] == '/') {
        dir = "/";
        if (::stat("/", &dst) != 0) return "";
      }
      continue;
    }
    if (pending.empty()) {  // the final file, there already
      if (others_write(dst) && !trusted_owner(st.st_uid))
        return fmt::format("{} belongs to uid {} in a directory others can write: not replaced or written (it could "
                           "become a link at any moment); remove it or write elsewhere",
                           next, st.st_uid);
      return "";
    }
    dir = next;
    dst = st;
  }
  return "";
}

}  // namespace schedhot
