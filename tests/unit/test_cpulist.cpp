#include <gtest/gtest.h>

#include <stdexcept>

#include "sys/cpulist.h"

using namespace schedhot;

TEST(CpuList, ParsesKernelSyntax) {
  EXPECT_EQ(parse_cpulist("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpulist("5"), (std::vector<int>{5}));
  EXPECT_EQ(parse_cpulist(""), (std::vector<int>{}));
  EXPECT_EQ(parse_cpulist("3,1,1-2"), (std::vector<int>{1, 2, 3}));
}

TEST(CpuList, RejectsBadInput) {
  EXPECT_THROW(parse_cpulist("3-1"), std::invalid_argument);
  EXPECT_THROW(parse_cpulist("a"), std::invalid_argument);
  EXPECT_THROW(parse_cpulist("1,,2"), std::invalid_argument);
  EXPECT_THROW(parse_cpulist("-1"), std::invalid_argument);
  EXPECT_THROW(parse_cpulist("0-2000000000"), std::invalid_argument);
  EXPECT_THROW(parse_cpulist("0-4", 4), std::invalid_argument);
  EXPECT_NO_THROW(parse_cpulist("0-3", 4));
}

TEST(CpuList, FormatsCompactly) {
  EXPECT_EQ(format_cpulist({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpulist({7, 5, 6, 6}), "5-7");
  EXPECT_EQ(format_cpulist({}), "");
  std::vector<int> big;
  for (int i = 0; i < 1024; ++i)
    if (i % 2 == 0 || i < 100) big.push_back(i);
  EXPECT_EQ(parse_cpulist(format_cpulist(big)), big);
}

namespace {
std::string cpulist_error(std::string_view text) {
  try {
    parse_cpulist(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}
}  // namespace

// `--cpus 0,,1` used to say "a range needs a CPU on each side of '-'": there is no '-'.
TEST(CpuList, EmptyItemIsNamedAsSuch) {
  EXPECT_EQ(cpulist_error("0,,1"), "bad CPU list '0,,1': an empty item between two commas (CPUs are 0, 1, ...; e.g. 0-3,8)");
  EXPECT_EQ(cpulist_error(",1"), "bad CPU list ',1': nothing before the first ',' (CPUs are 0, 1, ...; e.g. 0-3,8)");
  EXPECT_EQ(cpulist_error("1,"), "bad CPU list '1,': nothing after the last ',' (CPUs are 0, 1, ...; e.g. 0-3,8)");
  EXPECT_NE(cpulist_error("1-"), "(accepted)");
  EXPECT_NE(cpulist_error("1-").find("a range needs a CPU on each side of '-'"), std::string::npos)
      << cpulist_error("1-");
}

// "--cpus 2147483647" looped past INT_MAX and allocated until bad_alloc (16.8 GB): ids far
// above any kernel's NR_CPUS are refused at once.
TEST(CpuList, HugeIdsAreRefusedNotAllocated) {
  for (const char* s : {"2147483647", "2147483646-2147483647", "0-65536", "65536"})
    EXPECT_THROW(parse_cpulist(s), std::invalid_argument) << s;
  try {
    parse_cpulist("2147483647");
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "bad CPU list '2147483647': CPU 2147483647 is not a CPU number (ids are below 65536)");
  }
  EXPECT_EQ(parse_cpulist("65535").size(), 1u);
}
