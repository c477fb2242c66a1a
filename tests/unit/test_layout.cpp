// probe/layout.h: cacheline layout facts from BTF fixtures (tests/fixtures/btf/*.c, built
// with clang -target bpf) and from this host's /sys/kernel/btf/vmlinux.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <bpf/btf.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/lines.h"
#include "probe/layout.h"

using namespace schedhot;

namespace {

struct BtfFree {
  void operator()(struct btf* b) const { btf__free(b); }
};
using BtfPtr = std::unique_ptr<struct btf, BtfFree>;

BtfPtr fixture(const char* name) {
  const std::string path = std::string(SCHEDHOT_BTF_FIXTURES) + "/" + name + ".o";
  struct btf* b = btf__parse(path.c_str(), nullptr);
  if (!b) throw std::runtime_error("cannot parse " + path);
  return BtfPtr(b);
}

CoherenceLayout read_fixture(const char* name, const SymbolTable* syms = nullptr, int line = 64) {
  auto b = fixture(name);
  return read_coherence_layout(b.get(), syms, line, name);
}

std::vector<std::string> names(const std::vector<MemberLayout>& ms) {
  std::vector<std::string> v;
  for (auto& m : ms) v.push_back(m.name);
  return v;
}

const LineDef* line(const std::vector<LineDef>& ls, const std::string& id) {
  for (auto& l : ls)
    if (l.id == id) return &l;
  return nullptr;
}

bool has_field(const LineDef& d, const std::string& name) {
  return std::any_of(d.fields.begin(), d.fields.end(), [&](const LineField& f) { return f.name == name; });
}

bool note_contains(const CoherenceLayout& l, const std::string& s) {
  return std::any_of(l.notes.begin(), l.notes.end(), [&](const std::string& n) { return n.find(s) != std::string::npos; });
}

}  // namespace

TEST(Layout, LineOf) {
  EXPECT_EQ(line_of(0, 64), 0);
  EXPECT_EQ(line_of(63, 64), 0);
  EXPECT_EQ(line_of(64, 64), 1);
  EXPECT_EQ(line_of(304, 64), 4);
  EXPECT_EQ(line_of(304, 128), 2);
  EXPECT_EQ(line_of(-1, 64), -1);
  EXPECT_EQ(line_of(-64, 64), -1);
  EXPECT_EQ(line_of(-65, 64), -2);
}

TEST(Layout, RejectsBadLineSize) {
  auto b = fixture("inline_618");
  EXPECT_THROW(read_coherence_layout(b.get(), nullptr, 0), std::invalid_argument);
  EXPECT_THROW(read_coherence_layout(b.get(), nullptr, 96), std::invalid_argument);
  EXPECT_THROW(read_coherence_layout(b.get(), nullptr, 8192), std::invalid_argument);
}

// 6.18 shape: inline 256-bit mask, nr_cpus at 32, 64 B struct; vec 40 B with count.
TEST(Layout, Inline618) {
  const auto l = read_fixture("inline_618");
  ASSERT_TRUE(l.nohz);
  const auto& n = *l.nohz;
  EXPECT_EQ(n.size, 64);
  EXPECT_FALSE(n.mask_is_pointer);
  EXPECT_EQ(n.mask_bytes, 32);
  EXPECT_EQ(n.idle_cpus_mask.offset, 0);
  EXPECT_EQ(n.idle_cpus_mask.size, 32);
  ASSERT_TRUE(n.has_nr_cpus());
  EXPECT_EQ(n.nr_cpus->offset, 32);
  EXPECT_EQ(n.nr_cpus->size, 4);
  EXPECT_EQ(n.has_blocked.name, "has_blocked");
  EXPECT_EQ(n.has_blocked.offset, 36);
  ASSERT_TRUE(n.needs_update);
  EXPECT_EQ(n.needs_update->offset, 40);
  EXPECT_EQ(n.next_balance.offset, 48);
  EXPECT_EQ(n.next_balance.size, 8);
  EXPECT_EQ(n.next_blocked.offset, 56);
  EXPECT_TRUE(n.other_members.empty());  // the decoy struct was not taken
  EXPECT_FALSE(n.address);

  ASSERT_TRUE(l.cpupri);
  const auto& c = *l.cpupri;
  EXPECT_EQ(c.root_domain_size, 4360);
  EXPECT_EQ(c.cpupri_offset, 304);
  EXPECT_EQ(c.cpupri_size, 4048);
  EXPECT_EQ(c.nr_prios, 101);
  EXPECT_EQ(c.vec_size, 40);
  ASSERT_TRUE(c.count_offset);
  EXPECT_EQ(*c.count_offset, 0);
  EXPECT_EQ(c.count_size, 4);
  EXPECT_EQ(c.mask_offset, 8);
  EXPECT_FALSE(c.mask_is_pointer);
  EXPECT_EQ(c.mask_bytes, 32);
  EXPECT_EQ(c.cpu_to_pri_offset, 4040);
  EXPECT_EQ(c.vec_offset(1), 344);
  // vec[0] = 304..343: lines 4 and 5; line 4 (256..319) also holds rto_cpu (256),
  // rto_loop_next (260), rto_loop_start (264) and the inline rto_mask (272..303).
  EXPECT_EQ(names(c.vec0_line_sharers),
            (std::vector<std::string>{"rto_cpu", "rto_loop_next", "rto_loop_start", "rto_mask"}));
  // cpupri ends at 4351 (cpu_to_pri at 4344, line 67); pd (4352) starts line 68.
  EXPECT_EQ(names(c.cpupri_line_sharers),
            (std::vector<std::string>{"rto_cpu", "rto_loop_next", "rto_loop_start", "rto_mask"}));
  EXPECT_EQ(l.bcast_lock.lock_bytes, 4);
}

