// How every layer above sys/ talks to the person running schedhot while a command runs:
// one line on stderr per message ("schedhot: MSG"), and a usage error (exit status 2) as
// an exception the command line's layer (src/cli) prints with its --help pointer.
#pragma once
#include <stdexcept>
#include <string>

namespace schedhot {

/// Prints "schedhot: MSG" and a newline on stderr, as one write(2): never throws, and a
/// failing stderr (2>/dev/full, a closed pipe) stops nothing. Control characters in msg
/// (a path with a newline, an ESC in an option value) are shown escaped: one line always.
void say(const std::string& msg);

/// errno of the first failed write to stdout, 0 while every write worked.
extern int g_stdout_errno;
/// Flushes stdout; false (and g_stdout_errno set) when stdout cannot be written (a closed
/// pipe: EPIPE, a full device: ENOSPC, a closed descriptor: EBADF). Loops that print
/// while sampling (top, replay --follow) stop on false instead of printing into nothing.
bool stdout_ok();

/// An option that does not fit the input or the others (exit status 2). src/cli prints it
/// as "schedhot: MSG (see schedhot COMMAND --help)".
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace schedhot
