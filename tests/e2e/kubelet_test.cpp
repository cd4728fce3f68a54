// End-to-end: the real binary against the stand-in NVML, a /proc fixture and the stand-in kubelet
// (tests/kubelet: a gRPC server on a unix socket, run by this test program) behind
// --kubelet-socket: pods named, pods holding GPUs with nothing running found, a MIG device found
// through NVML, and a kubelet that does not answer said in a note, never an error.
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "e2e_util.hpp"
#include "fake_kubelet.hpp"

namespace {

using namespace e2e;
using fake_kubelet::Mode;
using nlohmann::json;

constexpr const char* kMig = "MIG-6a1b2c3d-4e5f-5061-9728-394a5b6c7d8e";

struct Node {
  Node() {
    char t[] = "/tmp/gpudoctor-e2e-kubelet-XXXXXX";
    dir = ::mkdtemp(t);
    socket = (dir / "kubelet.sock").string();
    // busy-8gpu with two MIG devices on GPU 6, which NVML finds by their UUIDs.
    json c = json::parse(std::ifstream(capture_path("busy-8gpu")));
    c["devices"][6]["mig_mode"] = true;
    c["devices"][6]["mig_devices"] =
        json::array({{{"uuid", kMig}}, {{"uuid", "MIG-00000000-1111-5222-8333-444455556666"}}});
    std::ofstream(dir / "capture.json") << c.dump();
    env = fmt::format("GPUDOCTOR_NVML_LIB={} GPUDOCTOR_FAKE_NVML_CAPTURE={} GPUDOCTOR_PROC_ROOT={}",
                      quote(FAKE_NVML_LIB), quote((dir / "capture.json").string()),
                      quote(kSrc + "/tests/data/proc"));
  }
  ~Node() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Result gpudoctor(const std::string& args) const {
    return run_with(env, args + " --kubelet-socket " + quote(socket));
  }
  fs::path dir;
  std::string socket, env;
};

// The capture's processes: 48213 (GPU 2) runs in pod 3f1e7b2a (tests/data/proc); the process of
// GPU 5 has exited. The kubelet gave GPU 2 to ml/trainer-0, GPU 5 to research/notebook-7 and a
// MIG device of GPU 6 to serving/infer-1.
std::vector<fake_kubelet::Pod> pods() {
  return {
      {"trainer-0",
       "ml",
       {{"trainer", {{"nvidia.com/gpu", {"GPU-a972939b-6be0-b12b-cdb5-f8f0c0cf96d0"}}}}}},
      {"notebook-7",
       "research",
       {{"lab", {{"nvidia.com/gpu", {"GPU-43d821ea-9954-d5a1-8995-d33b9df39237"}}}}}},
      {"infer-1", "serving", {{"server", {{"nvidia.com/mig-1g.10gb", {kMig}}}}}},
  };
}

TEST(Kubelet, StatusAndWatchNamePodsAndGpusHeldIdle) {
  Node node;
  fake_kubelet::Server kubelet(node.socket, Mode::kAnswer, pods());
  const Result r = node.gpudoctor("status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pod ml/trainer-0 (root)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("pod 3f1e7b2a"), std::string::npos) << r.out;  // one owner, not two
  EXPECT_NE(r.out.find("pod research/notebook-7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pod serving/infer-1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job 41877.0 (root)"), std::string::npos) << r.out;  // from /proc, as before
  EXPECT_EQ(r.err.find("note"), std::string::npos) << r.err;

  const Result j = node.gpudoctor("status --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json gpus = json::parse(j.out)["gpus"];
  ASSERT_EQ(gpus.size(), 8u);
  ASSERT_EQ(gpus[2]["owners"].size(), 1u) << gpus[2].dump();
  const json& t = gpus[2]["owners"][0];
  EXPECT_EQ(t["id"], "3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718");
  EXPECT_EQ(t["pod"], "trainer-0");
  EXPECT_EQ(t["namespace"], "ml");
  EXPECT_EQ(t["container"], "trainer");
  EXPECT_EQ(t["user"], "root");
  EXPECT_EQ(gpus[2]["processes"][0]["owner"]["pod"], "trainer-0");
  ASSERT_EQ(gpus[5]["owners"].size(), 1u) << gpus[5].dump();
  EXPECT_EQ(gpus[5]["owners"][0]["source"], "kubelet pod-resources");
  EXPECT_EQ(gpus[5]["owners"][0]["container"], "lab");
  ASSERT_EQ(gpus[6]["owners"].size(), 1u) << gpus[6].dump();
  EXPECT_EQ(gpus[6]["owners"][0]["namespace"], "serving");
  EXPECT_TRUE(gpus[7]["owners"].empty() || gpus[7]["owners"].is_null()) << gpus[7].dump();

  const Result w = node.gpudoctor("watch -i 100ms -c 2 --format csv --gpus 4,5");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("pod research/notebook-7"), std::string::npos) << w.out;

  // Not asked: pods known by UID only, and nothing on GPU 5.
  const Result none = run_with(node.env, "status --kubelet-socket none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("pod 3f1e7b2a (root)"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("notebook-7"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("infer-1"), std::string::npos) << none.out;
}

TEST(Kubelet, NoKubeletIsSilentAndAKubeletThatDoesNotAnswerIsANote) {
  Node node;
  // No socket at all: not used, nothing said.
  const Result absent = node.gpudoctor("status");
  ASSERT_EQ(absent.exit_code, 0) << absent.err;
  EXPECT_EQ(absent.err.find("note"), std::string::npos) << absent.err;
  EXPECT_NE(absent.out.find("pod 3f1e7b2a (root)"), std::string::npos) << absent.out;

  fake_kubelet::Server kubelet(node.socket, Mode::kHang);
  const Result r = node.gpudoctor("watch -i 200ms -c 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string note = "gpudoctor: note: the kubelet's pod-resources socket " + node.socket +
                           ": no answer within 1000 ms";
  EXPECT_NE(r.err.find(note), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(note), r.err.rfind(note)) << r.err;  // said once
  EXPECT_NE(r.out.find("pod 3f1e7b2a (root)"), std::string::npos) << r.out;
  EXPECT_GE(kubelet.calls(), 1);
}

// The kubelet is asked through a module of its own (gpudoctor-kubelet.so: gRPC stays out of the
// program): one that cannot be loaded is a note that says where it was looked for, never an
// error, and pods are then known by UID only.
TEST(Kubelet, AClientModuleThatCannotBeLoadedIsANote) {
  Node node;
  fake_kubelet::Server kubelet(node.socket, Mode::kAnswer, pods());
  const std::string missing = (node.dir / "no-such-module.so").string();
  const Result r = run_with(node.env + " GPUDOCTOR_KUBELET_MODULE=" + quote(missing),
                            "status --kubelet-socket " + quote(node.socket));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string note = "gpudoctor: note: the kubelet's pod-resources socket " + node.socket +
                           ": the kubelet client module " + missing + " cannot be loaded (";
  EXPECT_NE(r.err.find(note), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("pod 3f1e7b2a (root)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("notebook-7"), std::string::npos) << r.out;
  EXPECT_EQ(kubelet.calls(), 0);
}

}  // namespace
