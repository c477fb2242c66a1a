// The recording commands as a user runs them: `schedhot info`, `schedhot export`, and
// record's --max-size/--rotate (usage errors here; with root and BPF also a real rotating
// recording and a recording onto a 64 KiB tmpfs that fills up). Exit status and the
// one-line error rule are checked on every failure.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <cctype>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bench/synthetic.h"
#include "model/lines.h"
#include "output/export.h"
#include "store/recording.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

const std::string kData = SCHEDHOT_DATA;

struct CliRun {
  int status = -1;
  std::string out, err;
  /// Lines on stderr.
  size_t err_lines() const { return static_cast<size_t>(std::count(err.begin(), err.end(), '\n')); }
};

/// Runs schedhot with args (shell words, already quoted where needed); stdout goes to
/// stdout_to when given (e.g. /dev/full), else is captured.
CliRun run_cli(const std::string& args, const std::string& stdout_to = "") {
  static int n = 0;
  std::string o = tmp_path(fmt::format("cli_out_{}", n)), e = tmp_path(fmt::format("cli_err_{}", n));
  ++n;
  int rc = std::system(fmt::format("{} {} > {} 2> {}", SCHEDHOT_BIN, args, stdout_to.empty() ? o : stdout_to, e).c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  r.out = slurp(o);
  r.err = slurp(e);
  unlink(o.c_str());
  unlink(e.c_str());
  return r;
}

void expect_one_line_error(const CliRun& r, int status, const std::string& contains) {
  EXPECT_EQ(r.status, status) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("schedhot: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(contains), std::string::npos) << r.err;
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

/// Root and a kernel where `schedhot probes` attaches something.
bool can_record() {
  if (geteuid() != 0) return false;
  static int ok = -1;
  if (ok < 0) ok = run_cli("probes --json").status == 0;
  return ok == 1;
}

}  // namespace

TEST(RecordingCli, InfoPrintsMetadataAndIntegrity) {
  CliRun r = run_cli(kData + "/v1.1-basic.shot");
  EXPECT_EQ(r.status, 2) << "a file is not a subcommand";
  r = run_cli("info " + kData + "/v1.1-basic.shot");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("(format 1.1, 26678 bytes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 online (0-3) of 4 possible; packages 2, dies 2, cores 4, LLCs 2, NUMA nodes 2"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("70 in 74 frames over 69.000 s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("index      present (2 keyframes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("end        clean (END frame)"), std::string::npos) << r.out;
  r = run_cli("info --json " + kData + "/v1.0-unclosed.shot");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "schedhot.info/1");
  EXPECT_EQ(j["format"], "1.0");
  EXPECT_EQ(j["integrity"]["samples"], 8);
  EXPECT_EQ(j["integrity"]["complete"], false);
  EXPECT_EQ(j["integrity"]["index"]["status"], "absent");
  EXPECT_NE(j["integrity"]["damage"]["reason"].get<std::string>().find("truncated"), std::string::npos);
}

TEST(RecordingCli, InfoRefusesWhatIsNotARecording) {
  expect_one_line_error(run_cli("info /nonexistent/x.shot"), 1, "cannot open /nonexistent/x.shot");
  TempDir dir("cli_foreign");
  spit(dir / "f.shot", "this is not a recording, it is a sentence of some length");
  expect_one_line_error(run_cli("info " + dir / "f.shot"), 1, "is not a schedhot recording");
  std::string d = slurp(kData + "/v1.1-raw.shot");
  d[8] = 7;  // major 7, header CRC fixed so the version check speaks
  uint32_t crc = crc32c(d.data(), 28);
  std::memcpy(d.data() + 28, &crc, 4);
  spit(dir / "future.shot", d);
  expect_one_line_error(run_cli("info " + dir / "future.shot"), 1, "is format 7.1, newer than this schedhot reads (1.x)");
}

TEST(RecordingCli, ExportWritesCsvJsonAndPerfetto) {
  TempDir dir("cli_export");
  CliRun r = run_cli(fmt::format("export {}/v1.1-basic.shot -o {}", kData, dir / "a.csv"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(slurp(dir / "a.csv")), 1u + 69 * 4) << "69 intervals x 4 CPUs + header";
  auto entries = std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator{});
  EXPECT_EQ(entries, 1) << "no temporary file left behind";
  r = run_cli(fmt::format("export {}/v1.0-basic.shot --format json --from 10s --to 20s --cpus 1-2", kData));
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "schedhot.export/1");
  EXPECT_EQ(j["cpus"], nlohmann::json({1, 2}));
  EXPECT_EQ(j["samples"], 11);
  EXPECT_EQ(j["intervals"].size(), 10u);
  EXPECT_DOUBLE_EQ(j["intervals"][0]["time_s"].get<double>(), 11.0);
  EXPECT_EQ(j["source"]["format"], "1.0");
  r = run_cli(fmt::format("export {}/v1.1-basic.shot --format perfetto -o {}", kData, dir / "t.json"));
  ASSERT_EQ(r.status, 0) << r.err;
  auto t = nlohmann::json::parse(slurp(dir / "t.json"));
  EXPECT_GT(t["traceEvents"].size(), 69u * 4);
}

TEST(RecordingCli, ExportErrorsAreOneLine) {
  const std::string f = kData + "/v1.1-basic.shot";
  expect_one_line_error(run_cli("export " + f + " --format xml"), 2, "--format");
  expect_one_line_error(run_cli("export " + f + " --from 10s --to 5s"), 2, "--to must be later than --from");
  expect_one_line_error(run_cli("export " + f + " --from soon"), 2, "--from 'soon' is not a non-negative number");
  expect_one_line_error(run_cli("export " + f + " --cpus 9"), 2, "--cpus: CPU 9 is not in the recording (4 CPUs)");
  expect_one_line_error(run_cli("export " + f + " --cpus 3-1"), 2, "reversed");
  expect_one_line_error(run_cli("export " + f + " --from 1000s"), 1, "no samples at or after --from 1000s");
  expect_one_line_error(run_cli("export " + f + " -o /nonexistent/dir/x.csv"), 1, "cannot write /nonexistent/dir/x.csv");
  CliRun r = run_cli("export " + kData + "/v1.1-unclosed.shot");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(lines(r.out), 1u + 7 * 4);
  expect_one_line_error(r, 0, "is damaged at byte 10032");
}

// A window asked to end after the last sample ends there, and export and diff say so as
// report does (a fresh user's finding: they were silent).
TEST(RecordingCli, AWindowPastTheEndIsSaidByExportAndDiff) {
  const std::string f = kData + "/tui16.shot";  // 11 samples, +0..+10 s
  CliRun e = run_cli("export --from 2 --to 1m " + f);
  EXPECT_EQ(e.status, 0) << e.err;
  EXPECT_EQ(e.err, "schedhot: note: " + f + ": --to 1m is after the last sample (+10.00 s): the window ends there\n");
  CliRun inside = run_cli("export --from 2 --to 9 " + f);
  EXPECT_EQ(inside.status, 0);
  EXPECT_EQ(inside.err, "") << "a window inside the recording: nothing to say";
  CliRun d = run_cli("diff " + f + " --a 0:5 --b 5:40");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find("B: " + f + " 5:40 (5 intervals, 5.0 s; the window asked to end at +40.00 s ends at the last "
                       "sample (+10.00 s))"),
            std::string::npos)
      << d.out;
  EXPECT_EQ(d.out.find("A: " + f + " 0:5 (5 intervals, 5.0 s)\n"), 0u) << d.out;
  CliRun dj = run_cli("diff --json " + f + " --a 0:5 --b 5:40");
  ASSERT_EQ(dj.status, 0) << dj.err;
  const auto j = nlohmann::json::parse(dj.out);
  EXPECT_FALSE(j["a"].contains("note"));
  EXPECT_EQ(j["b"]["note"], "the window asked to end at +40.00 s ends at the last sample (+10.00 s)");
}

TEST(RecordingCli, ReportErrorsAreOneLine) {
  const std::string f = kData + "/tui16.shot";  // 11 samples, +0..+10 s
  expect_one_line_error(run_cli("report --sort bogus " + f), 2, "--sort: no column 'bogus' (a probe name or one of: cpu, idle/s");
  expect_one_line_error(run_cli("report --live --sort bogus"), 2, "--sort: no column 'bogus'");
  CliRun r = run_cli("report --from 10s --to 40s " + f);
  expect_one_line_error(r, 1, "1 sample in the window --from 10s --to 40s, need two for an interval; the samples span +0..+10.00 s");
  EXPECT_EQ(r.out, "") << "no table of dashes";
  CliRun ok = run_cli("report --from 3s --to 5s --sort cpupri_set " + f);
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("3 samples"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("sorted by cpupri_set/s"), std::string::npos) << ok.out;
  CliRun p99 = run_cli("report --top 2 --sort set_p99 " + f);
  EXPECT_NE(p99.out.find("sorted by set_p99;"), std::string::npos) << "the column's header, not its JSON key: " << p99.out;
  CliRun bycpu = run_cli("report --json --top 3 --sort cpu " + f);
  ASSERT_EQ(bycpu.status, 0) << bycpu.err;
  auto rows = nlohmann::json::parse(bycpu.out)["cpus"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["cpu"], 0);
  EXPECT_EQ(rows[2]["cpu"], 2);
  expect_one_line_error(run_cli("report --from 30s " + f), 1, "no samples at or after --from 30s; the samples span +0..+10.00 s");
}

TEST(RecordingCli, ReportWindowOfADamagedClosedFileStopsAtTheDamage) {
  // A window reads only its samples through the index, but a bad frame before or after it
  // is still found: the file is read as always, up to the damage, and the damage is said.
  TempDir dir("cli_window_damage");
  std::string d = slurp(kData + "/tui16.shot");
  d[d.size() * 8 / 10] ^= 0x10;  // inside the sample frame of +5 s (the index after it intact)
  const std::string bad = dir / "bad.shot";
  spit(bad, d);
  expect_one_line_error(run_cli("report --from 8 " + bad), 1,
                        "0 samples in the window --from 8, need two for an interval; the samples span +0..+5.00 s, "
                        "where reading stopped (damaged at byte");
  expect_one_line_error(run_cli("export --from 8 " + bad), 1,
                        "0 samples in the window --from 8, need two for an interval (reading stopped: damaged at byte");
  CliRun r = run_cli("report --json --to 3 " + bad);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("is damaged at byte"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["source"]["complete"], false) << j["source"].dump();
  EXPECT_EQ(j["window"]["samples"], 4);
  CliRun clean = run_cli("report --json --to 3 " + kData + "/tui16.shot");
  ASSERT_EQ(clean.status, 0) << clean.err;
  EXPECT_EQ(nlohmann::json::parse(clean.out)["source"]["complete"], true) << "stopping after --to still knows the file is closed";
}

TEST(RecordingCli, ExportNeverReplacesWhatIsNotItsOwn) {
  const std::string f = kData + "/tui16.shot";
  TempDir dir("cli_export_dest");
  // An existing file: refused without --force; with it, replaced keeping its mode.
  const std::string csv = dir / "old.csv";
  spit(csv, "keep me\n");
  ASSERT_EQ(::chmod(csv.c_str(), 0600), 0);
  expect_one_line_error(run_cli(fmt::format("export {} -o {}", f, csv)), 1, "exists; choose another name or pass --force");
  EXPECT_EQ(slurp(csv), "keep me\n");
  CliRun r = run_cli(fmt::format("export {} -o {} --force", f, csv));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(csv).rfind("time_s,cpu,", 0), 0u);
  struct stat st {};
  ASSERT_EQ(::stat(csv.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Through a symlink: the link stays, its target gets the export.
  const std::string target = dir / "target.csv", link = dir / "link.csv";
  spit(target, "");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_EQ(run_cli(fmt::format("export {} -o {} -f", f, link)).status, 0);
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(target).rfind("time_s,cpu,", 0), 0u);
  // A device is written in place, never renamed over (root: mknod).
  if (geteuid() == 0) {
    const std::string dev = dir / "null";
    ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << strerror(errno);
    r = run_cli(fmt::format("export {} -o {}", f, dev));
    EXPECT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(::stat(dev.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device was replaced";
    // A block device (a disk, a filesystem) only with --force, as record's -o: refused
    // before anything is opened (a loop device node with no loop device behind it).
    const std::string blk = dir / "blk";
    ASSERT_EQ(::mknod(blk.c_str(), S_IFBLK | 0600, makedev(7, 250)), 0) << strerror(errno);
    expect_one_line_error(run_cli(fmt::format("export {} -o {}", f, blk)), 1,
                          "exists (a block device); choose another name or pass --force");
    ASSERT_EQ(::stat(blk.c_str(), &st), 0);
    EXPECT_TRUE(S_ISBLK(st.st_mode));
  }
  expect_one_line_error(run_cli(fmt::format("export {} -o {}", f, dir.path)), 2, "is a directory");
}

TEST(RecordingCli, ExportGuardsItsInputAndFollowsADanglingLinkWithForce) {
  TempDir dir("cli_export_guard");
  const std::string in = dir / "in.shot";
  spit(in, slurp(kData + "/tui16.shot"));
  // Its own input, even with --force: refused before anything is written.
  expect_one_line_error(run_cli("export " + in + " -f -o " + in), 2, "is the recording being exported");
  EXPECT_EQ(slurp(in), slurp(kData + "/tui16.shot"));
  expect_one_line_error(run_cli("export " + in + " -o ''"), 2, "-o: an empty path");
  expect_one_line_error(run_cli("export " + in + " --cpus -1"), 2, "a range needs a CPU on each side of '-'");
  // A dangling symlink is a name that is there: refused without --force, as record -o refuses
  // it (nothing created); with it, its target is created and the link stays a link.
  ASSERT_EQ(::symlink("target.csv", (dir / "link.csv").c_str()), 0);
  expect_one_line_error(run_cli("export " + in + " -o " + dir / "link.csv"), 1, "exists (a symlink to nothing)");
  EXPECT_FALSE(std::filesystem::exists(dir / "target.csv"));
  CliRun r = run_cli("export " + in + " -f -o " + dir / "link.csv");
  ASSERT_EQ(r.status, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "link.csv").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(dir / "target.csv").rfind("time_s,cpu,", 0), 0u);
  // A chain of dangling links: the last target is written, both links stay; a loop is one line.
  ASSERT_EQ(::symlink("hop2.csv", (dir / "hop1.csv").c_str()), 0);
  ASSERT_EQ(::symlink("end.csv", (dir / "hop2.csv").c_str()), 0);
  ASSERT_EQ(run_cli("export " + in + " -f -o " + dir / "hop1.csv").status, 0);
  ASSERT_EQ(::lstat((dir / "hop2.csv").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(dir / "end.csv").rfind("time_s,cpu,", 0), 0u);
  ASSERT_EQ(::symlink("loop2", (dir / "loop1").c_str()), 0);
  ASSERT_EQ(::symlink("loop1", (dir / "loop2").c_str()), 0);
  expect_one_line_error(run_cli("export " + in + " -f -o " + dir / "loop1"), 1, "Too many levels of symbolic links");
  ASSERT_EQ(::lstat((dir / "loop2").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

// A directory other users can write (sticky like /tmp, or not): a symlink another user
// planted there is never followed by export -o or record -o (--force or not), whatever
// fs.protected_symlinks says; the file it names stays as it was. Root's own link is followed.
TEST(RecordingCli, OutputsNeverFollowALinkAnotherUserPlantedInASharedDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a link owned by another user)";
  TempDir dir("cli_planted_link");
  const std::string in = dir / "in.shot", victim = dir / "victim";
  spit(in, slurp(kData + "/tui16.shot"));
  spit(victim, "precious\n");
  for (mode_t mode : {mode_t(01777), mode_t(0777), mode_t(0775)}) {
    const std::string shared = dir / fmt::format("shared{:o}", mode);
    ASSERT_EQ(::mkdir(shared.c_str(), 0755), 0);
    ASSERT_EQ(::chmod(shared.c_str(), mode), 0);
    const std::string link = shared + "/out.csv", dangling = shared + "/new.csv", shot = shared + "/run.shot";
    ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
    ASSERT_EQ(::symlink((dir / fmt::format("created{:o}", mode)).c_str(), dangling.c_str()), 0);
    ASSERT_EQ(::symlink(victim.c_str(), shot.c_str()), 0);
    for (const std::string& l : {link, dangling, shot}) ASSERT_EQ(::lchown(l.c_str(), 65534, 65534), 0);
    expect_one_line_error(run_cli("export " + in + " --force -o " + link), 1, "another user could");
    expect_one_line_error(run_cli("export " + in + " -o " + dangling), 1, "another user could");
    expect_one_line_error(run_cli("record -q -d 1 --force -o " + shot), 1, "another user could");
    EXPECT_EQ(slurp(victim), "precious\n") << fmt::format("mode {:o}", mode);
    EXPECT_FALSE(std::filesystem::exists(dir / fmt::format("created{:o}", mode))) << "the dangling link's target was created";
  }
  // A directory on the way that another user owns or may redirect: a symlink to a root-only
  // directory planted as a parent component, a chain whose second hop is another user's,
  // and another user's file in a sticky directory (it could become a link at any moment).
  const std::string rootonly = dir / "rootonly", sticky1777 = dir / "shared1777";
  ASSERT_EQ(::mkdir(rootonly.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(rootonly.c_str(), (sticky1777 + "/sub").c_str()), 0);
  ASSERT_EQ(::lchown((sticky1777 + "/sub").c_str(), 65534, 65534), 0);
  expect_one_line_error(run_cli("export " + in + " -o " + sticky1777 + "/sub/new.csv"), 1, "another user could");
  expect_one_line_error(run_cli("record -q -d 1 -o " + sticky1777 + "/sub/new.shot"), 1, "another user could");
  ASSERT_EQ(::symlink((rootonly + "/victim4").c_str(), (sticky1777 + "/hop").c_str()), 0);
  ASSERT_EQ(::lchown((sticky1777 + "/hop").c_str(), 65534, 65534), 0);
  spit(rootonly + "/victim4", "precious\n");
  ASSERT_EQ(::symlink((sticky1777 + "/hop").c_str(), (dir / "chain.csv").c_str()), 0);
  expect_one_line_error(run_cli("export " + in + " --force -o " + dir / "chain.csv"), 1, "another user could");
  const std::string theirs = sticky1777 + "/theirs.csv";
  spit(theirs, "theirs\n");
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  expect_one_line_error(run_cli("export " + in + " --force -o " + theirs), 1, "could become a link at any moment");
  const std::string owned = dir / "owned";  // a directory of another user's on the way
  ASSERT_EQ(::mkdir(owned.c_str(), 0755), 0);
  ASSERT_EQ(::chown(owned.c_str(), 65534, 65534), 0);
  expect_one_line_error(run_cli("export " + in + " -o " + owned + "/x.csv"), 1, "another user, who could redirect the write");
  EXPECT_EQ(slurp(rootonly + "/victim4"), "precious\n");
  EXPECT_FALSE(std::filesystem::exists(rootonly + "/new.csv"));
  EXPECT_FALSE(std::filesystem::exists(rootonly + "/new.shot"));
  EXPECT_EQ(slurp(theirs), "theirs\n");
  // root's own (dangling) link in a sticky directory of root's: followed with --force as
  // before, and no temporary is left.
  const std::string sticky = dir / "shared1777", own = sticky + "/own.csv";
  ASSERT_EQ(::symlink((dir / "own_target.csv").c_str(), own.c_str()), 0);
  CliRun r = run_cli("export " + in + " -f -o " + own);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(dir / "own_target.csv").rfind("time_s,cpu,", 0), 0u);
  for (auto& f : std::filesystem::directory_iterator(dir.path))
    EXPECT_NE(f.path().filename().string().rfind("own_target.csv.", 0), 0u) << "temporary left: " << f.path();
}

TEST(RecordingCli, HostileInputsAndBrokenOutputsAreOneLine) {
  const std::string f = kData + "/tui16.shot";
  TempDir dir("cli_hostile");
  const std::string fifo = dir / "f.shot";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const char* cmd : {"info", "report", "export"})
    expect_one_line_error(run_cli(fmt::format("{} {}", cmd, fifo)), 1, "is a FIFO: a recording is a regular file");
  // A path that is not UTF-8 still gives valid JSON (U+FFFD in its place).
  const std::string latin1 = dir / "caf\xe9.shot";
  spit(latin1, slurp(f));
  CliRun j = run_cli(fmt::format("info --json '{}'", latin1));
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["file"], dir / "caf\xef\xbf\xbd.shot");
  // stdout that cannot be written: exit 1 and one line, not an abort or a silent 0.
  for (const char* cmd : {"info --json", "info", "report", "report --json"}) {
    CliRun r = run_cli(fmt::format("{} {}", cmd, f), "/dev/full");
    expect_one_line_error(r, 1, "cannot write to stdout: No space left on device");
  }
  expect_one_line_error(run_cli("export " + f, "/dev/full"), 1, "export to stdout: write failed: No space left on device");
  // A reader that left (| head) is not an error worth a message, as with SIGPIPE: the reader
  // closes the pipe at once and schedhot starts 0.3 s later, so its first write fails.
  for (const char* cmd : {"info", "report --all-cpus", "export", "export --format json", "export --format perfetto"}) {
    std::string e = dir / "pipe_err", st = dir / "pipe_status";
    std::system(fmt::format("{{ sleep 0.3; {} {} {} 2> {}; echo $? > {}; }} | (exec 0<&-; sleep 1)", SCHEDHOT_BIN,
                            cmd, f, e, st).c_str());
    EXPECT_EQ(slurp(st), "1\n") << cmd;
    EXPECT_EQ(slurp(e), "") << cmd;
  }
  // Usage mistakes name themselves.
  expect_one_line_error(run_cli("bogus"), 2, "unknown command 'bogus' (one of: probes, record, serve, report");
  expect_one_line_error(run_cli(""), 2, "a command is needed (one of: probes, record, serve, report");
  expect_one_line_error(run_cli("--bogus report"), 2, "'--bogus' before the command: options follow it");
  expect_one_line_error(run_cli("record --bogus"), 2, "--bogus");
  expect_one_line_error(run_cli("report --top -1 " + f), 2, "--top: must be a whole number from 0 to 1000000, not '-1'");
  expect_one_line_error(run_cli("report -d 5 " + f), 2, "-d/-i apply to --live only");
  // The live-only probe options are refused with a FILE as -d/-i are (they were ignored).
  for (const char* opt : {"--backend kprobe", "--probes idle", "--system-map /x", "--btf /x", "-v", "--gap-state",
                          "--no-gap-state", "--gap-samples 10"}) {
    const std::string name = std::string(opt).substr(0, std::string(opt).find(' '));
    expect_one_line_error(run_cli(fmt::format("report {} {}", opt, f)), 2,
                          (name == "-v" ? "--verbose" : name) + " needs --live");
  }
  // --help-all is not an option: said like any other before the command.
  expect_one_line_error(run_cli("--help-all"), 2, "'--help-all' before the command: options follow it");
  // a value past int is the range check's refusal, not CLI11's "Could not convert"
  expect_one_line_error(run_cli("serve --timeout-ms 99999999999"), 2, "--timeout-ms 99999999999: give 1..600000 (ms)");
  expect_one_line_error(run_cli("serve --max-connections 99999999999"), 2, "--max-connections 99999999999: give 1..65536");
  expect_one_line_error(run_cli("record -d 0.001 -i 0.5 -o x.shot"), 2, "-d 0.001 is shorter than one interval (-i 0.5)");
  // Only a written 0 means "until stopped" (record); one that rounds to 0 ns is just short.
  expect_one_line_error(run_cli("record -d 1e-10 -o x.shot"), 2, "-d 1e-10 is shorter than one interval (-i 1)");
  expect_one_line_error(run_cli("report --live -d 0"), 2, "-d 0 is shorter than one interval (-i 1)");
  expect_one_line_error(run_cli("record --max-size 99999999999999999999G --rotate 1 -o x.shot"), 2, "too large");
}

TEST(RecordingCli, DeeplyNestedJsonIsDamageNotACrash) {
  // `[` x 40000 then `]` x 40000 (CRC valid) once overflowed the stack (SIGSEGV) of every
  // reading command, and a NOTE like that lost all the intact samples with it.
  const std::string f = kData + "/tui16.shot";
  TempDir dir("cli_deep_json");
  const std::string meta = dir / "meta.shot", note = dir / "note.shot";
  spit(meta, slurp(f).substr(0, kFileHeaderBytes) + make_frame(FrameType::meta, 0, 0, nested_json(40000)));
  for (const char* cmd : {"info", "info --json", "report", "export", "replay"})
    expect_one_line_error(run_cli(fmt::format("{} {}", cmd, meta)), 1,
                          meta + ": not readable metadata: JSON nested deeper than 64 levels");
  const uint64_t at = sample_offset(f, 5);
  spit(note, with_frame_before_sample(f, 5, make_frame(FrameType::note, 0, 0, nested_json(40000))));
  const std::string why = fmt::format("damaged at byte {}: bad note frame: JSON nested deeper than 64 levels", at);
  CliRun r = run_cli("report --json " + note);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, fmt::format("schedhot: {} is {}; reported the 5 samples before it\n", note, why));
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["window"]["samples"], 5) << "the samples before the NOTE are kept";
  EXPECT_EQ(j["source"]["complete"], false);
  r = run_cli("export " + note);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("exported the 5 samples before it"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.out), 1u + 4 * 16) << "header + 4 intervals x 16 CPUs";
  r = run_cli("info --json " + note);
  ASSERT_EQ(r.status, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["integrity"]["samples"], 5);
  EXPECT_EQ(j["integrity"]["damage"]["offset"], at);
  EXPECT_EQ(j["integrity"]["damage"]["reason"], "bad note frame: JSON nested deeper than 64 levels");
}

