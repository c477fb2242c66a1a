// One policy for the files schedhot writes as root into directories other users may share
// (record -o, export -o, serve --textfile): a symlink there is followed only when nobody but
// its directory's owner (or this user) could have planted it; a file is created with O_EXCL
// (temporary files with unpredictable names), an existing one replaced by renaming a new file
// over it; and a file is removed only while its name still holds the very file this process
// created (OwnedFile), never one another user put there.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace schedhot {

/// A file this process created (O_EXCL: create_exclusive(), create_temp()), known by its
/// path and the device and inode it was created with, so that removing it never removes
/// another file, link or FIFO that has taken its name since. Copyable; removal is explicit.
class OwnedFile {
 public:
  OwnedFile() = default;
  /// The file open at fd, made at path. empty() (never removed) when fstat(fd) fails.
  OwnedFile(const std::string& path, int fd);
  /// Nothing created (or its identity unknown).
  bool empty() const { return path_.empty(); }
  /// Where it is: where it was made, or the destination replace() renamed it to.
  const std::string& path() const { return path_; }
  /// Unlinks path() if it still names this very regular file (lstat, so a symlink or
  /// another file put there since stays). true when it unlinked; false when empty().
  bool remove() const;
  /// rename(2)s this file over dest: dest is the old file or this one, never a part.
  /// Returns 0 (path() is dest from now on), or rename's errno after removing this file
  /// (if still ours).
  int replace(const std::string& dest);

 private:
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

/// Creates path with open(O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY), mode 0644 &
/// ~umask: never through a link, FIFO or file already there. Returns the descriptor and
/// sets made, or -1 with errno (EEXIST: something is there).
int create_exclusive(const std::string& path, OwnedFile& made);

/// Creates a new empty file named pattern with its last six characters ("XXXXXX") made
/// random (mkostemp: O_EXCL, so never through a planted link, FIFO or file), O_CLOEXEC,
/// mode 0600. Returns its descriptor and sets made, or -1 with errno (the file then stays
/// only when it was made but fstat failed).
int create_temp(const std::string& pattern, OwnedFile& made);

/// write(2)s all n bytes at p to fd, again after EINTR. Returns 0, or the errno (ENOSPC when
/// write makes no progress).
int write_fully(int fd, const char* p, size_t n);

/// The path a symlink names, relative to the symlink's directory when it is relative.
/// false with errno when link is not a symlink or cannot be read (ENAMETOOLONG: too long).
bool symlink_target(const std::string& link, std::string& target);

/// realpath(3) of path (every link resolved), or path as given when that fails.
std::string real_path(const std::string& path);

/// The kernel's fs.protected_symlinks rule, applied whatever that sysctl says and to
/// group-writable directories too: the symlink at path may be followed when this process's
/// effective user owns it, or its directory is writable by nobody but its owner, or the
/// directory is sticky and the link belongs to the directory's owner. Returns "" when path
/// is not a symlink or may be followed, else one line: why it is not followed.
std::string untrusted_symlink(const std::string& path);

/// Where a new file goes to replace what is at path (record and export with --force): the
/// symlink's resolved target when path is a symlink untrusted_symlink() allows following,
/// else path itself (a rename over a name replaces whatever is there, a link included,
/// without following it). "" when path is a symlink that may not be followed.
std::string replacement_target(const std::string& path);

/// create_temp(dest + ".XXXXXX"): a new empty file beside dest, to be renamed over it
/// (OwnedFile::replace), mode 0666 & ~umask as open(2) would give. Returns its descriptor
/// (O_CLOEXEC) and sets tmp; throws std::runtime_error with one line ("cannot create
/// DEST.XXXXXX: <errno text>").
int create_temp_beside(const std::string& dest, OwnedFile& tmp);

/// Whether root (or whoever runs schedhot) may create or replace `path` without another local
/// user being able to redirect the write (record -o, export -o; called before anything is
/// opened). The path is resolved component by component, symlinks included (40 hops):
/// every directory passed through must belong to root, this process's real or effective user
/// or the user sudo ran it for ($SUDO_UID), and must not be writable by group or others
/// without the sticky bit; every symlink followed must satisfy untrusted_symlink()'s rule
/// and, in a directory others may write, belong to this user or the directory's owner; and an
/// existing final file in such a (sticky) directory must belong to a trusted user (another
/// user's file there could become a link at any moment). Returns "" or one line: why not.
std::string unsafe_output_path(const std::string& path);

/// Whether a file or directory owned by uid may be trusted by this process: root, this
/// process's real or effective user, or (as root) the user sudo ran it for (SUDO_UID).
bool trusted_owner(uid_t uid);

}  // namespace schedhot
