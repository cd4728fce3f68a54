// The CLI as a new user meets it: help that fits 100 columns, completion that offers only what
// the commands accept, and a README whose command table and example commands match the CLI.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "cli/help_format.hpp"
#include "core/utf8.hpp"
#include "report/text_table.hpp"

namespace gpudoctor::cli {
namespace {

struct Cli {
  CLI::App app{"gpudoctor test", "gpudoctor"};
  std::vector<Command> commands;
  Cli() {
    setenv("COLUMNS", "100", 1);  // help's width when the output is not a terminal
    app.require_subcommand(0, 1);
    commands = build_cli(app);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What parsing `words` (after "gpudoctor") says: "" when CLI11 accepts it, else the error's
// name and message.
std::string parse_error(const std::vector<std::string>& words) {
  Cli cli;
  std::vector<std::string> args(words.rbegin(), words.rend());  // CLI11 takes them reversed
  try {
    cli.app.parse(args);
  } catch (const CLI::Success&) {  // --help, --version
  } catch (const CLI::ParseError& e) {
    return e.get_name() + ": " + e.what();
  }
  return "";
}

// Words of a shell command line: quotes kept out, a pipe, && or a trailing & ends it.
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool any = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        cur += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      any = true;
      continue;
    }
    if (c == '|' || c == '&' || c == ';' || c == '#') break;
    if (c == ' ') {
      if (any) out.push_back(cur);
      cur.clear();
      any = false;
      continue;
    }
    cur += c;
    any = true;
  }
  if (any) out.push_back(cur);
  return out;
}

TEST(Cli, HelpFitsOneHundredColumns) {
  Cli cli;
  std::vector<std::pair<std::string, std::string>> helps = {{"gpudoctor", cli.app.help()}};
  for (const auto* sub : cli.app.get_subcommands({})) {
    helps.push_back({sub->get_name(), sub->help()});
    for (const auto* s2 : sub->get_subcommands({}))
      helps.push_back({sub->get_name() + " " + s2->get_name(), s2->help()});
  }
  EXPECT_EQ(helps.size(), command_table().size() + 4);  // the root, baseline's three
  for (const auto& [name, text] : helps) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
      EXPECT_LE(gpudoctor::text_columns(line), 100u) << name << ": " << line;
  }
}

TEST(Cli, TheCommandListIsShortAndStartsWithTheFirstSteps) {
  Cli cli;
  const std::string help = cli.app.help();
  const size_t start = help.find("Start here:");
  ASSERT_NE(start, std::string::npos) << help;
  const size_t demo = help.find("  demo ", start), diagnose = help.find("  diagnose ", start);
  EXPECT_LT(demo, help.find("This machine's GPUs:")) << help;
  EXPECT_LT(diagnose, help.find("This machine's GPUs:")) << help;
  for (const auto& c : command_table()) {
    EXPECT_LE(gpudoctor::text_columns(c.summary), 84u)
        << c.name;  // one line beside the name at 100
    EXPECT_NE(help.find(c.summary), std::string::npos) << c.name;
  }
  EXPECT_NE(first_steps_text().find("gpudoctor demo"), std::string::npos);
}

TEST(Cli, WrapKeepsWordsAndIndents) {
  EXPECT_EQ(wrap_text("aaa bbb ccc", 7, 0, 2), "aaa bbb\n  ccc");
  EXPECT_EQ(wrap_text("a\nb", 80, 0, 4), "a\n    b");
  EXPECT_EQ(wrap_text("averyveryverylongword x", 5, 0, 0), "averyveryverylongword\nx");
  EXPECT_EQ(wrap_text("één twee", 6, 0, 0), "één\ntwee");  // code points, not bytes
}

TEST(TextTable, DropsWhatMattersLeastThenShortensTheFlexibleColumns) {
  std::vector<TextColumn> cols = {{"id", true, 0, 0, false},
                                  {"name", false, 0, 6, false},
                                  {"extra", false, 1, 0, false},
                                  {"more", false, 2, 0, false},
                                  {"owner", false, 0, 8, true}};
  const std::vector<std::vector<std::string>> rows = {
      {"1", "a long model name", "xxxxxxxx", "yyyy", "namespace/pod-name-0 (bob)"}};
  TextTable wide(cols);
  wide.fit(rows, 200);
  EXPECT_EQ(wide.row(rows[0]),
            " 1  a long model name  xxxxxxxx  yyyy  namespace/pod-name-0 (bob)\n");
  // Before shorten_from (3): "extra" and "more" go while the row does not fit as it is.
  TextTable narrow(cols, 2, 3);
  narrow.fit(rows, 40);
  EXPECT_FALSE(narrow.shown(2));
  EXPECT_FALSE(narrow.shown(3));
  EXPECT_EQ(narrow.width(), 40u);
  const std::string r = narrow.row(rows[0]);
  EXPECT_NE(r.find("~"), std::string::npos) << r;            // shortened
  EXPECT_NE(r.find("(bob)"), std::string::npos) << r;        // owners keep their end
  EXPECT_EQ(fit_cell("namespace/pod", 7, true), "nam~pod");  // from the middle
  EXPECT_EQ(fit_cell("H100 80GB HBM3", 8, false), "H100 80~");
  // From shorten_from on, a column goes only when shortening cannot make the row fit.
  TextTable keep(cols, 2, 1);
  keep.fit(rows, 52);
  EXPECT_TRUE(keep.shown(2));
  EXPECT_LE(keep.width(), 52u);
}

