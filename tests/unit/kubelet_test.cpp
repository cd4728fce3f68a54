// The kubelet's pod-resources API as a source of owners (host/pod_resources, host/kubelet_owners,
// OwnerResolver): a real gRPC server on a unix socket answering as a kubelet (tests/kubelet), one
// that is not there, refuses, never answers, answers garbage or is no gRPC server; the device ids
// NVIDIA's device plugin writes; and the merge with the owners the cgroups give.
#include <grp.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "fake_kubelet.hpp"
#include "host/kubelet_owners.hpp"
#include "host/owners.hpp"
#include "host/pod_resources.hpp"

namespace gpudoctor::host {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using fake_kubelet::Mode;

constexpr const char* kUid = "3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718";

// A short temporary directory (unix socket paths are limited to 107 bytes).
struct TempDir {
  TempDir() {
    char t[] = "/tmp/gpudoctor-kubelet-XXXXXX";
    dir = ::mkdtemp(t);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string socket() const { return (dir / "kubelet.sock").string(); }
  fs::path dir;
};

// A node: a trainer on GPU 0 (by UUID), a notebook holding GPU 1 with nothing running, an
// inference server on a MIG device of GPU 2 (by MIG UUID), a pod on a MIG device of GPU 3
// named the pre-R470 way, and a pod with a network card (no GPU).
std::vector<fake_kubelet::Pod> node_pods() {
  return {
      {"trainer-0", "ml", {{"trainer", {{"nvidia.com/gpu", {"GPU-aaaa-0000"}}}}}},
      {"notebook-7", "research", {{"lab", {{"nvidia.com/gpu", {"GPU-bbbb-1111"}}}}}},
      {"infer-1", "serving", {{"server", {{"nvidia.com/mig-1g.10gb", {"MIG-cccc-2222"}}}}}},
      {"old-mig", "legacy", {{"main", {{"nvidia.com/mig-2g.20gb", {"MIG-GPU-dddd-3333/1/0"}}}}}},
      {"router", "net", {{"app", {{"example.com/sriov", {"0000:3b:00.1"}}}}}},
  };
}

std::vector<PodDevice> node_devices() {
  std::vector<PodDevice> out;
  for (const auto& p : node_pods())
    for (const auto& c : p.containers)
      for (const auto& d : c.devices)
        for (const auto& id : d.ids)
          out.push_back({d.resource, id, p.name, p.pod_namespace, c.name});
  return out;
}

std::vector<DeviceInfo> node_gpus() {
  std::vector<DeviceInfo> g(4);
  const char* uuids[] = {"GPU-aaaa-0000", "GPU-bbbb-1111", "GPU-cccc-parent", "GPU-dddd-3333"};
  for (unsigned i = 0; i < 4; ++i) {
    g[i].index = i;
    g[i].uuid = uuids[i];
  }
  return g;
}

MigLookup node_mig(int* calls = nullptr) {
  return [calls](const std::string& uuid) -> std::optional<unsigned> {
    if (calls) ++*calls;
    if (uuid == "MIG-cccc-2222") return 2;
    return std::nullopt;
  };
}

Owner cgroup_pod(const std::string& uid, const std::string& container, const std::string& user) {
  Owner o;
  o.kind = OwnerKind::kK8sPod;
  o.id = uid;
  o.container = container;
  o.runtime = "containerd";
  o.user = user;
  o.source = "cgroup";
  return o;
}

// A frame whose GPU processes carry the owners the cgroups gave (as OwnerResolver fills them).
void run_on(Frame& f, size_t gpu, uint32_t pid, const Owner& o) {
  ProcessInfo p;
  p.pid = pid;
  p.name = "python";
  p.owner = o;
  f.devices[gpu].processes.push_back(p);
  const bool dup = std::any_of(f.devices[gpu].owners.begin(), f.devices[gpu].owners.end(),
                               [&](const Owner& x) { return owner_key(x) == owner_key(o); });
  if (!dup) f.devices[gpu].owners.push_back(o);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(KubeletDeviceIds, EveryNamingOfNvidiasDevicePlugin) {
  using K = DeviceRef::Kind;
  struct Case {
    const char* resource;
    const char* id;
    std::optional<K> kind;
    const char* uuid = "";
    unsigned index = 0;
  };
  const Case cases[] = {
      {"nvidia.com/gpu", "GPU-1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809", K::kGpuUuid,
       "GPU-1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809"},
      // Time-slicing (and MPS) replicas: "<id>::<replica>".
      {"nvidia.com/gpu", "GPU-1a2b::3", K::kGpuUuid, "GPU-1a2b"},
      {"nvidia.com/gpu.shared", "GPU-1a2b::0", K::kGpuUuid, "GPU-1a2b"},
      {"nvidia.com/mig-1g.10gb", "MIG-5c6d7e8f-0000-1111-2222-333344445555", K::kMigUuid,
       "MIG-5c6d7e8f-0000-1111-2222-333344445555"},
      // Drivers before R470: the MIG device named after its GPU.
      {"nvidia.com/mig-3g.40gb", "MIG-GPU-1a2b3c4d/2/0", K::kGpuUuid, "GPU-1a2b3c4d"},
      // deviceIDStrategy=index: "<gpu>", or "<gpu>:<mig>" for a MIG device.
      {"nvidia.com/gpu", "3", K::kIndex, "", 3},
      {"nvidia.com/mig-1g.10gb", "2:1", K::kIndex, "", 2},
      {"nvidia.com/gpu", "1::4", K::kIndex, "", 1},
      // Not GPUs, or not ids.
      {"example.com/sriov", "0", std::nullopt},
      {"example.com/fpga", "7:1", std::nullopt},
      {"nvidia.com/gpu", "", std::nullopt},
      {"nvidia.com/gpu", "GPU-", std::nullopt},
      {"nvidia.com/gpu", "GPU-a/b", std::nullopt},
      {"nvidia.com/gpu", "2:", std::nullopt},
      {"nvidia.com/gpu", "x:1", std::nullopt},
      {"nvidia.com/gpu", "-1", std::nullopt},
      {"nvidia.com/mig-1g.10gb", "MIG-", std::nullopt},
  };
  for (const auto& c : cases) {
    const auto r = parse_device_id(c.resource, c.id);
    ASSERT_EQ(r.has_value(), c.kind.has_value()) << c.resource << " " << c.id;
    if (!r) continue;
    EXPECT_EQ(r->kind, *c.kind) << c.id;
    EXPECT_EQ(r->uuid, c.uuid) << c.id;
    if (r->kind == K::kIndex) {
      EXPECT_EQ(r->index, c.index) << c.id;
    }
  }
}

TEST(KubeletOwners, OnePodOneOwnerAndPodsHoldingIdleGpus) {
  KubeletOwners k;
  int mig_calls = 0;
  k.set_devices(node_devices(), node_gpus(), node_mig(&mig_calls));
  Frame f;
  f.devices.resize(4);
  run_on(f, 0, 4242, cgroup_pod(kUid, "5c6d7e8f9a0b", "alice"));
  run_on(f, 0, 4243, cgroup_pod(kUid, "5c6d7e8f9a0b", "alice"));
  k.merge(f, std::vector<bool>(4, false));

  // GPU 0: the pod the cgroups know by UID and the kubelet by name is one owner.
  ASSERT_EQ(f.devices[0].owners.size(), 1u);
  const Owner& t = f.devices[0].owners[0];
  EXPECT_EQ(t.id, kUid);
  EXPECT_EQ(t.pod, "trainer-0");
  EXPECT_EQ(t.pod_namespace, "ml");
  EXPECT_EQ(t.container, "trainer");
  EXPECT_EQ(t.user, "alice");
  EXPECT_EQ(t.source, "cgroup, kubelet pod-resources");
  EXPECT_EQ(owner_label(t), "pod ml/trainer-0 (alice)");
  for (const auto& p : f.devices[0].processes) EXPECT_EQ(p.owner, t);
  EXPECT_EQ(k.pod_of_uid(kUid), (std::pair<std::string, std::string>{"ml", "trainer-0"}));

  // GPU 1: held by a pod with nothing running on it.
  ASSERT_EQ(f.devices[1].owners.size(), 1u);
  const Owner& n = f.devices[1].owners[0];
  EXPECT_EQ(n.kind, OwnerKind::kK8sPod);
  EXPECT_EQ(n.id, "research/notebook-7");
  EXPECT_EQ(n.container, "lab");
  EXPECT_EQ(n.source, "kubelet pod-resources");
  EXPECT_EQ(owner_label(n), "pod research/notebook-7");
  // GPU 2 by its MIG device's UUID; GPU 3 by the old MIG naming.
  ASSERT_EQ(f.devices[2].owners.size(), 1u);
  EXPECT_EQ(owner_label(f.devices[2].owners[0]), "pod serving/infer-1");
  ASSERT_EQ(f.devices[3].owners.size(), 1u);
  EXPECT_EQ(owner_label(f.devices[3].owners[0]), "pod legacy/old-mig");

  // The same answer again (a new list): MIG devices are looked up once.
  k.set_devices(node_devices(), node_gpus(), node_mig(&mig_calls));
  EXPECT_EQ(mig_calls, 1);
  // Owners are stable from sample to sample.
  Frame g;
  g.devices.resize(4);
  run_on(g, 0, 4242, cgroup_pod(kUid, "5c6d7e8f9a0b", "alice"));
  k.merge(g, std::vector<bool>(4, false));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(g.devices[i].owners, f.devices[i].owners) << i;
}

TEST(KubeletOwners, AGpuSharedByTwoPodsIsNotGuessed) {
  const std::string u1 = "11111111-1111-1111-1111-111111111111";
  const std::string u2 = "22222222-2222-2222-2222-222222222222";
  std::vector<PodDevice> shared = {{"nvidia.com/gpu", "GPU-aaaa-0000::0", "a", "ml", "main"},
                                   {"nvidia.com/gpu", "GPU-aaaa-0000::1", "b", "ml", "main"}};
  KubeletOwners k;
  k.set_devices(shared, node_gpus(), node_mig());
  Frame f;
  f.devices.resize(4);
  run_on(f, 0, 10, cgroup_pod(u1, "0123456789ab", "alice"));
  run_on(f, 0, 11, cgroup_pod(u2, "ba9876543210", "bob"));
  k.merge(f, std::vector<bool>(4, false));
  // Which UID is which pod is not known: the two running and the two holding, unpaired.
  ASSERT_EQ(f.devices[0].owners.size(), 4u);
  EXPECT_TRUE(f.devices[0].owners[0].pod.empty());
  EXPECT_TRUE(f.devices[0].owners[1].pod.empty());
  EXPECT_EQ(f.devices[0].owners[2].id, "ml/a");
  EXPECT_EQ(f.devices[0].owners[3].id, "ml/b");
  EXPECT_FALSE(k.pod_of_uid(u1));

  // Pod a also holds GPU 1 alone, and u1 runs there alone: now it is clear on GPU 0 too.
  shared.push_back({"nvidia.com/gpu", "GPU-bbbb-1111", "a", "ml", "main"});
  k.set_devices(shared, node_gpus(), node_mig());
  Frame g;
  g.devices.resize(4);
  run_on(g, 0, 10, cgroup_pod(u1, "0123456789ab", "alice"));
  run_on(g, 0, 11, cgroup_pod(u2, "ba9876543210", "bob"));
  run_on(g, 1, 12, cgroup_pod(u1, "0123456789ab", "alice"));
  k.merge(g, std::vector<bool>(4, false));
  ASSERT_EQ(g.devices[0].owners.size(), 3u);
  EXPECT_EQ(owner_label(g.devices[0].owners[0]), "pod ml/a (alice)");
  EXPECT_TRUE(g.devices[0].owners[1].pod.empty());  // u2: still only its UID
  EXPECT_EQ(g.devices[0].owners[2].id, "ml/b");
  ASSERT_EQ(g.devices[1].owners.size(), 1u);
  EXPECT_EQ(owner_label(g.devices[1].owners[0]), "pod ml/a (alice)");
}

TEST(KubeletOwners, APodHoldingTwoGpusAndUsingOneIsOneOwnerOnBoth) {
  std::vector<PodDevice> two = {{"nvidia.com/gpu", "GPU-aaaa-0000", "trainer-0", "ml", "trainer"},
                                {"nvidia.com/gpu", "GPU-bbbb-1111", "trainer-0", "ml", "trainer"}};
  KubeletOwners k;
  k.set_devices(two, node_gpus(), node_mig());
  Frame f;
  f.devices.resize(4);
  run_on(f, 0, 10, cgroup_pod(kUid, "0123456789ab", "alice"));
  k.merge(f, std::vector<bool>(4, false));
  ASSERT_EQ(f.devices[1].owners.size(), 1u);
  EXPECT_EQ(f.devices[1].owners[0].id, kUid);  // the UID its processes on GPU 0 gave
  EXPECT_EQ(owner_key(f.devices[1].owners[0]), owner_key(f.devices[0].owners[0]));

  // The pod ends: its name leaves the processes that are still listed, the pairing goes.
  k.set_devices({}, node_gpus(), node_mig());
  Frame g;
  g.devices.resize(4);
  run_on(g, 0, 10, cgroup_pod(kUid, "0123456789ab", "alice"));
  k.merge(g, std::vector<bool>(4, false));
  ASSERT_EQ(g.devices[0].owners.size(), 1u);
  EXPECT_TRUE(g.devices[0].owners[0].pod.empty());
  EXPECT_TRUE(g.devices[1].owners.empty());
  EXPECT_FALSE(k.pod_of_uid(kUid));
}

TEST(KubeletOwners, OtherPodsOnAHeldGpuAndSkippedDevices) {
  KubeletOwners k;
  k.set_devices(node_devices(), node_gpus(), node_mig());
  Frame f;
  f.devices.resize(4);
  // GPU 1 is held by the notebook, but a Slurm job runs on it (no pod process): both are shown.
  Owner job;
  job.kind = OwnerKind::kSlurmJob;
  job.id = "41877";
  f.devices[1].owners.push_back(job);
  // GPU 3 brings its own owners (the simulator): left alone.
  Owner sim;
  sim.kind = OwnerKind::kProcess;
  sim.id = "1";
  sim.source = "sim";
  f.devices[3].owners.push_back(sim);
  k.merge(f, {false, false, false, true});
  ASSERT_EQ(f.devices[1].owners.size(), 2u);
  EXPECT_EQ(f.devices[1].owners[0].id, "41877");
  EXPECT_EQ(f.devices[1].owners[1].pod, "notebook-7");
  ASSERT_EQ(f.devices[3].owners.size(), 1u);
  EXPECT_EQ(f.devices[3].owners[0].source, "sim");
}

TEST(PodResources, ListReadsWhatAKubeletSends) {
  TempDir t;
  fake_kubelet::Server kubelet(t.socket(), Mode::kAnswer, node_pods());
  const auto r = list_pod_devices(t.socket(), 1000ms);
  ASSERT_TRUE(r) << r.error().message;
  // CPU ids, memory, NUMA topology and DRA claims (not declared by gpudoctor) are skipped.
  EXPECT_EQ(r.value(), node_devices());
  EXPECT_EQ(kubelet.calls(), 1);
}

TEST(PodResources, RefusedNeverAnsweredGarbageAndNotGrpcAreErrors) {
  TempDir t;
  fake_kubelet::make_dead_socket(t.socket());
  auto t0 = std::chrono::steady_clock::now();
  auto r = list_pod_devices(t.socket(), 1000ms);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot be reached"), std::string::npos) << r.error().message;
  EXPECT_LT(seconds_since(t0), 0.9);  // refused at once, not at the deadline
  {
    fake_kubelet::Server kubelet(t.socket(), Mode::kHang);
    t0 = std::chrono::steady_clock::now();
    r = list_pod_devices(t.socket(), 200ms);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("no answer within 200 ms"), std::string::npos)
        << r.error().message;
    EXPECT_GE(seconds_since(t0), 0.18);
    EXPECT_LT(seconds_since(t0), 2.0);
  }
  {
    fake_kubelet::Server kubelet(t.socket(), Mode::kGarbage);
    r = list_pod_devices(t.socket(), 1000ms);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("not as a kubelet"), std::string::npos) << r.error().message;
    EXPECT_EQ(kubelet.calls(), 1);
  }
  {
    fake_kubelet::Server junk(t.socket(), Mode::kNotGrpc);
    t0 = std::chrono::steady_clock::now();
    r = list_pod_devices(t.socket(), 1000ms);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("pod-resources socket " + t.socket()), std::string::npos)
        << r.error().message;
    EXPECT_GE(junk.calls(), 1);
  }
}

