// The application handler of the static file server example: maps a request target to a file
// under a root directory and answers with its bytes (whole, or one range), or 304/404/416.
// Kept apart from main() so tests can drive it on an EmbeddedChannel.
#pragma once

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>

namespace examples {

using namespace trellis;
using namespace trellis::http;

// The decoded path of a request target ("/a%20b/c?x" -> "a b/c"), relative to the root, or
// nullopt when it must not be served: not absolute, a bad escape, a NUL, or a ".." segment.
// "." and empty segments are dropped.
inline std::optional<std::string> relative_request_path(std::string_view target) {
  target = target.substr(0, target.find_first_of("?#"));
  if (target.empty() || target.front() != '/') return std::nullopt;
  std::string decoded;
  for (std::size_t i = 0; i < target.size(); ++i) {
    char c = target[i];
    if (c == '%') {
      unsigned value = 0;
      if (i + 2 >= target.size()) return std::nullopt;
      const auto r = std::from_chars(target.data() + i + 1, target.data() + i + 3, value, 16);
      if (r.ec != std::errc() || r.ptr != target.data() + i + 3) return std::nullopt;
      c = static_cast<char>(value);
      i += 2;
    }
    if (c == '\0') return std::nullopt;
    decoded.push_back(c);
  }
  std::string relative;
  std::size_t start = 0;
  while (start <= decoded.size()) {
    std::size_t end = decoded.find('/', start);
    if (end == std::string::npos) end = decoded.size();
    const std::string_view segment(decoded.data() + start, end - start);
    if (segment == "..") return std::nullopt;
    if (!segment.empty() && segment != ".") {
      if (!relative.empty()) relative.push_back('/');
      relative.append(segment);
    }
    start = end + 1;
  }
  return relative;
}

// Opens root/relative read-only without leaving root: no "..", no absolute or escaping symlink
// (openat2 with RESOLVE_BENEATH resolves every component under the root's descriptor, so a
// symlink swapped in meanwhile cannot lead out either). Returns -1 with errno set otherwise.
// On kernels without openat2 (before 5.6) the canonical path is checked instead.
// Non-blocking: opening a FIFO read-only would otherwise wait for a writer, stalling the event
// loop; the caller fstats the descriptor and refuses anything but a regular file (for which
// O_NONBLOCK changes nothing).
inline int open_beneath(int root_fd, const std::filesystem::path& root,
                        const std::string& relative) {
  if (relative.empty()) {
    errno = EISDIR;
    return -1;
  }
  open_how how{};
  how.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how);
  if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
  std::error_code ec;
  const auto real = std::filesystem::canonical(root / relative, ec);
  if (ec) {
    errno = ENOENT;
    return -1;
  }
  const auto [end, _] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  if (end != root.end()) {
    errno = EXDEV;
    return -1;
  }
  return ::open(real.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
}

// A single byte range of a representation of `size` bytes.
struct ByteRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;  // inclusive
};
enum class RangeResult { kNone, kSatisfiable, kUnsatisfiable };

// Range: bytes=a-b | bytes=a- | bytes=-n (RFC 9110 §14.1.2). Several ranges, other units and
// bad syntax are ignored (the whole representation is sent), which the RFC allows.
inline RangeResult parse_range(std::string_view value, std::uint64_t size, ByteRange& out) {
  constexpr std::string_view kUnit = "bytes=";
  if (value.substr(0, kUnit.size()) != kUnit) return RangeResult::kNone;
  value.remove_prefix(kUnit.size());
  if (value.find(',') != std::string_view::npos) return RangeResult::kNone;
  const auto dash = value.find('-');
  if (dash == std::string_view::npos) return RangeResult::kNone;
  auto number = [](std::string_view text, std::uint64_t& n) {
    const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
    return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
  };
  const std::string_view first_text = value.substr(0, dash);
  const std::string_view last_text = value.substr(dash + 1);
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  if (first_text.empty()) {  // the last n bytes
    if (!number(last_text, last)) return RangeResult::kNone;
    if (last == 0 || size == 0) return RangeResult::kUnsatisfiable;
    out.first = last >= size ? 0 : size - last;
    out.last = size - 1;
    return RangeResult::kSatisfiable;
  }
  if (!number(first_text, first)) return RangeResult::kNone;
  if (last_text.empty()) {
    last = size == 0 ? 0 : size - 1;
  } else if (!number(last_text, last) || last < first) {
    return RangeResult::kNone;
  }
  if (first >= size) return RangeResult::kUnsatisfiable;
  out.first = first;
  out.last = std::min(last, size - 1);
  return RangeResult::kSatisfiable;
}

inline std::string_view content_type_of(std::string_view name) {
  const auto dot = name.rfind('.');
  const std::string_view ext = dot == std::string_view::npos ? "" : name.substr(dot + 1);
  if (ext == "html" || ext == "htm") return "text/html";
  if (ext == "txt") return "text/plain";
  if (ext == "css") return "text/css";
  if (ext == "js") return "text/javascript";
  if (ext == "json") return "application/json";
  if (ext == "png") return "image/png";
  if (ext == "jpg" || ext == "jpeg") return "image/jpeg";
  if (ext == "svg") return "image/svg+xml";
  return "application/octet-stream";
}

