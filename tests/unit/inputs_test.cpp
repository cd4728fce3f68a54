// Inputs as people hand them over (docs/formats.md, "Inputs"): compressed logs recognised by their
// first bytes and read like the plain file, corrupt and truncated archives refused in words, W&B
// and MLflow run folders read as one run, and a folder's logs merged into one run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/input_bytes.hpp"
#include "formats/load.hpp"
#include "formats/run_folders.hpp"
#include "test_helpers.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

namespace fs = std::filesystem;
const fs::path kSrc = GPUDOCTOR_SOURCE_DIR;
const fs::path kLog = kSrc / "tests/data/logs/smi-csv/two_gpu_units.csv";
const fs::path kMlflowRun =
    kSrc / "tests/data/runs/mlflow/mlruns/0/8c2f4a91d3e04b7f9a6e1c5d2b7f0e13";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

class TempDir {
 public:
  explicit TempDir(const std::string& name) : path_(fs::temp_directory_path() / fmt_name(name)) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  static std::string fmt_name(const std::string& n) {
    return "gpudoctor-inputs-" + n + "-" + std::to_string(::getpid());
  }
  fs::path path_;
};

size_t samples(const Recording& rec) {
  size_t n = 0;
  for (const auto& g : rec.gpus) n += g.size();
  return n;
}

TEST(Inputs, CompressionIsToldByTheFirstBytes) {
  EXPECT_EQ(detect_compression("\x1f\x8b\x08"), Compression::kGzip);
  EXPECT_EQ(detect_compression(std::string_view("\xfd"
                                                "7zXZ\0\0",
                                                7)),
            Compression::kXz);
  EXPECT_EQ(detect_compression("\x28\xb5\x2f\xfd\x20"), Compression::kZstd);
  EXPECT_EQ(detect_compression("timestamp, name"), Compression::kNone);
  EXPECT_EQ(detect_compression(""), Compression::kNone);
}

TEST(Inputs, EachCompressedLogReadsAsThePlainFile) {
  auto plain = load_telemetry(kLog.string(), LoadOptions{});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const std::string text = read_file(kLog);
  TempDir dir("compressed");
  for (const auto& a : kArchives) {
    const std::string bytes = a.make(text);
    ASSERT_EQ(detect_compression(bytes), a.kind);
    // By content, not name: the same archive named .csv reads the same.
    for (const std::string& name : {std::string("run.csv") + a.ext, std::string("run.csv")}) {
      SCOPED_TRACE(name);
      write_file(dir.path() / name, bytes);
      auto rec = load_telemetry((dir.path() / name).string(), LoadOptions{});
      ASSERT_TRUE(rec.ok()) << rec.error().message;
      EXPECT_EQ(rec->gpus.size(), plain->gpus.size());
      EXPECT_EQ(samples(rec.value()), samples(plain.value()));
      EXPECT_EQ(rec->start_unix_ms, plain->start_unix_ms);
      EXPECT_TRUE(
          has_note(rec.value(), std::string(compression_name(a.kind)) + " archive decompressed"));
    }
  }
}

TEST(Inputs, ConcatenatedGzipMembersAreOneLog) {
  const std::string text = read_file(kLog);
  const size_t cut = text.find('\n', text.size() / 2) + 1;
  auto both = decompress(gzip(text.substr(0, cut)) + gzip(text.substr(cut)), Compression::kGzip,
                         "two.gz", size_t{1} << 30);
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both.value(), text);
}

TEST(Inputs, CorruptAndTruncatedArchivesAreRefusedInWords) {
  const std::string text = read_file(kLog);
  TempDir dir("broken");
  for (const auto& a : kArchives) {
    SCOPED_TRACE(a.ext);
    const std::string bytes = a.make(text);
    const fs::path cut = dir.path() / (std::string("cut.csv") + a.ext);
    write_file(cut, bytes.substr(0, bytes.size() / 2));
    auto t = load_telemetry(cut.string(), LoadOptions{});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().kind, Error::Kind::kUsage);
    EXPECT_EQ(t.error().message,
              cut.string() + ": the " + std::string(compression_name(a.kind)) +
                  " archive is cut short (truncated: its end is missing); what it holds up to "
                  "the cut is not read");
    std::string bad = bytes;
    bad[a.header_byte] = '\xff';
    const fs::path corrupt = dir.path() / (std::string("corrupt.csv") + a.ext);
    write_file(corrupt, bad);
    auto c = load_telemetry(corrupt.string(), LoadOptions{});
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().kind, Error::Kind::kUsage);
    EXPECT_NE(c.error().message.find(corrupt.string() + ": a corrupt " +
                                     std::string(compression_name(a.kind)) + " archive ("),
              std::string::npos)
        << c.error().message;
  }
}

