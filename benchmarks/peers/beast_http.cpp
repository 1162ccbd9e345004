// Boost.Beast async HTTP/1.1 hello server: the Beast peer of benchmarks/run_http_bench.sh.
// One io_context run on the main thread. Per connection: http::async_read into a
// request<string_body>, http::async_write of a response<string_body> 200 "Hello, World!"
// text/plain, and again while the request is keep-alive. Any method and target get the hello
// (a request body is read into the request and dropped). Plain tcp::socket, no timeouts.
//   g++ -O2 -std=c++20 beast_http.cpp -o beast_http -pthread
//   beast_http [PORT=18182]
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/version.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : socket_(std::move(socket)) {}
  void start() { read(); }

 private:
  void read() {
    request_ = {};
    http::async_read(socket_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->close();
                       self->respond();
                     });
  }

  void respond() {
    response_ = {};
    response_.result(http::status::ok);
    response_.version(request_.version());
    response_.set(http::field::content_type, "text/plain");
    response_.body() = "Hello, World!";
    response_.keep_alive(request_.keep_alive());
    response_.prepare_payload();
    http::async_write(socket_, response_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec || !self->response_.keep_alive()) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
  }

  tcp::socket socket_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

static void accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](beast::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<Session>(std::move(socket))->start();
    }
    accept(acceptor);
  });
}

int main(int argc, char** argv) {
  const auto port = static_cast<unsigned short>(argc > 1 ? std::atoi(argv[1]) : 18182);
  asio::io_context io{1};
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  tcp::acceptor acceptor(io);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(1024);
  accept(acceptor);
  std::printf("beast_http (Boost %d.%d) listening on 127.0.0.1:%u\n", BOOST_VERSION / 100000,
              BOOST_VERSION / 100 % 1000, port);
  std::fflush(stdout);
  io.run();
}
