// SPDX-License-Identifier: Apache-2.0
#include "exporter/commands/report_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "aging/report/drive_report.h"
#include "aging/report/retention_report.h"
#include "aging/runner/phase_runner.h"
#include "config/util/durable_file.h"
#include "exporter/daemon.h"

namespace drivewatch {
namespace {

double Now() {
  // SOURCE_DATE_EPOCH (reproducible-builds.org): the same inputs give the
  // same report, byte for byte.
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch && *epoch) {
    char* end = nullptr;
    const double v = std::strtod(epoch, &end);
    if (end && *end == '\0' && v >= 0) return v;
  }
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Says on stderr what the report left out of each history, from its model
// (the histories were read once, as they streamed).
void Warn(const Json& model) {
  const Json* sources = Find(model, "sources");
  if (sources == nullptr) return;
  for (const Json& source : Items(*sources)) {
    if (AsString(*Find(source, "kind")) != "history") continue;
    const std::string file = AsString(*Find(source, "file"));
    const std::uint64_t torn = AsUint(*Find(source, "torn_tail_bytes"));
    if (torn > 0) {
      std::fprintf(stderr,
                   "drivewatch: %s: the last %llu bytes are a torn record (a write cut short by a "
                   "crash) and are left out\n",
                   file.c_str(), static_cast<unsigned long long>(torn));
    }
    for (const Json& d : Items(*Find(source, "damaged"))) {
      std::fprintf(stderr, "drivewatch: %s: damaged record left out: %s\n", file.c_str(),
                   AsString(d).c_str());
    }
    if (const Json* more = Find(source, "damaged_unlisted")) {
      std::fprintf(stderr, "drivewatch: %s: %llu more damaged records left out\n", file.c_str(),
                   static_cast<unsigned long long>(AsUint(*more)));
    }
  }
}

// A history the report will stream; false (and the error said) when the
// file cannot be opened. A missing file is an empty history.
bool AddHistory(const std::string& path, std::vector<aging::HistorySource>& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT) {
    std::fprintf(stderr, "drivewatch: %s: open: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  if (fd >= 0) ::close(fd);
  out.push_back(aging::HistorySource::File(path, path));
  return true;
}

// Each retention study's own HTML report, beside the drive report at
// `output`, which links it by this name; 1 (the error said) when one cannot
// be written.
int WriteStudyPages(const std::string& output, const std::vector<aging::StudyFile>& studies,
                    double generated) {
  const std::filesystem::path dir = std::filesystem::path(output).parent_path();
  for (const aging::StudyFile& s : studies) {
    if (!s.record) continue;
    // Named as the report names it: by the study's own name.
    const Json* study = Find(*s.record, "study");
    const std::string name =
        study && study->is_string() ? AsString(*study) : s.name;
    const std::string page = (dir / aging::RetentionReportFileName(name)).string();
    const std::string html =
        aging::RenderRetentionReport(*s.record, aging::ReportFormat::kHtml, generated);
    if (Status w = WriteFileAtomically(page, html, 0644); !w) {
      std::fprintf(stderr, "drivewatch: %s\n", w.error().message.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int RunReportCommand(const CommandLine& cli) {
  std::vector<aging::HistorySource> histories;
  std::vector<aging::StudyFile> studies;
  if (cli.args.empty()) {
    const auto cfg = LoadConfig(cli);
    if (!cfg) return 2;
    if (!AddHistory(aging::HistoryPath(cfg->state_directory), histories)) return 1;
    studies = aging::ReadStudies(cfg->state_directory);
  } else {
    for (const std::string& file : cli.args) {
      // Its first byte says what it is; a history may be years long and
      // is read as it streams (aging/history/history.h).
      auto head = ReadFileHead(file, 1);
      if (!head) {
        std::fprintf(stderr, "drivewatch: %s: cannot read: %s\n", file.c_str(),
                     head.error().message.c_str());
        return head.error().errnum == ENOENT ? 2 : 1;
      }
      if (*head == "{") {
        studies.push_back(aging::StudyFile{file, aging::ReadStudyRecord(file, "")});
        continue;
      }
      if (!AddHistory(file, histories)) return 1;
    }
  }
  for (const aging::StudyFile& s : studies) {
    if (!s.record) {
      std::fprintf(stderr, "drivewatch: retention study %s left out: %s\n", s.name.c_str(),
                   s.record.error().message.c_str());
    }
  }

  aging::DriveReportRequest request;
  request.drives = cli.drives;
  request.baseline = cli.baseline.value_or("");
  request.runs = cli.run_items;
  request.generated = Now();
  auto model = aging::BuildDriveReport(histories, studies, request);
  if (!model) {
    // A request for what is not on record (EINVAL), or a history that
    // failed while it was read (its error names the file).
    if (model.error().errnum != EINVAL) {
      std::fprintf(stderr, "drivewatch: %s\n", model.error().message.c_str());
      return 1;
    }
    std::fprintf(stderr, "drivewatch: report: %s\n", model.error().message.c_str());
    return 2;
  }
  Warn(*model);
  const std::string fmt = cli.format.value_or("text");
  const aging::DriveReportFormat format = fmt == "json"       ? aging::DriveReportFormat::kJson
                                          : fmt == "markdown" ? aging::DriveReportFormat::kMarkdown
                                          : fmt == "html"     ? aging::DriveReportFormat::kHtml
                                                              : aging::DriveReportFormat::kText;
  const std::string text = aging::RenderDriveReport(*model, format);
  if (!cli.output) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  if (Status s = WriteFileAtomically(*cli.output, text, 0644); !s) {
    std::fprintf(stderr, "drivewatch: %s\n", s.error().message.c_str());
    return 1;
  }
  if (format != aging::DriveReportFormat::kHtml) return 0;
  return WriteStudyPages(*cli.output, studies, request.generated);
}

}  // namespace drivewatch
