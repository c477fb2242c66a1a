#include <gtest/gtest.h>

#include "probe/kallsyms.h"
#include "sys/host.h"

using namespace schedhot;

namespace {
const char* kText =
    "ffffffff81000000 T _stext\n"
    "ffffffff813a9e00 t __pfx_nohz_csd_func\n"
    "ffffffff813a9e10 t nohz_csd_func\n"
    "ffffffff813c8590 t __pfx_nohz_balance_exit_idle\n"
    "ffffffff813c85a0 T nohz_balance_exit_idle\n"
    "ffffffff813c8700 t _nohz_idle_balance.isra.0\n"
    "ffffffff813c8800 T sched_balance_trigger\n"
    "ffffffff813e4180 t cpupri_set.constprop.0\n"
    "ffffffff813e4300 t cpupri_set.constprop.0.cold\n"
    "ffffffff813e4400 t tick_nohz_kick_task.part.0\n"
    "ffffffff813e4500 t foo.llvm.123456789\n"
    "ffffffff813e4600 t not.a.clone\n"
    "ffffffff82a00000 d tick_broadcast_lock\n"
    "ffffffffc0001000 t cpupri_set\t[some_module]\n"
    "garbage line\n";
}

TEST(Kallsyms, CloneBase) {
  EXPECT_EQ(clone_base("foo.isra.0"), "foo");
  EXPECT_EQ(clone_base("foo.constprop.0.isra.1"), "foo");
  EXPECT_EQ(clone_base("foo.part.3"), "foo");
  EXPECT_EQ(clone_base("foo.cold"), "foo");
  EXPECT_EQ(clone_base("foo.constprop.0.cold"), "foo");
  EXPECT_EQ(clone_base("foo.llvm.99887766"), "foo");
  EXPECT_EQ(clone_base("foo"), "foo");
  EXPECT_EQ(clone_base("foo.bar"), "foo.bar");
  EXPECT_EQ(clone_base("foo.isra"), "foo.isra");
  EXPECT_EQ(clone_base(".isra.0"), ".isra.0");
}

TEST(Kallsyms, ParsesAndFinds) {
  SymbolTable t = SymbolTable::parse(kText);
  EXPECT_FALSE(t.addresses_hidden());
  ASSERT_NE(t.find("nohz_balance_exit_idle"), nullptr);
  EXPECT_EQ(t.find("nohz_balance_exit_idle")->addr, 0xffffffff813c85a0ull);
  EXPECT_EQ(t.find("__pfx_nohz_csd_func"), nullptr) << "padding symbols are dropped";
  EXPECT_EQ(t.find("cpupri_set"), nullptr) << "module symbols are not the core kernel's";
  ASSERT_NE(t.find("tick_broadcast_lock"), nullptr);
  EXPECT_FALSE(t.find("tick_broadcast_lock")->is_text());
}

TEST(Kallsyms, ClonesExcludeColdParts) {
  SymbolTable t = SymbolTable::parse(kText);
  auto c = t.clones("cpupri_set");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->name, "cpupri_set.constprop.0");
  auto cold = t.cold_parts("cpupri_set");
  ASSERT_EQ(cold.size(), 1u);
  EXPECT_EQ(cold[0]->name, "cpupri_set.constprop.0.cold");
  EXPECT_EQ(t.clones("tick_nohz_kick_task").size(), 1u);
  EXPECT_EQ(t.clones("foo").size(), 1u);
  EXPECT_TRUE(t.clones("not").empty());
}

TEST(Kallsyms, Symbolize) {
  SymbolTable t = SymbolTable::parse(kText);
  EXPECT_EQ(t.describe(0xffffffff813c85a4ull), "nohz_balance_exit_idle+0x4");
  EXPECT_EQ(t.describe(0xffffffff813a9e10ull), "nohz_csd_func+0x0");
  EXPECT_EQ(t.describe(0x1000), "0x1000");
}

TEST(Kallsyms, HiddenAddresses) {
  SymbolTable t = SymbolTable::parse("0000000000000000 T schedule\n0000000000000000 t cpupri_set\n");
  EXPECT_TRUE(t.addresses_hidden());
  EXPECT_NE(t.find("cpupri_set"), nullptr);
}

TEST(Kallsyms, LoadRefusesWhatIsNotASmallRegularFile) {
  // --system-map /dev/zero used to read until the OOM killer came.
  std::string e;
  EXPECT_FALSE(SymbolTable::load("/dev/zero", &e).has_value());
  EXPECT_NE(e.find("cannot read /dev/zero (missing, unreadable, not a regular file, or over 256 MiB)"), std::string::npos) << e;
  EXPECT_FALSE(SymbolTable::load("/nonexistent/System.map", &e).has_value());
  std::string text;
  EXPECT_FALSE(read_file("/dev/urandom", text));
  ASSERT_TRUE(read_file("/proc/self/stat", text)) << "procfs files (size 0 in stat) are read";
  EXPECT_FALSE(text.empty());
}

TEST(Kallsyms, FindAllGivesEveryAddressOfAName) {
  SymbolTable t = SymbolTable::parse(
      "ffffffff82a00000 b tick_broadcast_lock\n"
      "ffffffff81100000 t helper\n"
      "ffffffff82b00000 b tick_broadcast_lock\n"
      "ffffffff82b00000 b tick_broadcast_lock\n"
      "ffffffffc0001000 b tick_broadcast_lock\t[mod]\n");
  auto all = t.find_all("tick_broadcast_lock");
  ASSERT_EQ(all.size(), 2u) << "one per distinct address, modules left out";
  EXPECT_EQ(all[0]->addr, 0xffffffff82a00000ull) << "in file order";
  EXPECT_EQ(all[1]->addr, 0xffffffff82b00000ull);
  EXPECT_EQ(t.find("tick_broadcast_lock")->addr, 0xffffffff82a00000ull) << "find() is the first line";
  EXPECT_EQ(t.find_all("helper").size(), 1u);
  EXPECT_TRUE(t.find_all("absent").empty());
}

TEST(Kallsyms, PartialClones) {
  EXPECT_TRUE(is_partial_clone("foo.part.0"));
  EXPECT_TRUE(is_partial_clone("foo.constprop.0.part.1"));
  EXPECT_FALSE(is_partial_clone("foo.isra.0"));
  EXPECT_FALSE(is_partial_clone("foo.constprop.2"));
  EXPECT_FALSE(is_partial_clone("foo"));
  EXPECT_FALSE(is_partial_clone("a.part.b")) << "not a clone name";
}
