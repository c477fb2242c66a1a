#include "sys/console.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "sys/json_text.h"

namespace schedhot {

int g_stdout_errno = 0;

bool stdout_ok() {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
  if (!g_stdout_errno) g_stdout_errno = errno ? errno : EIO;
  return false;
}

void say(const std::string& msg) {
  const std::string line = "schedhot: " + scrub_controls(msg) + "\n";
  ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  (void)n;
}

}  // namespace schedhot