TEST(Layout, Inline618With128ByteLines) {
  const auto l = read_fixture("inline_618", nullptr, 128);
  ASSERT_TRUE(l.cpupri);
  // vec[0] = 304..343 in line 2 (256..383): the same four, and rto_loop (252) is in line 1.
  EXPECT_EQ(names(l.cpupri->vec0_line_sharers),
            (std::vector<std::string>{"rto_cpu", "rto_loop_next", "rto_loop_start", "rto_mask"}));
  const auto ls = modeled_lines(l);
  const LineDef* p = line(ls, "cpupri.cpu_to_pri");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->cpus_per_line, 32);
}

// Debian 6.1 shape: OFFSTACK pointers, 40 B nohz, 16 B vectors, cpupri at 184.
TEST(Layout, Offstack61) {
  const auto l = read_fixture("offstack_61");
  ASSERT_TRUE(l.nohz);
  const auto& n = *l.nohz;
  EXPECT_EQ(n.size, 40);
  EXPECT_TRUE(n.mask_is_pointer);
  EXPECT_EQ(n.mask_bytes, 0);
  EXPECT_EQ(n.idle_cpus_mask.size, 8);
  ASSERT_TRUE(n.nr_cpus);
  EXPECT_EQ(n.nr_cpus->offset, 8);
  EXPECT_EQ(n.has_blocked.offset, 0xc);
  EXPECT_EQ(n.needs_update->offset, 0x10);
  EXPECT_EQ(n.next_balance.offset, 0x18);
  EXPECT_EQ(n.next_blocked.offset, 0x20);
  ASSERT_TRUE(l.cpupri);
  const auto& c = *l.cpupri;
  EXPECT_EQ(c.cpupri_offset, 184);
  EXPECT_EQ(c.vec_size, 16);
  EXPECT_TRUE(c.mask_is_pointer);
  EXPECT_EQ(c.mask_offset, 8);
  EXPECT_EQ(c.root_domain_size, 1816);
  EXPECT_EQ(c.cpupri_offset + c.cpu_to_pri_offset, 1800);
  // vec[0] = 184..199 (lines 2-3): line 2 holds rto_lock..rto_mask (152..183) and the tail
  // of the fixture's padding.
  EXPECT_EQ(names(c.vec0_line_sharers), (std::vector<std::string>{"other", "rto_lock", "rto_loop", "rto_cpu",
                                                                  "rto_loop_next", "rto_loop_start", "rto_mask"}));

  const auto ls = modeled_lines(l);
  const LineDef* nl = line(ls, "nohz");
  ASSERT_TRUE(nl);
  EXPECT_TRUE(has_field(*nl, "idle_cpus_mask (pointer)"));
  EXPECT_TRUE(has_field(*nl, "nr_cpus"));
  EXPECT_FALSE(nl->address_known);
  const LineDef* mask = line(ls, "nohz.idle_cpus_mask");
  ASSERT_TRUE(mask);
  EXPECT_EQ(mask->allocation, "separate, address unknown until learned");
  EXPECT_FALSE(mask->address_known);
  EXPECT_FALSE(mask->address);
  // Line 2 of root_domain is "cpupri.vec[0]": vec[0].count (184) and rto_*; vec[0].mask
  // (192) is in line 3 with vec[1..4].count.
  const LineDef* v0 = line(ls, "cpupri.vec[0]");
  ASSERT_TRUE(v0);
  EXPECT_EQ(v0->line_offset, 128);
  EXPECT_TRUE(has_field(*v0, "vec[0].count"));
  EXPECT_TRUE(has_field(*v0, "rto_mask"));
  EXPECT_FALSE(has_field(*v0, "vec[0].mask (pointer)"));
  const LineDef* l3 = line(ls, "cpupri.line3");
  ASSERT_TRUE(l3);
  EXPECT_TRUE(has_field(*l3, "vec[0].mask (pointer)"));
  EXPECT_TRUE(has_field(*l3, "vec[4].count"));
  EXPECT_FALSE(has_field(*l3, "vec[5].count"));  // 184+80 = 264: line 4
  // One separate bitmap per priority, plus cpu_to_pri[] at 16 CPUs per line.
  int bitmaps = 0;
  for (auto& d : ls)
    if (d.id.rfind("cpupri.vec[", 0) == 0 && d.id.find("].mask") != std::string::npos) {
      ++bitmaps;
      EXPECT_FALSE(d.address_known);
      EXPECT_EQ(d.allocation, "separate, address unknown until learned");
    }
  EXPECT_EQ(bitmaps, 101);
  const LineDef* p = line(ls, "cpupri.cpu_to_pri");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->cpus_per_line, 16);

  const auto f = fixes_present(l);
  EXPECT_EQ(f.present("nohz_nr_cpus_removed"), false);
  EXPECT_EQ(f.present("cpupri_count_removed"), false);
  EXPECT_FALSE(f.present("bcast_lock_own_line"));
}