TEST(RecordingCli, RecordChecksRotationOptionsBeforeAttaching) {
  TempDir dir("cli_rotopt");
  const std::string o = " -o " + dir / "r.shot";
  expect_one_line_error(run_cli("record --max-size 1M" + o), 2, "--max-size needs --rotate N");
  expect_one_line_error(run_cli("record --rotate 2" + o), 2, "--rotate needs --max-size SIZE");
  expect_one_line_error(run_cli("record --max-size 1k --rotate 1" + o), 2, "at least 64K");
  expect_one_line_error(run_cli("record --max-size 12Q --rotate 1" + o), 2, "unknown unit 'Q'");
  expect_one_line_error(run_cli("record --max-size 1M --rotate 1 -o -"), 2, "rotation needs -o FILE, not stdout");
  expect_one_line_error(run_cli("record --max-size 1M --rotate -1" + o), 2, "--rotate");
}

TEST(RecordingCli, RecordFlightChecksItsOptionsBeforeAttaching) {
  TempDir dir("cli_flightopt");
  const std::string o = " -o " + dir / "fl";
  const std::string c = " --catch 'idle>1ms'";
  expect_one_line_error(run_cli("record --flight 30s" + o), 2, "--flight needs --catch RULES");
  expect_one_line_error(run_cli("record --flight 30s" + c), 2, "--flight needs -o DIR, a directory (not stdout)");
  expect_one_line_error(run_cli("record --flight 30s -o -" + c), 2, "--flight needs -o DIR, a directory (not stdout)");
  expect_one_line_error(run_cli("record --flight 30s --max-size 1M --rotate 1" + c + o), 2,
                        "--flight writes its own files: no --max-size or --rotate");
  expect_one_line_error(run_cli("record --flight 30s --rotate 1" + c + o), 2, "no --max-size or --rotate");
  expect_one_line_error(run_cli("record --flight 30s -f" + c + o), 2, "--flight never replaces a file: no --force");
  expect_one_line_error(run_cli("record --flight 0" + c + o), 2, "--flight needs a duration above 0");
  expect_one_line_error(run_cli("record --flight soon" + c + o), 2, "--flight");
  expect_one_line_error(run_cli("record --flight-max 3" + c + o), 2, "--flight-max needs --flight");
  expect_one_line_error(run_cli("record --flight 30s --flight-max 0" + c + o), 2, "--flight-max");
  expect_one_line_error(run_cli("record --flight-mem 64M" + c + o), 2, "--flight-mem needs --flight");
  expect_one_line_error(run_cli("record --flight 30s --flight-mem 100K" + c + o), 2, "--flight-mem 100K is below 1M");
  expect_one_line_error(run_cli("record --flight 30s --flight-mem lots" + c + o), 2, "--flight-mem");
  EXPECT_FALSE(std::filesystem::exists(dir / "fl")) << "nothing made on a usage error";
  // the DIR is checked before attaching: a symlink is refused with exit 1
  ASSERT_EQ(::symlink(dir.path.c_str(), (dir / "ln").c_str()), 0);
  expect_one_line_error(run_cli("record --flight 30s" + c + " -o " + dir / "ln"), 1,
                        "is a symlink: not followed (name the directory itself)");
}

