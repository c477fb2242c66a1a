// Golden outputs: `report --json` of every recording under tests/data (and windows,
// --all-cpus, text reports, exports, info and the window errors) must stay byte for byte
// what tests/data/golden holds. The cases and their files are listed in
// tests/data/golden/cases.txt; each runs from the source root, as make.sh ran it, so the
// "file" fields match. Stdout is compared byte for byte, and so are stderr and the exit
// status (OUTPUT.err: stderr, then "exit N").
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "test_recording_util.h"

using namespace schedhot::testing;

namespace {

const std::string kSrc = SCHEDHOT_SRC;
const std::string kGolden = kSrc + "/tests/data/golden";

struct Case {
  std::string out, args;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  std::ifstream f(kGolden + "/cases.txt");
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    v.push_back({line.substr(0, sp), sp == std::string::npos ? "" : line.substr(sp + 1)});
  }
  return v;
}

}  // namespace

TEST(GoldenCli, OutputsAreByteIdentical) {
  const auto cs = cases();
  ASSERT_GE(cs.size(), 30u) << "cases.txt not found or cut short";
  int n = 0;
  for (const Case& c : cs) {
    SCOPED_TRACE(c.out + ": schedhot " + c.args);
    const std::string o = tmp_path(fmt::format("golden_out_{}", n)), e = tmp_path(fmt::format("golden_err_{}", n));
    ++n;
    const int rc = std::system(fmt::format("cd '{}' && '{}' {} > '{}' 2> '{}'", kSrc, SCHEDHOT_BIN, c.args, o, e).c_str());
    const int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
    const std::string out = slurp(o), err = slurp(e) + fmt::format("exit {}\n", status);
    unlink(o.c_str());
    unlink(e.c_str());
    const std::string want_out = slurp(kGolden + "/" + c.out), want_err = slurp(kGolden + "/" + c.out + ".err");
    ASSERT_FALSE(want_err.empty()) << "no golden " << c.out << ".err";
    EXPECT_EQ(err, want_err);
    EXPECT_TRUE(out == want_out) << "stdout differs from " << c.out << " (" << out.size() << " vs " << want_out.size()
                                 << " bytes)";
  }
}