// Both fixes: no nr_cpus (has_blocked_load), no count; plain pointer mask; 64 B vectors.
TEST(Layout, Fixed73) {
  const auto l = read_fixture("fixed_73");
  ASSERT_TRUE(l.nohz);
  const auto& n = *l.nohz;
  EXPECT_FALSE(n.has_nr_cpus());
  EXPECT_EQ(n.has_blocked.name, "has_blocked_load");
  EXPECT_EQ(n.has_blocked.offset, 8);
  EXPECT_EQ(n.needs_update->offset, 0xc);
  EXPECT_EQ(n.next_balance.offset, 0x10);
  EXPECT_EQ(n.next_blocked.offset, 0x18);
  EXPECT_TRUE(n.mask_is_pointer);
  EXPECT_EQ(n.size, 32);
  ASSERT_TRUE(l.cpupri);
  const auto& c = *l.cpupri;
  EXPECT_FALSE(c.count_offset);
  EXPECT_EQ(c.count_size, 0);
  EXPECT_EQ(c.vec_size, 64);
  EXPECT_FALSE(c.mask_is_pointer);
  EXPECT_EQ(c.mask_bytes, 64);
  EXPECT_EQ(c.mask_offset, 0);
  EXPECT_EQ(c.cpupri_offset, 192);
  // vec[0] = 192..255 is line 3 alone; rto_mask (128..191) is line 2.
  EXPECT_TRUE(c.vec0_line_sharers.empty());

  const auto f = fixes_present(l);
  EXPECT_EQ(f.present("nohz_nr_cpus_removed"), true);
  EXPECT_EQ(f.present("cpupri_count_removed"), true);
  const std::string s = to_string(f);
  EXPECT_NE(s.find("nohz.nr_cpus removed (fix present)"), std::string::npos) << s;
  EXPECT_NE(s.find("cpupri_vec.count removed (fix present)"), std::string::npos) << s;
  EXPECT_EQ(s.find('\n'), std::string::npos);
}

// Pre-5.11/5.16: 102 priorities, no needs_update; a 128 B inline mask that leaves the
// scalars in nohz's third line.
TEST(Layout, Old54WideInlineMask) {
  const auto l = read_fixture("old_54");
  ASSERT_TRUE(l.nohz);
  const auto& n = *l.nohz;
  EXPECT_FALSE(n.needs_update);
  EXPECT_EQ(n.mask_bytes, 128);
  EXPECT_EQ(n.nr_cpus->offset, 128);
  EXPECT_EQ(n.size, 152);
  ASSERT_TRUE(l.cpupri);
  EXPECT_EQ(l.cpupri->nr_prios, 102);
  EXPECT_EQ(l.cpupri->vec_size, 136);

  const auto ls = modeled_lines(l);
  EXPECT_FALSE(line(ls, "nohz"));
  const LineDef* l0 = line(ls, "nohz.line0");
  const LineDef* l2 = line(ls, "nohz.line2");
  ASSERT_TRUE(l0);
  ASSERT_TRUE(l2);
  EXPECT_FALSE(line(ls, "nohz.line3"));
  EXPECT_TRUE(has_field(*l0, "idle_cpus_mask (inline bitmap)"));
  EXPECT_FALSE(has_field(*l0, "nr_cpus"));
  EXPECT_TRUE(has_field(*l2, "nr_cpus"));
  EXPECT_TRUE(has_field(*l2, "next_blocked"));
  EXPECT_FALSE(has_field(*l2, "idle_cpus_mask (inline bitmap)"));
  EXPECT_FALSE(line(ls, "nohz.idle_cpus_mask"));  // inline: no separate allocation
}

