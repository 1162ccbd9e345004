// The HTTP encoder passing a FileRegion body through, and the file server example's handler
// (examples/file_server_handler.hpp) on an EmbeddedChannel: whole files, HEAD, 304, ranges,
// 416, and the paths it must refuse (traversal, symlinks out of the root, FIFOs and other
// files that are not regular).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <utility>

#include <trellis/codec/http/http_date.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

#include "file_server_handler.hpp"

using namespace trellis;
using namespace trellis::http;
namespace fs = std::filesystem;

namespace {

// A temp directory tree, removed with the object: ROOT/{hello.txt, sub/data.bin, link-in,
// link-out, dir/} and a secret file next to ROOT.
struct Tree {
  Tree() {
    std::string tmpl = (fs::temp_directory_path() / "trellis-files-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    base = tmpl;
    root = base / "root";
    fs::create_directories(root / "sub");
    fs::create_directories(root / "dir");
    std::ofstream(root / "hello.txt", std::ios::binary) << "hello, file\n";
    data.resize(10'000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('A' + i % 23);
    std::ofstream(root / "sub" / "data.bin", std::ios::binary) << data;
    std::ofstream(base / "secret.txt", std::ios::binary) << "secret";
    fs::create_symlink("sub/data.bin", root / "link-in");
    fs::create_symlink(base / "secret.txt", root / "link-out");
    fs::create_symlink("../secret.txt", root / "link-up");
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  fs::path base;
  fs::path root;
  std::string data;
};

struct Response {
  int status = 0;
  std::string head;
  std::string body;
  int regions = 0;
  bool has(std::string_view line) const { return head.find(line) != std::string::npos; }
};

// Everything the channel wrote, FileRegions read back from their files, split at the head.
Response read_response(EmbeddedChannel& ch) {
  std::string bytes;
  Response r;
  while (auto m = ch.read_outbound<Message>()) {
    if (auto* buf = m->try_get<ByteBuf>()) {
      auto span = buf->readable_span();
      bytes.append(reinterpret_cast<const char*>(span.data()), span.size());
    } else if (auto* composite = m->try_get<CompositeByteBuf>()) {
      while (composite->is_readable()) bytes.push_back(static_cast<char>(composite->read_u8()));
    } else if (auto* region = m->try_get<FileRegion>()) {
      ++r.regions;
      std::string part(region->remaining(), '\0');
      REQUIRE(::pread(region->fd(), part.data(), part.size(),
                      static_cast<off_t>(region->transfer_position())) ==
              static_cast<ssize_t>(part.size()));
      bytes += part;
    } else {
      FAIL("unexpected outbound message " << m->type_name());
    }
  }
  const auto end = bytes.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  r.head = bytes.substr(0, end + 2);
  r.body = bytes.substr(end + 4);
  r.status = std::atoi(r.head.c_str() + 9);
  return r;
}

struct Server {
  explicit Server(const fs::path& root)
      : handler(std::make_shared<examples::FileServerHandler>(root)) {
    examples::init_file_server_pipeline(ch, handler);
  }
  Response get(const std::string& target, const std::string& extra = "",
               const std::string& method = "GET") {
    ch.write_inbound(
        ByteBuf::from(method + " " + target + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n"));
    return read_response(ch);
  }
  std::shared_ptr<examples::FileServerHandler> handler;
  EmbeddedChannel ch;
};

}  // namespace

TEST_CASE("the response encoder passes a FileRegion body through, drops it for HEAD, frames it") {
  Tree tree;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>()};
  HttpResponse head;
  head.headers.add(HeaderId::kContentLength, "12");
  ch.write_outbound(std::move(head), FileRegion::open(tree.root / "hello.txt"), LastHttpContent{});
  auto r = read_response(ch);
  CHECK(r.status == 200);
  CHECK(r.regions == 1);
  CHECK(r.body == "hello, file\n");

  // Chunked: the region goes between its chunk header and the chunk's CRLF.
  HttpResponse chunked;
  chunked.headers.add(HeaderId::kTransferEncoding, "chunked");
  ch.write_outbound(std::move(chunked), FileRegion::open(tree.root / "hello.txt", 0, 5),
                    LastHttpContent{});
  r = read_response(ch);
  CHECK(r.regions == 1);
  CHECK(r.body == "5\r\nhello\r\n0\r\n\r\n");

  // A 304 has no body: the region is dropped and its write succeeds.
  HttpResponse not_modified;
  not_modified.status.code = 304;
  auto dropped = ch.new_promise();
  ch.write(std::move(not_modified));
  ch.write(FileRegion::open(tree.root / "hello.txt"), dropped);
  ch.write_and_flush(LastHttpContent{});
  CHECK(dropped.is_success());
  r = read_response(ch);
  CHECK(r.status == 304);
  CHECK(r.regions == 0);
  CHECK(r.body.empty());
}

TEST_CASE("request targets map to paths under the root; '..' and bad escapes map to none") {
  using examples::relative_request_path;
  CHECK(relative_request_path("/") == "");
  CHECK(relative_request_path("/a/b.txt") == "a/b.txt");
  CHECK(relative_request_path("//a/./b.txt?x=1#f") == "a/b.txt");
  CHECK(relative_request_path("/a%20b") == "a b");
  CHECK(relative_request_path("/../etc/passwd") == std::nullopt);
  CHECK(relative_request_path("/a/../../b") == std::nullopt);
  CHECK(relative_request_path("/%2e%2e/secret.txt") == std::nullopt);
  CHECK(relative_request_path("/a%2F..%2F..%2Fb") == std::nullopt);
  CHECK(relative_request_path("/a%00b") == std::nullopt);
  CHECK(relative_request_path("/a%2") == std::nullopt);
  CHECK(relative_request_path("/a%zz") == std::nullopt);
  CHECK(relative_request_path("a/b") == std::nullopt);
  CHECK(relative_request_path("http://host/a") == std::nullopt);
}

TEST_CASE("the file server answers a GET with the file as a FileRegion after its head") {
  Tree tree;
  Server s(tree.root);
  auto r = s.get("/sub/data.bin");
  CHECK(r.status == 200);
  CHECK(r.regions == 1);
  CHECK(r.body == tree.data);
  CHECK(r.has("Content-Length: 10000\r\n"));
  CHECK(r.has("Accept-Ranges: bytes\r\n"));
  struct stat st {};
  REQUIRE(::stat((tree.root / "sub" / "data.bin").c_str(), &st) == 0);
  CHECK(r.has("Last-Modified: " + format_http_date(st.st_mtime) + "\r\n"));
  CHECK(s.ch.is_active());  // keep-alive: the next request on the same connection

  r = s.get("/hello.txt");
  CHECK(r.status == 200);
  CHECK(r.body == "hello, file\n");
  CHECK(r.has("Content-Type: text/plain\r\n"));
  // A symlink inside the root to a file inside the root is served.
  CHECK(s.get("/link-in").body == tree.data);
}

TEST_CASE("the file server: HEAD has no body, If-Modified-Since gives 304, a newer file 200") {
  Tree tree;
  Server s(tree.root);
  auto r = s.get("/sub/data.bin", "", "HEAD");
  CHECK(r.status == 200);
  CHECK(r.has("Content-Length: 10000\r\n"));
  CHECK(r.regions == 0);
  CHECK(r.body.empty());

  struct stat st {};
  REQUIRE(::stat((tree.root / "sub" / "data.bin").c_str(), &st) == 0);
  r = s.get("/sub/data.bin", "If-Modified-Since: " + format_http_date(st.st_mtime) + "\r\n");
  CHECK(r.status == 304);
  CHECK(r.body.empty());
  r = s.get("/sub/data.bin", "If-Modified-Since: " + format_http_date(st.st_mtime - 10) + "\r\n");
  CHECK(r.status == 200);
  CHECK(r.body == tree.data);
  r = s.get("/sub/data.bin", "If-Modified-Since: yesterday\r\n");  // invalid: ignored
  CHECK(r.status == 200);
  CHECK(s.ch.is_active());
}

TEST_CASE("the file server answers one range with 206 and an unsatisfiable one with 416") {
  Tree tree;
  Server s(tree.root);
  auto r = s.get("/sub/data.bin", "Range: bytes=100-199\r\n");
  CHECK(r.status == 206);
  CHECK(r.has("Content-Range: bytes 100-199/10000\r\n"));
  CHECK(r.has("Content-Length: 100\r\n"));
  CHECK(r.body == tree.data.substr(100, 100));

  r = s.get("/sub/data.bin", "Range: bytes=9990-\r\n");
  CHECK(r.status == 206);
  CHECK(r.body == tree.data.substr(9990));
  r = s.get("/sub/data.bin", "Range: bytes=-5\r\n");
  CHECK(r.body == tree.data.substr(9995));
  r = s.get("/sub/data.bin", "Range: bytes=9000-20000\r\n");  // clipped to the end
  CHECK(r.has("Content-Range: bytes 9000-9999/10000\r\n"));
  CHECK(r.body == tree.data.substr(9000));

  r = s.get("/sub/data.bin", "Range: bytes=10000-10010\r\n");
  CHECK(r.status == 416);
  CHECK(r.has("Content-Range: bytes */10000\r\n"));
  CHECK(r.body.empty());
  CHECK(s.get("/sub/data.bin", "Range: bytes=-0\r\n").status == 416);

  // Several ranges and bad syntax are ignored: the whole file.
  CHECK(s.get("/sub/data.bin", "Range: bytes=0-1,5-6\r\n").body == tree.data);
  CHECK(s.get("/sub/data.bin", "Range: bytes=5-1\r\n").status == 200);
  CHECK(s.get("/sub/data.bin", "Range: lines=1-2\r\n").status == 200);
  // If-Range with a date other than Last-Modified: the whole file.
  r = s.get("/sub/data.bin", "Range: bytes=0-9\r\nIf-Range: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
  CHECK(r.status == 200);
  CHECK(s.ch.is_active());
}

TEST_CASE("the file server refuses traversal, symlinks out of the root, directories: 404") {
  Tree tree;
  Server s(tree.root);
  CHECK(s.get("/../secret.txt").status == 404);
  CHECK(s.get("/sub/../../secret.txt").status == 404);
  CHECK(s.get("/%2e%2e/secret.txt").status == 404);
  CHECK(s.get("/link-out").status == 404);  // absolute symlink to a file outside
  CHECK(s.get("/link-up").status == 404);   // relative symlink climbing out
  CHECK(s.get("/missing").status == 404);
  CHECK(s.get("/dir").status == 404);
  CHECK(s.get("/").status == 404);
  auto r = s.get("/hello.txt", "", "DELETE");
  CHECK(r.status == 405);
  CHECK(r.has("Allow: GET, HEAD\r\n"));
  CHECK(s.ch.is_active());
}

TEST_CASE("the file server refuses a FIFO under the root at once instead of blocking on it") {
  Tree tree;
  REQUIRE(::mkfifo((tree.root / "pipe").c_str(), 0600) == 0);
  // On its own thread with a time limit: a server that blocks in open() waits for a writer
  // forever, so the test plays that writer once the limit has passed, and fails.
  auto answered = std::async(std::launch::async, [&] {
    Server s(tree.root);
    const int status = s.get("/pipe").status;
    const int next = s.get("/hello.txt").status;  // the connection goes on
    return std::pair(status, next);
  });
  const bool prompt = answered.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  while (answered.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    const int writer = ::open((tree.root / "pipe").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (writer >= 0) ::close(writer);  // the blocked open() returns
  }
  CHECK(prompt);
  const auto [status, next] = answered.get();
  CHECK(status == 404);
  CHECK(next == 200);
}

TEST_CASE("parse_http_date reads IMF-fixdate and refuses anything else") {
  CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == std::time_t{784111777});
  CHECK(parse_http_date(format_http_date(1'700'000'000)) == std::time_t{1'700'000'000});
  CHECK(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == std::nullopt);
  CHECK(parse_http_date("Sun Nov  6 08:49:37 1994") == std::nullopt);
  CHECK(parse_http_date("Sun, 31 Feb 1994 08:49:37 GMT") == std::nullopt);
  CHECK(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT") == std::nullopt);
  CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC") == std::nullopt);
  CHECK(parse_http_date("") == std::nullopt);
}
