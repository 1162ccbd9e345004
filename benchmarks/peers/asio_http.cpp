// Raw standalone Asio HTTP server: the "physical floor" peer of benchmarks/run_http_bench.sh,
// i.e. what one loopback HTTP exchange costs on this stack with no framework at all.
// Per connection: async_read_some; every complete request head (found by scanning for
// "\r\n\r\n") gets one canned 200 "Hello, World!" response, and all responses produced by one
// read leave in one async_write (so pipelined heads are answered in one write). If a head
// carries a Content-Length (case-insensitive search of the head), that many body bytes are
// consumed after it and echoed back with the request's Content-Type, as trellis's example
// server does. Nothing else is parsed: no chunked bodies, no "Connection: close" (the client
// closes), any method and target. One io_context, one thread.
//   g++ -O2 -std=c++20 -DASIO_STANDALONE asio_http.cpp -o asio_http -pthread
//   asio_http [PORT=18183]
#include <asio.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

using asio::ip::tcp;

namespace {

constexpr std::string_view kHello =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 13\r\n"
    "\r\n"
    "Hello, World!";

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The trimmed value of header `name` (lower case, with the colon) in `head`, or "" if absent.
std::string_view header(std::string_view head, std::string_view name) {
  std::size_t line = head.find("\r\n");  // skip the request line
  while (line != std::string_view::npos) {
    line += 2;
    const std::size_t end = head.find("\r\n", line);
    if (end == std::string_view::npos || end == line) break;
    std::string_view field = head.substr(line, end - line);
    if (field.size() >= name.size() && iequals(field.substr(0, name.size()), name)) {
      field.remove_prefix(name.size());
      while (!field.empty() && (field.front() == ' ' || field.front() == '\t'))
        field.remove_prefix(1);
      while (!field.empty() && (field.back() == ' ' || field.back() == '\t'))
        field.remove_suffix(1);
      return field;
    }
    line = end;
  }
  return {};
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : socket_(std::move(socket)) {}
  void start() { read(); }

 private:
  void read() {
    if (len_ == sizeof(in_)) return;  // a request head larger than the buffer: drop the connection
    socket_.async_read_some(asio::buffer(in_ + len_, sizeof(in_) - len_),
                            [self = shared_from_this()](std::error_code ec, std::size_t n) {
                              if (!ec) self->on_read(n);
                            });
  }

  void on_read(std::size_t n) {
    len_ += n;
    const std::string_view data(in_, len_);
    std::size_t pos = 0;  // bytes of in_ consumed
    while (pos < len_) {
      if (body_left_ > 0) {  // echo the body bytes of the current request
        const std::size_t take = std::min(body_left_, len_ - pos);
        out_.append(in_ + pos, take);
        pos += take;
        body_left_ -= take;
        continue;
      }
      const std::size_t end = data.find("\r\n\r\n", std::max(scan_, pos));
      if (end == std::string_view::npos) {
        scan_ = std::max(pos, len_ >= 3 ? len_ - 3 : 0);  // resume here after the next read
        break;
      }
      const std::string_view head = data.substr(pos, end + 4 - pos);
      pos = scan_ = end + 4;
      const std::string_view length = header(head, "content-length:");
      std::size_t body = 0;
      std::from_chars(length.data(), length.data() + length.size(), body);
      if (body == 0) {
        out_.append(kHello);
        continue;
      }
      std::string_view type = header(head, "content-type:");
      if (type.empty()) type = "application/octet-stream";
      char digits[24];
      const auto [digits_end, ec] = std::to_chars(digits, digits + sizeof(digits), body);
      out_.append("HTTP/1.1 200 OK\r\nContent-Type: ").append(type);
      out_.append("\r\nContent-Length: ").append(digits, digits_end).append("\r\n\r\n");
      body_left_ = body;
    }
    std::memmove(in_, in_ + pos, len_ - pos);
    len_ -= pos;
    scan_ = scan_ > pos ? scan_ - pos : 0;
    if (out_.empty()) return read();
    sending_.swap(out_);
    out_.clear();
    asio::async_write(socket_, asio::buffer(sending_),
                      [self = shared_from_this()](std::error_code ec, std::size_t) {
                        if (!ec) self->read();
                      });
  }

  tcp::socket socket_;
  char in_[16384];
  std::size_t len_ = 0;        // unconsumed bytes at the front of in_ (a partial head)
  std::size_t scan_ = 0;       // where the search for "\r\n\r\n" resumes
  std::size_t body_left_ = 0;  // body bytes of the current request not yet received
  std::string out_;            // responses produced by this read
  std::string sending_;        // responses being written
};

void accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](std::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<Session>(std::move(socket))->start();
    }
    accept(acceptor);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const auto port = static_cast<unsigned short>(argc > 1 ? std::atoi(argv[1]) : 18183);
  // One thread uses every I/O object: no reactor I/O locking (as trellis's event loops).
  asio::io_context io{ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  tcp::acceptor acceptor(io);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(1024);
  accept(acceptor);
  std::printf("asio_http (asio %d.%d.%d) listening on 127.0.0.1:%u\n", ASIO_VERSION / 100000,
              ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100, port);
  std::fflush(stdout);
  io.run();
}