TEST(Layout, NothingFoundIsNotesAndAssumptions) {
  const auto l = read_fixture("none");
  EXPECT_FALSE(l.nohz);
  EXPECT_FALSE(l.cpupri);
  EXPECT_TRUE(note_contains(l, "the nohz line is modeled on an assumption"));
  EXPECT_TRUE(note_contains(l, "no struct root_domain in BTF"));
  EXPECT_TRUE(note_contains(l, "the cpupri lines are modeled on an assumption"));
  const auto ls = modeled_lines(l);
  for (const char* id : {"nohz", "cpupri.vec[0]", "cpupri.cpu_to_pri", "tick_broadcast_lock"}) {
    const LineDef* d = line(ls, id);
    ASSERT_TRUE(d) << id;
    EXPECT_FALSE(d->assumption.empty()) << id;
  }
  EXPECT_FALSE(line(ls, "nohz")->fields.front().offset);
  const auto f = fixes_present(l);
  EXPECT_FALSE(f.present("nohz_nr_cpus_removed"));
  EXPECT_FALSE(f.present("cpupri_count_removed"));
  EXPECT_NE(to_string(f).find("nohz.nr_cpus unknown (nohz struct not found in BTF)"), std::string::npos);

  const auto nb = read_coherence_layout(nullptr, nullptr, 64);
  EXPECT_FALSE(nb.nohz);
  EXPECT_TRUE(note_contains(nb, "no BTF: the nohz line is modeled on an assumption"));
}

// ---- tick_broadcast_lock from a symbol table -----------------------------------------

TEST(Layout, BcastLockKallsymsAllOff) {
  // Text and a few global data symbols only: what kallsyms holds without KALLSYMS_ALL.
  const auto t = SymbolTable::parse(
      "ffffffff81000000 T _stext\n"
      "ffffffff813c85a0 T nohz_balance_exit_idle\n"
      "ffffffff82000000 D jiffies\n");
  const auto l = read_fixture("inline_618", &t);
  EXPECT_FALSE(l.bcast_lock.address);
  EXPECT_EQ(l.bcast_lock.reason, "unknown: KALLSYMS_ALL off (no static data symbols in the symbol table)");
  const auto f = fixes_present(l);
  EXPECT_FALSE(f.present("bcast_lock_own_line"));
  EXPECT_NE(to_string(f).find("tick_broadcast_lock unknown (KALLSYMS_ALL off"), std::string::npos);
  const auto ls = modeled_lines(l);
  const LineDef* d = line(ls, "tick_broadcast_lock");
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->address_known);
  EXPECT_NE(d->assumption.find("KALLSYMS_ALL off"), std::string::npos);
  EXPECT_TRUE(note_contains(l, "its line is modeled on an assumption"));
}

TEST(Layout, BcastLockHiddenOrMissing) {
  const auto hidden = SymbolTable::parse("0000000000000000 d tick_broadcast_lock\n0000000000000000 T _stext\n");
  EXPECT_NE(read_fixture("inline_618", &hidden).bcast_lock.reason.find("addresses hidden"), std::string::npos);
  const auto absent = SymbolTable::parse("ffffffff82a00000 d some_static\n");
  EXPECT_NE(read_fixture("inline_618", &absent).bcast_lock.reason.find("not in the symbol table"), std::string::npos);
  EXPECT_EQ(read_fixture("inline_618", nullptr).bcast_lock.reason, "unknown: no symbol table readable");
}

TEST(Layout, BcastLockAloneInItsLine) {
  const auto t = SymbolTable::parse(
      "ffffffff82a00000 d tick_broadcast_lock\n"
      "ffffffff82a00040 d next_aligned\n"
      "ffffffff829fffc0 d prev_aligned\n"
      "ffffffff82a00010 t text_elsewhere\t[mod]\n");
  const auto l = read_fixture("inline_618", &t);
  const auto& b = l.bcast_lock;
  ASSERT_TRUE(b.address);
  EXPECT_EQ(*b.address, 0xffffffff82a00000ull);
  EXPECT_EQ(b.aligned, true);
  EXPECT_TRUE(b.neighbours.empty());  // the module symbol is not core kernel data
  EXPECT_EQ(b.own_line, true);
  EXPECT_EQ(fixes_present(l).present("bcast_lock_own_line"), true);
  const auto d_lines = modeled_lines(l);
  const LineDef* d = line(d_lines, "tick_broadcast_lock");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->address_known);
  EXPECT_EQ(*d->address, 0xffffffff82a00000ull);
  ASSERT_EQ(d->fields.size(), 1u);
  EXPECT_EQ(d->fields[0].offset, 0);
  EXPECT_EQ(d->fields[0].size, 4);
  EXPECT_TRUE(d->assumption.empty());
}

