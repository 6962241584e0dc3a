// SPDX-License-Identifier: Apache-2.0
#include "aging/history/history.h"

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
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "config/util/crc32c.h"
#include "config/util/durable_file.h"
#include "config/util/sys.h"
#include "config/util/text.h"

namespace drivewatch::aging {
namespace {

// ---- Record framing ---------------------------------------------------------

constexpr std::string_view kMagic = "DWH1 ";

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

using util::FdCloser;
using util::SysError;

// The longest header ParseHeader takes is 5 + 18 + 1 + 8 + 1 bytes: a line
// holding a record of kMaxRecordBytes has at most this many more.
constexpr std::size_t kMaxLineKept = kMaxRecordBytes + 64;

// One line of the file: its first bytes are kept, the rest only counted.
struct Line {
  std::uint64_t offset = 0;  // of its first byte
  std::uint64_t number = 0;  // 1-based
  std::uint64_t length = 0;  // without its newline
  bool newline = false;      // false: the file's last bytes, with no newline
  std::string kept;          // its first min(length, kMaxLineKept) bytes
  bool whole() const { return kept.size() == length; }
};

// Reads the first `size` bytes of a file, line by line, through a fixed
// buffer.
class LineReader {
 public:
  // The buffer is no larger than the file: most histories are small, and
  // a reader (the fuzz target) may read thousands of them.
  LineReader(int fd, std::uint64_t size, const std::string& path)
      : fd_(fd),
        size_(size),
        path_(path),
        capacity_(static_cast<std::size_t>(std::clamp<std::uint64_t>(size, 1, kBufferBytes))),
        buffer_(std::make_unique_for_overwrite<char[]>(capacity_)) {}

  // The next line, or false at the end.
  Expected<bool> Next(Line& line) {
    if (begin_ == end_) {
      Expected<bool> more = Fill();
      if (!more || !*more) return more;
    }
    line.offset = offset_;
    line.number = ++number_;
    line.length = 0;
    line.newline = false;
    line.kept.clear();
    for (;;) {
      if (begin_ == end_) {
        Expected<bool> more = Fill();
        if (!more) return more.error();
        if (!*more) break;
      }
      const char* at = buffer_.get() + begin_;
      const std::size_t available = end_ - begin_;
      const void* newline = std::memchr(at, '\n', available);
      const std::size_t take =
          newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - at) : available;
      if (line.kept.size() < kMaxLineKept) {
        line.kept.append(at, std::min(take, kMaxLineKept - line.kept.size()));
      }
      line.length += take;
      begin_ += take;
      offset_ += take;
      if (newline) {
        ++begin_;
        ++offset_;
        line.newline = true;
        break;
      }
    }
    return true;
  }

 private:
  // False when the file has no more bytes (its end, or it shrank).
  Expected<bool> Fill() {
    while (read_ < size_) {
      const std::size_t want =
          static_cast<std::size_t>(std::min<std::uint64_t>(capacity_, size_ - read_));
      const ssize_t n = ::pread(fd_, buffer_.get(), want, static_cast<off_t>(read_));
      if (n < 0) {
        if (errno == EINTR) continue;
        return SysError(errno, path_, "read");
      }
      if (n == 0) return false;  // shrank under us; the caller's lock makes this rare
      read_ += static_cast<std::uint64_t>(n);
      begin_ = 0;
      end_ = static_cast<std::size_t>(n);
      return true;
    }
    return false;
  }

