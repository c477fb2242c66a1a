// One policy for the files schedhot writes as root into directories other users may share
// (record -o, export -o): a symlink there is followed only when nobody but its directory's
// owner (or this user) could have planted it, and temporary files get unpredictable names.
#pragma once

#include <string>

namespace schedhot {

/// The kernel's fs.protected_symlinks rule, applied whatever that sysctl says and to
/// group-writable directories too: the symlink at path may be followed when this process's
/// effective user owns it, or its directory is writable by nobody but its owner, or the
/// directory is sticky and the link belongs to the directory's owner. Returns "" when path
/// is not a symlink or may be followed, else one line: why it is not followed.
std::string untrusted_symlink(const std::string& path);

/// Creates a new empty file in dest's directory named dest + ".XXXXXX" (mkostemp: O_EXCL
/// with a random suffix, so never through a planted link or FIFO), mode 0666 & ~umask as
/// open(2) would give. Returns its descriptor (O_CLOEXEC) and sets tmp to its path; throws
/// std::runtime_error with one line ("cannot create ...: <errno text>").
int create_temp_beside(const std::string& dest, std::string& tmp);

}  // namespace schedhot

namespace schedhot {

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

}  // namespace schedhot
