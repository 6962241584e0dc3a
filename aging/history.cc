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
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "aging/durable_file.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

// ---- CRC-32C ----------------------------------------------------------------



// ---- Record framing ---------------------------------------------------------

constexpr std::string_view kMagic = "DWH1 ";
constexpr std::string_view kResync = "\nDWH1 ";

std::string Hex8(std::uint32_t v) { return util::Hex(v, 8); }

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

using util::FdCloser;
using util::SysError;

Expected<std::string> ReadAll(int fd, std::uint64_t size,
                              const std::string& path) {
  std::string data(size, '\0');
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pread(fd, data.data() + done, data.size() - done,
                              static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError(errno, path, "read");
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
    return SysError(errno, path_, "ftruncate torn tail");
  }
  // The cut must be durable before a record lands after it, or a crash
  // could bring the torn bytes back in front of the new record.
  if (::fsync(fd) != 0) return SysError(errno, path_, "fsync");
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
  if (fd < 0) return SysError(errno, path_, "open");
  FdCloser closer(fd);
  // Serializes with other writers (another object, the CLI's process) so a
  // tail repair or a rollback never cuts someone else's record. Released
  // by close().
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return SysError(errno, path_, "flock");
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) return SysError(errno, path_, "fstat");
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);

  if (size == 0) {
    // New (or still empty): make its directory entry durable, or a power
    // cut could lose the whole file with its first record.
    const std::filesystem::path p(path_);
    const std::string dir =
        p.has_parent_path() ? p.parent_path().string() : std::string(".");
    if (Status synced = util::FsyncDirectory(dir); !synced) return synced.error();
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
    return SysError(write_errno, path_, failed_call);
  }
  verified_end_ = static_cast<std::int64_t>(size + line.size());
  verified_dev_ = static_cast<std::uint64_t>(st.st_dev);
  verified_ino_ = static_cast<std::uint64_t>(st.st_ino);
  return Ok{};
}

bool IsRunRecord(const Json& record) {
  const Json* kind = record.Find("record");
  return kind == nullptr || (kind->type() == Json::Type::kString && kind->AsString() == "run");
}

bool IsStepRecord(const Json& record) {
  const Json* kind = record.Find("record");
  return kind != nullptr && kind->type() == Json::Type::kString && kind->AsString() == "step";
}

}  // namespace drivewatch::aging
