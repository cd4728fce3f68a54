// The TUI of `gpudoctor top`: the cell screen and its ANSI diff writer (checked by replaying the
// bytes on a small terminal model), key decoding, bars and sparklines, the table layout, whole
// frames against expected text (tests/unit/golden/top-*.txt; GPUDOCTOR_UPDATE_GOLDEN=1 rewrites
// them), every terminal size, the collector on the simulator, and the terminal restore on signals.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/gpu_models.hpp"
#include "sources/sim/sim_source.hpp"
#include "tui/screen.hpp"
#include "tui/terminal.hpp"
#include "tui/top_collector.hpp"
#include "tui/top_view.hpp"

namespace gpudoctor::tui {
namespace {

// A terminal model that understands what AnsiWriter writes: CUP, ED 2, SGR, printable UTF-8.
struct FakeTerminal {
  int rows, cols;
  std::vector<Cell> cells;
  int r = 0, c = 0;
  Style style;
  FakeTerminal(int rows_, int cols_)
      : rows(rows_), cols(cols_), cells(static_cast<size_t>(rows_ * cols_)) {}

  void apply(const std::string& bytes) {
    const std::u32string s = decode_utf8(bytes);
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == 0x1b) {
        ASSERT_LT(i + 1, s.size());
        ASSERT_EQ(s[i + 1], U'[');
        size_t j = i + 2;
        std::string params;
        while (j < s.size() && ((s[j] >= U'0' && s[j] <= U'9') || s[j] == U';'))
          params.push_back(static_cast<char>(s[j++]));
        ASSERT_LT(j, s.size());
        std::vector<int> p;
        std::stringstream ss(params);
        for (std::string x; std::getline(ss, x, ';');) p.push_back(x.empty() ? 0 : std::stoi(x));
        switch (s[j]) {
          case U'H':
            r = p.size() > 0 ? p[0] - 1 : 0;
            c = p.size() > 1 ? p[1] - 1 : 0;
            break;
          case U'J':
            for (auto& cell : cells) cell = Cell{};
            break;
          case U'm':
            style = Style{};
            for (int v : p) {
              if (v == 1) style.bold = true;
              if (v == 2) style.dim = true;
              if (v == 7) style.reverse = true;
              if (v == 31) style.fg = Color::kRed;
              if (v == 32) style.fg = Color::kGreen;
              if (v == 33) style.fg = Color::kYellow;
              if (v == 34) style.fg = Color::kBlue;
              if (v == 35) style.fg = Color::kMagenta;
              if (v == 36) style.fg = Color::kCyan;
              if (v == 90) style.fg = Color::kGray;
            }
            break;
          default:
            FAIL() << "unexpected sequence final " << static_cast<int>(s[j]);
        }
        i = j;
        continue;
      }
      ASSERT_GE(r, 0);
      ASSERT_LT(r, rows);
      ASSERT_GE(c, 0);
      ASSERT_LT(c, cols) << "write past the right margin";
      cells[static_cast<size_t>(r * cols + c)] = {s[i], style};
      if (c + 1 < cols) ++c;  // no autowrap
    }
  }
  bool shows(const Screen& screen) const {
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < cols; ++x)
        if (!(cells[static_cast<size_t>(y * cols + x)] == screen.at(y, x))) return false;
    return true;
  }
};

