// ReactorDescriptor and ReadinessWait on a bare io_context: what a completed wait reports about
// the peer's end of stream, including for a descriptor registered after another one was closed
// (Asio reuses the per-descriptor state of closed descriptors), and what a pending wait keeps
// alive.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>

#include <trellis/transport/detail/reactor_descriptor.hpp>

using trellis::detail::ReactorDescriptor;
using trellis::detail::ReadinessWait;

namespace {

struct Pair {
  int local = -1;
  int peer = -1;
  Pair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    local = fds[0];
    peer = fds[1];
  }
  ~Pair() {
    if (peer >= 0) ::close(peer);
  }
  void close_peer() {
    ::close(peer);
    peer = -1;
  }
};

struct Waiter {
  ReadinessWait wait;
  int completions = 0;
  std::error_code ec;

  void start(ReactorDescriptor& descriptor) {
    wait.prepare([] { return std::make_shared<int>(0); }, this,
                 [](void* self, const std::error_code& e) {
                   auto* w = static_cast<Waiter*>(self);
                   ++w->completions;
                   w->ec = e;
                 });
    descriptor.start_read_wait(wait);
  }
};

// Starts a wait and runs handlers until it completed (bounded: a wait that never completes
// fails); returns whether it reported that the peer may have closed.
bool wait_once(asio::io_context& io, ReactorDescriptor& descriptor, Waiter& waiter) {
  const int completions = waiter.completions + 1;
  waiter.start(descriptor);
  for (int i = 0; i < 1000 && waiter.completions < completions; ++i) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(10));
  }
  REQUIRE(waiter.completions == completions);
  CHECK_FALSE(waiter.ec);
  return waiter.wait.peer_may_have_closed();
}

}  // namespace

TEST_CASE("a read wait reports the peer's close, and only then") {
  asio::io_context io;
  Pair pair;
  ReactorDescriptor descriptor(io);
  descriptor.assign(pair.local);
  REQUIRE(descriptor.reports_peer_close());
  Waiter waiter;
  // The first wait of a new descriptor completes at once (speculatively): nothing is known yet.
  CHECK_FALSE(wait_once(io, descriptor, waiter));
  // Data only: a readable edge without the end of stream.
  REQUIRE(::write(pair.peer, "x", 1) == 1);
  CHECK_FALSE(wait_once(io, descriptor, waiter));
  char byte;
  REQUIRE(::read(pair.local, &byte, 1) == 1);
  pair.close_peer();
  CHECK(wait_once(io, descriptor, waiter));
  descriptor.close();
}

TEST_CASE("a descriptor registered after a closed one does not inherit its peer-closed events") {
  asio::io_context io;
  {
    // A connection whose peer closed, seen by a wait, then closed (its reactor state is freed).
    Pair pair;
    ReactorDescriptor descriptor(io);
    descriptor.assign(pair.local);
    Waiter waiter;
    wait_once(io, descriptor, waiter);
    pair.close_peer();
    REQUIRE(wait_once(io, descriptor, waiter));
    descriptor.close();
  }
  // Several new descriptors, so that one of them gets the freed state whatever Asio's pooling.
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    Pair pair;
    ReactorDescriptor descriptor(io);
    descriptor.assign(pair.local);
    Waiter waiter;
    CHECK_FALSE(wait_once(io, descriptor, waiter));
    REQUIRE(::write(pair.peer, "x", 1) == 1);
    CHECK_FALSE(wait_once(io, descriptor, waiter));
    descriptor.close();
  }
}

namespace {

// A wait whose callback re-arms it a given number of times, counting how often prepare() asked
// for the owner to keep alive.
struct Rearming {
  ReactorDescriptor* descriptor = nullptr;
  ReadinessWait wait;
  std::shared_ptr<int> owner = std::make_shared<int>(0);
  int owner_requests = 0;
  int rearms_left = 0;
  bool close_on_rearm = false;
  int completions = 0;
  std::error_code ec;
  long owner_uses_in_callback = 0;

  void start() {
    wait.prepare(
        [this] {
          ++owner_requests;
          return std::shared_ptr<void>(owner);
        },
        this,
        [](void* self, const std::error_code& e) {
          auto* r = static_cast<Rearming*>(self);
          ++r->completions;
          r->ec = e;
          r->owner_uses_in_callback = r->owner.use_count();
          if (e || r->rearms_left == 0) return;
          --r->rearms_left;
          r->start();
          if (r->close_on_rearm) r->descriptor->close();
        });
    descriptor->start_read_wait(wait);
  }
};

// A registered socket pair and a Rearming wait on it that re-arms once.
struct RearmingFixture {
  asio::io_context io;
  Pair pair;
  ReactorDescriptor descriptor{io};
  Rearming r;
  RearmingFixture() {
    descriptor.assign(pair.local);
    r.descriptor = &descriptor;
    r.rearms_left = 1;
  }
};

void run_until(asio::io_context& io, const std::function<bool()>& done) {
  for (int i = 0; i < 1000 && !done(); ++i) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(10));
  }
  REQUIRE(done());
}

}  // namespace

TEST_CASE("a wait re-armed from its own callback keeps its reference instead of taking another") {
  RearmingFixture f;
  auto& io = f.io;
  auto& pair = f.pair;
  auto& descriptor = f.descriptor;
  auto& r = f.r;
  r.start();
  CHECK(r.owner_requests == 1);
  CHECK(r.owner.use_count() == 2);  // the pending wait holds the owner
  // The first wait completes at once; its callback waits again, with the same reference.
  run_until(io, [&] { return r.completions == 1; });
  CHECK_FALSE(r.ec);
  CHECK(r.owner_uses_in_callback == 2);  // held across the callback
  CHECK(r.owner_requests == 1);
  CHECK(r.owner.use_count() == 2);  // and by the new pending wait
  // The second wait completes on data; its callback does not wait again: the owner is let go.
  REQUIRE(::write(pair.peer, "x", 1) == 1);
  run_until(io, [&] { return r.completions == 2; });
  CHECK_FALSE(r.ec);
  CHECK(r.owner.use_count() == 1);
  // A wait started afresh (not from a callback) asks for the owner again.
  char byte;
  REQUIRE(::read(pair.local, &byte, 1) == 1);
  r.start();
  CHECK(r.owner_requests == 2);
  CHECK(r.owner.use_count() == 2);
  descriptor.close();  // aborts it
  run_until(io, [&] { return r.completions == 3; });
  CHECK(r.ec == asio::error::operation_aborted);
  CHECK(r.owner.use_count() == 1);
}

TEST_CASE("a wait re-armed from its callback and aborted by a close releases its reference") {
  RearmingFixture f;
  auto& io = f.io;
  auto& r = f.r;
  r.close_on_rearm = true;
  r.start();
  run_until(io, [&] { return r.completions == 2; });
  CHECK(r.ec == asio::error::operation_aborted);
  CHECK(r.owner_requests == 1);
  CHECK(r.owner.use_count() == 1);
}