TEST(Inputs, DecompressedSizeIsBounded) {
  const std::string text(1 << 20, 'x');
  for (const auto& a : kArchives) {
    SCOPED_TRACE(a.ext);
    auto r = decompress(a.make(text), a.kind, "big", 1 << 16);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("decompress it to a file"), std::string::npos);
  }
  EXPECT_GE(max_decompressed_bytes(), size_t{256} << 20);
}

// Ctrl-C while reading a pipe: what is already in it is read, a last line cut short dropped,
// and the reading ends without waiting for the producer.
TEST(Inputs, AnInterruptedReadKeepsWhatArrived) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string sent = "a,b\n1,2\n3,";
  ASSERT_EQ(::write(fds[1], sent.data(), sent.size()), static_cast<ssize_t>(sent.size()));
  auto r = read_to_end(
      fds[0], "standard input", [] { return true; }, 1 << 20);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->bytes, "a,b\n1,2\n");
  ::close(fds[0]);
  ::close(fds[1]);
  // Not interrupted: to the end of the stream, every byte.
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], sent.data(), sent.size()), static_cast<ssize_t>(sent.size()));
  ::close(fds[1]);
  auto whole = read_to_end(fds[0], "standard input", {}, 1 << 20);
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(whole->interrupted);
  EXPECT_EQ(whole->bytes, sent);
  ::close(fds[0]);
  // More than the bound: refused in words.
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], sent.data(), sent.size()), static_cast<ssize_t>(sent.size()));
  ::close(fds[1]);
  auto big = read_to_end(fds[0], "standard input", {}, 4);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("write it to a file"), std::string::npos);
  ::close(fds[0]);
}

TEST(Inputs, MlflowRunIsReadFromItsSystemMetrics) {
  // The run folder, its metrics folder and metrics/system itself are the same run.
  for (const fs::path& p : {kMlflowRun, kMlflowRun / "metrics", kMlflowRun / "metrics/system"}) {
    SCOPED_TRACE(p.string());
    ASSERT_EQ(classify_folder(p.string()).kind, FolderKind::kMlflowRun);
    auto rec = load_telemetry(p.string(), LoadOptions{});
    ASSERT_TRUE(rec.ok()) << rec.error().message;
    ASSERT_EQ(rec->gpus.size(), 2u);
    EXPECT_EQ(rec->start_unix_ms, 1764583200000);
    const GpuSeries& g0 = rec->gpus[0];
    ASSERT_EQ(g0.size(), 30u);
    EXPECT_DOUBLE_EQ(g0.time_s.back(), 290.0);
    ASSERT_TRUE(g0.has(Field::kPower));
    EXPECT_DOUBLE_EQ((*g0.column(Field::kPower))[0], 290.0);
    ASSERT_TRUE(g0.has(Field::kUtilGpu));
    EXPECT_DOUBLE_EQ((*g0.column(Field::kUtilGpu))[0], 95.0);
    ASSERT_TRUE(g0.has(Field::kPowerPercent));
    EXPECT_DOUBLE_EQ((*g0.column(Field::kPowerPercent))[0], 72.5);
    EXPECT_DOUBLE_EQ((*rec->gpus[1].column(Field::kPower))[0], 60.0);
    EXPECT_TRUE(has_note(rec.value(), "read as an MLflow run's system metrics"));
    EXPECT_TRUE(has_note(rec.value(),
                         "not GPU metrics, not read: cpu_utilization_percentage, "
                         "system_memory_usage_megabytes"));
  }
}

