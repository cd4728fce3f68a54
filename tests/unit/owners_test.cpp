// Owners from /proc/PID/cgroup and status (host/owners): one fixture per layout, written after
// each layout's documentation (Slurm's cgroup v1/v2 plugins, the kubelet's cgroupfs and systemd
// drivers, Docker, Podman, systemd), plus malformed input, PID reuse, exits and hidepid.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "host/owners.hpp"

namespace gpudoctor::host {
namespace {

namespace fs = std::filesystem;

struct Case {
  const char* what;
  const char* cgroup;
  OwnerKind kind;
  const char* id;
  const char* step = "";
  const char* container = "";
  const char* runtime = "";
};

const Case kCases[] = {
    // Slurm, cgroup v1 (task/cgroup plugin): one line per controller.
    {"slurm v1",
     "12:pids:/slurm/uid_1000/job_41877/step_0/task_0\n"
     "11:memory:/slurm/uid_1000/job_41877/step_0/task_0\n"
     "4:devices:/slurm/uid_1000/job_41877/step_0\n"
     "1:name=systemd:/system.slice/slurmd.service\n",
     OwnerKind::kSlurmJob, "41877", "0"},
    {"slurm v1 batch step", "5:cpuset:/slurm/uid_1000/job_7/step_batch/task_0\n",
     OwnerKind::kSlurmJob, "7", "batch"},
    // Slurm, cgroup v2: slurmstepd.scope, and NODE_slurmstepd.scope with multiple slurmd.
    {"slurm v2", "0::/system.slice/slurmstepd.scope/job_41877/step_0/user/task_0\n",
     OwnerKind::kSlurmJob, "41877", "0"},
    {"slurm v2 multiple slurmd",
     "0::/system.slice/node17_slurmstepd.scope/job_99/step_interactive/user/task_special\n",
     OwnerKind::kSlurmJob, "99", "interactive"},
    {"slurm v2 extern", "0::/system.slice/slurmstepd.scope/job_12/step_extern/user/task_0\n",
     OwnerKind::kSlurmJob, "12", "extern"},
    {"slurm SLUID", "0::/system.slice/slurmstepd.scope/job_s0a1b2c3d4e5f6/step_0/user/task_0\n",
     OwnerKind::kSlurmJob, "s0a1b2c3d4e5f6", "0"},
    // Kubernetes, cgroupfs driver.
    {"k8s cgroupfs burstable",
     "0::/kubepods/burstable/pod3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718/"
     "7a9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b\n",
     OwnerKind::kK8sPod, "3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718", "", "7a9b1c2d3e4f"},
    {"k8s cgroupfs guaranteed (no QoS segment)",
     "0::/kubepods/pod11111111-2222-3333-4444-555555555555/"
     "abcdefabcdef0123456789abcdefabcdef0123456789abcdefabcdef01234567\n",
     OwnerKind::kK8sPod, "11111111-2222-3333-4444-555555555555", "", "abcdefabcdef"},
    {"k8s cgroupfs v1 besteffort",
     "9:memory:/kubepods/besteffort/pod0a0b0c0d-1111-2222-3333-444444444444/0123456789ab0123\n",
     OwnerKind::kK8sPod, "0a0b0c0d-1111-2222-3333-444444444444", "", "0123456789ab"},
    // Kubernetes, systemd driver: UID with underscores in the slice name.
    {"k8s systemd containerd",
     "0::/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod3f1e7b2a_9c4d_4e8f_a1b2_c3d4e5f60718.slice/"
     "cri-containerd-5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d.scope\n",
     OwnerKind::kK8sPod, "3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718", "", "5c6d7e8f9a0b", "containerd"},
    {"k8s systemd guaranteed crio",
     "0::/kubepods.slice/kubepods-pod11111111_2222_3333_4444_555555555555.slice/"
     "crio-aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeeeffff.scope\n",
     OwnerKind::kK8sPod, "11111111-2222-3333-4444-555555555555", "", "aaaaaaaaaaaa", "cri-o"},
    {"k8s systemd docker",
     "0::/kubepods.slice/kubepods-besteffort.slice/"
     "kubepods-besteffort-pod22222222_3333_4444_5555_666666666666.slice/"
     "docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n",
     OwnerKind::kK8sPod, "22222222-3333-4444-5555-666666666666", "", "0123456789ab", "docker"},
    // A cgroup namespace makes the path relative.
    {"k8s namespace-relative",
     "0::/../../kubepods-burstable-pod3f1e7b2a_9c4d_4e8f_a1b2_c3d4e5f60718.slice/"
     "cri-containerd-5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d.scope\n",
     OwnerKind::kK8sPod, "3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718", "", "5c6d7e8f9a0b", "containerd"},
    {"k8s namespace-relative cgroupfs",
     "0::/../../kubepods/burstable/pod3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718/"
     "7a9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d\n",
     OwnerKind::kK8sPod, "3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718", "", "7a9b1c2d3e4f"},
    // Docker and Podman outside Kubernetes.
    {"docker systemd",
     "0::/system.slice/"
     "docker-4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e.scope\n",
     OwnerKind::kContainer, "4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e", "",
     "4f3e2d1c0b9a", "docker"},
    {"docker cgroupfs v1",
     "10:memory:/docker/4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e\n"
     "1:name=systemd:/docker/4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e\n",
     OwnerKind::kContainer, "4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e", "",
     "4f3e2d1c0b9a", "docker"},
    {"podman rootful",
     "0::/machine.slice/"
     "libpod-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b.scope/container\n",
     OwnerKind::kContainer, "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b", "",
     "9a8b7c6d5e4f", "podman"},
    {"podman rootless",
     "0::/user.slice/user-1000.slice/user@1000.service/user.slice/"
     "libpod-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b.scope\n",
     OwnerKind::kContainer, "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b", "",
     "9a8b7c6d5e4f", "podman"},
    // systemd services, scopes and sessions.
    {"systemd service", "0::/system.slice/jupyterhub.service\n", OwnerKind::kSystemdUnit,
     "jupyterhub.service"},
    {"systemd-run --scope", "0::/system.slice/run-r3f2e1d0c9b8a.scope\n", OwnerKind::kSystemdUnit,
     "run-r3f2e1d0c9b8a.scope"},
    {"user session", "0::/user.slice/user-1000.slice/session-4.scope\n", OwnerKind::kSystemdUnit,
     "session-4.scope"},
    {"user service", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-train.scope\n",
     OwnerKind::kSystemdUnit, "app-train.scope"},
};

TEST(OwnersCgroup, EveryDocumentedLayout) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.what);
    const auto o = owner_from_cgroup(c.cgroup);
    ASSERT_TRUE(o.has_value());
    EXPECT_EQ(o->kind, c.kind);
    EXPECT_EQ(o->id, c.id);
    EXPECT_EQ(o->step, c.step);
    EXPECT_EQ(o->container, c.container);
    EXPECT_EQ(o->runtime, c.runtime);
    EXPECT_EQ(o->source, "cgroup");
  }
}