TEST(TuiScreen, PutClipsAndReplacesWideOrControlCharacters) {
  Screen s(2, 10);
  EXPECT_EQ(s.put(0, 6, "abcdef"), 4);
  EXPECT_EQ(s.row_text(0), "      abcd");
  s.put(1, 0,
        "a\tb中c\x01"
        "d");
  EXPECT_EQ(s.row_text(1), "a?b?c?d");
  s.field(0, 0, 5, "gpudoctor");
  EXPECT_EQ(s.row_text(0), "gpud… abcd");
  s.field(0, 0, 5, "42", {}, Align::kRight);
  EXPECT_EQ(s.row_text(0), "   42 abcd");
  Screen ascii(1, 6, false);
  ascii.field(0, 0, 6, "█ block text");
  EXPECT_EQ(ascii.row_text(0), "? blo~");
  EXPECT_EQ(s.text(), "   42 abcd\na?b?c?d\n");
  Screen blank(3, 4);
  blank.put(0, 0, "x");
  EXPECT_EQ(blank.text(true), "x\n");
  // Nothing outside the screen is ever touched.
  s.put(-1, 0, "x");
  s.put(2, 0, "x");
  s.fill(0, -3, 20, U'#');
  EXPECT_EQ(s.row_text(0), "##########");
}

TEST(TuiScreen, AnsiWriterRepaintsOnlyWhatChangedAndTheResultIsTheFrame) {
  std::mt19937 rng(7);
  const char32_t glyphs[] = {U' ', U'a', U'Z', U'█', U'▁', U'·', U'…', U'─'};
  const Color colors[] = {Color::kDefault, Color::kRed, Color::kGreen, Color::kGray};
  FakeTerminal term(7, 13);
  AnsiWriter w(true);
  Screen frame(7, 13);
  for (int round = 0; round < 40; ++round) {
    const int changes = round == 0 ? 91 : static_cast<int>(rng() % 20);
    for (int k = 0; k < changes; ++k) {
      Style st;
      st.fg = colors[rng() % 4];
      st.bold = rng() % 3 == 0;
      st.reverse = rng() % 7 == 0;
      frame.set(static_cast<int>(rng() % 7), static_cast<int>(rng() % 13), glyphs[rng() % 8], st);
    }
    const std::string bytes = w.update(frame);
    term.apply(bytes);
    ASSERT_TRUE(term.shows(frame)) << "round " << round;
  }
  EXPECT_EQ(w.update(frame), "");
  frame.set(3, 3, U'x');
  const std::string one = w.update(frame);
  EXPECT_EQ(one, "\x1b[4;4Hx");
  // After invalidate() (resize, Ctrl-L) everything is painted again from a cleared screen.
  w.invalidate();
  const std::string all = w.update(frame);
  EXPECT_EQ(all.rfind("\x1b[0m\x1b[H\x1b[2J", 0), 0u);
  FakeTerminal fresh(7, 13);
  fresh.apply(all);
  EXPECT_TRUE(fresh.shows(frame));
}

TEST(TuiScreen, WithoutColourNoColourSequenceIsWritten) {
  Screen s(2, 20);
  s.put(0, 0, "red", Style{Color::kRed});
  s.put(1, 0, "bold", Style{Color::kGreen, true});
  AnsiWriter w(false);
  const std::string out = w.update(s);
  for (const char* code : {";31", ";32", ";33", ";34", ";35", ";36", ";90"})
    EXPECT_EQ(out.find(code), std::string::npos) << code;
  EXPECT_NE(out.find("\x1b[0;1m"), std::string::npos);
  AnsiWriter wc(true);
  EXPECT_NE(wc.update(s).find("\x1b[0;31m"), std::string::npos);
}

