// SPDX-License-Identifier: Apache-2.0
#include "aging/history.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string_view>

#include "aging/durable_file.h"

namespace drivewatch::aging {
namespace {

// ---- CRC-32C ----------------------------------------------------------------



// ---- Record framing ---------------------------------------------------------

constexpr std::string_view kMagic = "DWH1 ";
constexpr std::string_view kResync = "\nDWH1 ";

std::string Hex8(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

std::string Frame(const std::string& json) {
  std::string line;
  line.reserve(json.size() + 32);
  line += kMagic;
  line += std::to_string(json.size());
  line += ' ';
  line += Hex8(Crc32c(json.data(), json.size()));
  line += ' ';
  line += json;
  line += '\n';
  return line;
}

struct Header {
  std::size_t json_begin = 0;
  std::uint64_t length = 0;
  std::uint32_t crc = 0;
};

// Parses "DWH1 <length> <crc32c> " at `pos` in its one canonical spelling
// (no leading zeros, lower-case hex), so a record has exactly one form.
bool ParseHeader(std::string_view data, std::size_t pos, Header& h) {
  if (data.substr(pos, kMagic.size()) != kMagic) return false;
  std::size_t i = pos + kMagic.size();
  const std::size_t digits_begin = i;
  std::uint64_t length = 0;
  while (i < data.size() && data[i] >= '0' && data[i] <= '9') {
    if (i - digits_begin >= 18) return false;  // no record is 10^18 bytes
    length = length * 10 + static_cast<std::uint64_t>(data[i] - '0');
    ++i;
  }
  const std::size_t digits = i - digits_begin;
  if (digits == 0 || (digits > 1 && data[digits_begin] == '0')) return false;
  if (i >= data.size() || data[i] != ' ') return false;
  ++i;
  std::uint32_t crc = 0;
  for (int k = 0; k < 8; ++k, ++i) {
    if (i >= data.size()) return false;
    const char c = data[i];
    if (c >= '0' && c <= '9') {
      crc = crc << 4 | static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      crc = crc << 4 | static_cast<std::uint32_t>(c - 'a' + 10);
    } else {
      return false;
    }
  }
  if (i >= data.size() || data[i] != ' ') return false;
  h = Header{i + 1, length, crc};
  return true;
}

// Whether a whole, intact record starts at `pos`: header, length ending
// at the record's newline, and checksum.
bool IntactRecordAt(std::string_view data, std::size_t pos) {
  Header h;
  if (!ParseHeader(data, pos, h) || h.json_begin + h.length >= data.size()) return false;
  const std::string_view json = data.substr(h.json_begin, h.length);
  return data[h.json_begin + h.length] == '\n' && json.find('\n') == std::string_view::npos &&
         Crc32c(json.data(), json.size()) == h.crc;
}

// Where reading goes on after damage at `pos`: the next intact record,
// found by its magic (the newline before it may be the damaged byte), or
// failing that the next "\nDWH1 " marker, so a damaged record after it is
// still reported rather than taken for a torn tail. npos when neither.
std::size_t Resync(std::string_view data, std::size_t pos) {
  for (std::size_t at = data.find(kMagic, pos + 1); at != std::string_view::npos;
       at = data.find(kMagic, at + 1)) {
    if (IntactRecordAt(data, at)) return at;
  }
  const std::size_t marker = data.find(kResync, pos);
  return marker == std::string_view::npos ? marker : marker + 1;
}

// Walks the whole file. Returns the offset where the torn tail starts (the
// file size when there is none).
std::size_t Scan(std::string_view data, HistoryContents* out) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    Header h;
    std::string problem;
    if (!ParseHeader(data, pos, h)) {
      problem = "not a record header (expected \"DWH1 <length> <crc32c> \")";
    } else if (h.json_begin + h.length >= data.size()) {
      problem = "length " + std::to_string(h.length) +
                " runs past the end of the file";
    } else {
      const std::string_view json = data.substr(h.json_begin, h.length);
      const std::size_t end = h.json_begin + h.length;
      if (data[end] != '\n' || json.find('\n') != std::string_view::npos) {
        // A newline inside, or none at the end: the length is wrong, and
        // the record's extent is unknown, so resync below.
        problem = "length " + std::to_string(h.length) +
                  " does not end at the record's newline";
      } else {
        // A whole record: whatever is wrong with it, the next one starts
        // right after it.
        const std::uint32_t crc = Crc32c(json.data(), json.size());
        const std::string where = "offset " + std::to_string(pos) + ": ";
        if (crc != h.crc) {
          if (out) {
            out->damaged.push_back(where + "checksum " + Hex8(crc) +
                                   ", expected " + Hex8(h.crc));
          }
        } else if (out) {
          Expected<Json> parsed = Json::Parse(json);
          if (!parsed) {
            out->damaged.push_back(where + "JSON: " + parsed.error().message);
          } else if (parsed->type() != Json::Type::kObject) {
            out->damaged.push_back(where + "record is not a JSON object");
          } else {
            out->records.push_back(std::move(parsed).value());
          }
        }
        pos = end + 1;
        continue;
      }
    }
    // Not a whole record at `pos`. With another record after it, it is
    // damage in the middle; at the end of the file, a torn append.
    const std::size_t next = Resync(data, pos);
    if (next == std::string_view::npos) return pos;
    if (out) {
      out->damaged.push_back("offset " + std::to_string(pos) + ": " + problem +
                             "; skipped " + std::to_string(next - pos) + " bytes");
    }
    pos = next;
  }
  return data.size();
}

Error SysError(const std::string& path, const char* call, int err) {
  return Error{err, -1, path + ": " + call + ": " + std::strerror(err)};
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

Expected<std::string> ReadAll(int fd, std::uint64_t size,
                              const std::string& path) {
  std::string data(size, '\0');
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pread(fd, data.data() + done, data.size() - done,
                              static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError(path, "read", errno);
    }
    if (n == 0) break;  // shrank under us; the caller's lock makes this rare
    done += static_cast<std::size_t>(n);
  }
  data.resize(done);
  return data;
}

}  // namespace


