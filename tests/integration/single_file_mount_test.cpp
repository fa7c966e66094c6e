// Single-file mounts (FileMount with MountKind::kFile) against real children at both local
// isolation levels: a read-only file is readable and stays unchanged, a read-write file written
// changes the host file and is captured at its mount path within the mount's limit, an unchanged
// one is not reported, the neighbours in its host directory stay out of reach (absent at the
// namespaces level, refused by Landlock at the process level), an atomic replace cannot swap
// the file, and a session sees the mount. Host paths that are not a regular file or a directory
// are refused before any child starts.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/local/local_executor.hpp"
#include "codeact/provider.hpp"
#include "codeact/session.hpp"
#include "files/mount_capture.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
using testing::LocalExecutor;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

RunSnapshot Snapshot() {
  RunSnapshot s = testing::Snapshot();
  s.policy.extra_allowed_imports.push_back("os");
  return s;
}

// A host directory holding the file to mount and a neighbour that must stay out of reach. On
// a root host the process level shows mounts at their host paths to a run of its own uid, so
// the directory lets any uid pass (docs/threat-model.md, mounts); the files are 0644, root's.
class SingleFileMountTest : public ::testing::TestWithParam<IsolationLevel> {
 protected:
  void SetUp() override {
    auto dir = internal::TempDir::Create("codeact-file-mount-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(*dir));
    ASSERT_EQ(::chmod(dir_->path().c_str(), 0711), 0);
    file_ = dir_->path() + "/config.json";
    neighbour_ = dir_->path() + "/secret.txt";
    std::ofstream(file_) << "{\"answer\": 42}";
    std::ofstream(neighbour_) << "neighbour secret";
    ASSERT_EQ(::chmod(file_.c_str(), 0644), 0);
    ASSERT_EQ(::chmod(neighbour_.c_str(), 0644), 0);
  }

  bool sandboxed() const { return GetParam() == IsolationLevel::kNamespaces; }
  // Where the code finds the mount: its mount path in the sandbox, its host path at the process
  // level.
  std::string Seen(const FileMount& m) const { return sandboxed() ? m.mount_path : m.host_path; }

  FileMount Mount(MountMode mode, std::int64_t limit = 1 << 20) const {
    auto m = ValidateMount({file_, "/data/config.json", mode, limit});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->kind, MountKind::kFile);
    return *m;
  }

  ExecutionResult Run(const std::string& code, const FileMount& m) const {
    RunSnapshot s = Snapshot();
    s.mounts.push_back(m);
    return LocalExecutor(GetParam())->Execute({code}, s);
  }

  // The process level fences files through Landlock; without it the neighbours are reachable by
  // their permissions (docs/threat-model.md).
  bool Fenced() const {
    return sandboxed() || internal::GuardStatus(*LocalExecutor(GetParam())).landlock_abi >= 1;
  }

  std::optional<internal::TempDir> dir_;
  std::string file_;
  std::string neighbour_;
};

std::string Diagnose(const ExecutionResult& r) {
  return r.message + "\nstdout: " + r.stdout_text + "\nstderr: " + r.stderr_text +
         (r.error ? "\n" + r.error->traceback : "");
}

// The second line of the output: how the first write was refused.
std::string Refusal(const std::string& out) {
  const std::size_t start = out.find('\n');
  if (start == std::string::npos) return "";
  const std::size_t end = out.find('\n', start + 1);
  return out.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
}

TEST_P(SingleFileMountTest, AReadOnlyFileIsReadableAndWritingItIsRefused) {
  if (!Fenced()) GTEST_SKIP() << "no Landlock: the process level reaches files by their modes";
  const FileMount m = Mount(MountMode::kReadOnly);
  const ExecutionResult r = Run("print(open('" + Seen(m) +
                                    "').read())\n"
                                    "for mode in ('w', 'a', 'r+'):\n"
                                    "    try:\n"
                                    "        open('" +
                                    Seen(m) +
                                    "', mode).write('changed')\n"
                                    "        print('written')\n"
                                    "    except OSError as e:\n"
                                    "        print(e.strerror)\n",
                                m);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  // EROFS where the bind is read-only (the sandbox, a root host's private mount namespace),
  // EACCES where only Landlock fences it (a non-root host's process level).
  const std::string refused = sandboxed() ? "Read-only file system" : Refusal(r.stdout_text);
  EXPECT_TRUE(refused == "Read-only file system" || refused == "Permission denied") << refused;
  EXPECT_EQ(r.stdout_text, "{\"answer\": 42}\n" + refused + "\n" + refused + "\n" + refused + "\n");
  EXPECT_EQ(Slurp(file_), "{\"answer\": 42}");
  EXPECT_TRUE(r.files.empty());
  EXPECT_TRUE(r.omitted_files.empty());
}