TEST(TuiKeys, DecodesKeysAndSequences) {
  using K = KeyCode;
  auto codes = [](std::string_view in) {
    std::vector<K> out;
    for (const auto& k : decode_keys(in)) out.push_back(k.code);
    return out;
  };
  EXPECT_EQ(codes("\x1b[A\x1b[B\x1bOA\x1bOB\x1b[C\x1b[D"),
            (std::vector<K>{K::kUp, K::kDown, K::kUp, K::kDown, K::kRight, K::kLeft}));
  EXPECT_EQ(codes("\x1b[5~\x1b[6~\x1b[1~\x1b[4~\x1b[H\x1b[F"),
            (std::vector<K>{K::kPageUp, K::kPageDown, K::kHome, K::kEnd, K::kHome, K::kEnd}));
  EXPECT_EQ(codes("\x1b"), (std::vector<K>{K::kEscape}));
  EXPECT_EQ(codes("\x1b\x1b[A"), (std::vector<K>{K::kEscape, K::kUp}));
  EXPECT_EQ(codes("\r\n\r\n"), (std::vector<K>{K::kEnter, K::kEnter}));
  EXPECT_EQ(codes("\x03\x0c\x1a\x7f\t"),
            (std::vector<K>{K::kCtrlC, K::kCtrlL, K::kCtrlZ, K::kBackspace, K::kTab}));
  EXPECT_EQ(codes("\x1b[1;5A"), (std::vector<K>{K::kUp}));  // Ctrl+Up: still up
  EXPECT_EQ(codes("\x1b[200~x"), (std::vector<K>{K::kUnknown, K::kChar}));
  EXPECT_EQ(codes("\x1b[99999999999999999999~"), (std::vector<K>{K::kUnknown}));  // no overflow
  EXPECT_EQ(codes("é"), (std::vector<K>{K::kUnknown}));
  const auto keys = decode_keys("q1?");
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0], (Key{K::kChar, 'q'}));
  EXPECT_EQ(keys[1], (Key{K::kChar, '1'}));
  EXPECT_EQ(keys[2], (Key{K::kChar, '?'}));
}

// Sequences cut between two reads (SSH, tmux, the read size) are held until the rest comes.
TEST(TuiKeys, SequencesSplitAcrossReads) {
  using K = KeyCode;
  auto codes = [](const std::vector<Key>& keys) {
    std::vector<K> out;
    for (const auto& k : keys) out.push_back(k.code);
    return out;
  };
  KeyDecoder d;
  EXPECT_TRUE(d.feed("\x1b[").empty());
  EXPECT_TRUE(d.pending());
  EXPECT_EQ(codes(d.feed("6~")), (std::vector<K>{K::kPageDown}));  // not Esc, '[', '6', '~'
  EXPECT_FALSE(d.pending());
  EXPECT_EQ(codes(d.feed("q\x1b")), (std::vector<K>{K::kChar}));
  EXPECT_EQ(codes(d.feed("[A")), (std::vector<K>{K::kUp}));  // an arrow, not Esc then '[' 'A'
  EXPECT_TRUE(d.feed("\x1bO").empty());
  EXPECT_EQ(codes(d.feed("B")), (std::vector<K>{K::kDown}));
  EXPECT_TRUE(d.feed("\x1b[1;").empty());
  EXPECT_EQ(codes(d.feed("5A")), (std::vector<K>{K::kUp}));
  EXPECT_TRUE(d.feed("\xc3").empty());  // half of é
  EXPECT_EQ(codes(d.feed("\xa9x")), (std::vector<K>{K::kUnknown, K::kChar}));
  // An Esc alone is the Esc key once no more input comes.
  EXPECT_TRUE(d.feed("\x1b").empty());
  EXPECT_EQ(codes(d.flush()), (std::vector<K>{K::kEscape}));
  EXPECT_FALSE(d.pending());
  EXPECT_EQ(codes(d.feed("\x1b\x1b[B")), (std::vector<K>{K::kEscape, K::kDown}));
  // An endless run of parameter bytes is not held forever.
  EXPECT_TRUE(d.feed("\x1b[12345").empty());
  EXPECT_EQ(codes(d.feed(std::string(40, '7'))), (std::vector<K>{K::kUnknown}));
  EXPECT_FALSE(d.pending());
}