TEST(PodResources, WatcherFollowsTheKubeletAndGoesQuietWhenItLeaves) {
  TempDir t;
  auto kubelet = std::make_unique<fake_kubelet::Server>(t.socket(), Mode::kAnswer, node_pods());
  PodResourcesWatcher w({t.socket(), 1000ms, 50ms});
  const auto first = w.latest();  // waits for the first answer
  EXPECT_EQ(first->devices, node_devices());
  auto wait_for_change = [&](uint64_t gen) {
    const auto t0 = std::chrono::steady_clock::now();
    while (w.latest()->generation == gen && seconds_since(t0) < 3)
      std::this_thread::sleep_for(10ms);
    return w.latest();
  };
  kubelet->set_pods({node_pods()[1]});
  const auto second = wait_for_change(first->generation);
  ASSERT_EQ(second->devices.size(), 1u);
  EXPECT_EQ(second->devices[0].pod, "notebook-7");
  // The kubelet goes away (its socket with it): nothing held any more, and nothing said.
  kubelet.reset();
  const auto third = wait_for_change(second->generation);
  EXPECT_TRUE(third->devices.empty());
  EXPECT_TRUE(w.take_notes().empty());
}

TEST(PodResources, WatcherSaysAKubeletThatNeverAnswersOnceAndStopsAtOnce) {
  TempDir t;
  fake_kubelet::Server kubelet(t.socket(), Mode::kHang);
  {
    PodResourcesWatcher w({t.socket(), 100ms, 20ms});
    EXPECT_TRUE(w.latest()->devices.empty());
    const auto t0 = std::chrono::steady_clock::now();
    while (kubelet.calls() < 3 && seconds_since(t0) < 3) std::this_thread::sleep_for(10ms);
    EXPECT_GE(kubelet.calls(), 3);
    const auto notes = w.take_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("no answer within 100 ms"), std::string::npos) << notes[0];
  }
  // A call in flight with a long deadline is cancelled when the watcher goes.
  const int before = kubelet.calls();
  const auto t0 = std::chrono::steady_clock::now();
  {
    PodResourcesWatcher w({t.socket(), 10000ms, 10000ms});
    while (kubelet.calls() == before && seconds_since(t0) < 3) std::this_thread::sleep_for(5ms);
  }
  EXPECT_LT(seconds_since(t0), 2.0);
}