TEST(OwnersCgroup, SluidIsKeptAndSaid) {
  const auto o = owner_from_cgroup("0::/system.slice/slurmstepd.scope/job_s0a1b2c3d4e5f6/step_0\n");
  ASSERT_TRUE(o);
  EXPECT_NE(o->note.find("SLUID"), std::string::npos);
  const auto n = owner_from_cgroup("0::/system.slice/slurmstepd.scope/job_41877/step_0\n");
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->note.empty());
}

TEST(OwnersCgroup, HybridPrefersTheJob) {
  // A v1 system where systemd's hierarchy says a unit and the controllers say the job.
  const auto o = owner_from_cgroup(
      "1:name=systemd:/system.slice/slurmd.service\n"
      "0::/system.slice/slurmd.service\n"
      "7:memory:/slurm/uid_1000/job_5/step_0/task_1\n");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->kind, OwnerKind::kSlurmJob);
  EXPECT_EQ(o->id, "5");
}

TEST(OwnersCgroup, UnknownAndMalformedNeverCrash) {
  for (const char* text :
       {"", "\n\n", "0::/\n", "0::/init.scope\n", "garbage", "12:memory\n", "::\n", ":::::\n",
        "0::relative/path\n", "0::/slurm/uid_1000\n", "0::/slurm/uid_x/job_/step_\n",
        "0::/kubepods/burstable/\n", "0::/kubepods/burstable/pod\n", "0::/docker/short\n",
        "0::/system.slice/docker-zz!.scope\n",
        "0::/system.slice/libpod-conmon-"
        "9a8b7c6d5e4f3a2b1c0d.scope\n",
        "0::/system.slice/slurmstepd.scope/job_41877/st",  // truncated mid-line
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"}) {
    SCOPED_TRACE(text);
    const auto o = owner_from_cgroup(text);
    if (o) {
      EXPECT_FALSE(o->id.empty());
      EXPECT_NE(o->kind, OwnerKind::kProcess);
    }
  }
  // Truncated after the job: the job is still known.
  const auto t = owner_from_cgroup("0::/system.slice/slurmstepd.scope/job_41877/st");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->id, "41877");
  EXPECT_FALSE(owner_from_cgroup("0::/\n"));
  EXPECT_FALSE(owner_from_cgroup("0::/init.scope\n"));
  // The conmon scope is the runtime's monitor, not a container.
  const auto conmon =
      owner_from_cgroup("0::/machine.slice/libpod-conmon-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d.scope\n");
  EXPECT_TRUE(!conmon || conmon->kind != OwnerKind::kContainer);
}