TEST(Layout, BcastLockSharesItsLine) {
  const auto t = SymbolTable::parse(
      "ffffffff82a00008 d tick_broadcast_lock\n"
      "ffffffff82a00000 d tick_broadcast_forced\n"
      "ffffffff82a00020 b tmpmask\n"
      "ffffffff82a00040 d next_line\n");
  const auto l = read_fixture("inline_618", &t);
  const auto& b = l.bcast_lock;
  EXPECT_EQ(b.aligned, false);
  ASSERT_EQ(b.neighbours.size(), 2u);
  EXPECT_EQ(b.neighbours[0].name, "tick_broadcast_forced");
  EXPECT_EQ(b.neighbours[1].name, "tmpmask");
  EXPECT_EQ(b.own_line, false);
  EXPECT_NE(to_string(fixes_present(l)).find("tick_broadcast_lock shares its line"), std::string::npos);
  const auto d_lines = modeled_lines(l);
  const LineDef* d = line(d_lines, "tick_broadcast_lock");
  ASSERT_TRUE(d);
  ASSERT_EQ(d->fields.size(), 3u);
  EXPECT_EQ(d->fields[0].name, "tick_broadcast_forced");
  EXPECT_EQ(d->fields[1].name, "tick_broadcast_lock");
  EXPECT_EQ(d->fields[1].offset, 8);
  EXPECT_EQ(d->fields[2].offset, 0x20);

  // Aligned to 64 but not to 128: with 128 B lines, next_line shares it.
  const auto t2 = SymbolTable::parse("ffffffff82a00040 d tick_broadcast_lock\nffffffff82a00000 d before\n");
  const auto l2 = read_fixture("inline_618", &t2, 128);
  EXPECT_EQ(l2.bcast_lock.aligned, false);
  EXPECT_EQ(l2.bcast_lock.own_line, false);
}

TEST(Layout, NohzAddressFromSymbolTable) {
  // With KALLSYMS_ALL (or a System.map) &nohz is known, and so are its lines' addresses.
  const auto t = SymbolTable::parse("ffffffff82b00040 b nohz\n");
  const auto l = read_fixture("inline_618", &t);
  ASSERT_TRUE(l.nohz && l.nohz->address);
  const auto d_lines = modeled_lines(l);
  const LineDef* d = line(d_lines, "nohz");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->address_known);
  EXPECT_EQ(*d->address, 0xffffffff82b00040ull);
  EXPECT_TRUE(d->assumption.empty());
  // The same address with 128 B lines: nohz starts half-way into a line.
  const auto l2 = read_fixture("inline_618", &t, 128);
  const auto d2_lines = modeled_lines(l2);
  const LineDef* d2 = line(d2_lines, "nohz");
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->line_offset, -64);
  EXPECT_EQ(*d2->address, 0xffffffff82b00000ull);
}

// ---- JSON --------------------------------------------------------------------------

TEST(Layout, JsonRoundTrip) {
  const auto t = SymbolTable::parse("ffffffff82a00008 d tick_broadcast_lock\nffffffff82a00000 d other\n");
  for (const char* name : {"inline_618", "offstack_61", "fixed_73", "old_54", "none"}) {
    const auto l = read_fixture(name, &t);
    const nlohmann::json j = l;
    const auto back = j.get<CoherenceLayout>();
    EXPECT_EQ(nlohmann::json(back), j) << name;
    EXPECT_EQ(back.nohz.has_value(), l.nohz.has_value());
    EXPECT_EQ(to_string(fixes_present(back)), to_string(fixes_present(l))) << name;
  }
}