TEST(TuiWidgets, BarsInEighthsAndAscii) {
  EXPECT_EQ(bar(0.5, 4, true), U"██··");
  EXPECT_EQ(bar(0.55, 4, true), U"██▎·");
  EXPECT_EQ(bar(0.53, 4, true), U"██▏·");
  EXPECT_EQ(bar(1.7, 3, true), U"███");
  EXPECT_EQ(bar(-1, 3, true), U"···");
  EXPECT_EQ(bar(std::nan(""), 3, true), U"···");
  EXPECT_EQ(bar(0.5, 4, false), U"##..");
  EXPECT_EQ(bar(0.99, 1, false), U"#");
  EXPECT_EQ(bar(0.5, 0, true), U"");
}

TEST(TuiWidgets, SparklinesScaleAndBucket) {
  const float nan = std::nanf("");
  EXPECT_EQ(sparkline({0, 50, 100}, 5, 100, true), U"  ▁▅█");
  EXPECT_EQ(sparkline({0, 50, 100}, 5, 100, false), U"  _-#");
  EXPECT_EQ(sparkline({nan, 100}, 2, 100, true), U" █");
  // Four values in two cells: each cell the mean of two.
  EXPECT_EQ(sparkline({0, 100, 100, 100}, 2, 100, true), U"▅█");
  EXPECT_EQ(sparkline({}, 3, 100, true), U"   ");
  EXPECT_EQ(sparkline({200}, 1, 100, true), U"█");
}

TEST(TuiLayout, ColumnsDropByPriorityAndBarsGrowWithTheWidth) {
  using V = std::vector<std::string>;
  EXPECT_EQ(table_layout(200),
            (V{"GPU:3", "NAME:16", "UTIL:4+10", "SM:4+10", "POWER:9+10", "EFF:4+10", "MEM:8+10",
               "TEMP:4+10", "SMCLK:5+10", "EVENTS:14", "NOW:16", "DIAGNOSIS:18"}));
  EXPECT_EQ(table_layout(120), (V{"GPU:3", "UTIL:4+4", "SM:4+4", "POWER:9+4", "EFF:4+4", "MEM:8+4",
                                  "TEMP:4", "SMCLK:5", "EVENTS:10", "NOW:16", "DIAGNOSIS:18"}));
  EXPECT_EQ(table_layout(80), (V{"GPU:3", "UTIL:4", "SM:4", "POWER:9", "EFF:4", "MEM:8", "TEMP:4",
                                 "EVENTS:6", "NOW:14", "DIAGNOSIS:15"}));
  EXPECT_EQ(table_layout(40), (V{"GPU:3", "UTIL:4", "NOW:15", "DIAGNOSIS:15"}));
  EXPECT_EQ(table_layout(10), (V{"GPU:3", "NOW:6"}));
}