TEST(Inputs, LogsNamedLikeRunFilesAreAFolderOfLogs) {
  TempDir dir("per-gpu");
  write_file(dir.path() / "gpu_0_power.csv", read_file(kLog));
  EXPECT_EQ(classify_folder(dir.path().string()).kind, FolderKind::kLogs);
  // A run file among other logs is one of them, not a W&B run folder.
  fs::copy_file(kSrc / "tests/data/logs/wandb/run-fixture.wandb", dir.path() / "run-x.wandb");
  EXPECT_EQ(classify_folder(dir.path().string()).kind, FolderKind::kLogs);
}

// A W&B run folder as the SDK leaves it: the run file and files/wandb-metadata.json.
fs::path make_wandb_run(const fs::path& root, const std::string& metadata) {
  const fs::path run = root / "run-20241201_100000-fx01ab";
  fs::create_directories(run / "files");
  fs::copy_file(kSrc / "tests/data/logs/wandb/run-fixture.wandb", run / "run-fx01ab.wandb");
  if (!metadata.empty()) write_file(run / "files" / "wandb-metadata.json", metadata);
  write_file(run / "files" / "output.log", "epoch 1 loss 0.5\n");
  return run;
}

TEST(Inputs, WandbRunFolderNamesItsGpusFromTheMetadata) {
  TempDir dir("wandb");
  const fs::path run = make_wandb_run(dir.path(), R"({
    "os": "Linux-6.1", "python": "3.11.4", "host": "node9",
    "gpu": "NVIDIA A100-SXM4-80GB", "gpu_count": 4,
    "gpu_devices": [{"name": "NVIDIA A100-SXM4-80GB", "memory_total": 85899345920},
                    {"name": "NVIDIA A100-SXM4-80GB", "memory_total": 85899345920}]})");
  const RunFolder f = classify_folder(run.string());
  ASSERT_EQ(f.kind, FolderKind::kWandbRun);
  EXPECT_EQ(fs::path(f.run_file).filename(), "run-fx01ab.wandb");
  auto plain = load_telemetry((run / "run-fx01ab.wandb").string(), LoadOptions{});
  ASSERT_TRUE(plain.ok());
  auto rec = load_telemetry(run.string(), LoadOptions{});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->gpus.size(), plain->gpus.size());
  EXPECT_EQ(samples(rec.value()), samples(plain.value()));
  for (const auto& g : rec->gpus) {
    const auto& p = plain->gpus[g.info.index];
    EXPECT_EQ(g.info.name, p.info.name.empty() ? "NVIDIA A100-SXM4-80GB" : p.info.name);
  }
  EXPECT_TRUE(has_note(rec.value(), "read as a W&B run folder"));
  EXPECT_TRUE(has_note(rec.value(),
                       "wandb-metadata.json counts 4 GPUs; the run file has "
                       "metrics of " +
                           std::to_string(plain->gpus.size())));
  EXPECT_FALSE(has_note(rec.value(), "--gpu-name"));
  if (plain->system.hostname.empty()) {
    EXPECT_EQ(rec->system.hostname, "node9");
  }
}

TEST(Inputs, WandbRunFolderWithoutMetadataIsItsRunFile) {
  TempDir dir("wandb-bare");
  const fs::path run = make_wandb_run(dir.path(), "");
  auto rec = load_telemetry(run.string(), LoadOptions{});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_TRUE(has_note(rec.value(), "(no files/wandb-metadata.json)"));
  // A metadata file that is not JSON is named and ignored.
  write_file(run / "files" / "wandb-metadata.json", "{not json");
  auto bad = load_telemetry(run.string(), LoadOptions{});
  ASSERT_TRUE(bad.ok());
  EXPECT_TRUE(has_note(bad.value(), "wandb-metadata.json: not JSON, ignored"));
}