TEST(Layout, JsonRejectsBadNumbers) {
  const nlohmann::json good = read_fixture("inline_618");
  auto expect_bad = [&](auto mutate, const std::string& what) {
    nlohmann::json j = good;
    mutate(j);
    try {
      (void)j.get<CoherenceLayout>();
      ADD_FAILURE() << "accepted: " << what;
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_NE(m.find("coherence layout"), std::string::npos) << m;
    }
  };
  expect_bad([](auto& j) { j["nohz"]["nr_cpus"]["offset"] = -4; }, "negative offset");
  expect_bad([](auto& j) { j["nohz"]["next_blocked"]["offset"] = 1 << 30; }, "absurd offset");
  expect_bad([](auto& j) { j["nohz"]["next_blocked"]["offset"] = 60; }, "member past the struct");
  expect_bad([](auto& j) { j["nohz"]["size"] = 0; }, "zero size");
  expect_bad([](auto& j) { j["nohz"]["has_blocked"]["name"] = "x"; }, "has_blocked name");
  expect_bad([](auto& j) { j["cpupri"]["nr_prios"] = 1000000; }, "absurd nr_prios");
  expect_bad([](auto& j) { j["cpupri"]["vec_size"] = 4000; }, "vectors past cpupri");
  expect_bad([](auto& j) { j["cpupri"]["cpupri_offset"] = 4000; }, "cpupri past root_domain");
  expect_bad([](auto& j) { j["cpupri"]["count_offset"] = 39; }, "count past the vector");
  expect_bad([](auto& j) { j["cpupri"]["mask_bytes"] = 64; }, "mask past the vector");
  expect_bad([](auto& j) { j["cpupri"]["vec0_line_sharers"][0]["offset"] = -1; }, "negative sharer offset");
  expect_bad([](auto& j) { j["line_bytes"] = 96; }, "line size not a power of two");
  expect_bad([](auto& j) { j["line_bytes"] = "64"; }, "line size a string");
  expect_bad([](auto& j) { j["nohz"]["size"] = 18446744073709551615ull; }, "huge unsigned");
  expect_bad([](auto& j) { j.erase("cpupri"); }, "missing key");
  expect_bad([](auto& j) { j["tick_broadcast_lock"]["own_line"] = true; }, "lock facts without address");
}

// ---- live: this host's vmlinux BTF ---------------------------------------------------

TEST(LayoutLive, SysfsVmlinux) {
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0) GTEST_SKIP() << "no /sys/kernel/btf/vmlinux";
  std::string err;
  auto ks = SymbolTable::load("/proc/kallsyms", &err);
  const auto l = read_coherence_layout_from("/sys/kernel/btf/vmlinux", ks ? &*ks : nullptr, 64, "/proc/kallsyms");
  for (auto& n : l.notes) std::printf("note: %s\n", n.c_str());
  std::printf("%s\n", to_string(fixes_present(l)).c_str());
  // Any kernel with NO_HZ_COMMON and SMP: both found, and self-consistent.
  ASSERT_TRUE(l.nohz);
  ASSERT_TRUE(l.cpupri);
  for (auto& m : l.nohz->members()) EXPECT_LE(m.offset + m.size, l.nohz->size) << m.name;
  EXPECT_LE(l.cpupri->cpupri_offset + l.cpupri->cpupri_size, l.cpupri->root_domain_size);
  EXPECT_TRUE(l.cpupri->nr_prios == 101 || l.cpupri->nr_prios == 102);
  const nlohmann::json j = l;
  EXPECT_EQ(nlohmann::json(j.get<CoherenceLayout>()), j);

  struct utsname u {};
  ASSERT_EQ(uname(&u), 0);
  if (std::string(u.release).rfind("6.18.", 0) != 0) return;  // the figures below are the 6.18 VM's
  const auto& n = *l.nohz;
  EXPECT_EQ(n.size, 64);
  EXPECT_FALSE(n.mask_is_pointer);
  EXPECT_EQ(n.mask_bytes, 32);
  ASSERT_TRUE(n.nr_cpus);
  EXPECT_EQ(n.nr_cpus->offset, 32);
  EXPECT_EQ(n.has_blocked.name, "has_blocked");
  EXPECT_EQ(n.has_blocked.offset, 36);
  EXPECT_EQ(n.needs_update->offset, 40);
  EXPECT_EQ(n.next_balance.offset, 48);
  EXPECT_EQ(n.next_blocked.offset, 56);
  const auto& c = *l.cpupri;
  EXPECT_EQ(c.vec_size, 40);
  ASSERT_TRUE(c.count_offset);
  EXPECT_EQ(*c.count_offset, 0);
  EXPECT_EQ(c.mask_offset, 8);
  EXPECT_EQ(c.mask_bytes, 32);
  EXPECT_EQ(c.cpupri_offset, 304);
  EXPECT_EQ(c.root_domain_size, 4360);
  EXPECT_EQ(c.nr_prios, 101);
  EXPECT_EQ(names(c.vec0_line_sharers),
            (std::vector<std::string>{"rto_cpu", "rto_loop_next", "rto_loop_start", "rto_mask"}));
  const auto f = fixes_present(l);
  EXPECT_EQ(f.present("nohz_nr_cpus_removed"), false);
  EXPECT_EQ(f.present("cpupri_count_removed"), false);
  if (ks && !ks->addresses_hidden()) {
    // This kernel is built with KALLSYMS_ALL=n (kernel-notes.md).
    EXPECT_EQ(l.bcast_lock.reason, "unknown: KALLSYMS_ALL off (no static data symbols in the symbol table)");
  }
}