TEST_P(SingleFileMountTest, AReadWriteFileWrittenChangesTheHostFileAndIsCaptured) {
  const FileMount m = Mount(MountMode::kReadWrite);
  const ExecutionResult r =
      Run("import json\n"
          "with open('" +
              Seen(m) +
              "', 'r+') as f:\n"
              "    data = json.load(f)\n"
              "    data['answer'] += 1\n"
              "    f.seek(0)\n"
              "    f.truncate()\n"
              "    json.dump(data, f)\n"
              "print(open('" +
              Seen(m) + "').read())\n",
          m);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  EXPECT_EQ(r.stdout_text, "{\"answer\": 43}\n");
  EXPECT_EQ(Slurp(file_), "{\"answer\": 43}");
  ASSERT_EQ(r.files.size(), 1u) << Diagnose(r);
  EXPECT_EQ(r.files[0].path, "/data/config.json");
  EXPECT_EQ(r.files[0].data, "{\"answer\": 43}");
  EXPECT_EQ(r.files[0].size, 14);
  EXPECT_EQ(r.files[0].media_type, "application/json");
  EXPECT_TRUE(r.omitted_files.empty());
  // Still root's 0644 file: a root host's run wrote it as the file's owner (idmapped).
  struct stat st {};
  ASSERT_EQ(::stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST_P(SingleFileMountTest, AReadWriteFileLeftUnchangedIsNotReported) {
  const FileMount m = Mount(MountMode::kReadWrite);
  const ExecutionResult r = Run("print(len(open('" + Seen(m) + "').read()))\n", m);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  EXPECT_EQ(r.stdout_text, "14\n");
  EXPECT_TRUE(r.files.empty());
  EXPECT_TRUE(r.omitted_files.empty());
}

TEST_P(SingleFileMountTest, AFileOverTheMountsWriteLimitIsOmittedWithTheReason) {
  const FileMount m = Mount(MountMode::kReadWrite, /*limit=*/10);
  const ExecutionResult r = Run("open('" + Seen(m) + "', 'w').write('x' * 100)\n", m);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  EXPECT_EQ(Slurp(file_), std::string(100, 'x'));  // the write itself is not the capture's
  EXPECT_TRUE(r.files.empty());
  ASSERT_EQ(r.omitted_files.size(), 1u);
  EXPECT_EQ(r.omitted_files[0].path, "/data/config.json");
  EXPECT_EQ(r.omitted_files[0].reason, "mount write limit of 10 bytes reached");
}

TEST_P(SingleFileMountTest, TheNeighboursInTheHostDirectoryStayOutOfReach) {
  if (!Fenced()) GTEST_SKIP() << "no Landlock: the process level reaches files by their modes";
  const FileMount m = Mount(MountMode::kReadWrite);
  const std::string parent = sandboxed() ? "/data" : dir_->path();
  const ExecutionResult r =
      Run("import os\n"
          "for path in ('" +
              neighbour_ + "', '" + parent +
              "/secret.txt'):\n"
              "    try:\n"
              "        print(open(path).read())\n"
              "    except OSError as e:\n"
              "        print(e.strerror)\n"
              "try:\n"
              "    print(sorted(os.listdir('" +
              parent +
              "')))\n"
              "except OSError as e:\n"
              "    print(e.strerror)\n"
              "try:\n"
              "    open('" +
              parent +
              "/new.txt', 'w').write('x')\n"
              "except OSError as e:\n"
              "    print(e.strerror)\n",
          m);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  if (sandboxed()) {
    // The host directory is not there at all; the mount's directory holds the file alone, on
    // the sandbox's read-only root (and Landlock, where the kernel has it, lets the code open
    // the file without listing the directory, as at the process level).
    const bool landlock = internal::GuardStatus(*LocalExecutor(GetParam())).landlock_abi >= 1;
    EXPECT_EQ(r.stdout_text, std::string("No such file or directory\nNo such file or directory\n") +
                                 (landlock ? "Permission denied\n" : "['config.json']\n") +
                                 "Read-only file system\n");
  } else {
    EXPECT_EQ(r.stdout_text,
              "Permission denied\nPermission denied\nPermission denied\nPermission denied\n");
  }
  EXPECT_FALSE(fs::exists(dir_->path() + "/new.txt"));
  EXPECT_EQ(Slurp(neighbour_), "neighbour secret");
}

TEST_P(SingleFileMountTest, AnAtomicReplaceCannotSwapTheFile) {
  if (!Fenced()) GTEST_SKIP() << "no Landlock: the process level reaches files by their modes";
  const FileMount m = Mount(MountMode::kReadWrite);
  // The usual write-a-temp-then-rename, with the temp file where the code may write.
  const ExecutionResult r =
      Run("import os\n"
          "open('next.json', 'w').write('{}')\n"
          "try:\n"
          "    os.replace('next.json', '" +
              Seen(m) +
              "')\n"
              "    print('replaced')\n"
              "except OSError as e:\n"
              "    print(e.strerror)\n",
          m);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  // EBUSY onto a mount point; EXDEV across mounts; EACCES where Landlock allows no rename there.
  EXPECT_TRUE(r.stdout_text == "Device or resource busy\n" ||
              r.stdout_text == "Invalid cross-device link\n" ||
              r.stdout_text == "Permission denied\n")
      << r.stdout_text;
  EXPECT_EQ(Slurp(file_), "{\"answer\": 42}");
  EXPECT_TRUE(r.files.empty());
}

TEST_P(SingleFileMountTest, HostPathsThatAreNeitherFileNorDirectoryAreASetupError) {
  const std::string fifo = dir_->path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string link = dir_->path() + "/link.json";
  fs::create_symlink(file_, link);
  const std::string socket_path = dir_->path() + "/sock";
  const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  const bool bound = ::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(sock);
  struct Case {
    std::string host;
    std::string why;
  };
  std::vector<Case> cases = {{fifo, "is a FIFO, not a directory or a regular file"},
                             {"/dev/null", "is a character device, not a directory or a regular"},
                             {link, "is a symlink; name the real directory or file"}};
  if (bound) cases.push_back({socket_path, "is a socket, not a directory or a regular file"});
  for (const Case& c : cases) {
    // Refused when added, and refused by the executor should a snapshot carry one anyway (the
    // host path swapped for a FIFO after it was validated).
    auto checked = ValidateMount({c.host, "/data/x", MountMode::kReadWrite, 1 << 20});
    ASSERT_FALSE(checked.ok()) << c.host;
    EXPECT_NE(checked.status().message().find(c.why), std::string::npos)
        << checked.status().message();
    FileMount m{c.host, "/data/x", MountMode::kReadWrite, 1 << 20};
    m.kind = MountKind::kFile;
    const ExecutionResult r = Run("print('ran')", m);
    EXPECT_EQ(r.outcome, Outcome::kSetupError) << c.host;
    EXPECT_NE(r.message.find(c.why), std::string::npos) << r.message;
    EXPECT_EQ(r.stdout_text, "");
  }
}

TEST_P(SingleFileMountTest, AFileThatBecameADirectoryIsASetupError) {
  const FileMount m = Mount(MountMode::kReadOnly);
  ASSERT_TRUE(fs::remove(file_));
  fs::create_directory(file_);
  const ExecutionResult r = Run("print('ran')", m);
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("is now a directory, not the file it was when added"), std::string::npos)
      << r.message;
}

// A read-write file inside a read-only directory mount's host tree: writable at its own mount
// path (at the process level its tree is attached over the directory's and Landlock grants it),
// while the directory stays read-only; the file comes back under the file mount's path.
TEST_P(SingleFileMountTest, AReadWriteFileInsideAReadOnlyDirectoryMountIsWritable) {
  const FileMount file = Mount(MountMode::kReadWrite);
  auto dir = ValidateMount({dir_->path(), "/dir", MountMode::kReadOnly, 1 << 20});
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  RunSnapshot s = Snapshot();
  s.mounts = {file, *dir};  // by mount path, as a provider's snapshot has them
  const std::string seen_dir = sandboxed() ? "/dir" : dir->host_path;
  const ExecutionResult r = LocalExecutor(GetParam())
                                ->Execute({"with open('" + Seen(file) +
                                           "', 'w') as f:\n    f.write('new')\n"
                                           "print(open('" +
                                           seen_dir +
                                           "/secret.txt').read())\n"
                                           "try:\n    open('" +
                                           seen_dir +
                                           "/secret.txt', 'w')\n"
                                           "except OSError as e:\n    print(e.strerror)\n"},
                                          s);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  const std::string refusal = Refusal(r.stdout_text);
  EXPECT_TRUE(refusal == "Read-only file system" || refusal == "Permission denied") << refusal;
  EXPECT_EQ(r.stdout_text, "neighbour secret\n" + refusal + "\n");
  EXPECT_EQ(Slurp(file_), "new");
  EXPECT_EQ(Slurp(neighbour_), "neighbour secret");
  ASSERT_EQ(r.files.size(), 1u) << Diagnose(r);
  EXPECT_EQ(r.files[0].path, "/data/config.json");
  EXPECT_EQ(r.files[0].data, "new");
}

// On a root host the run's own uid stands for the file's owner (an idmapped bind, as for a
// directory): a 0600 file of another user is read and rewritten, and stays that user's.
TEST_P(SingleFileMountTest, ARootHostsRunActsAsTheFilesOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "a non-root host's runs are the host's user";
  ASSERT_EQ(::chown(file_.c_str(), 4321, 4321), 0);
  ASSERT_EQ(::chmod(file_.c_str(), 0600), 0);
  const FileMount m = Mount(MountMode::kReadWrite);
  const ExecutionResult r = Run("import os\nprint(open('" + Seen(m) + "').read(), os.stat('" +
                                    Seen(m) + "').st_uid == os.getuid())\nwith open('" + Seen(m) +
                                    "', 'w') as f:\n    f.write('rewritten')\n",
                                m);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
  EXPECT_EQ(r.stdout_text, "{\"answer\": 42} True\n");
  EXPECT_EQ(Slurp(file_), "rewritten");
  struct stat st {};
  ASSERT_EQ(::stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(r.files.size(), 1u) << Diagnose(r);
  EXPECT_EQ(r.files[0].data, "rewritten");
}

// A pooled child (started ahead of its run, with the mounts of its snapshot: on a root host an
// idmapped tree for its own uid) and, at a non-root host's process level, a child forked from
// the fork server (whose Landlock rules come with the run) see the file as a cold child does.
TEST_P(SingleFileMountTest, PooledAndForkedChildrenSeeTheFileMount) {
  const FileMount m = Mount(MountMode::kReadWrite);
  RunSnapshot s = Snapshot();
  s.mounts.push_back(m);
  std::unique_ptr<Executor> pooled = testing::NewLocalExecutor(1, 60'000, true, GetParam());
  ASSERT_TRUE(testing::Eventually(
      [&] {
        pooled->Warm(s);
        return !internal::IdleChildPids(*pooled, &s).empty();
      },
      std::chrono::seconds(60)));
  for (int i = 1; i <= 2; ++i) {
    const ExecutionResult r =
        pooled->Execute({"with open('" + Seen(m) +
                         "', 'r+') as f:\n    print(f.read())\n    f.seek(0)\n    f.truncate()\n"
                         "    f.write('run " +
                         std::to_string(i) + "')\n"},
                        s);
    ASSERT_EQ(r.outcome, Outcome::kOk) << Diagnose(r);
    EXPECT_EQ(r.stdout_text, i == 1 ? "{\"answer\": 42}\n" : "run 1\n");
    ASSERT_EQ(r.files.size(), 1u) << Diagnose(r);
    EXPECT_EQ(r.files[0].path, "/data/config.json");
    EXPECT_EQ(r.files[0].data, "run " + std::to_string(i));
  }
  EXPECT_EQ(Slurp(file_), "run 2");
  // A non-root host's process level forks its children from a fork server, mounts or not.
  if (!sandboxed() && ::geteuid() != 0) EXPECT_FALSE(internal::ForkServerPids(*pooled).empty());
}

INSTANTIATE_TEST_SUITE_P(Levels, SingleFileMountTest,
                         ::testing::Values(IsolationLevel::kProcess, IsolationLevel::kNamespaces),
                         [](const ::testing::TestParamInfo<IsolationLevel>& info) {
                           return std::string(IsolationName(info.param));
                         });

// Through the provider: the registry takes a file, the model is told it is one, and a session
// (which keeps its interpreter across runs) sees the file as one-shot runs do.
// Sessions run at the namespaces level, and at the process level on a root host (each its own
// uid, the file an idmapped tree in its private mount namespace).
TEST(SingleFileMountProviderTest, ASessionSeesTheFileMount) {
  int ran = 0;
  std::string skipped;
  for (IsolationLevel level : {IsolationLevel::kNamespaces, IsolationLevel::kProcess}) {
    SCOPED_TRACE(IsolationName(level));
    auto dir = internal::TempDir::Create("codeact-file-mount-");
    ASSERT_TRUE(dir.ok());
    ASSERT_EQ(::chmod(dir->path().c_str(), 0711), 0);
    const std::string file = dir->path() + "/notes.txt";
    std::ofstream(file) << "first";
    ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
    ProviderOptions o;
    o.executor.isolation = level;
    o.executor.warm_pool_size = 0;
    o.validate = false;
    auto provider = CodeActProvider::Create(o);
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    ASSERT_TRUE((*provider)->AddMount({file, "/notes/notes.txt", MountMode::kReadWrite}).ok());
    const bool sandboxed = level == IsolationLevel::kNamespaces;
    const std::string seen = sandboxed ? "/notes/notes.txt" : fs::canonical(file).string();
    const std::string description = (*provider)->ToolDescription((*provider)->Snapshot());
    EXPECT_NE(description.find("- /notes/notes.txt (a single file, read-write): use the path " +
                               seen + "; rewrite it in place"),
              std::string::npos)
        << description;
    auto session = (*provider)->OpenSession();
    if (!session.ok()) {
      skipped += std::string(IsolationName(level)) + ": " + session.status().message() + "\n";
      continue;
    }
    ++ran;
    const ExecutionResult first =
        (*session)->Execute("f = open('" + seen +
                            "', 'r+')\nprint(f.read())\nf.seek(0)\nf.write('second')\n"
                            "f.flush()\n");
    ASSERT_EQ(first.outcome, Outcome::kOk) << Diagnose(first);
    EXPECT_EQ(first.stdout_text, "first\n");
    EXPECT_EQ(Slurp(file), "second");
    // A session's run captures what it wrote, as a stateless run does.
    ASSERT_EQ(first.files.size(), 1u) << Diagnose(first);
    EXPECT_EQ(first.files[0].path, "/notes/notes.txt");
    EXPECT_EQ(first.files[0].data, "second");
    // The open file object crossed into the next run of the same interpreter; that run wrote
    // nothing, so it reports nothing (the first run's write is not reported again).
    const ExecutionResult second =
        (*session)->Execute("f.seek(0)\nprint(f.read(), open('" + seen + "').read())\n");
    ASSERT_EQ(second.outcome, Outcome::kOk) << Diagnose(second);
    EXPECT_EQ(second.stdout_text, "second second\n");
    EXPECT_TRUE(second.files.empty()) << Diagnose(second);
    const ExecutionResult third = (*session)->Execute("f.seek(0)\nf.write('third!')\nf.flush()\n");
    ASSERT_EQ(third.outcome, Outcome::kOk) << Diagnose(third);
    ASSERT_EQ(third.files.size(), 1u) << Diagnose(third);
    EXPECT_EQ(third.files[0].data, "third!");
    (*session)->Close();
  }
  if (ran == 0) GTEST_SKIP() << "sessions are not available here:\n" << skipped;
}

TEST(SingleFileMountProviderTest, LayoutsTheLauncherCannotShowAreRefusedWhenAdded) {
  auto dir = internal::TempDir::Create("codeact-file-mount-");
  ASSERT_TRUE(dir.ok());
  const std::string file = dir->path() + "/a.txt";
  std::ofstream(file) << "a";
  const std::string sub = dir->path() + "/sub";
  fs::create_directory(sub);
  ProviderOptions o;
  o.executor.isolation = IsolationLevel::kProcess;
  o.executor.warm_pool_size = 0;
  auto provider = CodeActProvider::Create(o);
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  CodeActProvider& p = **provider;
  ASSERT_TRUE(p.AddMount({file, "/data/a.txt", MountMode::kReadOnly}).ok());
  Status beneath = p.AddMount({sub, "/data/a.txt/sub", MountMode::kReadOnly});
  EXPECT_EQ(beneath.message(),
            "mount path /data/a.txt/sub is beneath the file mount /data/a.txt: a file holds no "
            "entries");
  Status over = p.AddMount({sub, "/data", MountMode::kReadOnly});
  EXPECT_NE(over.message().find("file mount /data/a.txt is beneath the mount /data"),
            std::string::npos)
      << over.message();
  Status writable = p.AddMount({dir->path(), "/all", MountMode::kReadWrite});
  EXPECT_NE(writable.message().find("read-only file mount /data/a.txt (" + file +
                                    ") is writable through the read-write mount /all"),
            std::string::npos)
      << writable.message();
  // Nothing of a refused change stays; a file beside, not beneath, is fine.
  EXPECT_EQ(p.ListMounts().size(), 1u);
  EXPECT_TRUE(p.AddMount({dir->path(), "/all", MountMode::kReadOnly}).ok());
  EXPECT_TRUE(p.AddMounts({{file, "/other/a.txt", MountMode::kReadOnly}}).ok());
  EXPECT_EQ(p.ListMounts().size(), 3u);
  // A file is no working directory.
  ProviderOptions w = o;
  w.working_directory = file;
  auto refused = CodeActProvider::Create(w);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "working directory: " + fs::canonical(file).string() + " is a file, not a directory");
}

}  // namespace
}  // namespace codeact
