// Tests of ChunkedWriteHandler with ChunkedStream and ChunkedFile on an EmbeddedChannel whose
// "peer" reads slowly (an outbound byte budget), so the water marks work as on a socket.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>

#include <trellis/pipeline/chunked_file.hpp>
#include <trellis/pipeline/chunked_stream.hpp>
#include <trellis/pipeline/chunked_write_handler.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

// A reader over a string, handing out at most `step` bytes per call (a pipe-like source).
ChunkedStream::Reader string_reader(std::string text, std::size_t step = 1000) {
  auto pos = std::make_shared<std::size_t>(0);
  return [text = std::move(text), pos, step](std::span<std::byte> out) -> std::size_t {
    const std::size_t n = std::min({out.size(), text.size() - *pos, step});
    std::memcpy(out.data(), text.data() + *pos, n);
    *pos += n;
    return n;
  };
}

std::string make_text(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

std::size_t pending_bytes(EmbeddedChannel& ch) {
  return ch.unsafe().outbound_buffer()->total_pending_write_bytes();
}

// A file in the temp directory, deleted with the object.
struct TempFile {
  explicit TempFile(const std::string& content) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "trellis-chunked-XXXXXX").string();
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

// An input that has no data until told, then one chunk, then ends.
class LateInput : public ChunkedInput {
 public:
  bool is_end_of_input() override { return sent_ || closed; }
  ByteBuf read_chunk(ByteBufAllocator&) override {
    if (!ready) return ByteBuf();
    sent_ = true;
    return ByteBuf::from("late");
  }
  void close() override { closed = true; }
  std::int64_t length() override { return 4; }
  std::int64_t progress() override { return sent_ ? 4 : 0; }

  bool ready = false;
  bool closed = false;

 private:
  bool sent_ = false;
};

// The pattern of the large transfer: byte at position p. Rows of 256 bytes from a table make
// generating and checking run at memcpy speed; the row depends on p's higher bytes, so a chunk
// out of place is caught.
struct Pattern {
  Pattern() {
    for (std::size_t r = 0; r < 256; ++r) {
      for (std::size_t i = 0; i < 256; ++i) table[r][i] = static_cast<std::byte>(i ^ (r * 37));
    }
  }
  static std::size_t row(std::uint64_t p) noexcept {
    return static_cast<std::size_t>(((p >> 8) ^ (p >> 16) ^ (p >> 24) ^ (p >> 32)) & 0xff);
  }
  void fill(std::uint64_t pos, std::span<std::byte> out) const noexcept {
    std::size_t done = 0;
    while (done < out.size()) {
      const std::uint64_t p = pos + done;
      const std::size_t off = p & 0xff;
      const std::size_t n = std::min(out.size() - done, 256 - off);
      std::memcpy(out.data() + done, table[row(p)].data() + off, n);
      done += n;
    }
  }
  bool matches(std::uint64_t pos, std::span<const std::byte> in) const noexcept {
    std::size_t done = 0;
    while (done < in.size()) {
      const std::uint64_t p = pos + done;
      const std::size_t off = p & 0xff;
      const std::size_t n = std::min(in.size() - done, 256 - off);
      if (std::memcmp(in.data() + done, table[row(p)].data() + off, n) != 0) return false;
      done += n;
    }
    return true;
  }
  std::array<std::array<std::byte, 256>, 256> table{};
};

// Fails the promise of the n-th write that passes it, as a transport refusing it would.
class FailNthWrite : public ChannelOutboundHandler {
 public:
  explicit FailNthWrite(int n) : n_(n) {}
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    if (++writes_ == n_) {
      promise.try_set_exception(IoError(std::make_error_code(std::errc::broken_pipe), "refused"));
      return;
    }
    ctx.write(std::move(msg), std::move(promise));
  }

 private:
  int n_;
  int writes_ = 0;
};

}  // namespace