// ---- learned addresses (issue 11): merge of separate allocations sharing lines ----------

namespace {

CoherenceLayout offstack_learned(uint64_t base, int64_t mask_bytes) {
  CoherenceLayout l = read_fixture("offstack_61");
  LearnedAddresses a;
  a.source = "test";
  a.rd = 0xffff888100000000ull;
  a.cpus = {0, 1};
  a.mask_bytes = mask_bytes;
  for (int i = 0; i < l.cpupri->nr_prios; ++i) a.masks.push_back(base + uint64_t(i) * 0x1000);  // each alone
  a.cpu_to_pri = base + 0x1000000;
  a.cpu_to_pri_bytes = 8;
  l.learned = a;
  return l;
}

}  // namespace

TEST(Layout, LearnedMasksInOneLineMerge) {
  CoherenceLayout l = offstack_learned(0xffff888200000000ull, 8);
  l.learned->masks[0] = 0xffff888300000000ull;  // two 8 B bitmaps in one 64 B line
  l.learned->masks[1] = 0xffff888300000008ull;
  const auto groups = separate_groups(l);
  ASSERT_EQ(groups.size(), size_t(l.cpupri->nr_prios));  // 101 masks + cpu_to_pri, two merged
  auto p0 = learned_placement(l, "cpupri.pri_to_cpu[0].mask"), p1 = learned_placement(l, "cpupri.pri_to_cpu[1].mask");
  ASSERT_TRUE(p0 && p1);
  EXPECT_EQ(p0->first, "cpupri.pri_to_cpu[0-1].mask");
  EXPECT_EQ(p1->first, p0->first);
  EXPECT_EQ(p0->second, 0);
  EXPECT_EQ(p1->second, 8);
  auto p2 = learned_placement(l, "cpupri.pri_to_cpu[2].mask");
  ASSERT_TRUE(p2);
  EXPECT_EQ(p2->first, "cpupri.pri_to_cpu[2].mask");  // separate lines stay separate, names unchanged
  auto c = learned_placement(l, "cpupri.cpu_to_pri");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->first, "cpupri.cpu_to_pri");
}

TEST(Layout, LearnedCpuToPriSpanningLinesJoinsBothNeighbours) {
  CoherenceLayout l = offstack_learned(0xffff888200000000ull, 8);
  l.learned->masks[5] = 0xffff888300000038ull;  // last 8 B of line 0
  l.learned->cpu_to_pri = 0xffff888300000030ull;  // 24 B: line 0 bytes 48..63 and line 1 0..7
  l.learned->cpu_to_pri_bytes = 24;
  l.learned->masks[7] = 0xffff888300000040ull;  // line 1
  auto a = learned_placement(l, "cpupri.cpu_to_pri");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->first, "cpupri.pri_to_cpu[5,7].mask+cpu_to_pri");
  EXPECT_EQ(a->second, 0x30);
  for (auto& g : separate_groups(l))
    if (g.object == a->first) {
      EXPECT_EQ(g.lines, 2);
      EXPECT_EQ(g.base, 0xffff888300000000ull);
    }
  // modeled_lines shows the group's two lines with their addresses.
  int n = 0;
  for (auto& d : modeled_lines(l))
    if (d.object == a->first) {
      ++n;
      EXPECT_TRUE(d.address_known);
    }
  EXPECT_EQ(n, 2);
}

TEST(Layout, LearnedRoundTripsAndOldJsonIsNotLearned) {
  CoherenceLayout l = offstack_learned(0xffff888200000000ull, 8);
  nlohmann::json j = l;
  CoherenceLayout back = j.get<CoherenceLayout>();
  ASSERT_TRUE(back.learned);
  EXPECT_EQ(back.learned->masks, l.learned->masks);
  EXPECT_EQ(back.learned->rd, l.learned->rd);
  j.erase("learned");
  EXPECT_FALSE(j.get<CoherenceLayout>().learned);
}