TEST(Cli, EveryFlagCompletionOffersIsAccepted) {
  Cli cli;
  std::istringstream in(dump_cli(cli.app, "flags"));
  std::string line;
  size_t checked = 0;
  while (std::getline(in, line)) {
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    ASSERT_NE(t2, std::string::npos) << line;
    const std::string key = line.substr(0, t1), option = line.substr(t1 + 1, t2 - t1 - 1),
                      kind = line.substr(t2 + 1);
    std::vector<std::string> words = shell_words(key);
    if (option.front() != '-') continue;  // a positional: no name to accept
    words.push_back(option);
    if (kind != "-") {
      std::string value = "1";
      if (kind.front() == '{') value = kind.substr(1, kind.find_first_of(",}") - 1);
      words.push_back(value);
    }
    const std::string err = parse_error(words);
    // Another option may be required, or the dummy value refused; the option itself is known.
    EXPECT_TRUE(err.empty() || err.rfind("RequiredError", 0) == 0 ||
                err.rfind("ValidationError", 0) == 0 || err.rfind("ExcludesError", 0) == 0)
        << key << " " << option << ": " << err;
    ++checked;
  }
  EXPECT_GT(checked, 150u);
  // And what the user typed wrong is refused: status has no --list, diagnose no --query-gpu.
  EXPECT_NE(parse_error({"status", "--list"}), "");
  EXPECT_NE(parse_error({"diagnose", "x.csv", "--query-gpu", "a"}), "");
}

TEST(Cli, EveryOptionTheUsagesNameExists) {
  Cli cli;
  for (const auto& c : command_table()) {
    const CLI::App* sub = cli.app.get_subcommand(c.name);
    for (const auto& u : c.usages) {
      std::string cleaned;
      for (char ch : u) cleaned += (ch == '[' || ch == ']') ? ' ' : ch;
      const auto words = shell_words(cleaned.substr(0, cleaned.find(" -- ")));
      ASSERT_FALSE(words.empty());
      EXPECT_EQ(words.front(), c.name) << u;
      const CLI::App* on = sub;
      for (const auto& w : words) {
        if (w.front() != '-') {
          for (const CLI::App* s2 : on->get_subcommands({}))
            if (s2->get_name() == w) on = s2;
          continue;
        }
        const std::string name = w.substr(0, w.find('='));
        EXPECT_NE(on->get_option_no_throw(name), nullptr) << c.name << ": " << name;
      }
    }
  }
}

TEST(Cli, TheReadmeCommandTableIsGenerated) {
  Cli cli;
  const std::string readme = read_file(std::string(GPUDOCTOR_SOURCE_DIR) + "/README.md");
  const std::string begin = "<!-- commands: generated by `gpudoctor --dump-cli markdown` -->\n",
                    end = "<!-- commands end -->";
  const size_t b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(readme.substr(b + begin.size(), e - b - begin.size()), dump_cli(cli.app, "markdown"))
      << "regenerate: gpudoctor --dump-cli markdown";
}

TEST(Cli, EveryCommandTheReadmeShowsParses) {
  const std::string readme = read_file(std::string(GPUDOCTOR_SOURCE_DIR) + "/README.md");
  std::istringstream in(readme);
  std::string line;
  bool code = false;
  size_t checked = 0;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      code = !code;
      continue;
    }
    if (!code) continue;
    std::string cmd = line;
    if (cmd.rfind("$ ", 0) == 0) cmd = cmd.substr(2);
    for (const std::string prefix : {"gpudoctor ", "./build/release/src/gpudoctor "}) {
      if (cmd.rfind(prefix, 0) != 0) continue;
      const auto words = shell_words(cmd.substr(prefix.size()));
      // Output lines that start with "gpudoctor " are not commands: they have no command word.
      if (words.empty() || !find_command(words.front())) continue;
      EXPECT_EQ(parse_error(words), "") << line;
      ++checked;
    }
  }
  EXPECT_GE(checked, 6u);
}

TEST(Cli, BashCompletionOffersWhatEachPlaceTakes) {
  Cli cli;
  const std::string script = ::testing::TempDir() + "/gpudoctor-completion.bash";
  {
    std::ofstream out(script);
    out << dump_cli(cli.app, "bash");
  }
  // Completes `words` (the last one being typed) and returns COMPREPLY, one per line.
  auto complete = [&](const std::string& words) {
    const std::string cmd = fmt::format(
        "bash -c 'source {} && COMP_WORDS=({}) && COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)) && "
        "_gpudoctor && printf \"%s\\n\" \"${{COMPREPLY[@]}}\"'",
        script, words);
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
      pclose(p);
    }
    return out;
  };
  EXPECT_NE(complete("gpudoctor sim str").find("straggler"), std::string::npos);
  const std::string formats = complete("gpudoctor diagnose --format \"\"");
  EXPECT_NE(formats.find("markdown"), std::string::npos) << formats;
  EXPECT_EQ(formats.find("CMakeLists"), std::string::npos) << formats;  // no file names
  EXPECT_EQ(complete("gpudoctor status --l"), "\n");                    // no --list
  EXPECT_NE(complete("gpudoctor status --so").find("--source"), std::string::npos);
  EXPECT_NE(complete("gpudoctor status --source sim:str").find("sim:straggler"), std::string::npos);
  EXPECT_NE(complete("gpudoctor de").find("demo"), std::string::npos);
  EXPECT_NE(complete("gpudoctor baseline s").find("save"), std::string::npos);
  EXPECT_NE(complete("gpudoctor baseline save --n").find("--name"), std::string::npos);
}

}  // namespace
}  // namespace gpudoctor::cli