// Two H100s: one busy but idle (GPU-Util 99 %, 26 % power) and one working; a data starvation
// finding; a few history points; two processes.
TopState sample_state(size_t gpus = 2) {
  TopState st;
  st.source = "sim:demo";
  st.hostname = "node-7";
  st.driver_version = "550.54.15";
  st.time_s = 120;
  st.frames = 240;
  st.diagnosed = true;
  st.diagnosis_at_s = 118;
  st.diagnosis_span_s = 115;
  st.verdict = Cause::kDataStarvation;
  st.findings.push_back(
      {Severity::kWarning,
       Cause::kDataStarvation,
       {1},
       90,
       "GPU 1 wait for input: GPU-Util averages 71 % and drops below 60 % in 30 % "
       "of samples, every 4.1 s; power at 38 % of the limit"});
  for (size_t i = 0; i < gpus; ++i) {
    GpuView g;
    g.info.index = static_cast<unsigned>(i);
    g.info.name = "NVIDIA H100 80GB HBM3";
    g.info.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + i);
    g.info.architecture = Architecture::kHopper;
    const bool loafing = i % 2 == 1;
    GpuAssessment& a = g.now;
    a.util_pct = loafing ? 99 : 100;
    a.sm_pct = loafing ? 13 : 91;
    a.power_w = loafing ? 184 : 662;
    a.limit_w = 700;
    a.limit_is_default = true;
    a.enforced_limit_w = 700;
    a.power_ratio = *a.power_w / 700;
    a.efficiency = *a.power_ratio * *a.sm_pct / 100;
    a.efficiency_has_sm = true;
    a.mem_used_mib = loafing ? 12870 : 70315;
    a.mem_total_mib = 81559;
    a.pcie_text = "Gen5 x16";
    a.verdict = loafing ? SnapshotVerdict::kBusyButIdle : SnapshotVerdict::kWorking;
    a.detail = loafing ? "util 99 % but power 26 % of 700 W and SM activity 13 %"
                       : "util 100 %, power 95 % of 700 W, SM activity 91 %, efficiency 0.86";
    g.temp_c = loafing ? 41 : 60;
    g.temp_slowdown_c = 87;
    g.clock_sm_mhz = loafing ? 1980 : 1755;
    g.clock_sm_max_mhz = 1980;
    g.pstate = 0;
    g.reasons = loafing ? 0 : 0x4;
    g.processes_supported = true;
    g.processes.push_back({static_cast<uint32_t>(4242 + i), "alice",
                           "python train.py --config big.yaml", *a.mem_used_mib - 500,
                           loafing ? 13.0 : 90.0, ""});
    for (int k = 0; k < 60; ++k) {
      HistoryPoint h;
      h.t_s = 60 + k;
      const float wave = static_cast<float>(k % 8) / 7.0f;
      h.power_pct = loafing ? 20 + 15 * wave : 94;
      h.util_pct = loafing ? (k % 8 < 5 ? 99 : 20) : 100;
      h.sm_pct = loafing ? 13 : 91;
      h.efficiency = loafing ? 0.03f : 0.86f;
      h.clock_ratio = 1;
      g.history.push_back(h);
    }
    g.cause = loafing ? std::optional(Cause::kDataStarvation) : std::optional(Cause::kHealthy);
    g.cause_confidence = 0.8;
    st.gpus.push_back(std::move(g));
  }
  return st;
}

void expect_frame(const std::string& name, const Screen& s) {
  const std::filesystem::path path =
      std::filesystem::path(GPUDOCTOR_SOURCE_DIR) / "tests/unit/golden" / ("top-" + name + ".txt");
  const std::string text = s.text();
  if (std::getenv("GPUDOCTOR_UPDATE_GOLDEN")) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path << " (run with GPUDOCTOR_UPDATE_GOLDEN=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(text, ss.str()) << "frame differs from " << path << "; it is:\n" << text;
}

TEST(TuiFrames, MainViewWide) {
  ViewState v;
  v.selected = 1;
  expect_frame("main-160x40", render_top(sample_state(), v, 40, 160));
}

TEST(TuiFrames, MainViewStandardAscii) {
  ViewState v;
  v.unicode = false;
  expect_frame("main-100x30-ascii", render_top(sample_state(), v, 30, 100));
}

TEST(TuiFrames, MainViewSmallDropsPanels) {
  ViewState v;
  const Screen s = render_top(sample_state(), v, 12, 80);
  expect_frame("main-80x12", s);
  const std::string text = s.text();
  EXPECT_NE(text.find("Findings"), std::string::npos);
  EXPECT_EQ(text.find("Processes"), std::string::npos);
}

TEST(TuiFrames, DetailView) {
  ViewState v;
  v.selected = 1;
  v.detail = true;
  expect_frame("detail-100x34", render_top(sample_state(), v, 34, 100));
}

TEST(TuiFrames, HelpAndPaused) {
  ViewState v;
  v.help = true;
  v.paused = true;
  expect_frame("help-80x24", render_top(sample_state(), v, 24, 80));
}

