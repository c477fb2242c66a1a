#include "sys/console.h"

#include <unistd.h>

#include "sys/json_text.h"

namespace schedhot {

void say(const std::string& msg) {
  const std::string line = "schedhot: " + scrub_controls(msg) + "\n";
  ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  (void)n;
}

}  // namespace schedhot
