// Raw standalone Asio TCP echo server: the no-framework baseline of run_echo_bench.sh.
// One io_context on one thread; per connection: async_read_some, async_write, repeat. The
// 64 KiB buffer matches the largest read of trellis and Netty (their adaptive read sizes top
// out at 64 KiB), so the streaming case compares like with like.
//   g++ -O2 -std=c++20 -DASIO_STANDALONE asio_echo.cpp -o asio_echo -pthread
//   asio_echo [PORT=18092]
#include <asio.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

using asio::ip::tcp;

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : socket_(std::move(socket)) {}
  void read() {
    socket_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](std::error_code ec, std::size_t n) {
                              if (!ec) self->write(n);
                            });
  }

 private:
  void write(std::size_t n) {
    asio::async_write(socket_, asio::buffer(buffer_, n),
                      [self = shared_from_this()](std::error_code ec, std::size_t) {
                        if (!ec) self->read();
                      });
  }
  tcp::socket socket_;
  std::array<char, 65536> buffer_;
};

void accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](std::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<Session>(std::move(socket))->read();
    }
    accept(acceptor);
  });
}

int main(int argc, char** argv) {
  const auto port = static_cast<unsigned short>(argc > 1 ? std::atoi(argv[1]) : 18092);
  // One thread uses every I/O object: no reactor I/O locking (as trellis's event loops).
  asio::io_context io{ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  tcp::acceptor acceptor(io);
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(1024);
  accept(acceptor);
  std::printf("asio_echo listening on 127.0.0.1:%u\n", port);
  std::fflush(stdout);
  io.run();
}