TEST(RecordingCli, RecordStartAtWaitsForTheWallClockInstant) {
  expect_one_line_error(run_cli("record --start-at 1000 -d 1 -o x.shot"), 2, "--start-at 1000 is");
  expect_one_line_error(run_cli("record --start-at @0 -d 1 -o x.shot"), 2, "--start-at '@0'");
  expect_one_line_error(run_cli("record --start-at tomorrow -d 1 -o x.shot"), 2, "--start-at 'tomorrow'");
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  TempDir dir("cli_start_at");
  const std::string path = dir / "s.shot";
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const uint64_t launched = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  CliRun r = run_cli(fmt::format("record --start-at @2 -d 1 -i 100ms -q -o {}", path));
  ASSERT_EQ(r.status, 0) << r.err;
  // Attaching takes about 1.5 s (more when other tests load both cores): when it ends past
  // the instant, record says so and starts at once, which is a case of its own.
  const bool late = r.err.find("attaching the probes took until") != std::string::npos;
  r = run_cli("info --json " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  const uint64_t start = nlohmann::json::parse(r.out)["start_wall_ns"].get<uint64_t>();
  const uint64_t boundary = start / 2'000'000'000ull * 2'000'000'000ull;
  EXPECT_GT(boundary, launched) << "the baseline is after the first 2 s boundary past the launch, not at once";
  if (!late) EXPECT_LT(start - boundary, 1'000'000'000ull) << "the baseline follows the boundary, not the next one";
}

TEST(RecordingCli, RecordStartAtIsCheckedBeforeAttaching) {
  TempDir dir("cli_startat");
  const std::string o = " -o " + dir / "r.shot";
  expect_one_line_error(run_cli("record --start-at 1000" + o), 2, "--start-at 1000 is ");
  expect_one_line_error(run_cli("record --start-at @0" + o), 2, "the alignment must be at least 1ms");
  expect_one_line_error(run_cli("record --start-at soon" + o), 2, "--start-at 'soon'");
  EXPECT_FALSE(std::filesystem::exists(dir / "r.shot"));
}

// issue 28 item 2: `record --start-at ... --force` opened its output only at the start
// instant, so a symlink planted at the path while it waited (after schedhot-fleet removed the
// old file) made root write through it. The file is now opened at launch: whatever appears at
// the path later is never followed, with or without a file there before (--force replaces
// that one by renaming the new file over the path, which replaces a link, never follows it).
TEST(RecordingCli, RecordStartAtOpensItsFileAtLaunchAndNeverFollowsALinkPlantedLater) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  namespace fs = std::filesystem;
  TempDir dir("cli_start_at_link");
  const std::string victim = dir / "victim", path = dir / "s.shot", done = dir / "done", e = dir / "err";
  for (bool existing : {false, true}) {
    SCOPED_TRACE(existing ? "an earlier file at the path (--force)" : "nothing at the path");
    fs::remove(path);
    fs::remove(done);
    std::ofstream(victim) << "precious\n";
    if (existing) fs::copy_file(kData + "/v1.3-basic.shot", path);
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    const long start = ts.tv_sec + 5;
    std::system(fmt::format("{{ {} record --start-at {} -d 1 -i 100ms -q --force -o {} 2> {}; echo $? > {}; }} &",
                            SCHEDHOT_BIN, start, path, e, done).c_str());
    // Well before the instant (the probes attach meanwhile): the attacker swaps in a link.
    for (int i = 0; i < 25 && !fs::exists(done); ++i) usleep(100'000);
    ASSERT_FALSE(fs::exists(done)) << "record ended before the instant: " << slurp(e);
    fs::remove(path);
    ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
    for (int i = 0; i < 200 && !fs::exists(done); ++i) usleep(100'000);
    usleep(100'000);
    ASSERT_EQ(slurp(done), "0\n") << slurp(e);
    EXPECT_TRUE(slurp(victim) == "precious\n") << "the link planted after the launch was followed: the file it names "
                                                   "now holds " << slurp(victim).size() << " bytes";
    if (existing) {
      // the new recording was renamed over the path: the link is replaced, not followed
      ASSERT_FALSE(fs::is_symlink(path));
      CliRun r = run_cli("info --json " + path);
      ASSERT_EQ(r.status, 0) << r.err;
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_TRUE(j["integrity"]["complete"].get<bool>());
      EXPECT_GE(j["integrity"]["samples"].get<int>(), 2);
      EXPECT_GE(j["start_wall_ns"].get<uint64_t>(), uint64_t(start) * 1'000'000'000ull) << "samples from the instant on";
    } else {
      EXPECT_TRUE(fs::is_symlink(path)) << "the link is left as it is; the recording went to the file opened at launch";
    }
    for (auto& f : fs::directory_iterator(dir.path))
      EXPECT_NE(f.path().filename().string().rfind(fs::path(path).filename().string() + ".", 0), 0u)
          << "no temporary (FILE.XXXXXX) left: " << f.path();
  }
  // Stopped while waiting: nothing recorded, and the file made at launch is gone again.
  fs::remove(path);
  fs::remove(done);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::system(fmt::format("{{ timeout --preserve-status -s INT 4 {} record --start-at {} -d 1 -q -o {} 2> {}; echo $? > {}; }}", SCHEDHOT_BIN,
                          ts.tv_sec + 30, path, e, done).c_str());
  EXPECT_EQ(slurp(done), "130\n") << slurp(e);
  EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << "the file opened at launch is removed when nothing was recorded";
}

TEST(RecordingCli, RecordRotatesOnTheLiveKernel) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  TempDir dir("cli_rotate");
  const std::string path = dir / "r.shot";
  spit(path, slurp(kData + "/v1.1-raw.shot"));  // an earlier run's file: rotated, not overwritten
  CliRun r = run_cli(fmt::format("record -d 8 -i 10ms --max-size 64K --rotate 2 -q -o {}", path));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_TRUE(std::filesystem::exists(path + ".1"));
  EXPECT_FALSE(std::filesystem::exists(path + ".3"));
  for (const std::string& f : {path, path + ".1", path + ".2"}) {
    if (!std::filesystem::exists(f)) continue;
    EXPECT_LE(std::filesystem::file_size(f), 64u << 10) << f;
    auto rd = RecordingReader::open(f);
    EXPECT_GT(read_all(*rd).size(), 1u) << f;
    EXPECT_TRUE(rd->saw_end()) << f;
    EXPECT_TRUE(rd->index().has_value()) << f;
    EXPECT_FALSE(rd->damage().has_value()) << f;
  }
}

// top --record goes through record's driver: the same rotation options, checked the same
// way before attaching, with the same one-line errors.
TEST(RecordingCli, TopChecksRotationOptionsLikeRecord) {
  for (const std::string& bad : {"--max-size 1M", "--rotate 2", "--max-size 1k --rotate 1", "--max-size 12Q --rotate 1",
                                 "--max-size 1M --rotate -1", "--max-size 1M --rotate 1001"}) {
    CliRun rec = run_cli("record -d 1 -o x.shot " + bad);
    CliRun top = run_cli("top -n 1 --record x.shot " + bad);
    expect_one_line_error(top, 2, "");
    EXPECT_EQ(top.status, rec.status) << bad;
    // the same message; the help named is each command's own
    auto no_help = [](std::string e) { return e.substr(0, e.rfind(" (see schedhot ")); };
    EXPECT_EQ(no_help(top.err), no_help(rec.err)) << bad;
    EXPECT_EQ(top.err.find("(see schedhot top --help)") != std::string::npos,
              rec.err.find("(see schedhot record --help)") != std::string::npos)
        << top.err << rec.err;
  }
  EXPECT_FALSE(std::filesystem::exists("x.shot"));
  expect_one_line_error(run_cli("top -n 1 --max-size 1M --rotate 1"), 2, "--max-size needs --record FILE");
  expect_one_line_error(run_cli("top -n 1 --rotate 1"), 2, "--rotate needs --record FILE");
}

// -n 0 would print no table: a usage error before attaching, as its help says "1 or more"
// (it used to run until killed). Under timeout: the unfixed binary never exits as root.
TEST(RecordingCli, TopIterationsZeroIsAUsageError) {
  const std::string e = tmp_path("top_n_err");
  for (const char* n : {"0", "-1"}) {
    const int rc = std::system(
        fmt::format("timeout -s KILL 30 {} top -n {} -i 100ms < /dev/null > /dev/null 2> {}", SCHEDHOT_BIN, n, e).c_str());
    CliRun r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
    r.err = slurp(e);
    expect_one_line_error(r, 2, fmt::format("-n/--iterations must be 1 or more, not {} (leave it out", n));
  }
  unlink(e.c_str());
  CliRun help = run_cli("top --help");
  EXPECT_NE(help.out.find("print this many tables (1 or more)"), std::string::npos) << help.out;
}

TEST(RecordingCli, TopRecordRotatesOnTheLiveKernel) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  TempDir dir("cli_top_rotate");
  const std::string path = dir / "t.shot";
  spit(path, slurp(kData + "/v1.1-raw.shot"));  // an earlier run's file: rotated, not overwritten
  // Plain mode (stdout is a file): 800 tables at 10 ms, about 90 KB uncompressed.
  CliRun r = run_cli(fmt::format("top -i 10ms -n 800 --no-compress --record {} --max-size 64K --rotate 2", path));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.rfind(fmt::format("schedhot: wrote 801 samples, "), 0), 0u) << r.err;
  EXPECT_NE(r.err.find(" rotation"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  ASSERT_TRUE(std::filesystem::exists(path + ".1"));
  EXPECT_FALSE(std::filesystem::exists(path + ".3"));
  size_t distinct = 0, files = 0;
  bool earlier_kept = false;
  for (const std::string& f : {path + ".2", path + ".1", path}) {
    if (!std::filesystem::exists(f)) continue;
    EXPECT_LE(std::filesystem::file_size(f), 64u << 10) << f;
    auto rd = RecordingReader::open(f);
    auto got = read_all(*rd);
    EXPECT_GT(got.size(), 1u) << f;
    EXPECT_TRUE(rd->saw_end()) << f;
    EXPECT_TRUE(rd->index().has_value()) << f;
    EXPECT_FALSE(rd->damage().has_value()) << f;
    if (rd->meta().command.find("top ") != std::string::npos) {  // not the earlier run's file
      distinct += got.size();
      ++files;
    } else {
      earlier_kept = true;
    }
  }
  // Consecutive files share one sample. With the earlier run's file still kept, none of
  // this run's files was dropped: every sample is there, once.
  EXPECT_GE(files, 2u);
  if (earlier_kept) EXPECT_EQ(distinct - (files - 1), 801u);
}

TEST(RecordingCli, ReplayFollowsARotatingRecording) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  expect_one_line_error(run_cli("replay --follow /nonexistent/x.shot"), 1, "No such file or directory");
  TempDir dir("cli_follow");
  const std::string path = dir / "r.shot";
  // The writer starts first; the follower prints a plain table per interval (stdout is a
  // file) from the newest one on, goes on in the new file at each rotation, and exits
  // once the writer has closed the last file.
  std::string rec_err = dir / "rec.err";
  // --rotate 20: every file is kept, so the files count every rotation (how many there are
  // depends on the samples' size: the gap state's GAPS frames made them larger)
  ASSERT_EQ(std::system(fmt::format("({} record -d 12 -i 10ms --no-compress --max-size 64K --rotate 20 -q -o {} 2> {} &)", SCHEDHOT_BIN,
                                    path, rec_err)
                            .c_str()),
            0);
  for (int i = 0; i < 300 && !std::filesystem::exists(path); ++i) usleep(10'000);
  CliRun r = run_cli("replay --follow " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(slurp(rec_err), "");
  ASSERT_TRUE(std::filesystem::exists(path + ".1")) << "the recording did not rotate";
  // "sample k/N" of every table printed, in order.
  std::vector<std::pair<int, int>> shown;
  for (size_t at = r.out.find("  sample "); at != std::string::npos; at = r.out.find("  sample ", at + 1)) {
    int k = 0, n = 0;
    if (std::sscanf(r.out.c_str() + at, "  sample %d/%d", &k, &n) == 2) shown.emplace_back(k, n);
  }
  ASSERT_GT(shown.size(), 20u);
  int restarts = 0;
  for (size_t i = 1; i < shown.size(); ++i) {
    if (shown[i].first < shown[i - 1].first) {
      ++restarts;
      EXPECT_EQ(shown[i].first, 2) << "a new file starts at its first interval";
    } else {
      EXPECT_EQ(shown[i].first, shown[i - 1].first + 1) << "every interval is printed once, in order";
    }
  }
  size_t files = 0;
  while (std::filesystem::exists(files ? fmt::format("{}.{}", path, files) : path)) ++files;
  EXPECT_EQ(restarts, int(files) - 1) << "one restart per rotation seen";
  EXPECT_NE(r.out.find(fmt::format("file {} after rotation", files)), std::string::npos) << "plain output names the rotation";
  // The last table is the last interval of the file being written at the end.
  auto rd = RecordingReader::open(path);
  const int last_n = int(read_all(*rd).size());
  EXPECT_EQ(shown.back().first, last_n);
  EXPECT_EQ(shown.back().second, last_n);
}

TEST(RecordingCli, RotationNeverMovesOrDeletesWhatIsNotARecording) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  TempDir dir("cli_rotate_foreign");
  const std::string notes = dir / "notes.txt";
  spit(notes, "important\n");
  expect_one_line_error(run_cli(fmt::format("record -d 1 --max-size 64K --rotate 0 -q -o {}", notes)), 1,
                        "exists and is not a schedhot recording; rotation would move it away");
  EXPECT_EQ(slurp(notes), "important\n");
  EXPECT_FALSE(std::filesystem::exists(notes + ".1"));
  const std::string old = dir / "old.shot";
  spit(old, slurp(kData + "/v1.1-raw.shot"));
  expect_one_line_error(run_cli(fmt::format("record -d 1 --max-size 64K --rotate 0 -q -o {}", old)), 1,
                        "--rotate 0 would delete it; pass --force");
  EXPECT_EQ(slurp(old), slurp(kData + "/v1.1-raw.shot"));
}

TEST(RecordingCli, RecordOnAFullDiskExitsWithOneLine) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  TempDir dir("cli_full");
  ASSERT_EQ(::mount("tmpfs", dir.path.c_str(), "tmpfs", 0, "size=64k"), 0) << strerror(errno);
  const std::string path = dir / "r.shot";
  CliRun r = run_cli(fmt::format("record -d 60 -i 10ms --no-compress -q -o {}", path));
  expect_one_line_error(r, 1, "disk full (ENOSPC); complete frames are kept");
  {
    auto rd = RecordingReader::open(path);
    EXPECT_GT(read_all(*rd).size(), 10u);
    EXPECT_FALSE(rd->damage().has_value()) << rd->damage()->reason;
    EXPECT_FALSE(rd->saw_end());
  }
  EXPECT_EQ(::umount2(dir.path.c_str(), MNT_DETACH), 0);
}

TEST(RecordingCli, RecordForcedOntoADeviceOrFifoNeverRemovesIt) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  TempDir dir("cli_record_dev");
  // A copy of /dev/full: the header cannot be written; the device must stay (it was deleted).
  const std::string full = dir / "X";
  ASSERT_EQ(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0) << strerror(errno);
  expect_one_line_error(run_cli(fmt::format("record -d 1 -o {} -q", full)), 1, full + " exists; choose another name or pass --force");
  expect_one_line_error(run_cli(fmt::format("record -d 1 -o {} -f -q", full)), 1,
                        full + ": cannot write the header and metadata: disk full (ENOSPC); nothing recorded");
  struct stat st {};
  ASSERT_EQ(::lstat(full.c_str(), &st), 0) << "the device was deleted";
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 7));
  // The same for top --record.
  expect_one_line_error(run_cli(fmt::format("top -n 2 -i 100ms --record {} -f < /dev/null", full)), 1,
                        full + ": cannot write the header and metadata: disk full (ENOSPC); nothing recorded");
  ASSERT_EQ(::lstat(full.c_str(), &st), 0) << "top --record deleted the device";
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A FIFO with nobody reading: one line at once, not a wait; the FIFO stays.
  const std::string fifo = dir / "F";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line_error(run_cli(fmt::format("record -d 1 -o {} -f -q", fifo)), 1,
                        fifo + " is a FIFO with no reader; start the reader first");
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A copy of /dev/null takes the recording in place.
  const std::string null = dir / "N";
  ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << strerror(errno);
  CliRun r = run_cli(fmt::format("record -d 1 -i 100ms -o {} -f -q", null));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(RecordingCli, NoProbeAttachedIsOneErrorForEveryCollectingCommand) {
  if (!can_record()) GTEST_SKIP() << "needs root and a kernel where probes attach";
  TempDir dir("cli_none");
  // cpupri_find has no tracepoint proxy: with --backend proxy it attaches on no kernel.
  const std::string none = " --backend proxy --probes cpupri_find";
  for (const std::string cmd : {"record -d 1 -o " + dir / "n.shot", std::string("report --live -d 1"), std::string("top -n 1")})
    expect_one_line_error(run_cli(cmd + none + " < /dev/null"), 1,
                          "no probe could attach: --backend proxy: this probe has no tracepoint proxy (`schedhot "
                          "probes` says more)");
  EXPECT_FALSE(std::ifstream(dir / "n.shot").good()) << "no empty recording left behind";
}

TEST(RecordingCli, ProbeListsNamingNoProbeAreRefused) {
  // Checked before anything loads: a user's typo never means "all probes" or "none".
  expect_one_line_error(run_cli("probes --probes ,,,"), 2, "--probes ',,,' names no probe (leave it out for all)");
  TempDir dir("cli_probes");
  expect_one_line_error(run_cli("record -d 1 -o " + dir / "p.shot" + " --probes idle,nohz"), 2,
                        "--probes: no probe named 'nohz'");
  EXPECT_FALSE(std::ifstream(dir / "p.shot").good());
}

TEST(RecordingCli, TopAndFollowStopWhenTheirOutputGoes) {
  // A closed pipe ends `top` (plain mode) and `replay --follow` at their next table,
  // quietly; they do not sample into nothing until killed. A closed stdout is EBADF.
  TempDir dir("cli_gone");
  const std::string st = dir / "status", e = dir / "err";
  auto gone_reader = [&](const std::string& cmd) {
    std::system(fmt::format("{{ sleep 0.3; timeout 20 {} {} 2> {}; echo $? > {}; }} | (exec 0<&-; sleep 1)", SCHEDHOT_BIN, cmd,
                            e, st).c_str());
    return std::make_pair(slurp(st), slurp(e));
  };
  // Following a closed recording that is not being written: ends at once anyway; with a
  // reader gone it must end the same, exit 1, no message.
  auto [rs, re] = gone_reader("replay --follow " + kData + "/tui16.shot");
  EXPECT_EQ(rs, "1\n");
  EXPECT_EQ(re, "");
  if (!can_record()) GTEST_SKIP() << "the rest needs root and a kernel where probes attach";
  auto [ts, te] = gone_reader("top -i 100ms");
  EXPECT_EQ(ts, "1\n") << "124 is timeout's: top kept running";
  EXPECT_EQ(te, "");
  std::system(fmt::format("{} top -n 1 >&- 2> {}; echo $? > {}", SCHEDHOT_BIN, e, st).c_str());
  EXPECT_EQ(slurp(st), "1\n");
  EXPECT_EQ(slurp(e), "schedhot: cannot write to stdout: Bad file descriptor\n");
}

// Sample times going backwards made info print a span of 18446744068 s; now every view
// stops at that sample as at any damage, and says why.
TEST(RecordingCli, SampleTimeGoingBackwardsIsDamageInEveryView) {
  TempDir dir("cli_backwards");
  Meta m = synthetic_meta(2);
  std::vector<Sample> s = make_samples(m, 6);
  s[3].mono_ns = s[2].mono_ns - 4'000'000'000;  // 4 s before sample 2
  {
    RecordingWriter w(dir / "b.shot", m, WriterOptions{});
    for (auto& x : s) w.write_sample(x);
    w.close();
  }
  CliRun r = run_cli("info " + dir / "b.shot");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("3 in 5 frames over 2.000 s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": sample time goes backwards (4.000 s before the previous sample's); the 3 samples before it "
                       "are intact"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("end        DAMAGED at byte "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("18446744"), std::string::npos) << r.out;
  r = run_cli("info --json " + dir / "b.shot");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["integrity"]["span_s"].get<double>(), 2.0);
  EXPECT_EQ(j["integrity"]["samples"], 3);
  r = run_cli("export --format json " + dir / "b.shot");
  EXPECT_EQ(r.status, 0) << r.err;
  expect_one_line_error(r, 0, "is damaged at byte");
  EXPECT_EQ(nlohmann::json::parse(r.out)["intervals"].size(), 2u);
  r = run_cli("report --json --from 1s " + dir / "b.shot");
  expect_one_line_error(r, 0, "sample time goes backwards");
}

TEST(RecordingCli, MessagesSayWhatIsWrong) {
  // `--cpus 0,,1` said "a range needs a CPU on each side of '-'".
  expect_one_line_error(run_cli("export " + kData + "/v1.1-basic.shot --cpus 0,,1"), 2,
                        "--cpus: bad CPU list '0,,1': an empty item between two commas");
  expect_one_line_error(run_cli("export " + kData + "/v1.1-basic.shot --cpus 0-70000"), 2,
                        "--cpus: bad CPU list '0-70000': CPU 70000 is not a CPU number");
  // A META missing a key said "bad metadata: bad metadata: [json...]".
  TempDir dir("cli_meta");
  Meta m = synthetic_meta(2);
  nlohmann::json j = m;
  j.erase("host");
  spit(dir / "m.shot", slurp(kData + "/v1.1-raw.shot").substr(0, kFileHeaderBytes) + make_frame(FrameType::meta, 0, 0, j.dump()));
  CliRun r = run_cli("info " + dir / "m.shot");
  expect_one_line_error(r, 1, "m.shot: bad metadata: missing host");
  EXPECT_EQ(r.err.find("[json.exception"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("bad metadata: bad metadata"), std::string::npos) << r.err;
  // A crafted interval_ns (-5 read as 2^64-5) made every --from/--to window the whole file.
  j = m;
  j["interval_ns"] = uint64_t(0) - 5;
  spit(dir / "iv.shot", slurp(kData + "/v1.1-raw.shot").substr(0, kFileHeaderBytes) + make_frame(FrameType::meta, 0, 0, j.dump()));
  expect_one_line_error(run_cli("report " + dir / "iv.shot" + " --from 10 --to 20"), 1,
                        "iv.shot: bad metadata: sample interval 18446744073709551611 ns out of range (at most 24 h)");
  // A META the model cannot use or that would rank a host wrongly (an attacker's pass): a
  // cacheline of 0 B stopped a whole fleet report with "line_of: line size must be
  // positive"; online CPUs beyond the recording's made the fleet severity 2000x smaller; a
  // probe listed twice was reported twice.
  const std::string head = slurp(kData + "/v1.1-raw.shot").substr(0, kFileHeaderBytes);
  const auto refused = [&](const char* name, const nlohmann::json& meta, const std::string& why) {
    spit(dir / name, head + make_frame(FrameType::meta, 0, 0, meta.dump()));
    expect_one_line_error(run_cli("report " + dir / name), 1, std::string(name) + ": bad metadata: " + why);
  };
  for (int bytes : {0, -64, 3, 1 << 30}) {
    j = m;
    j["host"]["cacheline_bytes"] = bytes;
    refused("cl.shot", j, fmt::format("cacheline size {} B is not a power of two in 16..4096", bytes));
  }
  j = m;
  j["host"]["online"] = "0-8191";
  refused("on.shot", j, "online CPU 2 of a recording of 2 CPUs");
  j = m;
  j["probes"].push_back(j["probes"][0]);
  refused("dup.shot", j, fmt::format("probe {} is listed twice", m.probes[0].name));
  // A key of the wrong type said "[json.exception.type_error.302] type must be string, but is number".
  j = m;
  j["host"]["kernel_release"] = 612;
  refused("type.shot", j, "host.kernel_release: expected a string, found a number");
  j = m;
  j["probes"][0]["fields"][0]["nwords"] = "one";
  refused("field.shot", j, "probes[0].fields[0].nwords: expected a number, found a string");
  // export -o a FIFO nobody reads waited forever; record says it at once, and so does export.
  ASSERT_EQ(mkfifo((dir / "ff").c_str(), 0600), 0);
  expect_one_line_error(run_cli("export -o " + dir / "ff" + " " + kData + "/v1.4-basic.shot"), 1,
                        "ff is a FIFO with no reader; start the reader first");
}

// --btf FILE: vmlinux BTF from a file (a kernel whose BTF is elsewhere). A bad FILE is one
// line and exit 1, as a bad --system-map; the kernel's own file works like the default.
TEST(RecordingCli, BtfOption) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (probes checks privileges first)";
  TempDir dir("cli_btf");
  expect_one_line_error(run_cli("probes --btf /nonexistent/vmlinux"), 1,
                        "--btf /nonexistent/vmlinux: No such file or directory (ENOENT)");
  expect_one_line_error(run_cli("probes --btf /dev/null"), 1, "--btf /dev/null: not a regular file");
  spit(dir / "junk", "not BTF, not ELF, just some bytes of text");
  expect_one_line_error(run_cli("probes --btf " + dir / "junk"), 1,
                        "--btf " + dir / "junk" + ": no BTF in it (neither raw BTF nor an ELF file with a .BTF section");
  expect_one_line_error(run_cli("record -d 1 -q -o " + dir / "r.shot" + " --btf " + dir / "junk"), 1, "no BTF in it");
  EXPECT_FALSE(std::filesystem::exists(dir / "r.shot"));
  if (std::filesystem::exists("/sys/kernel/btf/vmlinux")) {
    // Raw BTF padded with junk was accepted and held in memory whole (1 GB for 500 MB).
    const std::string padded = dir / "padded.btf";
    spit(padded, slurp("/sys/kernel/btf/vmlinux") + std::string(100, 'x'));
    CliRun p = run_cli("probes --btf " + padded);
    expect_one_line_error(p, 1, "--btf " + padded + ": raw BTF whose header says");
    EXPECT_NE(p.err.find("(damaged or padded)"), std::string::npos) << p.err;
  }
  if (!can_record() || !std::filesystem::exists("/sys/kernel/btf/vmlinux"))
    GTEST_SKIP() << "needs a kernel where probes attach, with /sys/kernel/btf/vmlinux";
  CliRun a = run_cli("probes --json");
  CliRun b = run_cli("probes --json --btf /sys/kernel/btf/vmlinux");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  ASSERT_EQ(ja["probes"].size(), jb["probes"].size());
  int attached = 0;
  for (size_t i = 0; i < ja["probes"].size(); ++i) {
    const auto &pa = ja["probes"][i], &pb = jb["probes"][i];
    EXPECT_EQ(pa["probe"], pb["probe"]);
    EXPECT_EQ(pa["attached"], pb["attached"]) << pa["probe"] << ": " << pb["reason"];
    EXPECT_EQ(pa["backend"], pb["backend"]) << pa["probe"];
    EXPECT_EQ(pa["symbol"], pb["symbol"]) << pa["probe"];
    attached += pa["attached"].get<bool>();
  }
  EXPECT_GT(attached, 0);
  CliRun rec = run_cli("record -d 1 -i 200ms -q -o " + dir / "r.shot" + " --btf /sys/kernel/btf/vmlinux");
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto rd = RecordingReader::open(dir / "r.shot");
  EXPECT_GE(read_all(*rd).size(), 2u);
}

// CPU hotplug (issue 9.3): possible 0-127, CPU 0 online, CPU 1 offline at the start and
// online from sample 3 on. Export's rows are the CPUs online at some point, CPU 1's cells
// are empty/null while it was offline, the totals are the sums of the rows; every view
// takes --cpus 1 and refuses a CPU that was never online with one line.
TEST(RecordingCli, HotplugRecordingShowsTheCpuOnlinedMidRun) {
  TempDir dir("cli_hotplug");
  Meta m = synthetic_meta(128);
  m.host.online = {0};
  write_samples(dir / "h.shot", m, make_hotplug_samples(m, 8, 1, 3, 100));
  const std::string f = dir / "h.shot";
  CliRun r = run_cli("export " + f + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cpus"], nlohmann::json({0, 1}));
  ASSERT_EQ(j["intervals"].size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    const auto& iv = j["intervals"][i];
    for (auto& [name, row] : iv["values"].items()) {
      if (row.is_null() || name.find("_per_s") == std::string::npos) continue;
      SCOPED_TRACE(name + " interval " + std::to_string(i));
      ASSERT_EQ(row.size(), 2u);
      EXPECT_EQ(row[1].is_null(), i + 1 < 3) << "CPU 1 is offline at both ends of intervals 0 and 1";
      double sum = row[0].get<double>() + (row[1].is_null() ? 0 : row[1].get<double>());
      EXPECT_NEAR(iv["total"][name].get<double>(), sum, 1e-6 * (1 + sum));
    }
  }
  r = run_cli("export " + f + " --cpus 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines(r.out), 1u + 7);
  EXPECT_EQ(r.out.find("\n1.000000,1,,"), r.out.find('\n')) << r.out.substr(0, 400);  // first interval: empty cells
  expect_one_line_error(run_cli("export " + f + " --cpus 100"), 2,
                        "--cpus: CPU 100 was never online in the recording (online at some point: 0-1)");
  expect_one_line_error(run_cli("export " + f + " --cpus 1 --to 1s"), 2,
                        "--cpus: CPU 1 was never online in the window (online at some point: 0)");
  r = run_cli("report " + f + " --json --all-cpus");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["cpus_total"], 2);
  r = run_cli("replay " + f + " --cpus 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Per CPU: 1 of 2 CPUs"), std::string::npos) << r.out.substr(0, 600);
  expect_one_line_error(run_cli("replay " + f + " --cpus 100"), 2,
                        "--cpus '100': CPU 100 was never online in the recording (online at some point: 0-1)");
}

// A CPU online part of the window is rated over its online time, not the whole window
// (v1.2-hotplug: 70 samples 1 s apart; CPU 3 online from sample 10, CPU 2 until sample
// 49: measured 60 s and 50 s of the 69 s window), in the per-CPU table (with online_s)
// and in each probe's per_cpu; a CPU online throughout keeps the window's rate.
TEST(RecordingCli, ReportRatesACpuOnlinePartOfTheWindowOverItsOnlineTime) {
  CliRun r = run_cli("report " + kData + "/v1.2-hotplug.shot --json --all-cpus");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["window"]["seconds"], 69.0);
  const std::map<int, double> online = {{0, 69}, {1, 69}, {2, 50}, {3, 60}};
  for (const auto& p : j["probes"]) {
    if (p["per_cpu"].is_null()) continue;
    for (const auto& row : p["per_cpu"]) {
      const int c = row["cpu"].get<int>();
      SCOPED_TRACE(p["name"].get<std::string>() + " CPU " + std::to_string(c));
      EXPECT_DOUBLE_EQ(row["rate_per_s"].get<double>(), row["total"].get<double>() / online.at(c));
    }
  }
  ASSERT_EQ(j["cpus"].size(), 4u);
  for (const auto& row : j["cpus"]) {
    const int c = row["cpu"].get<int>();
    SCOPED_TRACE("table CPU " + std::to_string(c));
    if (c >= 2) EXPECT_EQ(row["online_s"], online.at(c));
    else EXPECT_FALSE(row.contains("online_s"));
    for (const auto& p : j["probes"]) {
      if (p["per_cpu"].is_null() || p["name"] != "idle") continue;
      for (const auto& pr : p["per_cpu"])
        if (pr["cpu"] == c) EXPECT_DOUBLE_EQ(row["idle/s"].get<double>(), pr["rate_per_s"].get<double>());
    }
  }
  r = run_cli("report " + kData + "/v1.2-hotplug.shot --all-cpus");
  EXPECT_NE(r.out.find("rates of CPUs online part of the 69.0 s window are over their online time: CPU 3 60.0 s, CPU 2 50.0 s"),
            std::string::npos) << r.out;
}

TEST(RecordingCli, DiffOfAFileWithItselfChangesNothing) {
  const std::string f = kData + "/v1.3-basic.shot";
  CliRun r = run_cli(fmt::format("diff {} {} --json", f, f));
  ASSERT_EQ(r.status, 0) << "A/A: exit 0 (no significant change) " << r.err << r.out.substr(0, 400);
  auto d = nlohmann::json::parse(r.out);
  EXPECT_EQ(d["significant"], false);
  int compared = 0;
  for (auto& p : d["probes"]) {
    if (p["verdict"] == "not compared") continue;
    ++compared;
    EXPECT_EQ(p["verdict"], "no change") << p.dump();
    if (!p["rate"].is_null() && !p["rate"]["ratio"].is_null()) EXPECT_DOUBLE_EQ(p["rate"]["ratio"].get<double>(), 1.0) << p.dump();
    if (!p["latency_ns"].is_null())
      for (const char* k : {"p10", "p50", "p90", "p98", "p99"}) EXPECT_EQ(p["latency_ns"][k]["a"], p["latency_ns"][k]["b"]) << k;
  }
  EXPECT_GE(compared, 5);
}

TEST(RecordingCli, DiffWindowsOfOneFileAndItsExitStatus) {
  const std::string f = kData + "/v1.3-basic.shot";  // 70 samples, 1 s apart
  CliRun r = run_cli(fmt::format("diff {} --a 0:1 --b 1s: --json", f));
  ASSERT_EQ(r.status, 3) << "a significant change exits 3: " << r.err;
  auto d = nlohmann::json::parse(r.out);
  EXPECT_EQ(d["a"]["window"], "0:1");
  EXPECT_EQ(d["a"]["intervals"], 1);
  EXPECT_EQ(d["b"]["intervals"], 68);
  EXPECT_EQ(d["significant"], true);
  for (auto& p : d["probes"])  // no interval of B/A where A counted nothing
    if (p["rate"].is_object() && p["rate"]["ratio"].is_null()) EXPECT_TRUE(p["rate"]["interval"].is_null()) << p.dump();
  // Usage errors exit 2, unreadable input 1, always one line.
  expect_one_line_error(run_cli("diff " + f), 2, "diff of one file needs two windows");
  expect_one_line_error(run_cli(fmt::format("diff {} --from 1 --a 0:5 --b 5:", f)), 2, "--from/--to apply to both files");
  expect_one_line_error(run_cli(fmt::format("diff {} {} --a 0:5", f, f)), 2, "--a/--b pick two windows of one file");
  expect_one_line_error(run_cli(fmt::format("diff {} --a 5:1 --b 5:", f)), 2, "--a TO must be later than --a FROM");
  expect_one_line_error(run_cli(fmt::format("diff {} --a 0:5 --b x:", f)), 2, "--b FROM");
  expect_one_line_error(run_cli(fmt::format("report {} --p99-flag 5us", f)), 2, "--p99-flag is for --fleet");
  expect_one_line_error(run_cli(fmt::format("diff {} {} {}", f, f, f)), 2, "diff needs A.shot B.shot");
  expect_one_line_error(run_cli(fmt::format("diff {} --a 0:0.5 --b 1:", f)), 1, "need two for an interval");
  expect_one_line_error(run_cli(fmt::format("diff {} /nonexistent.shot", f)), 1, "cannot open /nonexistent.shot");
  expect_one_line_error(run_cli(fmt::format("diff {} {}", f, kData + "/../data/golden/cases.txt")), 1, "");
}

TEST(RecordingCli, DiffAgainstAProxyWithoutDurationTestsNoLatency) {
  // B's nohz_exit and cpupri_set are proxies that cannot time the function: their
  // latencies are "-" and never a significant 0 (B/A 0.00*).
  CliRun r = run_cli(fmt::format("diff {} {} --json", kData + "/vm-6.12-kprobe.shot", kData + "/vm-6.12-proxy.shot"));
  ASSERT_TRUE(r.status == 0 || r.status == 3) << r.err;
  auto d = nlohmann::json::parse(r.out);
  int seen = 0;
  for (auto& p : d["probes"]) {
    if (p["probe"] != "nohz_exit" && p["probe"] != "cpupri_set") continue;
    ++seen;
    ASSERT_FALSE(p["latency_ns"].is_null()) << "A measured it";
    for (const char* k : {"p10", "p50", "p99", "max"}) {
      EXPECT_GT(p["latency_ns"][k]["a"].get<double>(), 0) << p["probe"] << " " << k;
      EXPECT_TRUE(p["latency_ns"][k]["b"].is_null()) << p["probe"] << " " << k;
      EXPECT_TRUE(p["latency_ns"][k]["ratio"].is_null());
      EXPECT_NE(p["latency_ns"][k].value("significant", false), true);
    }
    EXPECT_FALSE(p["rate"].is_null()) << "the proxy counts calls";
  }
  EXPECT_EQ(seen, 2);
  CliRun t = run_cli(fmt::format("diff {} {}", kData + "/vm-6.12-kprobe.shot", kData + "/vm-6.12-proxy.shot"));
  EXPECT_EQ(t.out.find("0.00*"), std::string::npos) << t.out;
}

TEST(RecordingCli, FleetReportRanksHostsAndListsTheOnesWithoutFigures) {
  namespace fs = std::filesystem;
  const fs::path dir = tmp_path("fleet_dir");
  fs::remove_all(dir);
  fs::create_directories(dir / "h612");
  fs::create_directories(dir / "down");
  fs::copy_file(kData + "/vm-6.1-noarat.shot", dir / "noarat61.shot");  // loose DIR/<host>.shot
  fs::copy_file(kData + "/vm-6.12-kprobe.shot", dir / "h612" / "recording.shot");
  fs::copy_file(kData + "/v1.3-unclosed.shot", dir / "cut.shot");     // damaged: figures up to the damage
  {
    std::ofstream st(dir / "down" / "state.json");
    st << R"({"schema":"schedhot.fleet-host/1","host":"down","steps":{},)"
       << R"("failure":{"step":"preflight","name":"unreachable","detail":"Connection refused"}})";
  }
  CliRun r = run_cli(fmt::format("report --fleet {} --json", dir.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  auto d = nlohmann::json::parse(r.out);
  EXPECT_EQ(d["hosts_total"], 4);
  EXPECT_EQ(d["counts"]["reported"], 2);
  EXPECT_EQ(d["counts"]["partial"], 1);
  EXPECT_EQ(d["counts"]["failed"], 1);
  ASSERT_EQ(d["hosts"].size(), 4u);
  // Ranked by severity, highest first: the no-ARAT 6.1 guest (tick_broadcast_lock bouncing) leads.
  EXPECT_EQ(d["hosts"][0]["host"], "noarat61");
  EXPECT_EQ(d["hosts"][0]["rank"], 1);
  double prev = 1e300;
  for (int i = 0; i < 3; ++i) {
    const double s = d["hosts"][i]["severity"].get<double>();
    EXPECT_LE(s, prev);
    prev = s;
    // severity = (stall + bcast wait) / online CPUs / 1000, as documented
    const auto& h = d["hosts"][i];
    const auto& w = h["bcast_wait_ns_per_s"];
    EXPECT_TRUE(w.is_null() || w.is_number());
    EXPECT_NEAR(s, (h["stall_ns_per_s"].get<double>() + (w.is_number() ? w.get<double>() : 0)) /
                       h["cpus_online"].get<double>() / 1000, 1e-9 * s + 1e-12);
    if (h["probes"]["bcast_wait"]["status"] != "measured") {
      EXPECT_TRUE(w.is_null()) << "blind or unavailable is null, never 0: " << h["host"];
      EXPECT_TRUE(h.contains("severity_note")) << h["host"];
    }
  }
  EXPECT_EQ(d["hosts"][3]["host"], "down");
  EXPECT_TRUE(d["hosts"][3]["rank"].is_null());
  EXPECT_EQ(d["hosts"][3]["why"], "unreachable (preflight): Connection refused");
  bool damaged_flag = false;
  for (auto& h : d["hosts"])
    if (h["host"] == "cut") {
      EXPECT_EQ(h["status"], "partial");
      for (auto& f : h["flags"]) damaged_flag |= f.get<std::string>().rfind("damaged at byte", 0) == 0;
    }
  EXPECT_TRUE(damaged_flag) << "a damaged recording is listed with what was recovered";
  // Fleet-wide percentiles merge the histograms: the count is the hosts' counts summed.
  CliRun one = run_cli(fmt::format("report {} --json", (dir / "h612" / "recording.shot").string()));
  CliRun two = run_cli(fmt::format("report {} --json", (dir / "noarat61.shot").string()));
  CliRun three = run_cli(fmt::format("report {} --json", (dir / "cut.shot").string()));
  uint64_t want = 0;
  for (auto* x : {&one, &two, &three}) {
    ASSERT_FALSE(x->out.empty()) << x->status << " " << x->err;
    const auto doc = nlohmann::json::parse(x->out);
    for (auto& p : doc["probes"])
      if (p["name"] == "cpupri_set" && p["latency_ns"].is_object()) want += p["latency_ns"]["count"].get<uint64_t>();
  }
  bool found = false;
  for (auto& l : d["fleet_latency"])
    if (l["probe"] == "cpupri_set") {
      found = true;
      EXPECT_EQ(l["count"].get<uint64_t>(), want);
    }
  EXPECT_TRUE(found);
  // --top 1 keeps the partial and failed hosts; text and CSV; errors are one line.
  auto top = nlohmann::json::parse(run_cli(fmt::format("report --fleet {} --json --top 1", dir.string())).out);
  EXPECT_EQ(top["hosts"].size(), 3u);
  EXPECT_EQ(top["not_shown"], 1);
  CliRun txt = run_cli(fmt::format("report --fleet {}", dir.string()));
  EXPECT_NE(txt.out.find("down: unreachable (preflight)"), std::string::npos) << txt.out;
  CliRun csv = run_cli(fmt::format("report --fleet {} --csv", dir.string()));
  EXPECT_EQ(lines(csv.out), 5u) << csv.out;
  expect_one_line_error(run_cli("report --fleet /nonexistent-dir"), 1, "not a directory");
  expect_one_line_error(run_cli(fmt::format("report --fleet {} --sort cpu", dir.string())), 2, "--fleet DIR reads");
  expect_one_line_error(run_cli(fmt::format("report --fleet {} --json --csv", dir.string())), 2, "pick one");
  fs::create_directories(dir / "empty");
  expect_one_line_error(run_cli(fmt::format("report --fleet {}", (dir / "empty").string())), 1, "no host in it");
  fs::remove_all(dir);
}

TEST(RecordingCli, FleetReportSurvivesHostileStateFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = tmp_path("fleet_hostile");
  fs::remove_all(dir);
  fs::create_directories(dir / "fifo");
  fs::create_directories(dir / "typed");
  fs::copy_file(kData + "/v1.3-basic.shot", dir / "fifo" / "recording.shot");
  ASSERT_EQ(mkfifo((dir / "fifo" / "state.json").c_str(), 0600), 0);  // opening it would block
  {
    std::ofstream st(dir / "typed" / "state.json");
    st << R"({"failure":{"step":1,"name":null,"detail":{"a":1}}})";
  }
  fs::create_symlink("/nonexistent", dir / "dangling.shot");
  // A state.json linked to a secret: not followed (root read it and the parse error quoted
  // its first token); one that is not JSON is said by byte, without its bytes.
  fs::create_directories(dir / "linked");
  fs::copy_file(kData + "/v1.3-basic.shot", dir / "linked" / "recording.shot");
  fs::create_symlink("/etc/shadow", dir / "linked" / "state.json");
  fs::create_directories(dir / "garbled");
  fs::copy_file(kData + "/v1.3-basic.shot", dir / "garbled" / "recording.shot");
  std::ofstream(dir / "garbled" / "state.json") << "root:secret";
  CliRun r = run_cli(fmt::format("report --fleet {} --json", dir.string()));  // hung on the FIFO before
  ASSERT_EQ(r.status, 0) << r.err;
  auto d = nlohmann::json::parse(r.out);
  EXPECT_EQ(d["hosts_total"], 5) << "a dangling loose file is a host that failed, not nothing";
  std::map<std::string, nlohmann::json> by;
  for (auto& h : d["hosts"]) by[h["host"]] = h;
  EXPECT_EQ(by["fifo"]["status"], "reported");
  bool noted = false;
  for (auto& f : by["fifo"]["flags"]) noted |= f == "state.json: not a regular file";
  EXPECT_TRUE(noted) << by["fifo"].dump();
  EXPECT_EQ(by["typed"]["why"], "null (1): {\"a\":1}");
  EXPECT_NE(by["dangling"]["why"].get<std::string>().find("cannot open"), std::string::npos);
  const std::string linked = by["linked"].dump(), garbled = by["garbled"].dump();
  EXPECT_NE(linked.find("state.json: a symbolic link, not schedhot-fleet's file"), std::string::npos) << linked;
  EXPECT_NE(garbled.find("state.json: not JSON (a syntax error at byte 1)"), std::string::npos) << garbled;
  EXPECT_EQ(garbled.find("secret"), std::string::npos) << garbled;
  EXPECT_EQ(garbled.find("'r'"), std::string::npos) << garbled;
  fs::remove_all(dir);
}

TEST(RecordingCli, FleetReportKeepsDuplicateAndBidiHostNamesApart) {
  namespace fs = std::filesystem;
  const TempDir tmp("fleet_names");  // removed at the end
  const fs::path dir = tmp.path;
  const std::string rlo = "evil\xe2\x80\xae" "cba";  // U+202E RIGHT-TO-LEFT OVERRIDE in a directory name
  fs::create_directories(dir / "ok");
  fs::create_directories(dir / rlo);
  fs::copy_file(kData + "/v1.3-basic.shot", dir / "ok" / "recording.shot");
  fs::copy_file(kData + "/vm-6.12-kprobe.shot", dir / "ok.shot");
  fs::copy_file(kData + "/vm-7.3.shot", dir / rlo / "recording.shot");
  CliRun r = run_cli(fmt::format("report --fleet {} --json", dir.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  auto d = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by;
  for (auto& h : d["hosts"]) by[h["host"]] = h;
  ASSERT_EQ(by.size(), 3u) << "DIR/ok/ and DIR/ok.shot are two hosts: " << r.out;
  ASSERT_TRUE(by.count("ok") && by.count("ok.shot")) << r.out;
  EXPECT_EQ(by["ok.shot"]["kernel_series"], "6.12");
  bool noted = false;
  for (auto& f : by["ok.shot"]["flags"]) noted |= f.get<std::string>().find("ok/ is also a host") != std::string::npos;
  EXPECT_TRUE(noted) << by["ok.shot"].dump();
  EXPECT_EQ(by["ok.shot"]["virtualization"], "QEMU TCG") << "named from the CPUID signature TCGTCGTCGTCG";
  // The text table: no bidi control reaches the terminal, and the KERNEL column starts at
  // the same offset on every ranked row.
  CliRun txt = run_cli(fmt::format("report --fleet {}", dir.string()));
  ASSERT_EQ(txt.status, 0) << txt.err;
  EXPECT_EQ(txt.out.find("\xe2\x80\xae"), std::string::npos);
  std::istringstream in(txt.out);
  std::string line;
  size_t kernel_col = std::string::npos;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.rfind("RANK ", 0) == 0) kernel_col = line.find("KERNEL");
    if (kernel_col == std::string::npos || line.size() < 5 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    ASSERT_GT(line.size(), kernel_col + 2) << line;
    EXPECT_EQ(line[kernel_col - 1], ' ') << line;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(line[kernel_col]))) << "a release at the KERNEL column: " << line;
    ++rows;
  }
  EXPECT_EQ(rows, 3) << txt.out;
}

// issue 28 items 8 and 14: a re-run of schedhot-fleet into a directory with fewer hosts ranked
// the earlier run's hosts with this run's; a host directory named with a newline came out
// rewritten ("a?b") in CSV. Hosts not in DIR/fleet.json's "hosts" are now listed apart as
// stale with when they were recorded (never ranked, never read); a name with a control
// character is refused (listed as failed, saying why, the exact name in JSON).
TEST(RecordingCli, FleetReportListsEarlierRunsHostsAsStaleAndRefusesControlCharacterNames) {
  namespace fs = std::filesystem;
  const TempDir tmp("fleet_stale");  // removed at the end
  const fs::path dir = tmp.path;
  for (const char* h : {"now1", "old1", "old2"}) {
    fs::create_directories(dir / h);
    fs::copy_file(kData + "/vm-7.3.shot", dir / h / "recording.shot");
  }
  std::ofstream(dir / "old1" / "state.json")
      << R"({"schema":"schedhot.fleet-host/1","host":"old1","failure":null,"steps":{"record":{"ok":true,"start_at":1764650000}}})";
  std::ofstream(dir / "old2" / "state.json")
      << R"({"schema":"schedhot.fleet-host/1","host":"old2","steps":{},"failure":{"step":"preflight","name":"unreachable","detail":"x"}})";
  const std::string odd = "a\nb";
  fs::create_directories(dir / odd);
  fs::copy_file(kData + "/vm-7.3.shot", dir / odd / "recording.shot");
  std::ofstream(dir / "fleet.json") << R"({"schema":"schedhot.fleet/1","run_at":1764700000,"hosts":["now1","a\nb"]})";
  CliRun r = run_cli(fmt::format("report --fleet {} --json", dir.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  auto d = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by;
  for (auto& h : d["hosts"]) by[h["host"]] = h;
  ASSERT_EQ(by.size(), 4u) << r.out;
  EXPECT_EQ(by["now1"]["rank"], 1);
  EXPECT_EQ(d["counts"]["reported"], 1) << "only this run's hosts are ranked";
  EXPECT_EQ(d["counts"]["stale"], 2);
  for (const char* h : {"old1", "old2"}) {
    EXPECT_EQ(by[h]["status"], "stale") << h;
    EXPECT_TRUE(by[h]["rank"].is_null()) << h;
    EXPECT_NE(by[h]["why"].get<std::string>().find("earlier run"), std::string::npos) << by[h].dump();
  }
  EXPECT_EQ(by["old1"]["recorded_at"], 1764650000);
  EXPECT_NE(by["old1"]["why"].get<std::string>().find("recorded 2025-12-02"), std::string::npos) << by["old1"]["why"];
  EXPECT_TRUE(by["old2"]["recorded_at"].is_null());
  // A time no clock shows (a crafted state.json, fleet.json) is unknown, not an invented date.
  for (const char* t : {"-5", "-1e300", "1e300"}) {
    std::ofstream(dir / "old1" / "state.json", std::ios::trunc)
        << R"({"schema":"schedhot.fleet-host/1","host":"old1","failure":null,"steps":{"record":{"ok":true,"start_at":)"
        << t << "}}}";
    CliRun o = run_cli(fmt::format("report --fleet {} --json", dir.string()));
    ASSERT_EQ(o.status, 0) << o.err;
    for (auto& h : nlohmann::json::parse(o.out)["hosts"])
      if (h["host"] == "old1") {
        EXPECT_TRUE(h["recorded_at"].is_null()) << t << ": " << h.dump();
        EXPECT_NE(h["why"].get<std::string>().find("at an unknown time"), std::string::npos) << t << ": " << h.dump();
      }
  }
  std::ofstream(dir / "old1" / "state.json", std::ios::trunc)
      << R"({"schema":"schedhot.fleet-host/1","host":"old1","failure":null,"steps":{"record":{"ok":true,"start_at":1764650000}}})";
  ASSERT_TRUE(by.count(odd)) << "the exact name in JSON";
  EXPECT_EQ(by[odd]["status"], "failed");
  EXPECT_NE(by[odd]["why"].get<std::string>().find("control character"), std::string::npos) << by[odd].dump();
  for (auto& l : d["fleet_latency"]) EXPECT_EQ(l["hosts"], 1) << "stale and refused hosts are not merged: " << l.dump();
  CliRun csv = run_cli(fmt::format("report --fleet {} --csv", dir.string()));
  EXPECT_NE(csv.out.find("a?b,failed,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("control character"), std::string::npos) << "said, not silently rewritten";
  EXPECT_NE(csv.out.find("old1,stale,"), std::string::npos) << csv.out;
  CliRun txt = run_cli(fmt::format("report --fleet {}", dir.string()));
  EXPECT_NE(txt.out.find("2 stale hosts of earlier runs"), std::string::npos) << txt.out;
  EXPECT_NE(txt.out.find("\n  old1: recorded 2025-12-02"), std::string::npos) << txt.out;
}

TEST(RecordingCli, FleetReportSpansAgreeWithEveryInterval) {
  namespace fs = std::filesystem;
  const TempDir tmp("fleet_spans");  // removed at the end
  const fs::path dir = tmp.path;
  for (const char* f : {"vm-6.1-noarat", "vm-6.12-kprobe", "vm-6.12-proxy", "vm-7.3"})
    fs::copy_file(kData + "/" + f + ".shot", dir / (std::string(f) + ".shot"));
  fs::copy_file(kData + "/v1.3-unclosed.shot", dir / "cut.shot");
  {  // a CRC failure in the middle of a closed file: its index still counts every sample
    std::ifstream in(kData + "/vm-6.1-noarat.shot", std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(b.size(), 12843u);
    b[12843] ^= 0x40;
    std::ofstream(dir / "flipped.shot", std::ios::binary) << b;
  }
  auto doc = [&](const std::string& extra) {
    CliRun r = run_cli(fmt::format("report --fleet {} --json {}", dir.string(), extra));
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto every = doc("--every-interval"), spans = doc(""), one = doc("--spans 1 --jobs 1");
  ASSERT_EQ(every["hosts"].size(), 6u);
  std::map<std::string, nlohmann::json> by;
  for (auto& h : every["hosts"]) by[h["host"]] = h;
  for (auto& h : spans["hosts"]) {
    const auto& e = by[h["host"]];
    const int intervals = h["samples"].get<int>() - 1;  // fewer spans than asked when there are fewer intervals
    EXPECT_EQ(h["model"], fmt::format("{} span{} of mean rates", std::min(4, intervals), intervals > 1 ? "s" : ""));
    EXPECT_EQ(e["model"], "every interval");
    EXPECT_EQ(h["samples"], e["samples"]) << h["host"] << ": every sample is counted, modeled or not";
    EXPECT_EQ(h["status"], e["status"]);
    EXPECT_EQ(h["flags"], e["flags"]);
    EXPECT_EQ(h["probes"], e["probes"]) << "rates and p99 are cumulative: the same from any sample count";
    if (h["host"].get<std::string>().rfind("vm-", 0) == 0)  // steady workloads: README's measured 0.2-5.5 %
      EXPECT_NEAR(h["severity"].get<double>() / e["severity"].get<double>(), 1.0, 0.10) << h["host"];
  }
  EXPECT_EQ(spans["fleet_latency"], every["fleet_latency"]) << "merged histograms do not depend on the model";
  EXPECT_EQ(by["flipped"]["status"], "partial");
  EXPECT_LT(by["flipped"]["samples"].get<int>(), 16) << "only the samples before the damage";
  // One span models the mean rates only: further from the per-interval model than four.
  double err1 = 0, err4 = 0;
  for (size_t i = 0; i < 6; ++i) {
    const auto& o = one["hosts"][i];
    err1 += std::abs(o["severity"].get<double>() / by[o["host"]]["severity"].get<double>() - 1);
    const auto& f = spans["hosts"][i];
    err4 += std::abs(f["severity"].get<double>() / by[f["host"]]["severity"].get<double>() - 1);
  }
  EXPECT_LT(err4, err1);
  expect_one_line_error(run_cli(fmt::format("report --fleet {} --spans 2 --every-interval", dir.string())), 2, "pick one");
  expect_one_line_error(run_cli(fmt::format("report --fleet {} --spans 0", dir.string())), 2, "--spans");
}

TEST(RecordingCli, NamesWithNewlinesAndEscapesNeverReachTheTerminalRaw) {
  namespace fs = std::filesystem;
  const TempDir tmp("cli_names");  // removed at the end
  const fs::path dir = tmp.path;
  const std::string odd = (dir / "we\x1b[31mird\nx`y.shot").string();
  fs::copy_file(kData + "/vm-7.3.shot", odd);
  // an error quoting a path with a newline is still one line
  expect_one_line_error(run_cli("report '" + (dir / "no\nsuch.shot").string() + "'"), 1, "no?such.shot");
  expect_one_line_error(run_cli("report --top '4\n5' x.shot"), 2, "4?5");
  for (const char* fmtopt : {"", "--format markdown"}) {
    CliRun r = run_cli(fmt::format("diff '{}' {} {}", odd, kData + "/vm-6.12-kprobe.shot", fmtopt));
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << fmtopt;
    EXPECT_NE(r.out.find("we?[31mird?x`y.shot"), std::string::npos) << fmtopt << "\n" << r.out.substr(0, 300);
  }
  CliRun md = run_cli(fmt::format("diff '{}' {} --format markdown", odd, kData + "/vm-6.12-kprobe.shot"));
  EXPECT_EQ(md.out.rfind("**A**: `` ", 0), 0u) << "a double-backtick span holds a name with a backtick: " << md.out.substr(0, 200);
}

TEST(RecordingCli, DiffByCpuSortsNumericallyAndLeavesCpusOneSideLacksUncompared) {
  CliRun r = run_cli(fmt::format("diff {} {} --by cpu --json", kData + "/tui16.shot", kData + "/vm-7.3.shot"));
  ASSERT_TRUE(r.status == 0 || r.status == 3) << r.err;
  const auto d = nlohmann::json::parse(r.out);
  ASSERT_FALSE(d["lines"].empty());
  int one_sided = 0;
  for (auto& l : d["lines"]) {
    int prev = -1;
    for (auto& g : l["by"]) {
      const int cpu = std::stoi(g["group"].get<std::string>().substr(4));
      EXPECT_GT(cpu, prev) << "cpu 2 before cpu 10: " << l["name"];
      prev = cpu;
      if (cpu >= 4) {  // vm-7.3 has 4 CPUs, tui16 has 16
        EXPECT_TRUE(g["b"].is_null()) << g.dump();
        EXPECT_FALSE(g.value("significant", false)) << g.dump();
        ++one_sided;
      } else {
        EXPECT_TRUE(g["b"].is_number()) << g.dump();
      }
    }
  }
  EXPECT_GT(one_sided, 0);
}

TEST(RecordingCli, FleetReportRanksASyntheticCorpusOfKernelsAndSizes) {
  // Hosts made here with recorded layouts: 6.1 at two sizes and two loads, a 7.3 whose
  // layout has no cpupri_vec.count (the fix), a 6.12. cpupri_set's rate and tail are set per
  // host (5 % of the calls in the tail, so p99 is the tail). The report must rank by the
  // documented severity, take each host's fixes from its layout, flag "cpupri_vec.count
  // present and cpupri_set p99 > --p99-flag" only where the count is present, and group
  // hosts by kernel series and size.
  struct H {
    const char* name;
    const char* kernel;
    uint32_t cpus;
    bool count_removed;
    uint64_t calls;  // per CPU per interval
    uint64_t tail_ns;
  };
  const H hosts[] = {{"k61-big", "6.1.0-57-amd64", 64, false, 4000, 40'000},
                     {"k61-big-calm", "6.1.0-57-amd64", 64, false, 400, 40'000},
                     {"k61-small", "6.1.0-57-amd64", 8, false, 200, 2'000},
                     {"k73-big", "7.3.4-amd64", 64, true, 4000, 40'000},
                     {"k612-mid", "6.12.118-amd64", 32, false, 2000, 8'000}};
  const TempDir dir("fleet_corpus");
  for (const H& h : hosts) {
    Meta m = synthetic_meta(h.cpus);
    m.host.hostname = h.name;
    m.host.kernel_release = h.kernel;
    CoherenceLayout L = assumed_layout(h.kernel, 64);
    L.btf_source = "/sys/kernel/btf/vmlinux";
    L.notes = {"cacheline size 64 B"};
    if (h.count_removed) {
      L.cpupri->count_offset.reset();
      L.cpupri->count_size = 0;
    }
    m.layout = L;
    const int cs = m.probe_index("cpupri_set");
    RecordingWriter w(dir / (std::string(h.name) + ".shot"), m);
    Sample s = make_sample(m);
    s.mono_ns = 10'000'000'000;
    s.wall_ns = 1'700'000'000'000'000'000ull;
    for (int k = 0; k < 7; ++k) {
      if (k) {
        s.seq = uint32_t(k);
        s.mono_ns += m.interval_ns;
        s.wall_ns += m.interval_ns;
        for (uint32_t c = 0; c < h.cpus; ++c) {
          auto& v = s.probes[cs].words;
          const uint64_t tail = h.calls / 20, body = h.calls - tail;
          v.mut(word(m, cs, int(c), "calls")) += h.calls;
          v.mut(word(m, cs, int(c), "lat", 0)) += body * 900 + tail * h.tail_ns;
          v.mut(word(m, cs, int(c), "lat", 1)) = std::max<uint64_t>(v[word(m, cs, int(c), "lat", 1)], h.tail_ns);
          v.mut(word(m, cs, int(c), "lat", 2 + sh_hist_index(900))) += body;
          v.mut(word(m, cs, int(c), "lat", 2 + sh_hist_index(h.tail_ns))) += tail;
        }
      }
      w.write_sample(s);
    }
    w.close();
  }
  CliRun r = run_cli(fmt::format("report --fleet {} --json --p99-flag 10us", dir.path));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto d = nlohmann::json::parse(r.out);
  ASSERT_EQ(d["hosts"].size(), 5u);
  std::map<std::string, nlohmann::json> by;
  std::vector<std::string> order;
  double prev = 1e300;
  for (auto& h : d["hosts"]) {
    by[h["host"]] = h;
    order.push_back(h["host"]);
    ASSERT_EQ(h["status"], "reported") << h["host"];
    const double sev = h["severity"].get<double>();
    EXPECT_LE(sev, prev) << "ranked by severity, highest first";
    prev = sev;
    EXPECT_NEAR(sev, h["stall_ns_per_s"].get<double>() / h["cpus_online"].get<double>() / 1000, 1e-9 * sev + 1e-12)
        << h["host"] << ": severity as documented (no tick_broadcast wait here)";
  }
  // More cpupri_set calls per CPU on the same kernel and size: more transfers, worse.
  EXPECT_GT(by["k61-big"]["severity"].get<double>(), by["k61-big-calm"]["severity"].get<double>());
  EXPECT_GT(by["k61-big"]["xfers_per_s"].get<double>(), by["k61-big-calm"]["xfers_per_s"].get<double>());
  // Fixes from each host's recorded layout.
  EXPECT_EQ(by["k73-big"]["fixes"]["cpupri_count_removed"], true);
  EXPECT_EQ(by["k61-big"]["fixes"]["cpupri_count_removed"], false);
  EXPECT_EQ(by["k612-mid"]["fixes"]["cpupri_count_removed"], false);
  // p99 is the tail; the flag only where cpupri_vec.count is present.
  auto flagged = [&](const std::string& host) {
    for (auto& f : by[host]["flags"])
      if (f.get<std::string>().rfind("cpupri_vec.count present and cpupri_set p99", 0) == 0) return true;
    return false;
  };
  EXPECT_GE(by["k61-big"]["probes"]["cpupri_set"]["p99_ns"].get<double>(), 30'000.0);
  EXPECT_GE(by["k73-big"]["probes"]["cpupri_set"]["p99_ns"].get<double>(), 30'000.0);
  EXPECT_TRUE(flagged("k61-big"));
  EXPECT_TRUE(flagged("k61-big-calm"));
  EXPECT_FALSE(flagged("k73-big")) << "the count is gone: no flag whatever the tail";
  EXPECT_FALSE(flagged("k61-small")) << "p99 2 us is under --p99-flag 10us";
  EXPECT_FALSE(flagged("k612-mid")) << "p99 8 us is under --p99-flag 10us";
  // Groups: kernel series x online CPUs (x virtualization), each with its hosts and worst.
  std::map<std::string, nlohmann::json> groups;  // "series/cpus"
  for (auto& g : d["groups"]) groups[fmt::format("{}/{}", g["kernel_series"].get<std::string>(), g["cpus_online"].get<int>())] = g;
  ASSERT_EQ(groups.size(), 4u) << d["groups"].dump();
  EXPECT_EQ(groups["6.1/64"]["hosts"], 2);
  EXPECT_EQ(groups["6.1/64"]["worst"]["host"], "k61-big");
  EXPECT_EQ(groups["6.1/64"]["flagged"], 2);
  EXPECT_EQ(groups["6.1/8"]["hosts"], 1);
  EXPECT_EQ(groups["7.3/64"]["hosts"], 1);
  EXPECT_EQ(groups["6.12/32"]["hosts"], 1);
  // Every model of the spans gives the same ranking here (steady rates).
  CliRun every = run_cli(fmt::format("report --fleet {} --json --every-interval", dir.path));
  ASSERT_EQ(every.status, 0) << every.err;
  std::vector<std::string> order_every;
  const auto de = nlohmann::json::parse(every.out);
  for (auto& h : de["hosts"]) order_every.push_back(h["host"]);
  EXPECT_EQ(order_every, order);
  // diff of two of these hosts: a fix on one side only is a host difference, read from the
  // recorded layouts; against a recording without a layout, that side's fixes are unknown.
  auto differences = [&](const std::string& a, const std::string& b) {
    CliRun df = run_cli(fmt::format("diff {} {} --json", a, b));
    EXPECT_TRUE(df.status == 0 || df.status == 3) << df.err;
    std::vector<std::string> v;
    if (df.status != 0 && df.status != 3) return v;
    const auto doc = nlohmann::json::parse(df.out);
    for (auto& h : doc["host_differences"]) v.push_back(h.get<std::string>());
    return v;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& prefix) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& x) { return x.rfind(prefix, 0) == 0; });
  };
  const std::string big61 = dir / "k61-big.shot", big73 = dir / "k73-big.shot";
  auto v = differences(big61, big73);
  EXPECT_TRUE(has(v, "fix present on B only")) << fmt::format("{}", fmt::join(v, " | "));
  EXPECT_FALSE(has(v, "fixes unknown"));
  v = differences(big61, kData + "/vm-6.12-kprobe.shot");
  EXPECT_TRUE(has(v, "fixes unknown on B (layout not recorded)")) << fmt::format("{}", fmt::join(v, " | "));
  EXPECT_FALSE(has(v, "fix present on"));
  v = differences(kData + "/vm-6.12-kprobe.shot", big61);
  EXPECT_TRUE(has(v, "fixes unknown on A (layout not recorded)")) << fmt::format("{}", fmt::join(v, " | "));
}

TEST(RecordingCli, FleetRunDirListsEveryHostDirectoryAndDiffErrorsNameTheSide) {
  namespace fs = std::filesystem;
  const TempDir tmp("fleet_rundir");  // removed at the end
  const fs::path dir = tmp.path;
  fs::create_directories(dir / "h1");
  fs::create_directories(dir / "empty");
  fs::copy_file(kData + "/vm-7.3.shot", dir / "h1" / "recording.shot");
  auto hosts = [&] {
    return nlohmann::json::parse(run_cli(fmt::format("report --fleet {} --json", dir.string())).out)["hosts_total"].get<int>();
  };
  EXPECT_EQ(hosts(), 1) << "outside a fleet run an empty directory is just a directory";
  std::ofstream(dir / "fleet.json") << "{}";
  EXPECT_EQ(hosts(), 2) << "in a run (fleet.json) every directory is a host";
  CliRun t = run_cli(fmt::format("report --fleet {}", dir.string()));
  EXPECT_NE(t.out.find("empty: neither recording.shot nor state.json"), std::string::npos) << t.out;
  const std::string f = kData + "/vm-7.3.shot";
  expect_one_line_error(run_cli(fmt::format("diff {} --a 0:5s --b 60s:120s", f)), 1, "B: " + f + ": no samples in the window 60s:120s");
}

TEST(RecordingCli, DiffDoesNotTestALineFedByAProbeTheOtherSideDidNotMeasure) {
  // vm-6.12-proxy has no nohz_kick, cpupri_find or bcast_lock (proxies only where there are some)
  CliRun r = run_cli(fmt::format("diff {} {} --json", kData + "/vm-6.12-kprobe.shot", kData + "/vm-6.12-proxy.shot"));
  ASSERT_TRUE(r.status == 0 || r.status == 3) << r.err;
  const auto d = nlohmann::json::parse(r.out);
  int not_compared = 0, compared = 0;
  for (auto& l : d["lines"]) {
    if (l["name"] == "tick_broadcast_lock" || l["name"] == "nohz") {
      EXPECT_TRUE(l["ratio"].is_null()) << l.dump();
      EXPECT_NE(l.value("reason", "").find("unavailable on B"), std::string::npos) << l.dump();
      EXPECT_FALSE(l.contains("significant")) << l.dump();
    }
    (l.contains("reason") ? not_compared : compared)++;
  }
  EXPECT_GE(not_compared, 2);
  EXPECT_GE(compared, 1) << "lines whose sources both sides measured are still tested";
  for (auto& h : d["host_differences"]) {  // neither recorded a layout: fixes unknown, no difference claimed
    EXPECT_EQ(h.get<std::string>().rfind("fix present on", 0), std::string::npos) << h;
    EXPECT_EQ(h.get<std::string>().rfind("fixes unknown", 0), std::string::npos) << h;
  }
}

TEST(RecordingCli, DiffPatchFormatNamesEachProbesCounter) {
  CliRun r = run_cli(fmt::format("diff {} {} --format patch", kData + "/vm-7.3.shot", kData + "/vm-6.12-kprobe.shot"));
  ASSERT_TRUE(r.status == 0 || r.status == 3) << r.err;
  for (const char* want : {"- nohz_exit calls/s: ", "- ilb_kick sent/s: ", "- idle exits/s: "})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  EXPECT_EQ(r.out.find("ilb_kick calls/s"), std::string::npos);
}

// Usage errors found after parsing (exit 2) end with the command's --help, as CLI11's parse
// errors do (issue 28's leftover), in one line; a status-2 entry point's line too.
TEST(RecordingCli, UsageErrorsAfterParsingPointToTheCommandsHelp) {
  const std::string f = kData + "/v1.2-basic.shot";
  const std::pair<std::string, std::string> cases[] = {
      {"diff " + f, "diff"},
      {fmt::format("diff {} --a 5:1 --b 5:", f), "diff"},
      {"report " + f + " --p99-flag 5us", "report"},
      {"report " + f + " --sort nosuchcolumn", "report"},
      {"report --csv", "report"},
      {"export " + f + " --from 5 --to 1", "export"},
      {"record -d 1", "record"},
      {"replay", "replay"},
      {"replay " + f + " --cpus x", "replay"},
      {"top --rotate 2", "top"},
      {"serve --listen ''", "serve"},
      {"probes --probes nosuchprobe", "probes"},
  };
  for (const auto& [args, cmd] : cases) {
    SCOPED_TRACE(args);
    CliRun r = run_cli(args);
    expect_one_line_error(r, 2, "");
    const std::string tail = fmt::format(" (see schedhot {} --help)\n", cmd);
    EXPECT_TRUE(r.err.size() > tail.size() && r.err.compare(r.err.size() - tail.size(), tail.size(), tail) == 0) << r.err;
  }
  // A parse error keeps its own pointer, once.
  CliRun p = run_cli("serve --per-cpu=nosuchfamily");
  expect_one_line_error(p, 2, "--per-cpu: 'nosuchfamily' is neither a probe nor a per-probe metric family");
  EXPECT_NE(p.err.find("(see schedhot serve --help)"), std::string::npos) << p.err;
}

// Every document command takes --format from one registry (output/format.h): --format json
// is --json byte for byte, a format of another kind of document is refused by the parser,
// and two options naming different formats are a usage error.
TEST(RecordingCli, EveryDocumentCommandTakesTheRegistrysFormats) {
  const std::string f = kData + "/v1.2-basic.shot";
  for (const std::string cmd : {"report", "info"}) {
    CliRun a = run_cli(cmd + " --json " + f), b = run_cli(cmd + " --format json " + f);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << cmd;
    EXPECT_TRUE(nlohmann::json::accept(b.out)) << cmd;
    CliRun t = run_cli(cmd + " --format text " + f), d = run_cli(cmd + " " + f);
    EXPECT_EQ(t.out, d.out) << cmd;
    EXPECT_NE(t.out.find("host "), std::string::npos) << t.out;
    expect_one_line_error(run_cli(cmd + " --format markdown " + f), 2, "--format");
    expect_one_line_error(run_cli(cmd + " --json --format text " + f), 2, "--format text and --json: pick one");
  }
  CliRun m = run_cli("diff --format markdown " + f + " " + f);
  EXPECT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.out.find("|"), std::string::npos) << m.out;
  expect_one_line_error(run_cli("diff --format csv " + f + " " + f), 2, "--format");
  expect_one_line_error(run_cli("report --csv " + f), 2, "--csv is for --fleet");
  expect_one_line_error(run_cli("report --format csv " + f), 2, "--format csv is for --fleet");
}

// --docgen prints its template, so it runs only under the build (SCHEDHOT_DOCGEN=1, which
// sudo's env_reset drops) and reads only a regular file, not through a symlink, that is
// world-readable or the real non-root user's: never /etc/shadow for a sudoers grant.
TEST(RecordingCli, DocgenRunsOnlyForTheBuildAndReadsNoPrivateFile) {
  namespace fs = std::filesystem;
  const std::string tmpl = kData + "/../../packaging/man/schedhot.1.in";
  unsetenv("SCHEDHOT_DOCGEN");
  expect_one_line_error(run_cli("--docgen man '" + tmpl + "'"), 2, "SCHEDHOT_DOCGEN=1");
  expect_one_line_error(run_cli("--docgen bash"), 2, "SCHEDHOT_DOCGEN=1");
  setenv("SCHEDHOT_DOCGEN", "1", 1);
  CliRun r = run_cli("--docgen man '" + tmpl + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(".TH SCHEDHOT 1"), std::string::npos) << r.out.substr(0, 300);
  const TempDir tmp("docgen");
  const fs::path dir = tmp.path, priv = dir / "private", link = dir / "link", fifo = dir / "fifo";
  std::ofstream(priv) << "secret\n";
  fs::permissions(priv, fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(fs::absolute(tmpl), link);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  for (const fs::path& p : {link, fifo, dir / "none", dir}) {
    r = run_cli("--docgen man '" + p.string() + "'");
    expect_one_line_error(r, 1, "is not a world-readable");
    EXPECT_EQ(r.out, "") << p;
  }
  r = run_cli("--docgen man '" + priv.string() + "'");
  if (getuid() == 0) {  // root's own file that is not world-readable: /etc/shadow's case
    expect_one_line_error(r, 1, "is not a world-readable");
    EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.status, 0) << r.err;  // the real user's own file
  }
  unsetenv("SCHEDHOT_DOCGEN");
}

TEST(RecordingCli, AnOrphanedStealFrameIsTheSameDamageInReportAndExport) {
  // F4: a STEAL frame whose CATCH frame is gone (here retyped to an unknown type, CRCs and
  // index intact), with a CRC failure later in the file. report, export and info name the
  // STEAL frame, in the same words, with or without a window: the frame scan a window makes
  // (check_all_frames) named the later CRC failure, and a seek jumped over the STEAL frame.
  const std::string src = kData + "/v1.6-catch.shot";
  std::string d = slurp(src);
  uint64_t catch_at = 0, steal_at = 0, steal_ns = 0;
  int steals = 0;
  for (uint64_t at = RecordingReader::open(src)->data_start(), prev = 0; at + kFrameHeaderBytes <= d.size();) {
    uint32_t len;
    std::memcpy(&len, d.data() + at + 4, 4);
    if (static_cast<FrameType>(d[at + 8]) == FrameType::steal && ++steals == 2) {
      ASSERT_EQ(static_cast<FrameType>(d[prev + 8]), FrameType::caught);
      catch_at = prev;
      steal_at = at;
      std::memcpy(&steal_ns, d.data() + at + 16, 8);
      break;
    }
    prev = at;
    at += kFrameHeaderBytes + len;
  }
  ASSERT_GT(steal_at, 0u);
  d[catch_at + 8] = char(200);  // a frame type of a later minor: skipped
  fix_frame_crc(d, catch_at);
  TempDir dir("cli_orphan_steal");
  const std::string orphan = dir / "orphan.shot", both = dir / "both.shot";
  spit(orphan, d);
  d[sample_offset(src, 40) + kFrameHeaderBytes + 8] ^= 0x10;  // sample 40's payload: its CRC fails
  spit(both, d);
  const std::string why =
      fmt::format("damaged at byte {}: bad steal frame: no catch frame for the sample at {} ns before it", steal_at, steal_ns);
  for (const std::string& f : {orphan, both}) {
    for (const char* window : {"", "--to 30s ", "--to 60s "}) {
      CliRun rep = run_cli(fmt::format("report --json {}{}", window, f));
      CliRun exp = run_cli(fmt::format("export --format json {}{}", window, f));
      EXPECT_EQ(rep.status, 0) << window << rep.err;
      EXPECT_EQ(exp.status, 0) << window << exp.err;
      EXPECT_EQ(rep.err, fmt::format("schedhot: {} is {}; reported the 2 samples before it\n", f, why)) << window;
      EXPECT_EQ(exp.err, fmt::format("schedhot: {} is {}; exported the 2 samples before it\n", f, why)) << window;
    }
    // A window after the STEAL frame: the seek does not jump over it, the file is read to it.
    CliRun rep = run_cli("report --from 65s " + f), exp = run_cli("export --from 65s " + f);
    expect_one_line_error(rep, 1, "where reading stopped (" + why + ")");
    expect_one_line_error(exp, 1, "(reading stopped: " + why + ")");
    CliRun info = run_cli("info --json " + f);
    ASSERT_EQ(info.status, 0) << info.err;
    EXPECT_EQ(nlohmann::json::parse(info.out)["integrity"]["damage"]["offset"], steal_at);
  }
}

TEST(RecordingCli, ExportCsvOfManyCpusLeavesTheLineColumnsOutUnlessAsked) {
  // F2: the CSV's per-CPU line columns are rows x lines an interval, and the lines grow
  // with the CPUs (cpumasks, cpu_to_pri): 8192 CPUs x 2172 lines made 2 GB for 20 samples.
  const std::string f = bench::write_recording(1024, 3, "cli_wide");
  const Meta m = RecordingReader::open(f)->meta();
  const size_t nlines = possible_lines(m, layout_of(m)).size();
  ASSERT_GT(nlines * 1024, kCsvLineCellsMax) << nlines;
  const std::string cells = fmt::format("1024 CPUs x {} modeled lines would be {} cells an interval", nlines,
                                        nlines * 1024);
  auto header = [](const std::string& out) { return out.substr(0, out.find('\n')); };
  auto columns = [](const std::string& line) { return 1 + size_t(std::count(line.begin(), line.end(), ',')); };
  const size_t metrics = export_metrics(m).size();
  // The default: the export is written without them, and one line says so and how to get them.
  CliRun r = run_cli("export " + f);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(cells), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--lines cpu writes them"), std::string::npos) << r.err;
  EXPECT_EQ(columns(header(r.out)), 2 + metrics);
  const std::string by_default = r.out;
  // --lines none: time_s, cpu and the metrics, one row per CPU and interval, and no note.
  r = run_cli("export --lines none " + f);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, by_default);
  EXPECT_EQ(lines(r.out), 1u + 2 * 1024);
  EXPECT_EQ(columns(header(r.out)), 2 + metrics);
  EXPECT_EQ(r.out.find("xfers_per_s"), std::string::npos);
  std::istringstream rows(r.out);
  std::string row;
  while (std::getline(rows, row)) EXPECT_EQ(columns(row), 2 + metrics) << row;
  // --lines cpu: all of them, as asked.
  r = run_cli("export --lines cpu --to 1 " + f);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(columns(header(r.out)), 2 + metrics + nlines);
  EXPECT_EQ(lines(r.out), 1u + 1024);
  // Fewer CPUs under the bound: the default has them.
  r = run_cli("export --cpus 0-15 " + f);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(columns(header(r.out)), 2 + metrics + nlines);
  EXPECT_EQ(lines(r.out), 1u + 2 * 16);
  // Not a CSV: a usage error.
  expect_one_line_error(run_cli("export --format json --lines none " + f), 2, "--lines: only --format csv");
  std::remove(f.c_str());
}
