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
  const Json* v = j.Find(key);
  return v && v->type() == Json::Type::kString ? v->AsString() : std::string();
}

std::string Heading(const Json& column) {
  const std::string unit = UnitLabel(Str(column, "unit"));
  return Printable(Str(column, "label")) + (unit.empty() ? "" : " (" + unit + ")");
}

std::string CellText(const Json& row, const Json& column) {
  const std::string key = Str(column, "key");
  const Json* v = row.Find("values")->Find(key);
  if (v == nullptr || v->is_null()) return std::string(kNotMeasured);
  std::string out = Printable(ShowValue(*v, Str(column, "unit")));
  const std::string mark = Str(*row.Find("marks"), key);
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
  const auto& columns = table.Find("columns")->items();
  const auto& rows = table.Find("rows")->items();
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

bool Turned(const Json& table) { return table.Find("rows")->items().size() <= 4; }

std::string AgeText(const Json& run) {
  const Json* age = run.Find("age");
  if (age == nullptr || age->is_null()) {
    return run.Find("age_problem") ? "drive age damaged" : "drive age unknown";
  }
  return ShowValue(*age->Find("power_on_hours"), "hours") + " h, " +
         ShowValue(*age->Find("percentage_used"), "pct") + " % used, " +
         ShowValue(*age->Find("data_written_bytes"), "tb") + " TB written, " +
         ShowValue(*age->Find("drive_writes"), "x") + " drive writes";
}

// Each row's run: its id, the drive's age as it started, and where it was
// read (and the drive, for the baseline's).
std::vector<std::vector<std::string>> RunLines(const Json& runs, const std::string& drive) {
  std::vector<std::vector<std::string>> out;
  for (const Json& r : runs.items()) {
    const Json* run = r.Find("run");
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
    const auto& drives = model.Find("drives")->items();
    if (drives.empty()) {
      out_ += "\nThe history holds no runs: nothing to report.\n";
      return out_;
    }
    for (const Json& d : drives) Drive(d);
    return out_;
  }

 private:
  void Title(const Json& model) {
    const double generated = model.Find("generated")->AsDouble();
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
    for (const Json& s : model.Find("sources")->items()) {
      std::string line = Printable(Str(s, "file"));
      if (Str(s, "kind") == "history") {
        line += Format(": %llu runs, %llu steps",
                       static_cast<unsigned long long>(s.Find("runs")->AsUint()),
                       static_cast<unsigned long long>(s.Find("steps")->AsUint()));
        if (const auto d = s.Find("duplicates")->AsUint()) {
          line += Format(", %llu already read from another file",
                         static_cast<unsigned long long>(d));
        }
        if (const auto t = s.Find("torn_tail_bytes")->AsUint()) {
          line += Format(", a torn last record of %llu bytes left out",
                         static_cast<unsigned long long>(t));
        }
      } else {
        line += ": " + Str(s, "kind");
      }
      sources += markdown_ ? "- " + Markdown(line) + "\n" : "  " + line + "\n";
      for (const Json& d : s.Find("damaged")->items()) {
        damaged.push_back(Printable(Str(s, "file")) + ": " + Printable(d.AsString()));
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
    const auto& problems = model.Find("problems")->items();
    if (problems.empty()) return;
    out_ += markdown_ ? "**Values left out:**\n\n" : "values left out:\n";
    for (const Json& p : problems) {
      out_ += markdown_ ? "- " + Markdown(p.AsString()) + "\n"
                        : Wrap(Printable(p.AsString()), "  ");
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
    for (const Json& s : d.Find("sections")->items()) Section(s, Str(d, "drive"));
  }

  void Section(const Json& s, const std::string& drive) {
    const std::string name = Printable(Str(s, "title"));
    if (markdown_) {
      out_ += "\n### " + Markdown(name) + "\n\n";
    } else {
      out_ += "\n" + name + "\n" + std::string(report_format::Width(name), '-') + "\n";
    }
    for (const Json& t : s.Find("tables")->items()) Table(t);
    if (!s.Find("runs")->items().empty()) Runs(*s.Find("runs"), drive);
    if (const Json* links = s.Find("links")) {
      for (const Json& l : links->items()) {
        const std::string line = "See " + Str(l, "label") + ": " + Str(l, "command");
        out_ += markdown_ ? Markdown(line) + "\n\n" : Wrap(Printable(line), "");
      }
    }
    for (const Json& n : s.Find("notes")->items()) {
      out_ += markdown_ ? "Note: " + Markdown(n.AsString()) + "\n\n"
                        : Wrap("note: " + Printable(n.AsString()), "");
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
    const Json& v = *s.Find("verdict");
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

// The model as JSON: objects one member a line, as Json::Dump(2) writes
// them, but an array of numbers (or of [x, y] pairs) on one line, so a
// chart's points do not take a line each.
bool Flat(const Json& v) {
  if (v.type() != Json::Type::kArray) return v.type() != Json::Type::kObject;
  const bool text = std::any_of(v.items().begin(), v.items().end(), [](const Json& item) {
    return item.type() == Json::Type::kString;
  });
  if (text && v.Dump().size() > 60) return false;
  return std::all_of(v.items().begin(), v.items().end(), [](const Json& item) {
    return item.type() == Json::Type::kArray
               ? std::all_of(item.items().begin(), item.items().end(),
                             [](const Json& x) {
                               return x.type() != Json::Type::kArray &&
                                      x.type() != Json::Type::kObject;
                             })
               : item.type() != Json::Type::kObject;
  });
}

void JsonTo(const Json& v, int level, std::string& out) {
  const std::string pad(static_cast<std::size_t>(2 * level + 2), ' ');
  const std::string close(static_cast<std::size_t>(2 * level), ' ');
  if (Flat(v)) {
    out += v.Dump();
    if (v.type() == Json::Type::kArray) {
      // Dump() writes no space after a comma; one reads better.
      std::string spaced;
      const std::string flat = v.Dump();
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
  if (v.type() == Json::Type::kArray) {
    out += "[\n";
    for (std::size_t i = 0; i < v.items().size(); ++i) {
      out += pad;
      JsonTo(v.items()[i], level + 1, out);
      out += i + 1 < v.items().size() ? ",\n" : "\n";
    }
    out += close + "]";
    return;
  }
  if (v.members().empty()) {
    out += "{}";
    return;
  }
  out += "{\n";
  for (std::size_t i = 0; i < v.members().size(); ++i) {
    const auto& [key, value] = v.members()[i];
    out += pad + Json(key).Dump() + ": ";
    JsonTo(value, level + 1, out);
    out += i + 1 < v.members().size() ? ",\n" : "\n";
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