TEST_CASE("a ChunkedStream arrives complete and in order, in chunks of the chunk size") {
  const std::string text = make_text(100'000);
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  auto input = std::make_shared<ChunkedStream>(string_reader(text), 4096);
  auto done = ch.new_promise();
  ch.write_and_flush(ChunkedInputPtr(input), done);
  ch.run_pending_tasks();
  CHECK(done.is_success());
  CHECK(input->is_closed());
  CHECK(input->progress() == 100'000);
  CHECK(ch.outbound_messages().size() == (100'000 + 4095) / 4096);
  CHECK(ch.outbound_messages().front().get<ByteBuf>().readable_bytes() == 4096);
  CHECK(testing::drain_outbound_bytes(ch) == text);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a ChunkedFile sends its file, or a region of it, complete and in order") {
  const std::string text = make_text(50'000);
  TempFile file(text);
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};

  auto whole = std::make_shared<ChunkedFile>(file.path);
  CHECK(whole->length() == 50'000);
  auto done = ch.new_promise();
  ch.write_and_flush(ChunkedInputPtr(whole), done);
  ch.run_pending_tasks();
  CHECK(done.is_success());
  CHECK(whole->is_closed());
  CHECK(ch.outbound_messages().size() == 7);  // 6 chunks of 8 KiB and the rest
  CHECK(testing::drain_outbound_bytes(ch) == text);

  // A region, written as the concrete type (recognised too), with a small chunk size.
  auto region = std::make_shared<ChunkedFile>(file.path, 1000, 5000, 1024);
  ch.write_and_flush(region);
  CHECK(testing::drain_outbound_bytes(ch) == text.substr(1000, 5000));
  CHECK(region->is_closed());
  CHECK_FALSE(ch.finish());
}

TEST_CASE("ChunkedFile reports a missing file and a file shorter than its region as IoError") {
  CHECK_THROWS_AS(ChunkedFile("/nonexistent/trellis/chunked"), IoError);
  try {
    ChunkedFile f("/nonexistent/trellis/chunked");
  } catch (const IoError& e) {
    CHECK(e.code() == std::errc::no_such_file_or_directory);
  }

  TempFile file("0123456789");
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  auto input = std::make_shared<ChunkedFile>(file.path, 0, 20, 5);  // 10 bytes more than there are
  auto done = ch.new_promise();
  ch.write_and_flush(ChunkedInputPtr(input), done);
  ch.run_pending_tasks();
  REQUIRE(done.is_done());
  CHECK_THROWS_AS(std::rethrow_exception(done.cause()), IoError);
  CHECK(input->is_closed());
  CHECK(testing::drain_outbound_bytes(ch) == "0123456789");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("messages written after a chunked input come after all of its bytes") {
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  ch.set_outbound_byte_budget(0);  // a slow peer: the input cannot finish at once
  ch.config().set_write_buffer_water_mark(1024, 2048);
  ch.write(ByteBuf::from("head|"));
  ch.write(ChunkedInputPtr(std::make_shared<ChunkedStream>(string_reader(make_text(20'000)), 512)));
  auto tail_done = ch.new_promise();
  ch.write(ByteBuf::from("|tail"), tail_done);
  ch.flush();
  CHECK_FALSE(tail_done.is_done());
  ch.set_outbound_byte_budget(std::nullopt);
  ch.run_pending_tasks();
  CHECK(tail_done.is_success());
  CHECK(testing::drain_outbound_bytes(ch) == "head|" + make_text(20'000) + "|tail");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("writing stops at the high water mark and resumes when the peer reads") {
  constexpr std::size_t kChunk = 1024;
  constexpr std::size_t kHigh = 4096;
  const std::string text = make_text(64 * kChunk);
  auto handler = std::make_shared<ChunkedWriteHandler>();
  EmbeddedChannel ch{handler};
  ch.config().set_write_buffer_water_mark(kHigh / 2, kHigh);
  ch.set_outbound_byte_budget(0);  // nobody reads yet
  auto input = std::make_shared<ChunkedStream>(string_reader(text), kChunk);
  auto done = ch.new_promise();
  ch.write_and_flush(ChunkedInputPtr(input), done);

  CHECK_FALSE(ch.is_writable());
  CHECK(pending_bytes(ch) > kHigh);
  CHECK(pending_bytes(ch) <= kHigh + kChunk);
  const auto progress = input->progress();
  CHECK(progress == static_cast<std::int64_t>(kHigh + kChunk));
  CHECK(handler->pending_writes() == 1);
  ch.run_pending_tasks();
  CHECK(input->progress() == progress);  // nothing moves while the peer does not read

  std::string received;
  for (int step = 0; step < 10'000 && !done.is_done(); ++step) {  // bounded: a stuck handler fails
    ch.add_outbound_byte_budget(kChunk);  // the peer reads one chunk's worth
    CHECK(pending_bytes(ch) <= kHigh + kChunk);
    received += testing::drain_outbound_bytes(ch);
  }
  CHECK(done.is_success());
  CHECK(received == text);
  CHECK(input->is_closed());
  CHECK_FALSE(ch.finish());
}

TEST_CASE("set_writable(false) holds the transfer, set_writable(true) resumes it") {
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  ch.set_writable(false);
  auto input = std::make_shared<ChunkedStream>(string_reader(make_text(10'000)), 1000);
  auto done = ch.new_promise();
  ch.write_and_flush(ChunkedInputPtr(input), done);
  CHECK(input->progress() == 0);  // not writable: not even the first chunk is read
  ch.set_writable(true);
  CHECK(done.is_success());
  CHECK(testing::drain_outbound_bytes(ch) == make_text(10'000));
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a 1 GiB generated stream to a slow reader keeps memory within the water mark") {
  // 1 GiB in an optimised build; ASan and UBSan builds make it 64 MiB (same code path, the
  // sanitizers only make each byte slower).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
  constexpr std::uint64_t kTotal = std::uint64_t{64} << 20;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
  constexpr std::uint64_t kTotal = std::uint64_t{64} << 20;
#else
  constexpr std::uint64_t kTotal = std::uint64_t{1} << 30;
#endif
#else
  constexpr std::uint64_t kTotal = std::uint64_t{1} << 30;
#endif
  constexpr std::size_t kChunk = ChunkedInput::kDefaultChunkSize;
  const Pattern pattern;
  auto generated = std::make_shared<std::uint64_t>(0);
  auto reader = [&pattern, generated](std::span<std::byte> out) -> std::size_t {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), kTotal - *generated));
    pattern.fill(*generated, out.first(n));
    *generated += n;
    return n;
  };

  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  const std::size_t high = ch.config().write_buffer_high_water_mark();  // 64 KiB
  ch.set_outbound_byte_budget(0);
  auto done = ch.new_promise();
  ch.write_and_flush(ChunkedInputPtr(std::make_shared<ChunkedStream>(
                         reader, kChunk, static_cast<std::int64_t>(kTotal))),
                     done);
  std::uint64_t received = 0;
  std::size_t max_pending = 0;
  bool in_order = true;
  const std::uint64_t max_steps = kTotal / (3 * kChunk) + 1000;  // a stuck handler fails
  for (std::uint64_t step = 0; step < max_steps && !done.is_done(); ++step) {
    ch.add_outbound_byte_budget(3 * kChunk + 100);  // a few chunks, not on chunk boundaries
    max_pending = std::max(max_pending, pending_bytes(ch));
    while (auto m = ch.read_outbound<ByteBuf>()) {
      in_order = in_order && pattern.matches(received, m->readable_span());
      received += m->readable_bytes();
    }
  }
  CHECK(done.is_success());
  CHECK(in_order);
  CHECK(received == kTotal);
  CHECK(*generated == kTotal);
  CHECK(max_pending <= high + kChunk);
  MESSAGE("transferred " << (received >> 20) << " MiB; max pending " << max_pending << " bytes");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a read error fails the promise and closes the input") {
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  int calls = 0;
  auto input = std::make_shared<ChunkedStream>(
      [&calls](std::span<std::byte> out) -> std::size_t {
        if (++calls > 2) throw IoError(std::make_error_code(std::errc::io_error), "disk gone");
        std::memset(out.data(), 'x', out.size());
        return out.size();
      },
      100);
  auto done = ch.new_promise();
  auto after = ch.new_promise();
  ch.write(ChunkedInputPtr(input), done);
  ch.write(ByteBuf::from("after"), after);
  ch.flush();
  ch.run_pending_tasks();
  REQUIRE(done.is_done());
  CHECK_THROWS_WITH_AS(std::rethrow_exception(done.cause()), doctest::Contains("disk gone"),
                       IoError);
  CHECK(input->is_closed());
  CHECK(after.is_success());  // the messages behind it still go out
  CHECK(testing::drain_outbound_bytes(ch) == std::string(200, 'x') + "after");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a read error of a write without a promise is fired as exception_caught") {
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  auto input = std::make_shared<ChunkedStream>([](std::span<std::byte>) -> std::size_t {
    throw IoError(std::make_error_code(std::errc::io_error));
  });
  CHECK_THROWS_AS(ch.write_outbound(ChunkedInputPtr(input)), IoError);
  CHECK(input->is_closed());
  CHECK_FALSE(ch.finish());
}

TEST_CASE("closing the channel closes pending inputs and fails their promises") {
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  ch.config().set_write_buffer_water_mark(1024, 2048);
  ch.set_outbound_byte_budget(0);
  auto first = std::make_shared<ChunkedStream>(string_reader(make_text(100'000)), 512);
  auto second = std::make_shared<ChunkedStream>(string_reader(make_text(100)), 512);
  auto first_done = ch.new_promise();
  auto second_done = ch.new_promise();
  auto plain_done = ch.new_promise();
  ch.write(ChunkedInputPtr(first), first_done);    // in progress when the channel closes
  ch.write(ChunkedInputPtr(second), second_done);  // not started
  ch.write(ByteBuf::from("never"), plain_done);
  ch.flush();
  CHECK(first->progress() > 0);
  CHECK_FALSE(first_done.is_done());

  ch.close();
  for (auto* p : {&first_done, &second_done, &plain_done}) {
    REQUIRE(p->is_done());
    CHECK_THROWS_AS(std::rethrow_exception(p->cause()), ClosedChannelError);
  }
  CHECK(first->is_closed());
  CHECK(second->is_closed());
  CHECK(second->progress() == 0);
  CHECK_FALSE(ch.finish_and_release_all());  // the peer took nothing
}

TEST_CASE("an input without data now waits for resume_transfer") {
  auto handler = std::make_shared<ChunkedWriteHandler>();
  EmbeddedChannel ch{handler};
  auto input = std::make_shared<LateInput>();
  auto done = ch.new_promise();
  ch.write_and_flush(ChunkedInputPtr(input), done);
  ch.write_and_flush(ByteBuf::from("+next"));
  CHECK(ch.outbound_messages().empty());
  CHECK(handler->pending_writes() == 2);
  handler->resume_transfer();  // still nothing: stays suspended
  CHECK_FALSE(done.is_done());
  input->ready = true;
  handler->resume_transfer();
  CHECK(done.is_success());
  CHECK(input->closed);
  CHECK(testing::drain_outbound_bytes(ch) == "late+next");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("docs/handlers.md: a file, then a trailer; a stream from a reader function") {
  TempFile file(make_text(20'000));
  const std::filesystem::path path = file.path;
  // The snippet of docs/handlers.md (keep them identical):
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  auto sent = ch.new_promise();
  ch.write(ChunkedInputPtr(std::make_shared<ChunkedFile>(path)), sent);  // 8 KiB chunks
  ch.write_and_flush(ByteBuf::from("trailer"));  // goes out after the whole file
  // (end of snippet)
  CHECK(sent.is_success());
  CHECK(testing::drain_outbound_bytes(ch) == make_text(20'000) + "trailer");

  // The second snippet of docs/handlers.md:
  std::string body(100'000, 'x');
  std::size_t pos = 0;
  auto stream = std::make_shared<ChunkedStream>([&body, &pos](std::span<std::byte> out) {
    const std::size_t n = std::min(out.size(), body.size() - pos);
    std::memcpy(out.data(), body.data() + pos, n);
    pos += n;
    return n;  // 0: the end of the stream
  });
  ch.write_and_flush(ChunkedInputPtr(stream));
  // (end of snippet)
  CHECK(testing::drain_outbound_bytes(ch) == body);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a failed chunk write fails the promise, closes the input, and later writes go on") {
  EmbeddedChannel ch{std::make_shared<FailNthWrite>(3), std::make_shared<ChunkedWriteHandler>()};
  auto input = std::make_shared<ChunkedStream>(string_reader(std::string(1000, 'x')), 100);
  auto done = ch.new_promise();
  auto after = ch.new_promise();
  ch.write(ChunkedInputPtr(input), done);
  ch.write(ByteBuf::from("after"), after);
  ch.flush();
  REQUIRE(done.is_done());
  CHECK_THROWS_WITH_AS(std::rethrow_exception(done.cause()), doctest::Contains("refused"), IoError);
  CHECK(input->is_closed());
  CHECK(input->progress() == 300);  // nothing read after the failed chunk
  CHECK(after.is_success());
  CHECK(testing::drain_outbound_bytes(ch) == std::string(200, 'x') + "after");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("removing the handler fails its queued writes and closes their inputs") {
  auto handler = std::make_shared<ChunkedWriteHandler>();
  EmbeddedChannel ch{handler};
  ch.set_writable(false);
  auto input = std::make_shared<ChunkedStream>(string_reader("abc"));
  auto done = ch.new_promise();
  auto plain = ch.new_promise();
  ch.write(ChunkedInputPtr(input), done);
  ch.write(ByteBuf::from("x"), plain);
  ch.flush();
  CHECK(handler->pending_writes() == 2);
  ch.pipeline().remove(*handler);
  for (auto* p : {&done, &plain}) {
    REQUIRE(p->is_done());
    CHECK_THROWS_AS(std::rethrow_exception(p->cause()), IllegalStateError);
  }
  CHECK(input->is_closed());
  CHECK(handler->pending_writes() == 0);
  CHECK_FALSE(ch.finish());
}