  static constexpr std::size_t kBufferBytes = std::size_t{1} << 16;
  int fd_;
  std::uint64_t size_;
  const std::string& path_;
  std::size_t capacity_;
  std::unique_ptr<char[]> buffer_;
  std::size_t begin_ = 0, end_ = 0;  // the unread part of buffer_
  std::uint64_t read_ = 0;           // bytes read from the file
  std::uint64_t offset_ = 0;         // of buffer_[begin_]
  std::uint64_t number_ = 0;         // lines so far
};

std::string Where(std::uint64_t line, std::uint64_t offset) {
  return "line " + std::to_string(line) + " (offset " + std::to_string(offset) + "): ";
}

std::uint32_t CrcOf(const Line& line, const Header& h) {
  return Crc32c(line.kept.data() + h.json_begin, h.length);
}

// A good record glued to the end of a line that is not one, after a
// damaged newline: where in the line it starts, and its header.
std::optional<std::pair<std::size_t, Header>> GluedRecord(const Line& line) {
  if (!line.whole()) return std::nullopt;
  for (std::size_t at = line.kept.find(kMagic, 1); at != std::string::npos;
       at = line.kept.find(kMagic, at + 1)) {
    Header g;
    if (ParseHeader(line.kept, at, g) && g.json_begin + g.length == line.length &&
        g.length <= kMaxRecordBytes && CrcOf(line, g) == g.crc) {
      return std::make_pair(at, g);
    }
  }
  return std::nullopt;
}

// Why a line that is not a whole record starts a damaged stretch.
std::string NotARecordProblem(const Line& line, bool header, const Header& h,
                              std::uint64_t size) {
  if (!header) return "not a record header (expected \"DWH1 <length> <crc32c> \")";
  if (line.offset + h.json_begin + h.length >= size) {
    return "length " + std::to_string(h.length) + " runs past the end of the file";
  }
  return "length " + std::to_string(h.length) + " does not end at the record's newline";
}

// Walks the whole file, one line at a time. Without `out`, only the
// framing is checked (no JSON is parsed); with it, each good record goes
// to `each` and the damage to `out`.
class Scanner {
 public:
  Scanner(std::uint64_t size, HistoryDamage* out, const std::function<void(Json&&)>* each)
      : size_(size), out_(out), each_(each) {}

  // The offset where the torn tail starts (the file size when there is
  // none).
  Expected<std::uint64_t> Run(LineReader& lines) {
    Line line;
    for (;;) {
      Expected<bool> next = lines.Next(line);
      if (!next) return next.error();
      if (!*next) break;
      const bool marker = std::string_view(line.kept).starts_with(kMagic);
      if (!line.newline) {
        // The last bytes, unfinished: a torn append, and the damage before
        // it too unless a record header ends that.
        if (stretch_ && marker) EndStretch(line.offset);
        return stretch_ ? stretch_->offset : line.offset;
      }
      Header h;
      const bool header = ParseHeader(line.kept, 0, h);
      if (header && h.json_begin + h.length == line.length) {
        WholeRecord(line, h);
      } else {
        NotARecord(line, header, h, marker);
      }
    }
    return stretch_ ? stretch_->offset : size_;
  }

 private:
  // A damaged stretch not yet reported: its first line's problem; it ends
  // at the next record or "DWH1 ", or is the torn tail.
  struct Stretch {
    std::uint64_t offset, line;
    std::string problem;
  };

  void Damaged(std::uint64_t line, std::uint64_t offset, const std::string& what) {
    if (!out_) return;
    if (out_->damaged.size() < kMaxDamageListed) {
      out_->damaged.push_back(Where(line, offset) + what);
    } else {
      ++out_->damaged_unlisted;
    }
  }

  void EndStretch(std::uint64_t at) {
    if (!stretch_) return;
    Damaged(stretch_->line, stretch_->offset,
            stretch_->problem + "; skipped " + std::to_string(at - stretch_->offset) + " bytes");
    stretch_.reset();
  }

  // The intact record whose JSON is line.kept[h.json_begin, line end).
  void Take(const Line& line, std::uint64_t offset, const Header& h) {
    if (!out_) return;
    Expected<Json> parsed = ParseJson(std::string_view(line.kept).substr(h.json_begin));
    if (!parsed) {
      // A record is one line: the JSON error's "line 1, " says nothing.
      std::string why = parsed.error().message;
      if (why.starts_with("line 1, ")) why.erase(0, 8);
      Damaged(line.number, offset, "JSON: " + why);
    } else if (!parsed->is_object()) {
      Damaged(line.number, offset, "record is not a JSON object");
    } else {
      (*each_)(std::move(parsed).value());
    }
  }

