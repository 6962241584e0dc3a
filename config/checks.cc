// SPDX-License-Identifier: Apache-2.0
#include "config/checks.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config/util/sys.h"

namespace drivewatch::config::detail {
namespace {

constexpr std::string_view kAddressForms =
    "host:port, [IPv6]:port or :port, such as \":9647\"";

char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) {
  return IsDigit(c) || (Lower(c) >= 'a' && Lower(c) <= 'z');
}

std::optional<std::string> PortProblem(std::string_view address,
                                       std::string_view port) {
  const std::string where = Quote(address) + ": ";
  if (port.empty())
    return where + "missing port after \":\" (expected a port from 1 to 65535)";
  if (!std::all_of(port.begin(), port.end(), IsDigit)) {
    return where + "port " + Quote(port) +
           " is not a number (expected 1 to 65535)";
  }
  // More than five digits cannot be a port whatever they are; checking the
  // length first also keeps the sum below from overflowing.
  long value = 0;
  if (port.size() <= 5) {
    for (char c : port) value = value * 10 + (c - '0');
  }
  if (port.size() > 5 || value < 1 || value > 65535) {
    return where + "port " + std::string(port) +
           " is out of range (expected 1 to 65535)";
  }
  return std::nullopt;
}

bool IsIpv6(std::string_view host) {
  // A zone ("fe80::1%eth0") is legal for link-local addresses; inet_pton
  // does not take one, so check it apart.
  const size_t percent = host.find('%');
  if (percent != std::string_view::npos) {
    const std::string_view zone = host.substr(percent + 1);
    if (zone.empty() || !std::all_of(zone.begin(), zone.end(), [](char c) {
          return IsAlnum(c) || c == '_' || c == '-' || c == '.';
        })) {
      return false;
    }
    host = host.substr(0, percent);
  }
  in6_addr out;
  return inet_pton(AF_INET6, std::string(host).c_str(), &out) == 1;
}

bool IsHostName(std::string_view host) {
  // RFC 1123 labels, tolerating "_" (seen in /etc/hosts) and one trailing
  // dot. Whether the name resolves is for bind time, not for the config.
  if (host.size() > 253) return false;
  if (host.back() == '.') host.remove_suffix(1);
  size_t start = 0;
  while (start <= host.size()) {
    size_t end = host.find('.', start);
    if (end == std::string_view::npos) end = host.size();
    const std::string_view label = host.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' ||
        label.back() == '-') {
      return false;
    }
    if (!std::all_of(label.begin(), label.end(), [](char c) {
          return IsAlnum(c) || c == '-' || c == '_';
        })) {
      return false;
    }
    start = end + 1;
  }
  return true;
}

