// The output-file policy's pieces (src/sys/output_file.h) on their own: OwnedFile removes
// only the very file it made, creation never goes through what is already there, a
// replacement is a rename, and the small helpers record, export and serve share.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "sys/output_file.h"
#include "test_recording_util.h"

using namespace schedhot;
using namespace schedhot::testing;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST(OutputFile, CreateExclusiveNeverOpensWhatIsThere) {
  TempDir dir("of_excl");
  const std::string path = dir / "out";
  OwnedFile made;
  const int fd = create_exclusive(path, made);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(made.path(), path);
  ::close(fd);
  OwnedFile again;
  errno = 0;
  EXPECT_EQ(create_exclusive(path, again), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_TRUE(again.empty());
  // A dangling symlink is something there too: its target is not created.
  ASSERT_EQ(::symlink("target", (dir / "link").c_str()), 0);
  EXPECT_EQ(create_exclusive(dir / "link", again), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_FALSE(fs::exists(dir / "target"));
}

TEST(OutputFile, RemoveTakesOnlyTheFileItMade) {
  TempDir dir("of_remove");
  const std::string path = dir / "out";
  OwnedFile made;
  int fd = create_exclusive(path, made);
  ASSERT_GE(fd, 0);
  ::close(fd);
  // Another file took the name: left alone.
  ASSERT_EQ(::rename(path.c_str(), (dir / "moved").c_str()), 0);
  write_text(path, "theirs\n");
  EXPECT_FALSE(made.remove());
  EXPECT_EQ(slurp(path), "theirs\n");
  // A symlink to the very file it made: left alone (lstat), and so is the file.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::symlink((dir / "moved").c_str(), path.c_str()), 0);
  EXPECT_FALSE(made.remove());
  EXPECT_TRUE(fs::is_symlink(path));
  EXPECT_TRUE(fs::exists(dir / "moved"));
  // Back at its name: removed, once.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::rename((dir / "moved").c_str(), path.c_str()), 0);
  EXPECT_TRUE(made.remove());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(made.remove());
  EXPECT_FALSE(OwnedFile().remove());
}

TEST(OutputFile, TempFilesHaveRandomNamesAndReplaceByRename) {
  TempDir dir("of_temp");
  const std::string dest = dir / "dest";
  write_text(dest, "old\n");
  OwnedFile a, b;
  const int fa = create_temp(dir / ".dest.XXXXXX", a), fb = create_temp(dir / ".dest.XXXXXX", b);
  ASSERT_GE(fa, 0);
  ASSERT_GE(fb, 0);
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(a.path().rfind(dir / ".dest.", 0), 0u) << a.path();
  EXPECT_EQ(a.path().size(), (dir / ".dest.XXXXXX").size());
  struct stat st {};
  ASSERT_EQ(::fstat(fa, &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "mkostemp's mode: the caller sets the one it wants";
  ASSERT_EQ(::write(fa, "new\n", 4), 4);
  ::close(fa);
  ::close(fb);
  EXPECT_EQ(a.replace(dest), 0);
  EXPECT_EQ(a.path(), dest);
  EXPECT_EQ(slurp(dest), "new\n");
  // After the rename it is the file at dest that is ours.
  EXPECT_TRUE(a.remove());
  EXPECT_FALSE(fs::exists(dest));
  // A rename that fails (over a non-empty directory): the errno, and the temporary removed.
  fs::create_directories(dir / "full/x");
  const std::string tmp = b.path();
  EXPECT_NE(b.replace(dir / "full"), 0);
  EXPECT_EQ(b.path(), tmp);
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_TRUE(fs::exists(dir / "full/x"));
}

TEST(OutputFile, TempBesideTakesTheUmaskModeAndSaysWhyNot) {
  TempDir dir("of_beside");
  OwnedFile tmp;
  const mode_t old = ::umask(027);
  const int fd = create_temp_beside(dir / "out.csv", tmp);
  ::umask(old);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(tmp.path().rfind(dir / "out.csv.", 0), 0u) << tmp.path();
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ::close(fd);
  try {
    create_temp_beside(dir / "missing/out.csv", tmp);
    ADD_FAILURE() << "created in a missing directory";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot create " + dir / "missing/out.csv" + ".XXXXXX: No such file or directory");
  }
}

TEST(OutputFile, WriteFullyAndItsErrno) {
  TempDir dir("of_write");
  const std::string path = dir / "out";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const std::string text(1 << 20, 'x');
  EXPECT_EQ(write_fully(fd, text.data(), text.size()), 0);
  ::close(fd);
  EXPECT_EQ(fs::file_size(path), text.size());
  EXPECT_EQ(write_fully(fd, "x", 1), EBADF);
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full >= 0) {
    EXPECT_EQ(write_fully(full, "x", 1), ENOSPC);
    ::close(full);
  }
}

TEST(OutputFile, SymlinkTargetsAndRealPaths) {
  TempDir dir("of_links");
  std::string target;
  ASSERT_EQ(::symlink("rel/file", (dir / "r").c_str()), 0);
  ASSERT_EQ(::symlink("/abs/file", (dir / "a").c_str()), 0);
  ASSERT_TRUE(symlink_target(dir / "r", target));
  EXPECT_EQ(target, dir / "rel/file") << "relative to the link's directory";
  ASSERT_TRUE(symlink_target(dir / "a", target));
  EXPECT_EQ(target, "/abs/file");
  write_text(dir / "plain", "");
  errno = 0;
  EXPECT_FALSE(symlink_target(dir / "plain", target));
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(::symlink("plain", (dir / "p").c_str()), 0);
  EXPECT_EQ(real_path(dir / "p"), fs::canonical(dir / "plain").string());
  EXPECT_EQ(real_path(dir / "nothing/here"), dir / "nothing/here") << "as given when it does not resolve";
}

// replacement_target (record and export with --force): a link is followed only while
// untrusted_symlink() allows it, else nothing (""); any other name is replaced as itself.
TEST(OutputFile, AReplacementGoesThroughOnlyALinkThatMayBeFollowed) {
  TempDir dir("of_replace");
  const std::string file = dir / "f", link = dir / "l";
  write_text(file, "x");
  EXPECT_EQ(replacement_target(file), file);
  EXPECT_EQ(replacement_target(dir / "absent"), dir / "absent");
  ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
  EXPECT_EQ(replacement_target(link), real_path(file)) << "this user's link";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for another user's link";
  const std::string shared = dir / "shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const std::string theirs = shared + "/l";
  ASSERT_EQ(::symlink(file.c_str(), theirs.c_str()), 0);
  ASSERT_EQ(::lchown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_EQ(replacement_target(theirs), "") << "nobody's link in a shared directory";
}