// GET and HEAD of regular files under the root. Answers 200 with Content-Length,
// Last-Modified and Accept-Ranges; 304 when If-Modified-Since is not older than the file;
// 206 with Content-Range for one satisfiable Range (honouring If-Range by date); 416 for an
// unsatisfiable one; 404 for anything that is not a regular file under the root (missing,
// a directory, a FIFO, a device or socket, "..", a symlink leading out); 405 for other methods. The
// body is a FileRegion written after the head, so the transport sends it with sendfile(2).
// Sharable.
class FileServerHandler : public SimpleChannelInboundHandler<FullHttpRequest> {
 public:
  // Throws std::filesystem::filesystem_error when root is not a directory that can be opened.
  explicit FileServerHandler(const std::filesystem::path& root)
      : root_(std::filesystem::canonical(root)) {
    root_fd_ = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd_ < 0) {
      throw std::filesystem::filesystem_error("open root", root_,
                                              std::error_code(errno, std::system_category()));
    }
  }
  ~FileServerHandler() override { ::close(root_fd_); }
  FileServerHandler(const FileServerHandler&) = delete;
  FileServerHandler& operator=(const FileServerHandler&) = delete;

  bool is_sharable() const noexcept override { return true; }

 protected:
  void channel_read0(ChannelHandlerContext& ctx, FullHttpRequest& request) override {
    const bool head = request.method == HttpMethod::kHead;
    if (!head && request.method != HttpMethod::kGet) {
      respond_empty(ctx, request, 405, "Allow", "GET, HEAD");
      return;
    }
    const auto relative = relative_request_path(request.target);
    const int fd = relative ? open_beneath(root_fd_, root_, *relative) : -1;
    if (fd < 0) {
      respond_empty(ctx, request, 404);
      return;
    }
    // The type of what was opened, not of the path (which may have changed since): nothing but a
    // regular file is read.
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      respond_empty(ctx, request, 404);
      return;
    }
    FileRegion file(fd, 0, static_cast<std::uint64_t>(st.st_size));  // owns fd from here
    const auto size = static_cast<std::uint64_t>(st.st_size);
    const std::string last_modified = format_http_date(st.st_mtime);

    if (auto since = request.headers.get("If-Modified-Since")) {
      if (auto t = parse_http_date(*since); t && st.st_mtime <= *t) {
        respond_empty(ctx, request, 304, "Last-Modified", last_modified);
        return;
      }
    }
    ByteRange range;
    RangeResult ranged = RangeResult::kNone;
    if (auto value = request.headers.get("Range")) {
      ranged = parse_range(*value, size, range);
      if (auto if_range = request.headers.get("If-Range")) {
        const auto t = parse_http_date(*if_range);
        if (!t || *t != st.st_mtime) ranged = RangeResult::kNone;  // changed: send it whole
      }
    }
    if (ranged == RangeResult::kUnsatisfiable) {
      respond_empty(ctx, request, 416, "Content-Range", "bytes */" + std::to_string(size));
      return;
    }

    Message out;
    auto& response = out.emplace<HttpResponse>();
    response.version = request.version;
    std::uint64_t position = 0;
    std::uint64_t count = size;
    if (ranged == RangeResult::kSatisfiable) {
      response.status.code = 206;
      position = range.first;
      count = range.last - range.first + 1;
      response.headers.add("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                                std::to_string(range.last) + "/" +
                                                std::to_string(size));
    }
    response.headers.add(HeaderId::kContentType, content_type_of(*relative));
    response.headers.add(HeaderId::kContentLength, std::to_string(count));
    response.headers.add("Last-Modified", last_modified);
    response.headers.add("Accept-Ranges", "bytes");
    ctx.write(std::move(out));
    if (!head && count > 0) {
      // The encoder passes the region on as it is; the socket channel sends it with sendfile.
      ctx.write(Message(file.share(position, count)));
    }
    ctx.write_and_flush(Message(LastHttpContent{}));
  }

  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }

 private:
  static void respond_empty(ChannelHandlerContext& ctx, const FullHttpRequest& request,
                            std::uint16_t code, std::string_view name = {},
                            std::string_view value = {}) {
    Message out;
    auto& response = out.emplace<FullHttpResponse>();
    response.version = request.version;
    response.status.code = code;
    if (!name.empty()) response.headers.add(name, value);
    ctx.write_and_flush(std::move(out));
  }

  std::filesystem::path root_;
  int root_fd_ = -1;
};

// The whole server pipeline of one connection.
inline void init_file_server_pipeline(Channel& ch, std::shared_ptr<FileServerHandler> handler,
                                      const HttpServerTimeouts& timeouts = {}) {
  HttpRequestDecoderOptions decoder_options;
  decoder_options.full_bodiless_requests = true;
  ch.pipeline().add_last(
      "codec", std::make_shared<HttpServerCodec>(HttpParserLimits{}, HttpResponseEncoder::Options{},
                                                 decoder_options, timeouts));
  ch.pipeline().add_last("keep-alive", std::make_shared<HttpServerKeepAliveHandler>());
  // Request bodies are not wanted: a small limit refuses them early (413).
  ch.pipeline().add_last("aggregator", std::make_shared<HttpObjectAggregator>(8 * 1024));
  ch.pipeline().add_last("files", std::move(handler));
}

}  // namespace examples