Expected<HistoryContents> HistoryFile::Read() const {
  Expected<std::string> data = ReadWholeFile(path_);
  if (!data) {
    if (data.error().errnum == ENOENT) return HistoryContents{};
    return data.error();
  }
  HistoryContents contents;
  const std::size_t torn_at = Scan(*data, &contents);
  contents.torn_tail_bytes = data->size() - torn_at;
  return contents;
}

Status HistoryFile::CutTornTail(int fd, std::uint64_t size) {
  Expected<std::string> data = ReadAll(fd, size, path_);
  if (!data) return data.error();
  const std::size_t torn_at = Scan(*data, nullptr);
  if (torn_at == data->size() && data->size() == size) return Ok{};
  if (::ftruncate(fd, static_cast<off_t>(torn_at)) != 0) {
    return SysError(path_, "ftruncate torn tail", errno);
  }
  // The cut must be durable before a record lands after it, or a crash
  // could bring the torn bytes back in front of the new record.
  if (::fsync(fd) != 0) return SysError(path_, "fsync", errno);
  repaired_bytes_ = size - torn_at;
  return Ok{};
}

Status HistoryFile::Append(const Json& record) {
  repaired_bytes_ = 0;
  if (record.type() != Json::Type::kObject) {
    return Error{EINVAL, -1, path_ + ": history record is not a JSON object"};
  }
  const std::string line = Frame(record.Dump());

  // O_RDWR rather than O_WRONLY: the tail check reads through the same
  // descriptor, so it checks exactly the inode it appends to.
  const int fd =
      ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return SysError(path_, "open", errno);
  FdCloser closer(fd);
  // Serializes with other writers (another object, the CLI's process) so a
  // tail repair or a rollback never cuts someone else's record. Released
  // by close().
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return SysError(path_, "flock", errno);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) return SysError(path_, "fstat", errno);
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);

  if (size == 0) {
    // New (or still empty): make its directory entry durable, or a power
    // cut could lose the whole file with its first record.
    const std::filesystem::path p(path_);
    const std::string dir =
        p.has_parent_path() ? p.parent_path().string() : std::string(".");
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return SysError(dir, "open directory", errno);
    const int rc = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    if (rc != 0) return SysError(dir, "fsync directory", err);
  }

  const bool known = verified_end_ >= 0 &&
                     static_cast<std::uint64_t>(verified_end_) == size &&
                     verified_dev_ == static_cast<std::uint64_t>(st.st_dev) &&
                     verified_ino_ == static_cast<std::uint64_t>(st.st_ino);
  if (!known && size > 0) {
    verified_end_ = -1;
    if (Status cut = CutTornTail(fd, size); !cut) return cut;
    size -= repaired_bytes_;
  }

  // One write(2) for the whole line keeps the record contiguous even with
  // other appenders; the loop only handles a short write (e.g. the disk
  // filling mid-record), which is then rolled back.
  std::size_t done = 0;
  int write_errno = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      write_errno = errno;
      break;
    }
    if (n == 0) {
      write_errno = EIO;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  const char* failed_call = "write";
  if (write_errno == 0 && ::fdatasync(fd) != 0) {
    // After a failed fdatasync the page cache may not match the disk; cut
    // back so the caller's retry cannot leave the record twice.
    write_errno = errno;
    failed_call = "fdatasync";
  }
  if (write_errno != 0) {
    if (::ftruncate(fd, static_cast<off_t>(size)) == 0) {
      ::fdatasync(fd);  // best effort: a reader handles a torn tail anyway
      verified_end_ = static_cast<std::int64_t>(size);
    } else {
      verified_end_ = -1;
    }
    return SysError(path_, failed_call, write_errno);
  }
  verified_end_ = static_cast<std::int64_t>(size + line.size());
  verified_dev_ = static_cast<std::uint64_t>(st.st_dev);
  verified_ino_ = static_cast<std::uint64_t>(st.st_ino);
  return Ok{};
}

