// FileRegion over a real loopback socket: sendfile(2) with partial writes resuming at the right
// offset, the outbound buffer's accounting while a region is half sent, and a file truncated
// under a region failing its write instead of spinning.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

struct TempFile {
  explicit TempFile(const std::string& content) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "trellis-sendfile-XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    REQUIRE(fd >= 0);
    ::close(fd);
    path = tmpl;
    std::ofstream(path, std::ios::binary) << content;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  std::filesystem::path path;
};

// A listening raw socket on 127.0.0.1 whose accepted sockets have a small receive buffer.
struct Listener {
  explicit Listener(int rcvbuf) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
  }
  ~Listener() { ::close(fd); }
  int accept_one() {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) return -1;
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) {
      timeval tv{10, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    return c;
  }
  int fd;
  std::uint16_t port;
};

// Reads until end of stream (or the 10 s receive timeout, a failure guard).
std::string read_to_end(int fd) {
  std::string all;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    all.append(buf.data(), static_cast<std::size_t>(n));
  }
  return all;
}

// The channel's pending outbound bytes, read on its loop.
std::size_t pending_bytes(Channel& ch) {
  auto f = ch.event_loop().submit([&ch] {
    auto* out = ch.unsafe().outbound_buffer();
    return out != nullptr ? out->total_pending_write_bytes() : std::size_t{0};
  });
  REQUIRE(f.wait_for(kWait));
  return f.get();
}

// Waits (bounded) until pred() holds; returns whether it did.
template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

class ErrorLog final : public ChannelInboundHandler {
 public:
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override { ++errors; }
  std::atomic<int> errors{0};
};

std::shared_ptr<Channel> connect_small_buffers(EventLoopGroup& group, std::uint16_t port,
                                               std::shared_ptr<ChannelHandler> handler) {
  auto f = Bootstrap()
               .group(group)
               .option(channel_option::so_sndbuf, 16 * 1024)
               .option(channel_option::write_buffer_water_mark,
                       WriteBufferWaterMark{32 * 1024, 64 * 1024})
               .handler(std::move(handler))
               .connect("127.0.0.1", port);
  REQUIRE(f.wait_for(kWait));
  REQUIRE(f.is_success());
  return f.get();
}

}  // namespace

TEST_CASE("a FileRegion larger than the socket buffers arrives intact, between buffers, in order") {
  const std::string content = random_bytes(6 << 20, 11);
  TempFile file(content);
  Listener listener(16 * 1024);
  EventLoopGroup group(1);
  auto ch = connect_small_buffers(group, listener.port, std::make_shared<ErrorLog>());
  const int peer = listener.accept_one();
  REQUIRE(peer >= 0);

  // A region in the middle of the file, with a head and a tail in buffers around it.
  constexpr std::uint64_t kPosition = 12'345;
  constexpr std::uint64_t kCount = (5 << 20) + 17;
  auto region_done = ch->new_promise();
  auto tail_done = ch->new_promise();
  ch->write(to_buf("HEAD"));
  ch->write(FileRegion::open(file.path, kPosition, kCount), region_done);
  ch->write_and_flush(to_buf("TAIL"), tail_done);

  // The peer reads nothing yet: sendfile fills the socket buffers and stops part-way, the
  // region stays queued, and only what is left of it still counts as pending.
  REQUIRE(eventually([&] { return pending_bytes(*ch) < kCount + 4; }));
  const std::size_t pending = pending_bytes(*ch);
  CHECK(pending > 4);
  CHECK_FALSE(region_done.is_done());

  std::string received;
  std::vector<char> buf(64 * 1024);
  const std::size_t expected = 4 + kCount + 4;
  while (received.size() < expected) {
    const ssize_t n = ::recv(peer, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    received.append(buf.data(), static_cast<std::size_t>(n));
  }
  REQUIRE(received.size() == expected);
  CHECK(received.substr(0, 4) == "HEAD");
  CHECK(received.compare(4, kCount, content, kPosition, kCount) == 0);
  CHECK(received.substr(4 + kCount) == "TAIL");
  REQUIRE(region_done.future().wait_for(kWait));
  CHECK(region_done.is_success());
  REQUIRE(tail_done.future().wait_for(kWait));
  CHECK(tail_done.is_success());
  CHECK(pending_bytes(*ch) == 0);

  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
  ::close(peer);
}

TEST_CASE("regions sharing one descriptor are sent one after the other, each from its offset") {
  const std::string content = random_bytes(1 << 20, 5);
  TempFile file(content);
  Listener listener(16 * 1024);
  EventLoopGroup group(1);
  auto ch = connect_small_buffers(group, listener.port, std::make_shared<ErrorLog>());
  const int peer = listener.accept_one();
  REQUIRE(peer >= 0);

  FileRegion whole = FileRegion::open(file.path);
  const int fd = whole.fd();
  auto first = ch->new_promise();
  auto empty = ch->new_promise();
  auto second = ch->new_promise();
  ch->write(whole.share(500'000, 300'000), first);
  ch->write(whole.share(0, 0), empty);  // nothing to send: completes in its turn
  ch->write_and_flush(whole.share(10, 200'000), second);
  whole = FileRegion();  // the queued regions keep the descriptor open
  CHECK(::fcntl(fd, F_GETFD) != -1);

  const std::string expected = content.substr(500'000, 300'000) + content.substr(10, 200'000);
  std::string received;
  std::vector<char> buf(64 * 1024);
  while (received.size() < expected.size()) {
    const ssize_t n = ::recv(peer, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    received.append(buf.data(), static_cast<std::size_t>(n));
  }
  CHECK(received == expected);
  REQUIRE(second.future().wait_for(kWait));
  CHECK(first.is_success());
  CHECK(empty.is_success());
  CHECK(second.is_success());

  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
  ::close(peer);
}

TEST_CASE("a file truncated under its FileRegion fails the write with an IoError, not a spin") {
  const std::string content = random_bytes(4 << 20, 7);
  TempFile file(content);
  Listener listener(16 * 1024);
  EventLoopGroup group(1);
  auto errors = std::make_shared<ErrorLog>();
  auto ch = connect_small_buffers(group, listener.port, errors);
  const int peer = listener.accept_one();
  REQUIRE(peer >= 0);

  auto done = ch->new_promise();
  ch->write_and_flush(FileRegion::open(file.path), done);
  // Part of the file is in the socket buffers; the rest disappears.
  REQUIRE(eventually([&] { return pending_bytes(*ch) < content.size(); }));
  const std::size_t sent_before = content.size() - pending_bytes(*ch);
  REQUIRE(::truncate(file.path.c_str(), 1024) == 0);

  const std::string received = read_to_end(peer);  // until the channel closes
  REQUIRE(done.future().wait_for(kWait));
  REQUIRE(done.cause() != nullptr);
  try {
    std::rethrow_exception(done.cause());
  } catch (const IoError& e) {
    CHECK(e.code() == std::errc::io_error);
    CHECK(std::string(e.what()).find("before the end of the region") != std::string::npos);
  } catch (...) {
    FAIL("not an IoError");
  }
  CHECK(errors->errors >= 1);
  CHECK(received.size() >= sent_before);
  CHECK(received.size() < content.size());
  // sendfile queues references to page-cache pages, not copies: truncation zeroes the tail of
  // the page it cuts, even where that page is already queued. The bytes before the cut are
  // the file's.
  REQUIRE(received.size() >= 1024);
  CHECK(content.compare(0, 1024, received, 0, 1024) == 0);
  REQUIRE(ch->close_future().wait_for(kWait));  // auto_close: the stream is broken
  ::close(peer);
}