TEST(PodResources, NoPermissionIsSaidWithWhatItNeedsAndNoCallIsMade) {
  TempDir t;
  fake_kubelet::make_dead_socket(t.socket());
  // The kubelet's socket is root's, srwxr-xr-x: others cannot connect. Here: writable by nobody
  // (root excepted), and the test runs as nobody where it runs as root.
  fs::permissions(t.dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(t.socket(), fs::perms::owner_read | fs::perms::owner_exec |
                                  fs::perms::group_read | fs::perms::others_read);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
         ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(3);
    PodResourcesWatcher w({t.socket(), 200ms, 1000ms});
    const bool empty = w.latest()->devices.empty();
    const auto notes = w.take_notes();
    const bool said =
        notes.size() == 1 && notes[0].find(
                                 "permission denied (connecting needs write permission on "
                                 "it: root, or a group it is writable by") != std::string::npos;
    ::_exit(empty && said && w.calls() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// OwnerResolver with a /proc fixture and the stand-in kubelet, as `status` runs it.
class ResolverWithKubelet : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path p = t_.dir / "proc" / "4242";
    fs::create_directories(p);
    std::ofstream(p / "stat") << "4242 (python) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 "
                                 "0 1 0 777 1000000 100\n";
    std::ofstream(p / "cgroup")
        << "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
           "3f1e7b2a_9c4d_4e8f_a1b2_c3d4e5f60718.slice/cri-containerd-"
           "5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d.scope\n";
    std::ofstream(p / "status") << "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n";
  }
  OwnerResolver resolver(const std::string& socket) {
    OwnerResolver::Options o;
    o.proc_root = (t_.dir / "proc").string();
    o.users = [](uint32_t) -> std::optional<std::string> { return "alice"; };
    o.kubelet_socket = socket;
    o.kubelet_deadline = 300ms;
    o.kubelet_refresh = 50ms;
    o.mig_parent = node_mig();
    return OwnerResolver(o);
  }
  Frame frame() const {
    Frame f;
    f.devices.resize(4);
    f.devices[0].processes.push_back({4242, "python", {}, {}, {}, {}});
    return f;
  }
  TempDir t_;
};

TEST_F(ResolverWithKubelet, NamesPodsAndFindsIdleAllocations) {
  fake_kubelet::Server kubelet(t_.socket(), Mode::kAnswer, node_pods());
  auto r = resolver(t_.socket());
  Frame f = frame();
  r.annotate(f, node_gpus());  // the first frame already has the kubelet's answer
  ASSERT_EQ(f.devices[0].owners.size(), 1u);
  EXPECT_EQ(owner_label(f.devices[0].owners[0]), "pod ml/trainer-0 (alice)");
  EXPECT_EQ(f.devices[0].owners[0].id, kUid);
  ASSERT_TRUE(f.devices[0].processes[0].owner);
  EXPECT_EQ(f.devices[0].processes[0].owner->container, "trainer");
  ASSERT_EQ(f.devices[1].owners.size(), 1u);
  EXPECT_EQ(f.devices[1].owners[0].pod, "notebook-7");
  ASSERT_EQ(f.devices[2].owners.size(), 1u);
  EXPECT_EQ(f.devices[2].owners[0].pod, "infer-1");
  EXPECT_TRUE(r.take_notes().empty());
  // Sampling does not call the kubelet: a burst of frames costs no extra call.
  for (int i = 0; i < 20; ++i) {
    Frame g = frame();
    r.annotate(g, node_gpus());
    EXPECT_EQ(g.devices[1].owners.size(), 1u);
  }
  EXPECT_LE(kubelet.calls(), 3);
}

TEST_F(ResolverWithKubelet, MissingSocketIsSilentAndRefusedIsSaidOnce) {
  {
    auto r = resolver((t_.dir / "absent.sock").string());
    Frame f = frame();
    r.annotate(f, node_gpus());
    ASSERT_EQ(f.devices[0].owners.size(), 1u);
    EXPECT_TRUE(f.devices[0].owners[0].pod.empty());  // known by UID, from its cgroup
    EXPECT_TRUE(f.devices[1].owners.empty());
    EXPECT_TRUE(r.take_notes().empty());
  }
  fake_kubelet::make_dead_socket(t_.socket());
  auto r = resolver(t_.socket());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    Frame f = frame();
    r.annotate(f, node_gpus());
    EXPECT_EQ(f.devices[0].owners.size(), 1u);
    std::this_thread::sleep_for(30ms);
  }
  EXPECT_LT(seconds_since(t0), 2.0);
  const auto notes = r.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("cannot be reached"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find(t_.socket()), std::string::npos) << notes[0];
}

}  // namespace
}  // namespace gpudoctor::host
