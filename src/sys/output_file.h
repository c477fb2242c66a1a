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