TEST(OwnersStatus, UidAndStartTime) {
  EXPECT_EQ(uid_from_status("Name:\tpython\nUmask:\t0022\nUid:\t1000\t1000\t1000\t1000\n"), 1000u);
  EXPECT_FALSE(uid_from_status("Name:\tpython\n"));
  EXPECT_FALSE(uid_from_status("Uid:\t\n"));
  EXPECT_EQ(start_time_from_stat("42 (py thon) S 1 42 42 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 "
                                 "987654 1000000 100 18446744073709551615"),
            987654u);
  EXPECT_FALSE(start_time_from_stat("42 (python) S 1 42"));
  EXPECT_FALSE(start_time_from_stat("garbage"));
}

TEST(OwnersAllocation, DcgmAndJobstatsFiles) {
  auto users = [](uint32_t uid) -> std::optional<std::string> {
    if (uid == 1000) return "alice";
    return std::nullopt;
  };
  auto d = owner_from_allocation("41877\n", users);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, OwnerKind::kSlurmJob);
  EXPECT_EQ(d->id, "41877");
  EXPECT_EQ(d->source, "job-mapping");
  EXPECT_TRUE(d->user.empty());
  auto j = owner_from_allocation("41877 1000\n", users);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->source, "gpustat");
  EXPECT_EQ(j->user, "alice");
  auto u = owner_from_allocation("5 4242", users);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->user, "uid 4242");
  EXPECT_FALSE(owner_from_allocation("", users));
  EXPECT_FALSE(owner_from_allocation("\n \n", users));
  EXPECT_FALSE(owner_from_allocation("not/a job\n", users));
}

// A /proc fixture tree.
class ProcTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gpudoctor-owners-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_, fs::perms::owner_all, ec);
    fs::remove_all(root_, ec);
  }
  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  void process(uint32_t pid, uint64_t start, const std::string& cgroup, uint32_t uid) {
    const std::string p = std::to_string(pid);
    write(p + "/stat", p + " (python) S 1 " + p + " " + p +
                           " 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 " + std::to_string(start) +
                           " 1000000 100\n");
    write(p + "/cgroup", cgroup);
    write(p + "/status",
          "Name:\tpython\nUid:\t" + std::to_string(uid) + "\t" + std::to_string(uid) + "\t0\t0\n");
  }
  OwnerResolver resolver(std::string mapping = "") {
    OwnerResolver::Options o;
    o.proc_root = root_.string();
    o.job_mapping_dir = std::move(mapping);
    o.users = [](uint32_t uid) -> std::optional<std::string> {
      if (uid == 1000) return "alice";
      if (uid == 1001) return "bob";
      return std::nullopt;
    };
    return OwnerResolver(o);
  }
  fs::path root_;
};

TEST_F(ProcTree, ResolvesJobAndUser) {
  process(4242, 100, "0::/system.slice/slurmstepd.scope/job_41877/step_0/user/task_0\n", 1000);
  process(4243, 100, "0::/user.slice/user-1001.slice/session-2.scope\n", 1001);
  process(4244, 100, "0::/\n", 77);
  auto r = resolver();
  const auto a = r.resolve(4242);
  ASSERT_TRUE(a);
  EXPECT_EQ(owner_label(*a), "job 41877.0 (alice)");
  const auto b = r.resolve(4243);
  ASSERT_TRUE(b);
  EXPECT_EQ(owner_label(*b), "unit session-2.scope (bob)");
  const auto c = r.resolve(4244);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, OwnerKind::kProcess);
  EXPECT_EQ(owner_label(*c), "pid 4244 (uid 77)");
}