TEST(Layout, LearnedNohzIdleMaskPlacesItsLineAndRoundTrips) {
  CoherenceLayout l = offstack_learned(0xffff888200000000ull, 8);
  ASSERT_TRUE(l.nohz && l.nohz->mask_is_pointer);
  const LineDef* before = nullptr;
  const auto ls0 = modeled_lines(l);
  for (auto& d : ls0)
    if (d.id == "nohz.idle_cpus_mask") before = &d;
  ASSERT_TRUE(before);
  EXPECT_FALSE(before->address_known);
  l.learned->nohz_idle_mask = 0xffff888400000028ull;  // 8 B at offset 40 of its line
  const auto ls = modeled_lines(l);
  const LineDef* m = nullptr;
  for (auto& d : ls)
    if (d.id == "nohz.idle_cpus_mask") m = &d;
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->address_known);
  EXPECT_EQ(*m->address, 0xffff888400000000ull);
  ASSERT_EQ(m->fields.size(), size_t(1));
  EXPECT_EQ(m->fields[0].offset, 40);
  EXPECT_EQ(m->fields[0].size, 8);
  // The model's target: CPU c's word at 40 + c/64*8 of that object: CPU 100 is in line 1.
  auto t = field_target("nohz.idle_cpus_mask[cpu]", 128, l);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->base, 40);
  std::vector<int64_t> lines;
  t->lines(100, 64, lines);
  EXPECT_EQ(lines, std::vector<int64_t>{0});
  lines.clear();
  auto t2 = field_target("nohz.idle_cpus_mask[cpu]", 256, l);
  t2->lines(200, 64, lines);  // 40 + 3*8 = 64: the next line
  EXPECT_EQ(lines, std::vector<int64_t>{1});
  nlohmann::json j = l;
  EXPECT_EQ(j.get<CoherenceLayout>().learned->nohz_idle_mask, 0xffff888400000028ull);
  j["learned"].erase("nohz_idle_mask");  // a recording from before: not learned
  EXPECT_EQ(j.get<CoherenceLayout>().learned->nohz_idle_mask, 0u);
  j = l;
  j["learned"]["mask_bytes"] = 0;
  j["learned"]["masks"] = nlohmann::json::array();
  CoherenceLayout bad;
  EXPECT_THROW(from_json(j, bad), std::runtime_error);  // a learned mask of unknown size
}

TEST(Layout, LearnedAddressesPlausibleWith4And5LevelPaging) {
  CoherenceLayout l = offstack_learned(0xffff888200000000ull, 8);
  EXPECT_EQ(implausible(*l.learned, *l.cpupri), "");
  // A QEMU -cpu max guest (LA57): the direct map at 0xff11000000000000 (the 6.12 VM run's rd).
  LearnedAddresses a = *l.learned;
  a.rd = 0xff2be471c104e800ull;
  for (auto& m : a.masks) m = m - 0xffff888200000000ull + 0xff2be471c2000000ull;
  a.cpu_to_pri = 0xff2be471c3000000ull;
  EXPECT_EQ(implausible(a, *l.cpupri), "");
  a.rd = 0x00007fff00001000ull;  // a user address
  EXPECT_NE(implausible(a, *l.cpupri).find("not a kernel address"), std::string::npos);
  a = *l.learned;
  a.masks[3] = a.masks[2];
  EXPECT_NE(implausible(a, *l.cpupri).find("both"), std::string::npos);
  a = *l.learned;
  a.nohz_idle_mask = a.cpu_to_pri;
  EXPECT_NE(implausible(a, *l.cpupri).find("nohz.idle_cpus_mask"), std::string::npos);
}

TEST(Layout, LearnedHostileJsonRejected) {
  const nlohmann::json good = offstack_learned(0xffff888200000000ull, 8);
  auto bad = [&](auto edit) {
    nlohmann::json j = good;
    edit(j["learned"]);
    CoherenceLayout l;
    EXPECT_THROW(from_json(j, l), std::runtime_error) << j["learned"].dump().substr(0, 200);
  };
  bad([](nlohmann::json& a) { a["masks"].erase(0); });                      // wrong count
  bad([](nlohmann::json& a) { a["mask_bytes"] = 1 << 20; });                // huge bitmap
  bad([](nlohmann::json& a) { a["mask_bytes"] = 0; });                      // 0 B with masks
  bad([](nlohmann::json& a) { a["cpu_to_pri"] = ~0ull; });                  // wraps
  bad([](nlohmann::json& a) { a["cpus"] = {1, 0}; });                       // not ascending
  bad([](nlohmann::json& a) { a["cpus"] = {-1}; });
  bad([](nlohmann::json& a) { a["other_domains"] = -1; });
  bad([](nlohmann::json& a) { a = "x"; });
  bad([](nlohmann::json& a) { a.erase("rd"); });
}