// Ends the bracket expression that starts at `pattern[open]`, following
// glibc fnmatch: "!" or "^" negates, a "]" right after the opening (or the
// negation) is literal, "[:class:]", "[.x.]" and "[=x=]" nest, and a
// backslash escapes. Returns the index of the closing "]", or npos with
// `problem` set.
size_t CloseBracket(std::string_view pattern, size_t open,
                    std::string* problem) {
  static constexpr std::array<std::string_view, 12> kClasses{
      "alnum", "alpha", "blank", "cntrl", "digit", "graph",
      "lower", "print", "punct", "space", "upper", "xdigit"};
  size_t i = open + 1;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) ++i;
  if (i < pattern.size() && pattern[i] == ']') ++i;
  while (i < pattern.size() && pattern[i] != ']') {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      i += 2;
    } else if (pattern[i] == '[' && i + 1 < pattern.size() &&
               (pattern[i + 1] == ':' || pattern[i + 1] == '.' ||
                pattern[i + 1] == '=')) {
      const char kind = pattern[i + 1];
      const size_t close = pattern.find(std::string{kind, ']'}, i + 2);
      if (close == std::string_view::npos) break;
      const std::string_view name = pattern.substr(i + 2, close - i - 2);
      if (kind == ':' &&
          std::find(kClasses.begin(), kClasses.end(), name) == kClasses.end()) {
        *problem = "unknown character class \"[:" + std::string(name) +
                   ":]\" (expected alnum, alpha, blank, cntrl, digit, graph, "
                   "lower, print, punct, space, upper or xdigit)";
        return std::string_view::npos;
      }
      i = close + 2;
    } else {
      ++i;
    }
  }
  if (i >= pattern.size()) {
    *problem =
        "\"[\" is never closed (expected a closing \"]\", or a backslash "
        "before \"[\" to match it literally)";
    return std::string_view::npos;
  }
  return i;
}

}  // namespace

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04X", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  // Three rolling rows: the transposition step looks two rows back.
  std::vector<size_t> two_back(b.size() + 1), prev(b.size() + 1),
      cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = Lower(a[i - 1]) == Lower(b[j - 1]);
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) &&
          Lower(a[i - 2]) == Lower(b[j - 1])) {
        cur[j] = std::min(cur[j], two_back[j - 2] + 1);
      }
    }
    std::swap(two_back, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string_view> ClosestMatch(
    std::string_view word, std::span<const std::string_view> candidates) {
  // A third of the length: "intervall" finds "interval", "listen_addr"
  // finds "listen_address", but "log" does not drag in "web".
  std::optional<std::string_view> best;
  size_t best_distance = 0;
  for (std::string_view candidate : candidates) {
    const size_t limit =
        std::max<size_t>(1, std::max(word.size(), candidate.size()) / 3);
    const size_t d = EditDistance(word, candidate);
    if (d <= limit && (!best || d < best_distance)) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::optional<std::string> ListenAddressProblem(std::string_view address) {
  if (address.empty())
    return "empty address (expected " + std::string(kAddressForms) + ")";
  const std::string where = Quote(address) + ": ";

  if (address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos) {
      return where +
             "missing \"]\" (expected [IPv6]:port, such as \"[::1]:9647\")";
    }
    const std::string_view host = address.substr(1, close - 1);
    if (!IsIpv6(host)) {
      return where + Quote(host) +
             " is not a valid IPv6 address (expected one such as \"::1\" or "
             "\"fe80::1%eth0\")";
    }
    if (close + 1 == address.size()) {
      return where +
             "missing port (expected [IPv6]:port, such as \"[::1]:9647\")";
    }
    if (address[close + 1] != ':') {
      return where +
             "missing \":\" after \"]\" (expected [IPv6]:port, such as "
             "\"[::1]:9647\")";
    }
    return PortProblem(address, address.substr(close + 2));
  }

  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    if (std::all_of(address.begin(), address.end(), IsDigit)) {
      return where + "missing \":\" before the port (expected \":" +
             std::string(address) + "\" to listen on all addresses)";
    }
    return where + "missing port (expected " + std::string(kAddressForms) + ")";
  }
  const std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.find(':') != std::string_view::npos) {
    // Without brackets the port cannot be told from the last group.
    std::string example = "\"[::1]:9647\"";
    if (IsIpv6(host) && !PortProblem(address, port)) {
      example = "\"[" + std::string(host) + "]:" + std::string(port) + "\"";
    }
    return where + "IPv6 address must be in brackets (expected " + example +
           ")";
  }
  if (!host.empty()) {
    const bool numeric = std::all_of(host.begin(), host.end(), [](char c) {
      return IsDigit(c) || c == '.';
    });
    in_addr v4;
    if (numeric && inet_pton(AF_INET, std::string(host).c_str(), &v4) != 1) {
      return where + Quote(host) +
             " is not a valid IPv4 address (expected four numbers from 0 to "
             "255, such as \"127.0.0.1\")";
    }
    if (!numeric && !IsHostName(host)) {
      return where + Quote(host) +
             " is not a valid host name (expected letters, digits, \"-\" and "
             "\".\")";
    }
  }
  return PortProblem(address, port);
}

std::optional<std::string> GlobProblem(std::string_view pattern) {
  if (pattern.empty())
    return "empty pattern (expected a glob such as \"S5GX*\", or \"*\" for "
           "all)";
  if (pattern.front() == ' ' || pattern.back() == ' ') {
    return Quote(pattern) +
           " starts or ends with a space and would never match (expected no "
           "padding; drive serials and models are compared trimmed)";
  }
  // Identify Controller SN (bytes 23:04) and MN (bytes 63:24) are ASCII
  // strings in every NVMe revision, so anything else can only be a typo or
  // an encoding accident.
  if (std::any_of(pattern.begin(), pattern.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u > 0x7e;
      })) {
    return Quote(pattern) +
           " contains a control or non-ASCII character and would never match "
           "(expected printable ASCII, as drives report serials and models)";
  }
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      if (i + 1 == pattern.size()) {
        return Quote(pattern) +
               " is not a valid glob: it ends in a lone backslash (expected a "
               "character after it)";
      }
      ++i;
    } else if (pattern[i] == '[') {
      std::string problem;
      const size_t close = CloseBracket(pattern, i, &problem);
      if (close == std::string_view::npos) {
        return Quote(pattern) + " is not a valid glob: " + problem;
      }
      i = close;
    }
  }
  return std::nullopt;
}