  // A whole record: whatever is wrong with it, the next one starts right
  // after it.
  void WholeRecord(const Line& line, const Header& h) {
    EndStretch(line.offset);
    if (h.length > kMaxRecordBytes) {
      Damaged(line.number, line.offset,
              "record of " + std::to_string(h.length) +
                  " bytes, larger than a record may be (expected at most " +
                  std::to_string(kMaxRecordBytes) + " bytes)");
    } else if (const std::uint32_t crc = CrcOf(line, h); crc != h.crc) {
      Damaged(line.number, line.offset, "checksum " + Hex8(crc) + ", expected " + Hex8(h.crc));
    } else {
      Take(line, line.offset, h);
    }
  }

  // Not a record: it starts a damaged stretch (or continues one), and a
  // record glued to its end is still found by its magic.
  void NotARecord(const Line& line, bool header, const Header& h, bool marker) {
    const std::optional<std::pair<std::size_t, Header>> glued = GluedRecord(line);
    if (!stretch_ || marker) {
      EndStretch(line.offset);
      stretch_ = Stretch{line.offset, line.number, NotARecordProblem(line, header, h, size_)};
    }
    if (glued) {
      EndStretch(line.offset + glued->first);
      Take(line, line.offset + glued->first, glued->second);
    }
  }

  std::uint64_t size_;
  HistoryDamage* out_;
  const std::function<void(Json&&)>* each_;
  std::optional<Stretch> stretch_;
};

// Writes all of `line`; 0, or the errno of the write that failed (EIO for
// one that wrote nothing).
int WriteLine(int fd, const std::string& line) {
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

std::string FramedRecord(const Json& record) { return Frame(DumpJson(record)); }

Expected<HistoryDamage> HistoryFile::ForEach(const std::function<void(Json&&)>& each) const {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return HistoryDamage{};
    return SysError(errno, path_, "open");
  }
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return SysError(errno, path_, "fstat");
  // What is there now: records appended while reading are for the next read.
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  HistoryDamage damage;
  LineReader lines(fd, size, path_);
  Expected<std::uint64_t> torn_at = Scanner(size, &damage, &each).Run(lines);
  if (!torn_at) return torn_at.error();
  damage.torn_tail_bytes = static_cast<std::size_t>(size - *torn_at);
  return damage;
}

Expected<HistoryContents> HistoryFile::Read() const {
  HistoryContents contents;
  auto damage = ForEach([&](Json&& record) { contents.records.push_back(std::move(record)); });
  if (!damage) return damage.error();
  static_cast<HistoryDamage&>(contents) = std::move(*damage);
  return contents;
}

Status HistoryFile::CutTornTail(int fd, std::uint64_t size) {
  LineReader lines(fd, size, path_);
  Expected<std::uint64_t> torn_at = Scanner(size, nullptr, nullptr).Run(lines);
  if (!torn_at) return torn_at.error();
  if (*torn_at == size) return Ok{};
  if (::ftruncate(fd, static_cast<off_t>(*torn_at)) != 0) {
    return SysError(errno, path_, "ftruncate torn tail");
  }
  // The cut must be durable before a record lands after it, or a crash
  // could bring the torn bytes back in front of the new record.
  if (::fsync(fd) != 0) return SysError(errno, path_, "fsync");
  repaired_bytes_ = static_cast<std::size_t>(size - *torn_at);
  return Ok{};
}

Status HistoryFile::Append(const Json& record) {
  repaired_bytes_ = 0;
  if (!record.is_object()) {
    return Error{EINVAL, -1, path_ + ": history record is not a JSON object"};
  }
  const std::string line = Frame(DumpJson(record));

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
  int write_errno = WriteLine(fd, line);
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
  const Json* kind = Find(record, "record");
  return kind == nullptr || (kind->is_string() && AsString(*kind) == "run");
}

bool IsStepRecord(const Json& record) {
  const Json* kind = Find(record, "record");
  return kind != nullptr && kind->is_string() && AsString(*kind) == "step";
}

}  // namespace drivewatch::aging