TEST(TuiFrames, BeforeTheFirstSampleAndLostGpu) {
  TopState st = sample_state();
  st.diagnosed = false;
  st.findings.clear();
  st.verdict.reset();
  st.frames = 3;
  st.gpus[1].lost = true;
  st.gpus[1].now = GpuAssessment{};
  st.gpus[1].now.verdict = SnapshotVerdict::kLost;
  st.gpus[1].cause.reset();
  st.gpus[0].cause.reset();
  ViewState v;
  const Screen s = render_top(st, v, 24, 120);
  expect_frame("lost-120x24", s);
  EXPECT_NE(s.text().find("LOST"), std::string::npos);
  EXPECT_NE(s.text().find("collecting samples"), std::string::npos);
}

TEST(TuiFrames, TinyTerminalSaysSo) {
  ViewState v;
  EXPECT_EQ(render_top(sample_state(), v, 2, 60).row_text(0),
            "gpudoctor top: terminal too small (60x2)");
  EXPECT_EQ(render_top(sample_state(), v, 10, 10).row_text(0), "gpudoctor…");
}

// Whatever the size, nothing is drawn outside the screen, and the table shows the selected GPU.
TEST(TuiFrames, EverySizeFromTinyToWideWithSixteenGpus) {
  const TopState st = sample_state(16);
  for (bool detail : {false, true})
    for (size_t sel : {size_t{0}, size_t{15}})
      for (int rows = 0; rows <= 50; rows += 3)
        for (int cols = 0; cols <= 220; cols += 7) {
          ViewState v;
          v.detail = detail;
          v.selected = sel;
          v.help = rows % 2 == 1;
          const Screen s = render_top(st, v, rows, cols);
          ASSERT_EQ(s.rows(), rows);
          ASSERT_EQ(s.cols(), cols);
          for (int r = 0; r < rows; ++r)
            ASSERT_LE(static_cast<int>(decode_utf8(s.row_text(r)).size()), cols);
          if (!detail && !v.help && rows >= 6 && cols >= 40) {
            bool found = false;
            for (int r = 0; r < rows; ++r)
              if (s.row_text(r).rfind(fmt::format(">{:>2}", sel), 0) == 0) found = true;
            EXPECT_TRUE(found) << rows << "x" << cols << " sel " << sel;
          }
        }
}

TEST(TuiCollector, FindsDataStarvationOnTheSimulatorAndKeepsBoundedHistory) {
  auto spec = sim::parse_sim_spec("data_starvation,gpus=2,seed=3");
  ASSERT_TRUE(spec);
  const auto model = gpu_model_by_key(spec->scenario.model);
  ASSERT_TRUE(model);
  sim::SimSource src(spec.value(), *model, {});
  CollectorOptions o;
  o.history_s = 60;
  o.window_s = 120;
  TopCollector c("sim:data_starvation", src.system(), src.devices(), o);
  int lookups = 0;
  c.set_process_lookup([&](uint32_t) {
    ++lookups;
    return HostProcess{"bob", "python train.py"};
  });
  for (int k = 1; k <= 480; ++k) c.add(src.sample_at(k * 0.5));
  const TopState& st = c.state();
  EXPECT_EQ(st.frames, 480u);
  EXPECT_TRUE(st.diagnosed);
  EXPECT_NEAR(st.diagnosis_span_s, 120, 5);
  ASSERT_TRUE(st.verdict);
  EXPECT_EQ(*st.verdict, Cause::kDataStarvation);
  ASSERT_FALSE(st.findings.empty());
  EXPECT_EQ(st.findings[0].cause, Cause::kDataStarvation);
  ASSERT_EQ(st.gpus.size(), 2u);
  for (const auto& g : st.gpus) {
    EXPECT_LE(g.history.size(), 121u);
    EXPECT_GE(g.history.size(), 119u);
    ASSERT_TRUE(g.cause);
    EXPECT_EQ(*g.cause, Cause::kDataStarvation);
    ASSERT_FALSE(g.processes.empty());
    EXPECT_EQ(g.processes[0].user, "bob");
    EXPECT_EQ(g.processes[0].command, "python train.py");
    EXPECT_TRUE(g.now.power_ratio);
  }
  EXPECT_LE(lookups, 4);  // cached per pid
  // The diagnosis window is trimmed to what it judges.
  for (const auto& g : c.window().gpus) EXPECT_LE(g.size(), 2u * 120 + 12);
}

