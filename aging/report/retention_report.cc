// SPDX-License-Identifier: Apache-2.0
#include "aging/report/retention_report.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "aging/report/retention_report_model.h"
#include "aging/retention/retention_study.h"

namespace drivewatch::aging {

using retention_report_detail::Bytes;
using retention_report_detail::Count;
using retention_report_detail::Duration;
using retention_report_detail::Format;
using retention_report_detail::Html;
using retention_report_detail::kCss;
using retention_report_detail::Num;
using retention_report_detail::Read;
using retention_report_detail::RenderHtml;
using retention_report_detail::RenderText;
using retention_report_detail::Str;
using retention_report_detail::Summarize;
using retention_report_detail::Summary;
using retention_report_detail::SummaryJson;
using retention_report_detail::Table;
using retention_report_detail::Utc;

std::string RenderRetentionReport(const Json& study, ReportFormat format, double now) {
  if (Status valid = ValidateStudy(study); !valid) {
    const Json* name = Find(study, "study");
    return RenderDamagedStudyReport(name ? AsString(*name) : std::string(),
                                    valid.error().message, true, format);
  }
  const Summary summary = Summarize(study, now);
  switch (format) {
    case ReportFormat::kJson: {
      Json out = study;
      out["summary"] = SummaryJson(summary);
      return DumpJson(out, 2) + "\n";
    }
    case ReportFormat::kHtml:
      return RenderHtml(study, summary, now);
    case ReportFormat::kText:
      break;
  }
  return RenderText(study, summary, now);
}

using report_format::Printable;

std::string RenderDamagedStudyReport(const std::string& raw_name, const std::string& raw_problem,
                                     bool damaged, ReportFormat format) {
  const std::string name = Printable(raw_name);
  const std::string problem = Printable(raw_problem);
  const std::string verdict = damaged ? "DAMAGED" : "UNREADABLE";
  const std::string line =
      verdict + ": " + problem +
      (damaged ? "; the record cannot be trusted, so it gives no result"
               : "; the record could not be read, so it gives no result");
  switch (format) {
    case ReportFormat::kJson: {
      Json out = Json::object();
      out["study"] = name;
      Json& summary = out["summary"];
      summary = Json::object();
      summary["verdict"] = verdict;
      summary["verdict_line"] = line;
      summary["problem"] = problem;
      return DumpJson(out, 2) + "\n";
    }
    case ReportFormat::kHtml: {
      std::string class_name = verdict;
      std::transform(class_name.begin(), class_name.end(), class_name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             "<title>Retention study " + Html(name) + "</title>\n<style>" + std::string(kCss) +
             "</style>\n</head>\n<body>\n<main>\n<h1>Retention study " + Html(name) +
             "</h1>\n<div class=\"verdict " + class_name + "\" id=\"verdict\">" + Html(line) +
             "</div>\n</main>\n</body>\n</html>\n";
    }
    case ReportFormat::kText:
      break;
  }
  return "Retention study " + name + "\n" + line + "\n";
}

std::string RenderRetentionList(const std::vector<Json>& studies, double now,
                                const std::vector<UnloadableStudy>& unloadable) {
  if (studies.empty() && unloadable.empty()) return "no retention studies\n";
  std::vector<std::vector<std::string>> rows = {
      {"STUDY", "STATE", "SERIAL", "TARGET", "REGION", "WRITTEN", "AGE", "EQUIV AGE",
       "LAST VERIFY", "BAD"}};
  std::vector<UnloadableStudy> untrusted = unloadable;
  for (const Json& study : studies) {
    if (Status valid = ValidateStudy(study); !valid) {
      untrusted.push_back({Str(study, {"study"}), valid.error().message, true});
      continue;
    }
    const Summary s = Summarize(study, now);
    const Read* last = s.LastVerify();
    const auto written = Num(study, {"written", "end"});
    rows.push_back({Str(study, {"study"}), Str(study, {"state"}), Str(study, {"serial"}),
                    Str(study, {"target"}), Bytes(Num(study, {"region", "length"})),
                    Utc(written, "%Y-%m-%d %H:%M"),
                    written ? Duration(std::max(0.0, now - *written)) : "-",
                    Duration(s.equivalent),
                    last ? Utc(last->start, "%Y-%m-%d %H:%M") : "-",
                    last ? Count(last->bad_total) : "-"});
  }
  for (const UnloadableStudy& u : untrusted) {
    rows.push_back({Printable(u.name), u.damaged ? "DAMAGED" : "UNREADABLE", "-", "-", "-", "-",
                    "-", "-", "-", "-"});
  }
  std::string out = Table(rows, "", 99);
  if (!untrusted.empty()) {
    out += "\nstudies whose record gives no result:\n";
    for (const UnloadableStudy& u : untrusted) {
      out += "  " + Printable(u.name) + ": " + Printable(u.problem) + "\n";
    }
  }
  return out;
}

}  // namespace drivewatch::aging