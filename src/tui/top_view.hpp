// Drawing `gpudoctor top`: pure functions from a TopState and a ViewState to a Screen of the
// terminal's size. The main view has, top to bottom: a header, a row per GPU (bars for GPU-Util,
// SM activity, power / default limit, efficiency, memory, temperature and SM clock; clock event
// reasons; the instant verdict and the live diagnosis), the findings of the live diagnosis, the
// history of the selected GPU (and power of the others) as sparklines, the processes, and a key
// line. When the terminal is too small, panels are dropped in reverse order of importance
// (processes, then history, then findings) and table columns by priority; nothing is ever drawn
// outside the screen. Enter shows one GPU in detail; h or ? a help box.
#pragma once

#include <string>
#include <vector>

#include "tui/screen.hpp"
#include "tui/top_state.hpp"

namespace gpudoctor::tui {

Screen render_top(const TopState& state, const ViewState& view, int rows, int cols);

// Building blocks, exposed for tests.
// A horizontal bar of `width` cells filled to `ratio` (0-1, clamped): block characters in eighths
// with unicode, '#' and '.' without. NaN: an empty bar.
std::u32string bar(double ratio, int width, bool unicode);
// A sparkline of `width` cells over `values` (oldest first) scaled to 0-`max`: each cell the mean
// of its share of the values, newest at the right; NaN values are skipped, a cell with none blank.
std::u32string sparkline(const std::vector<float>& values, int width, float max, bool unicode);

// The GPU table's columns for a terminal `cols` wide, as "TITLE:width" (bar width after '+'),
// for tests of the layout: e.g. {"GPU:3", "UTIL:4+6", ...}.
std::vector<std::string> table_layout(int cols);

}  // namespace gpudoctor::tui