TEST(TuiCollector, LostGpuStopsItsHistory) {
  SystemInfo sys;
  std::vector<DeviceInfo> devs(2);
  devs[1].index = 1;
  TopCollector c("test", sys, devs);
  for (int k = 0; k < 6; ++k) {
    Frame f;
    f.time_s = k;
    f.time_unix_ms = 1000 * k + 1;
    for (int g = 0; g < 2; ++g) {
      DeviceSample s;
      s[Field::kUtilGpu] = Reading::of(90);
      s[Field::kPower] = Reading::of(300);
      s[Field::kPowerLimitDefault] = Reading::of(400);
      s.lost = g == 1 && k >= 3;
      f.devices.push_back(s);
    }
    c.add(f);
  }
  EXPECT_EQ(c.state().gpus[0].history.size(), 6u);
  EXPECT_EQ(c.state().gpus[1].history.size(), 3u);
  EXPECT_TRUE(c.state().gpus[1].lost);
  EXPECT_EQ(c.state().gpus[1].now.verdict, SnapshotVerdict::kLost);
  ViewState v;
  const std::string text = render_top(c.state(), v, 24, 120).text();
  EXPECT_NE(text.find("LOST"), std::string::npos);
  EXPECT_NE(text.find("lost"), std::string::npos);  // its history line
  v.selected = 1;
  v.detail = true;
  const std::string detail = render_top(c.state(), v, 24, 120).text();
  EXPECT_NE(detail.find("now: LOST: the GPU fell off the bus"), std::string::npos) << detail;
}

TEST(TuiCollector, HostProcessOfThisProcess) {
  const HostProcess hp = host_process(static_cast<uint32_t>(getpid()));
  EXPECT_FALSE(hp.user.empty());
  EXPECT_NE(hp.command.find("unit_tests"), std::string::npos) << hp.command;
  EXPECT_TRUE(host_process(0).user.empty());
}

// Runs `body` in a child process whose terminal output goes to a pipe; returns what it wrote and
// how it ended.
std::pair<std::string, int> in_child(void (*body)(int fd)) {
  int p[2];
  if (pipe(p) != 0) return {"", -1};
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    body(p[1]);
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {out, status};
}

TEST(TuiTerminal, CrashRestoresTheTerminalAndIsStillACrash) {
  const auto [out, status] = in_child([](int fd) {
    install_signal_handlers();
    arm_restore(-1, fd, nullptr);
    std::abort();
  });
  EXPECT_EQ(out, std::string(kLeaveFullScreen));
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
}

TEST(TuiTerminal, FirstSigtermAsksToQuitSecondRestoresAndEnds) {
  const auto [out, status] = in_child([](int fd) {
    install_signal_handlers();
    arm_restore(-1, fd, nullptr);
    raise(SIGTERM);
    if (!quit_requested()) _exit(3);
    raise(SIGTERM);
    _exit(4);  // not reached
  });
  EXPECT_EQ(out, std::string(kLeaveFullScreen));
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(TuiTerminal, RestoreIsWrittenOnce) {
  const auto [out, status] = in_child([](int fd) {
    arm_restore(-1, fd, nullptr);
    restore_terminal_now();
    restore_terminal_now();
  });
  EXPECT_EQ(out, std::string(kLeaveFullScreen));
  EXPECT_TRUE(WIFEXITED(status));
}

TEST(TuiTerminal, OpenNeedsATerminal) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto t = Terminal::open(p[0], p[1]);
  EXPECT_FALSE(t);
  close(p[0]);
  close(p[1]);
}

}  // namespace
}  // namespace gpudoctor::tui