// ---- drivewatch history -----------------------------------------------------

namespace {

bool EndsWithWord(std::string_view key, std::string_view unit) {
  if (key == unit) return true;
  return key.size() > unit.size() &&
         key.substr(key.size() - unit.size()) == unit &&
         key[key.size() - unit.size() - 1] == '_';
}

std::string Printf(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string FormatUtc(const Json* seconds) {
  if (!seconds || seconds->type() != Json::Type::kNumber) return "-";
  const double s = std::floor(seconds->AsDouble());
  if (!(s >= 0 && s < 253402300800.0)) return "-";  // up to year 9999
  const std::time_t t = static_cast<std::time_t>(s);
  std::tm tm{};
  if (!::gmtime_r(&t, &tm)) return "-";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "-";
  char buf[48];
  const long long total = std::llround(s);
  if (s < 10 && s != std::floor(s)) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else if (total < 60) {
    std::snprintf(buf, sizeof buf, "%llds", total);
  } else if (total < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
  } else if (total < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", total / 3600,
                  total % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", total / 86400,
                  total % 86400 / 3600);
  }
  return buf;
}

std::string RecordDuration(const Json& r) {
  if (const Json* d = r.Find("duration_seconds");
      d && d->type() == Json::Type::kNumber) {
    return FormatDuration(d->AsDouble());
  }
  const Json* start = r.Find("start");
  const Json* end = r.Find("end");
  if (start && end && start->type() == Json::Type::kNumber &&
      end->type() == Json::Type::kNumber) {
    return FormatDuration(end->AsDouble() - start->AsDouble());
  }
  return "-";
}

std::string FormatBytes(double b) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB",
                                           "EiB"};
  if (!(std::fabs(b) >= 1024)) return Printf("%.0f B", b);
  int unit = -1;
  while (std::fabs(b) >= 1024 && unit < 5) {
    b /= 1024;
    ++unit;
  }
  // Capacities read best with two decimals from GiB up (465.76 GiB).
  return Printf(unit >= 2 ? "%.2f " : "%.1f ", b) + kUnits[unit];
}

std::string FormatSeconds(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return Printf("%.3g µs", s * 1e6);
  if (a < 1) return Printf("%.3g ms", s * 1e3);
  if (a < 60) return Printf("%.3g s", s);
  return FormatDuration(s);
}

// Table cells stay on one line whatever a record holds.
std::string OneLine(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  return out;
}

std::string HumanValue(std::string_view key, const Json& v) {
  switch (v.type()) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return v.AsBool() ? "true" : "false";
    case Json::Type::kString: {
      const std::string& s = v.AsString();
      if (s.empty() || s.find_first_of(" =\"") != std::string::npos) {
        return OneLine(v.Dump());
      }
      return OneLine(s);
    }
    case Json::Type::kNumber: {
      const double d = v.AsDouble();
      if (EndsWithWord(key, "bytes_per_second")) {
        return Printf("%.1f MB/s", d / 1e6);  // decimal, as drives are sold
      }
      if (EndsWithWord(key, "bytes")) return FormatBytes(d);
      if (EndsWithWord(key, "ratio")) return Printf("%.1f%%", d * 100);
      if (EndsWithWord(key, "seconds")) return FormatSeconds(d);
      const std::string exact = v.Dump();
      if (exact.find_first_of(".e") == std::string::npos) return exact;
      return Printf("%.6g", d);
    }
    case Json::Type::kArray:
    case Json::Type::kObject:
      return OneLine(v.Dump());
  }
  return {};
}