TEST(Inputs, AFolderListsItsLogsAndRunFolders) {
  TempDir dir("folder");
  write_file(dir.path() / "b.csv", "x");
  write_file(dir.path() / "a.csv", "x");
  write_file(dir.path() / ".hidden", "x");
  fs::create_directories(dir.path() / "empty-subfolder");
  make_wandb_run(dir.path(), "");
  auto files = folder_logs(dir.path().string());
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ(fs::path((*files)[0]).filename(), "a.csv");
  EXPECT_EQ(fs::path((*files)[1]).filename(), "b.csv");
  EXPECT_EQ(fs::path((*files)[2]).filename(), "run-20241201_100000-fx01ab");
  // Numbers in their order: one log per GPU stays in GPU order.
  TempDir gpus("gpus");
  for (const char* n : {"gpu10.csv", "gpu2.csv", "gpu1.csv", "gpu01b.csv"})
    write_file(gpus.path() / n, "x");
  auto ordered = folder_logs(gpus.path().string());
  ASSERT_TRUE(ordered.ok());
  std::vector<std::string> names;
  for (const auto& f : ordered.value()) names.push_back(fs::path(f).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"gpu1.csv", "gpu01b.csv", "gpu2.csv", "gpu10.csv"}));
  TempDir empty("empty");
  EXPECT_FALSE(folder_logs(empty.path().string()).ok());
}

Recording one_gpu(int64_t start_ms, const std::string& host, double power) {
  Recording rec;
  rec.start_unix_ms = start_ms;
  rec.system.hostname = host;
  GpuSeries g;
  g.info.name = "NVIDIA H100 80GB HBM3";
  for (int i = 0; i < 3; ++i) {
    const size_t row = g.append_row(i * 10.0);
    g.column_for_write(Field::kPower)[row] = power;
  }
  g.processes.push_back({1, "python", 0, 20, std::nullopt});
  rec.gpus.push_back(std::move(g));
  rec.notes.push_back("a note of its own");
  return rec;
}

TEST(Inputs, MergedLogsAreOneRunAlignedByAbsoluteTime) {
  std::vector<std::pair<std::string, Recording>> parts;
  parts.emplace_back("node1.csv", one_gpu(1'764'583'260'000, "node1", 300));
  parts.emplace_back("node2.csv", one_gpu(1'764'583'200'000, "node2", 100));
  const Recording rec = merge_recordings(std::move(parts));
  EXPECT_EQ(rec.start_unix_ms, 1'764'583'200'000);
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].info.index, 0u);
  EXPECT_EQ(rec.gpus[1].info.index, 1u);
  EXPECT_EQ(rec.gpus[0].host, "node1");
  EXPECT_EQ(rec.gpus[1].host, "node2");
  EXPECT_DOUBLE_EQ(rec.gpus[0].time_s.front(), 60.0);  // node1 started a minute later
  EXPECT_DOUBLE_EQ(rec.gpus[0].processes[0].first_s, 60.0);
  EXPECT_DOUBLE_EQ(rec.gpus[1].time_s.front(), 0.0);
  EXPECT_EQ(rec.system.hostname, "");
  ASSERT_FALSE(rec.notes.empty());
  EXPECT_EQ(rec.notes[0],
            "merged 2 logs as one run, GPUs renumbered: node1.csv (GPU 0, host node1), "
            "node2.csv (GPU 1, host node2); times aligned by their absolute times");
  EXPECT_TRUE(has_note(rec, "node2.csv: a note of its own"));
}

TEST(Inputs, MergedLogsWithoutAbsoluteTimesStartTogether) {
  std::vector<std::pair<std::string, Recording>> parts;
  parts.emplace_back("gpu0.log", one_gpu(0, "n", 300));
  parts.emplace_back("gpu1.log", one_gpu(1'764'583'200'000, "n", 100));
  const Recording rec = merge_recordings(std::move(parts));
  EXPECT_EQ(rec.start_unix_ms, 0);
  EXPECT_EQ(rec.system.hostname, "n");
  EXPECT_EQ(rec.gpus[1].host, "");
  EXPECT_DOUBLE_EQ(rec.gpus[1].time_s.front(), 0.0);
  EXPECT_NE(rec.notes[0].find("not every log has absolute times: each starts at 0"),
            std::string::npos);
}

}  // namespace
}  // namespace gpudoctor
