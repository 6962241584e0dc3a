// SPDX-License-Identifier: Apache-2.0
// `drivewatch report` as text for a terminal and as markdown for a wiki,
// both from the model (aging/report/drive_report.h). The charts are the HTML
// report's; these formats keep the tables, expectations and verdicts.
#include <algorithm>

#include "aging/report/drive_report_detail.h"
#include "aging/report/report_format.h"

namespace drivewatch::aging {
namespace drive_report_detail {
namespace {

using report_format::Format;
using report_format::Printable;
using report_format::Utc;

std::string Str(const Json& j, std::string_view key) {
  const Json* v = Find(j, key);
  return v && v->is_string() ? AsString(*v) : std::string();
}

std::string Heading(const Json& column) {
  const std::string unit = UnitLabel(Str(column, "unit"));
  return Printable(Str(column, "label")) + (unit.empty() ? "" : " (" + unit + ")");
}

std::string CellText(const Json& row, const Json& column) {
  const std::string key = Str(column, "key");
  const Json* v = Find(*Find(row, "values"), key);
  if (v == nullptr || v->is_null()) return std::string(kNotMeasured);
  std::string out = Printable(ShowValue(*v, Str(column, "unit")));
  const std::string mark = Str(*Find(row, "marks"), key);
  if (mark == "at_least") out = "\xe2\x89\xa5 " + out;
  if (mark == "not_steady") out += " \xe2\x80\xa0";
  if (mark == "indicative") out = "\xe2\x89\x88 " + out;
  if (const std::string spread = SpreadText(row, column); !spread.empty()) {
    out += " " + Printable(spread);
  }
  return out;
}

// A table as rows of cells, the header first: as the model has it (a row
// per run), or turned so that each column is a line, which reads better
// on a terminal when there are many measures and few runs.
std::vector<std::vector<std::string>> Cells(const Json& table, bool turned) {
  const auto& columns = Items(*Find(table, "columns"));
  const auto& rows = Items(*Find(table, "rows"));
  std::vector<std::vector<std::string>> out;
  if (turned) {
    out.push_back({""});
    for (const Json& r : rows) out[0].push_back(Printable(Str(r, "label")));
    for (const Json& c : columns) {
      std::vector<std::string> line = {Heading(c)};
      for (const Json& r : rows) line.push_back(CellText(r, c));
      out.push_back(std::move(line));
    }
    return out;
  }
  out.push_back({""});
  for (const Json& c : columns) out[0].push_back(Heading(c));
  for (const Json& r : rows) {
    std::vector<std::string> line = {Printable(Str(r, "label"))};
    for (const Json& c : columns) line.push_back(CellText(r, c));
    out.push_back(std::move(line));
  }
  return out;
}

bool Turned(const Json& table) { return Items(*Find(table, "rows")).size() <= 4; }

std::string AgeText(const Json& run) {
  const Json* age = Find(run, "age");
  if (age == nullptr || age->is_null()) {
    return Find(run, "age_problem") ? "drive age damaged" : "drive age unknown";
  }
  return ShowValue(*Find(*age, "power_on_hours"), "hours") + " h, " +
         ShowValue(*Find(*age, "percentage_used"), "pct") + " % used, " +
         ShowValue(*Find(*age, "data_written_bytes"), "tb") + " TB written, " +
         ShowValue(*Find(*age, "drive_writes"), "x") + " drive writes";
}

// Each row's run: its id, the drive's age as it started, and where it was
// read (and the drive, for the baseline's).
std::vector<std::vector<std::string>> RunLines(const Json& runs, const std::string& drive) {
  std::vector<std::vector<std::string>> out;
  for (const Json& r : Items(runs)) {
    const Json* run = Find(r, "run");
    std::vector<std::string> line = {Printable(Str(r, "label"))};
    const std::string other =
        Str(r, "drive") == drive ? "" : ", drive " + Printable(Str(r, "drive"));
    if (run == nullptr || run->is_null()) {
      line.push_back("not measured");
      line.push_back(Printable(Str(r, "note")) + other);
    } else {
      line.push_back(Printable(Str(*run, "id")));
      line.push_back(AgeText(*run));
      line.push_back(Printable(Str(*run, "source")) + other);
    }
    out.push_back(std::move(line));
  }
  return out;
}

// Words wrapped at `width`, every line after `indent`.
std::string Wrap(std::string_view text, std::string_view indent, std::size_t width = 96) {
  std::string out, line(indent);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (report_format::Width(line) > indent.size() &&
        report_format::Width(line) + 1 + report_format::Width(word) > width) {
      out += line + "\n";
      line = std::string(indent) + "  ";
    } else if (report_format::Width(line) > indent.size()) {
      line += ' ';
    }
    line += word;
    start = end + 1;
  }
  return out + line + "\n";
}

std::string StatusWord(const Json& verdict) {
  const std::string status = Str(verdict, "status");
  return status == "not_measured" ? "not measured" : status;
}

std::string Markdown(std::string_view s) {
  std::string out;
  for (char c : Printable(s)) {
    // Intraword underscores are text in CommonMark; these are not.
    if (c == '|' || c == '*' || c == '`' || c == '<' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string MarkdownTable(const std::vector<std::vector<std::string>>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    out += "|";
    for (const std::string& c : cells[i]) out += " " + Markdown(c) + " |";
    out += "\n";
    if (i == 0) {
      out += "|";
      for (std::size_t c = 0; c < cells[i].size(); ++c) out += c == 0 ? " --- |" : " ---: |";
      out += "\n";
    }
  }
  return out;
}

// The report as text, or as markdown: each part of the page appends to
// `out` in the one or the other.
class TextReport {
 public:
  explicit TextReport(bool markdown) : markdown_(markdown) {}

  std::string Render(const Json& model) {
    Title(model);
    Sources(model);
    Problems(model);
    const auto& drives = Items(*Find(model, "drives"));
    if (drives.empty()) {
      out_ += "\nThe history holds no runs: nothing to report.\n";
      return out_;
    }
    for (const Json& d : drives) Drive(d);
    return out_;
  }

 private:
  void Title(const Json& model) {
    const double generated = AsDouble(*Find(model, "generated"));
    if (markdown_) {
      out_ += "# drivewatch report\n\nGenerated " + Utc(generated) +
              ". Rows: " + Markdown(RowsText(model)) + ".\n\n";
    } else {
      out_ += "drivewatch report, generated " + Utc(generated) + "\n";
      out_ += Wrap("rows: " + RowsText(model), "");
    }
  }

  // Where it came from, and what was left out.
  void Sources(const Json& model) {
    std::vector<std::string> damaged;
    std::string sources;
    for (const Json& s : Items(*Find(model, "sources"))) {
      std::string line = Printable(Str(s, "file"));
      if (Str(s, "kind") == "history") {
        line += Format(": %llu runs, %llu steps",
                       static_cast<unsigned long long>(AsUint(*Find(s, "runs"))),
                       static_cast<unsigned long long>(AsUint(*Find(s, "steps"))));
        if (const auto d = AsUint(*Find(s, "duplicates"))) {
          line += Format(", %llu already read from another file",
                         static_cast<unsigned long long>(d));
        }
        if (const auto t = AsUint(*Find(s, "torn_tail_bytes"))) {
          line += Format(", a torn last record of %llu bytes left out",
                         static_cast<unsigned long long>(t));
        }
      } else {
        line += ": " + Str(s, "kind");
      }
      sources += markdown_ ? "- " + Markdown(line) + "\n" : "  " + line + "\n";
      for (const Json& d : Items(*Find(s, "damaged"))) {
        damaged.push_back(Printable(Str(s, "file")) + ": " + Printable(AsString(d)));
      }
    }
    out_ += markdown_ ? "Sources:\n\n" + sources + "\n" : "sources:\n" + sources;
    if (!damaged.empty()) {
      out_ += markdown_ ? "**Damaged, so left out (never a result):**\n\n"
                        : "damaged, so left out (never a result):\n";
      for (const std::string& d : damaged)
        out_ += markdown_ ? "- " + Markdown(d) + "\n" : Wrap(d, "  ");
      if (markdown_) out_ += "\n";
    }
  }

  void Problems(const Json& model) {
    const auto& problems = Items(*Find(model, "problems"));
    if (problems.empty()) return;
    out_ += markdown_ ? "**Values left out:**\n\n" : "values left out:\n";
    for (const Json& p : problems) {
      out_ += markdown_ ? "- " + Markdown(AsString(p)) + "\n"
                        : Wrap(Printable(AsString(p)), "  ");
    }
    if (markdown_) out_ += "\n";
  }

  void Drive(const Json& d) {
    std::string title = "Drive " + Printable(Str(d, "drive"));
    if (!Str(d, "model").empty()) title += " (" + Printable(Str(d, "model")) + ")";
    if (markdown_) {
      out_ += "\n## " + Markdown(title) + "\n";
    } else {
      out_ += "\n" + title + "\n" + std::string(report_format::Width(title), '=') + "\n";
    }
    for (const Json& s : Items(*Find(d, "sections"))) Section(s, Str(d, "drive"));
  }

  void Section(const Json& s, const std::string& drive) {
    const std::string name = Printable(Str(s, "title"));
    if (markdown_) {
      out_ += "\n### " + Markdown(name) + "\n\n";
    } else {
      out_ += "\n" + name + "\n" + std::string(report_format::Width(name), '-') + "\n";
    }
    for (const Json& t : Items(*Find(s, "tables"))) Table(t);
    if (!Items(*Find(s, "runs")).empty()) Runs(*Find(s, "runs"), drive);
    if (const Json* links = Find(s, "links")) {
      for (const Json& l : Items(*links)) {
        const std::string line = "See " + Str(l, "label") + ": " + Str(l, "command");
        out_ += markdown_ ? Markdown(line) + "\n\n" : Wrap(Printable(line), "");
      }
    }
    for (const Json& n : Items(*Find(s, "notes"))) {
      out_ += markdown_ ? "Note: " + Markdown(AsString(n)) + "\n\n"
                        : Wrap("note: " + Printable(AsString(n)), "");
    }
    Verdict(s);
  }

  void Table(const Json& t) {
    if (!AnyValue(t)) {
      const std::string line = Printable(Str(t, "title")) + ": not measured";
      out_ += markdown_ ? "*" + Markdown(line) + "*\n\n" : line + "\n";
      return;
    }
    const auto cells = Cells(t, markdown_ ? false : Turned(t));
    if (markdown_) {
      out_ += "*" + Markdown(Str(t, "title")) + "*\n\n" + MarkdownTable(cells) + "\n";
    } else {
      out_ += Printable(Str(t, "title")) + "\n" + report_format::Table(cells, "  ");
    }
  }

  void Runs(const Json& runs, const std::string& drive) {
    const auto lines = RunLines(runs, drive);
    if (!markdown_) {
      out_ += "runs\n" + report_format::Table(lines, "  ", 99);
      return;
    }
    out_ += "Runs:\n\n";
    for (const auto& l : lines) {
      std::string text;
      for (std::size_t i = 1; i < l.size(); ++i) text += (i > 1 ? ", " : "") + l[i];
      out_ += "- " + Markdown(l[0]) + ": " + Markdown(text) + "\n";
    }
    out_ += "\n";
  }

  void Verdict(const Json& s) {
    const Json& v = *Find(s, "verdict");
    if (markdown_) {
      out_ += "**Expectation:** " + Markdown(Str(s, "expectation")) + "\n\n";
      out_ += "**Verdict (" + Markdown(StatusWord(v)) + "):** " + Markdown(Str(v, "line")) + "\n";
    } else {
      out_ += Wrap("Expectation: " + Printable(Str(s, "expectation")), "");
      out_ += Wrap("Verdict (" + StatusWord(v) + "): " + Printable(Str(v, "line")), "");
    }
  }

  bool markdown_;
  std::string out_;
};

std::string RenderText(const Json& model, bool markdown) {
  return TextReport(markdown).Render(model);
}

// The model as JSON: objects one member a line, as DumpJson(v, 2) writes
// them, but an array of numbers (or of [x, y] pairs) on one line, so a
// chart's points do not take a line each.
bool Flat(const Json& v) {
  if (!v.is_array()) return !v.is_object();
  const bool text = std::any_of(Items(v).begin(), Items(v).end(), [](const Json& item) {
    return item.is_string();
  });
  if (text && DumpJson(v).size() > 60) return false;
  return std::all_of(Items(v).begin(), Items(v).end(), [](const Json& item) {
    return item.is_array()
               ? std::all_of(Items(item).begin(), Items(item).end(),
                             [](const Json& x) {
                               return !x.is_array() &&
                                      !x.is_object();
                             })
               : !item.is_object();
  });
}

void JsonTo(const Json& v, int level, std::string& out) {
  const std::string pad(static_cast<std::size_t>(2 * level + 2), ' ');
  const std::string close(static_cast<std::size_t>(2 * level), ' ');
  if (Flat(v)) {
    out += DumpJson(v);
    if (v.is_array()) {
      // DumpJson writes no space after a comma; one reads better.
      std::string spaced;
      const std::string flat = DumpJson(v);
      out.resize(out.size() - flat.size());
      bool in_string = false;
      for (std::size_t i = 0; i < flat.size(); ++i) {
        spaced += flat[i];
        if (flat[i] == '"' && (i == 0 || flat[i - 1] != '\\')) in_string = !in_string;
        if (flat[i] == ',' && !in_string) spaced += ' ';
      }
      out += spaced;
    }
    return;
  }
  if (v.is_array()) {
    out += "[\n";
    for (std::size_t i = 0; i < Items(v).size(); ++i) {
      out += pad;
      JsonTo(Items(v)[i], level + 1, out);
      out += i + 1 < Items(v).size() ? ",\n" : "\n";
    }
    out += close + "]";
    return;
  }
  if (Members(v).empty()) {
    out += "{}";
    return;
  }
  out += "{\n";
  const Json::object_t& members = Members(v);
  for (auto member = members.begin(); member != members.end(); ++member) {
    out += pad + DumpJson(Json(member->first)) + ": ";
    JsonTo(member->second, level + 1, out);
    out += std::next(member) != members.end() ? ",\n" : "\n";
  }
  out += close + "}";
}

}  // namespace
}  // namespace drive_report_detail

std::string RenderDriveReport(const Json& model, DriveReportFormat format) {
  switch (format) {
    case DriveReportFormat::kJson: {
      std::string out;
      drive_report_detail::JsonTo(model, 0, out);
      return out + "\n";
    }
    case DriveReportFormat::kMarkdown: return drive_report_detail::RenderText(model, true);
    case DriveReportFormat::kHtml: return drive_report_detail::RenderHtml(model);
    case DriveReportFormat::kText: break;
  }
  return drive_report_detail::RenderText(model, false);
}

}  // namespace drivewatch::aging