std::optional<std::string> AbsolutePathProblem(std::string_view path) {
  if (path.empty()) {
    return "empty path (expected an absolute path, such as "
           "\"/var/lib/drivewatch\")";
  }
  if (path.find('\0') != std::string_view::npos) {
    return Quote(path) +
           " contains a NUL character (expected a path without one)";
  }
  if (path.front() != '/') {
    return Quote(path) +
           " is not an absolute path (expected a path starting with \"/\")";
  }
  return std::nullopt;
}

namespace {

std::string FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

// The directory part of `path`, for the remedy of a misplaced file.
std::string_view Parent(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string_view::npos ? std::string_view("/")
                                                       : path.substr(0, slash);
}

}  // namespace

std::optional<std::string> StateDirectoryProblem(std::string_view path) {
  if (auto problem = AbsolutePathProblem(path)) return problem;
  struct stat st;
  if (::stat(std::string(path).c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return Quote(path) + " is " + FileKind(st.st_mode) +
           ", not a directory (expected the directory drivewatch keeps its "
           "state in; it is created when missing)";
  }
  return std::nullopt;
}

std::optional<std::string> BlockDeviceProblem(std::string_view path) {
  if (auto problem = AbsolutePathProblem(path)) return problem;
  struct stat st;
  if (::stat(std::string(path).c_str(), &st) == 0 && !S_ISBLK(st.st_mode)) {
    return Quote(path) + " is " + FileKind(st.st_mode) +
           ", not a block device (expected a whole device such as "
           "\"/dev/nvme1n1\"; to age a file, use directory = " +
           Quote(Parent(path)) + " instead, where drivewatch writes only its own file)";
  }
  return std::nullopt;
}

bool NvmeNamespacePath(std::string_view path) {
  std::string name(path);
  if (char* resolved = ::realpath(name.c_str(), nullptr)) {
    name = resolved;
    std::free(resolved);
  }
  name = name.substr(name.rfind('/') + 1);
  // nvme<ctrl>n<ns> or nvme<subsys>c<ctrl>n<ns>, not a partition.
  std::size_t i = 4;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
    return i > from;
  };
  if (name.rfind("nvme", 0) != 0 || !digits()) return false;
  if (i < name.size() && name[i] == 'c' && (++i, !digits())) return false;
  return i < name.size() && name[i] == 'n' && (++i, digits()) && i == name.size();
}

std::optional<std::string> NotNvmeNamespaceProblem(std::string_view path) {
  const std::string name(path);
  char* resolved = ::realpath(name.c_str(), nullptr);
  if (resolved != nullptr) {
    const std::string real = resolved;
    std::free(resolved);
    if (NvmeNamespacePath(real)) return std::nullopt;
    return Quote(path) + (real == name ? std::string() : " (" + Quote(real) + ")") +
           " is not an NVMe namespace";
  }
  if (name.substr(name.rfind('/') + 1).find("nvme") != std::string::npos) return std::nullopt;
  return Quote(path) + " is not an NVMe namespace by its name";
}

std::optional<LogicalBlockSize> TargetLogicalBlockSize(std::string_view block_device,
                                                       std::string_view directory,
                                                       const std::string& sysfs) {
  const std::string path(block_device.empty() ? directory : block_device);
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
  dev_t dev = 0;
  if (!block_device.empty()) {
    if (!S_ISBLK(st.st_mode)) return std::nullopt;
    dev = st.st_rdev;
  } else {
    dev = st.st_dev;
  }
  const std::string base = sysfs + "/dev/block/" + std::to_string(major(dev)) + ":" +
                           std::to_string(minor(dev));
  // A partition has no queue of its own: its disk's is one level up.
  for (const std::string& attribute : {base + "/queue/logical_block_size",
                                       base + "/../queue/logical_block_size"}) {
    auto text = util::ReadAttribute(attribute);
    if (!text) continue;
    std::uint32_t bytes = 0;
    for (char c : *text) {
      if (c < '0' || c > '9' || bytes > 1'000'000) return std::nullopt;
      bytes = bytes * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (bytes < 512 || (bytes & (bytes - 1)) != 0) return std::nullopt;
    return LogicalBlockSize{bytes, path + ": " + attribute};
  }
  return std::nullopt;
}

}  // namespace drivewatch::config::detail
