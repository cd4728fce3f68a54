// The framing hands back the pages of a mapped log it has read past (text::ReleasePassed): reading
// a mapped file through LineReader, csv::Records or the encoding check keeps a few MiB of it in
// memory, not the whole file, and sees the same text as without.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/csv_frame.hpp"
#include "formats/encoding.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

// This process' resident pages of mapped files, KiB (Linux's /proc/self/status).
long rss_file_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("RssFile:", 0) == 0) return std::stol(line.substr(8));
  return -1;
}

class Mapped {
 public:
  explicit Mapped(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY);
    size_ = static_cast<size_t>(std::filesystem::file_size(path));
    p_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  }
  ~Mapped() {
    ::munmap(p_, size_);
    ::close(fd_);
  }
  std::string_view text() const { return {static_cast<const char*>(p_), size_}; }

 private:
  int fd_ = -1;
  size_t size_ = 0;
  void* p_ = nullptr;
};

constexpr size_t kFileMiB = 64;

class ReleasePassedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = (std::filesystem::temp_directory_path() /
             ("gpudoctor-release-passed-" + std::to_string(::getpid()) + ".csv"))
                .string();
    std::ofstream out(path_, std::ios::binary);
    out << "time,gpu,power.draw [W]\n";
    std::string row;
    for (size_t i = 0; out.tellp() < static_cast<std::streamoff>(kFileMiB << 20); ++i) {
      row = "2026/12/03 13:00:00.000," + std::to_string(i % 8) + "," +
            std::to_string(100 + i % 300) + ".25 W, padding to make a line of some length\n";
      out << row;
    }
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  // Reads the mapped file through `read` (which calls `sample` as it goes), with or without the
  // release, and returns the most the mapped pages grew while reading, MiB.
  template <class Read>
  static long grown_mib(bool release, Read&& read) {
    const Mapped m(path_);
    const long before = rss_file_kib();
    long most = 0;
    auto sample = [&] { most = std::max(most, rss_file_kib() - before); };
    if (release) {
      const text::ReleasePassed guard(m.text());
      read(m.text(), sample);
    } else {
      read(m.text(), sample);
    }
    return most / 1024;
  }

  static std::string path_;
};
std::string ReleasePassedTest::path_;

TEST_F(ReleasePassedTest, LinesReadKeepAFewMiBOfTheFile) {
  size_t lines_with = 0, lines_without = 0;
  auto read_lines = [](size_t& count) {
    return [&count](std::string_view t, auto&& sample) {
      text::LineReader lines(t);
      std::string_view line;
      while (lines.next(line))
        if (++count % 50000 == 0) sample();
    };
  };
  const long without = grown_mib(false, read_lines(lines_without));
  const long with = grown_mib(true, read_lines(lines_with));
  EXPECT_EQ(lines_with, lines_without);
  // Without the release the whole file stays mapped; with it, what lies behind the reading
  // position beyond a lag and a step (1 + 4 MiB) goes.
  EXPECT_GE(without, static_cast<long>(kFileMiB) * 3 / 4);
  EXPECT_LE(with, 8) << "without: " << without << " MiB";
}

TEST_F(ReleasePassedTest, RecordsAndTheEncodingCheckReleaseToo) {
  size_t cells_with = 0, cells_without = 0;
  auto read_records = [](size_t& count) {
    return [&count](std::string_view t, auto&& sample) {
      // The encoding check reads the whole text first; the records read it again from the top.
      EXPECT_EQ(text::detect_encoding(t), text::Encoding::kUtf8);
      sample();
      csv::Records records(t, ',', 0);
      std::vector<std::string_view> cells;
      size_t line_no = 0, n = 0;
      std::string_view raw;
      while (records.next(cells, line_no, raw) == csv::Records::Next::kRecord) {
        count += cells.size();
        if (++n % 50000 == 0) sample();
      }
    };
  };
  const long without = grown_mib(false, read_records(cells_without));
  const long with = grown_mib(true, read_records(cells_with));
  EXPECT_EQ(cells_with, cells_without);
  EXPECT_GE(without, static_cast<long>(kFileMiB) * 3 / 4);
  EXPECT_LE(with, 8) << "without: " << without << " MiB";
}

// Text that is not the registered mapping is never touched: a string read while a mapping is
// registered reads as always.
TEST_F(ReleasePassedTest, OtherTextIsLeftAlone) {
  const Mapped m(path_);
  const text::ReleasePassed guard(m.text());
  std::string other(size_t{40} << 20, 'x');
  for (size_t i = 99; i < other.size(); i += 100) other[i] = '\n';
  text::LineReader lines(other);
  std::string_view line;
  size_t n = 0;
  while (lines.next(line)) n += line == std::string_view(other.data(), 99) ? 1 : 0;
  EXPECT_EQ(n, other.size() / 100);
  // The encoding check hands back the pieces it has checked, of the registered mapping only.
  EXPECT_EQ(text::detect_encoding(other), text::Encoding::kUtf8);
  EXPECT_EQ(std::count(other.begin(), other.end(), 'x'), static_cast<long>(other.size() - n));
}

}  // namespace
}  // namespace gpudoctor