TEST_F(ProcTree, ExitedProcessIsSkipped) {
  auto r = resolver();
  EXPECT_FALSE(r.resolve(999));
  // Gone between stat and cgroup.
  write("998/stat", "998 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1 1\n");
  EXPECT_FALSE(r.resolve(998));
  EXPECT_TRUE(r.take_notes().empty());
}

TEST_F(ProcTree, CachedByPidAndStartTimeAndPidReuse) {
  process(500, 1000, "0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0\n", 1000);
  auto r = resolver();
  ASSERT_EQ(r.resolve(500)->id, "1");
  const size_t reads = r.reads();
  // Same process: only its stat is read again, the cgroup is not.
  write("500/cgroup", "0::/system.slice/slurmstepd.scope/job_2/step_0/user/task_0\n");
  EXPECT_EQ(r.resolve(500)->id, "1");
  EXPECT_EQ(r.reads(), reads + 1);
  // The pid is reused by a new process (another start time): resolved afresh.
  process(500, 2000, "0::/kubepods/pod11111111-2222-3333-4444-555555555555/0123456789abcdef\n",
          1001);
  const auto o = r.resolve(500);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->kind, OwnerKind::kK8sPod);
  EXPECT_EQ(o->user, "bob");
}

TEST_F(ProcTree, HidepidLeavesOwnerUnknownAndSaysSoOnce) {
  write("self/mountinfo",
        "22 28 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc "
        "rw,hidepid=invisible\n");
  auto r = resolver();
  const auto a = r.resolve(31337), b = r.resolve(31338);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->kind, OwnerKind::kProcess);
  EXPECT_EQ(a->source, "hidden");
  EXPECT_TRUE(a->user.empty());
  const auto notes = r.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("hidepid"), std::string::npos);
  r.resolve(31339);
  EXPECT_TRUE(r.take_notes().empty());
}

TEST_F(ProcTree, AnnotateFillsProcessesAndDevicesAndAllocations) {
  process(100, 1, "0::/system.slice/slurmstepd.scope/job_41877/step_0/user/task_0\n", 1000);
  process(101, 1, "0::/system.slice/slurmstepd.scope/job_41877/step_0/user/task_1\n", 1000);
  const fs::path map = root_ / "map";
  write("map/2", "41999\n");              // dcgm-exporter: GPU 2 held by a job with no process
  write("map/3.1", "42000\n");            // a MIG GPU instance of GPU 3
  write("map/GPU-dddd", "42001 1001\n");  // jobstats, by UUID
  write("map/0", "41877 1000\n");         // already known from the processes
  auto r = resolver(map.string());
  std::vector<DeviceInfo> devs(4);
  for (unsigned i = 0; i < 4; ++i) devs[i].index = i;
  devs[3].uuid = "GPU-dddd";
  Frame f;
  f.devices.resize(4);
  f.devices[0].processes = {{100, "python", {}, {}, {}, {}}, {101, "python", {}, {}, {}, {}}};
  f.devices[1].processes = {{555, "gone", {}, {}, {}, {}}};
  r.annotate(f, devs);
  ASSERT_EQ(f.devices[0].owners.size(), 1u);
  EXPECT_EQ(owner_label(f.devices[0].owners[0]), "job 41877.0 (alice)");
  ASSERT_TRUE(f.devices[0].processes[1].owner);
  EXPECT_FALSE(f.devices[1].processes[0].owner);
  EXPECT_TRUE(f.devices[1].owners.empty());
  ASSERT_EQ(f.devices[2].owners.size(), 1u);
  EXPECT_EQ(f.devices[2].owners[0].id, "41999");
  ASSERT_EQ(f.devices[3].owners.size(), 2u);
  EXPECT_EQ(f.devices[3].owners[0].id, "42000");
  EXPECT_EQ(f.devices[3].owners[1].user, "bob");
  EXPECT_EQ(r.cache_size(), 2u);
  // Processes no longer on any GPU leave the cache.
  Frame g;
  g.devices.resize(4);
  r.annotate(g, devs);
  EXPECT_EQ(r.cache_size(), 0u);
}

}  // namespace
}  // namespace gpudoctor::host