std::string ResultsText(const Json& r) {
  std::string out;
  const auto add = [&](const std::string& key, std::string_view unit_key,
                       const Json& v) {
    if (!out.empty()) out += ' ';
    out += OneLine(key);
    out += '=';
    out += HumanValue(unit_key, v);
  };
  if (const Json* results = r.Find("results")) {
    for (const auto& [key, value] : results->members()) {
      if (value.type() == Json::Type::kArray) continue;  // series-like
      if (value.type() == Json::Type::kObject) {
        for (const auto& [sub, sub_value] : value.members()) {
          if (sub_value.type() == Json::Type::kArray) continue;
          add(key + "." + sub, sub, sub_value);
        }
        continue;
      }
      add(key, key, value);
    }
  }
  // Why a run stopped is the most useful thing to show for it.
  if (const Json* reason = r.Find("reason");
      reason && !reason->AsString().empty()) {
    add("reason", "reason", *reason);
  }
  return out;
}

std::string Cell(const Json& r, std::string_view key) {
  const Json* v = r.Find(key);
  if (!v || v->is_null()) return "-";
  if (v->type() == Json::Type::kString) {
    return v->AsString().empty() ? "-" : OneLine(v->AsString());
  }
  return OneLine(v->Dump());
}

std::size_t DisplayWidth(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string RenderTable(const std::vector<const Json*>& records) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"START (UTC)", "PHASE", "KIND", "TARGET", "SERIAL",
                  "OUTCOME", "DURATION", "RESULTS"});
  for (const Json* r : records) {
    rows.push_back({FormatUtc(r->Find("start")), Cell(*r, "phase"),
                    Cell(*r, "kind"), Cell(*r, "target"), Cell(*r, "serial"),
                    Cell(*r, "outcome"), RecordDuration(*r), ResultsText(*r)});
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], DisplayWidth(row[c]));
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c) line += "  ";
      line += row[c];
      if (c + 1 < row.size()) {
        line.append(widths[c] - DisplayWidth(row[c]), ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

void Flatten(const Json& v, const std::string& prefix,
             std::vector<std::pair<std::string, const Json*>>& out) {
  for (const auto& [key, value] : v.members()) {
    const std::string name = prefix + key;
    if (value.type() == Json::Type::kArray) continue;
    if (value.type() == Json::Type::kObject) {
      Flatten(value, name + ".", out);
      continue;
    }
    out.emplace_back(name, &value);
  }
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvValue(const Json& v) {
  switch (v.type()) {
    case Json::Type::kNull: return "";
    case Json::Type::kString: return CsvField(v.AsString());
    default: return CsvField(v.Dump());
  }
}

std::string RenderCsv(const std::vector<const Json*>& records) {
  // The schema's fields first and always, so scripts can rely on their
  // columns (and an empty selection still has a header); then whatever
  // else the records hold, in the order first seen.
  std::vector<std::string> columns = {
      "version", "run",   "phase", "kind",     "target",
      "serial",  "model", "firmware", "start", "end",
      "duration_seconds", "outcome", "reason"};
  std::vector<std::vector<std::pair<std::string, const Json*>>> flat;
  for (const Json* r : records) {
    flat.emplace_back();
    Flatten(*r, "", flat.back());
    for (const auto& [name, value] : flat.back()) {
      if (std::find(columns.begin(), columns.end(), name) == columns.end()) {
        columns.push_back(name);
      }
    }
  }
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    out += CsvField(columns[c]);
  }
  out += '\n';
  for (const auto& fields : flat) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ',';
      for (const auto& [name, value] : fields) {
        if (name == columns[c]) {
          out += CsvValue(*value);
          break;
        }
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace

std::string RenderHistory(const std::vector<Json>& records,
                          const HistoryFilter& filter, HistoryFormat format) {
  std::vector<const Json*> selected;
  for (const Json& r : records) {
    if (!filter.serial.empty()) {
      const Json* s = r.Find("serial");
      if (!s || s->AsString() != filter.serial) continue;
    }
    if (!filter.phase.empty()) {
      const Json* p = r.Find("phase");
      if (!p || p->AsString() != filter.phase) continue;
    }
    selected.push_back(&r);
  }
  switch (format) {
    case HistoryFormat::kTable: return RenderTable(selected);
    case HistoryFormat::kCsv: return RenderCsv(selected);
    case HistoryFormat::kJson: {
      std::string out;
      for (const Json* r : selected) {
        out += r->Dump();
        out += '\n';
      }
      return out;
    }
  }
  return {};
}

}  // namespace drivewatch::aging
