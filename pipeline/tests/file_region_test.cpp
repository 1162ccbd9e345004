// Tests of FileRegion: descriptor ownership and sharing, progress, its weight in the outbound
// buffer's water marks, EmbeddedChannel showing it as a message, and the read-based path through
// ChunkedWriteHandler.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/chunked_file.hpp>
#include <trellis/pipeline/chunked_write_handler.hpp>
#include <trellis/pipeline/file_region.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

// --- docs/transport.md, "FileRegion: files with sendfile(2)" (compiled here) ----------------
// Sends a head the caller encoded, then the file; `done` completes when the file is out.
inline void send_file(trellis::ChannelHandlerContext& ctx, trellis::ByteBuf head,
                      const std::filesystem::path& path, trellis::ChannelPromise done) {
  ctx.write(trellis::Message(std::move(head)));
  ctx.write_and_flush(trellis::Message(trellis::FileRegion::open(path)), std::move(done));
}
// ---------------------------------------------------------------------------------------------

using namespace trellis;

namespace {

// Calls send_file from channel_active.
class SendFileOnActive : public ChannelInboundHandler {
 public:
  explicit SendFileOnActive(std::filesystem::path path) : path_(std::move(path)) {}
  void channel_active(ChannelHandlerContext& ctx) override {
    done = ctx.new_promise();
    send_file(ctx, ByteBuf::from("head"), path_, done);
    ctx.fire_channel_active();
  }
  ChannelPromise done;

 private:
  std::filesystem::path path_;
};

std::string make_text(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

// A file in the temp directory, deleted with the object.
struct TempFile {
  explicit TempFile(const std::string& content) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "trellis-region-XXXXXX").string();
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

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

class WritabilityLog : public ChannelInboundHandler {
 public:
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    changes.push_back(ctx.channel().is_writable());
    ctx.fire_channel_writability_changed();
  }
  std::vector<bool> changes;
};

}  // namespace

TEST_CASE("FileRegion::open covers the file from the position, and the last region closes it") {
  TempFile file(make_text(10'000));
  FileRegion whole = FileRegion::open(file.path);
  CHECK(whole.position() == 0);
  CHECK(whole.count() == 10'000);
  CHECK(whole.remaining() == 10'000);
  CHECK(whole.ref_count() == 1);
  const int fd = whole.fd();
  REQUIRE(fd >= 0);

  FileRegion tail = FileRegion::open(file.path, 9'000);
  CHECK(tail.count() == 1'000);
  CHECK(FileRegion::open(file.path, 20'000).count() == 0);  // past the end: nothing
  CHECK(FileRegion::open(file.path, 100, 50).count() == 50);

  {
    FileRegion part = whole.share(100, 200);
    CHECK(part.fd() == fd);
    CHECK(part.position() == 100);
    CHECK(part.count() == 200);
    CHECK(whole.ref_count() == 2);
    FileRegion moved = std::move(part);
    CHECK(part.fd() == -1);  // NOLINT(bugprone-use-after-move): moved-from regions are empty
    CHECK(part.count() == 0);
    CHECK(moved.ref_count() == 2);
  }
  CHECK(whole.ref_count() == 1);
  CHECK(fd_is_open(fd));

  // The descriptor survives its first region while a shared one lives.
  FileRegion kept = whole.share(0, 10);
  whole = FileRegion();
  CHECK(fd_is_open(fd));
  CHECK(kept.ref_count() == 1);
  kept = FileRegion();
  CHECK_FALSE(fd_is_open(fd));
}

TEST_CASE("FileRegion refuses what it cannot be: a missing file, a directory, overdrawn progress") {
  CHECK_THROWS_AS(FileRegion::open("/nonexistent/trellis/region"), IoError);
  CHECK_THROWS_AS(FileRegion::open(std::filesystem::temp_directory_path()), InvalidArgumentError);
  CHECK_THROWS_AS(FileRegion(-1, 0, 10), InvalidArgumentError);
  CHECK_THROWS_AS(FileRegion().share(0, 1), IllegalStateError);

  TempFile file("0123456789");
  FileRegion region = FileRegion::open(file.path, 2, 6);
  region.add_transferred(4);
  CHECK(region.transferred() == 4);
  CHECK(region.remaining() == 2);
  CHECK(region.transfer_position() == 6);
  CHECK_FALSE(region.is_done());
  CHECK_THROWS_AS(region.add_transferred(3), InvalidArgumentError);
  region.add_transferred(2);
  CHECK(region.is_done());
}

TEST_CASE("a FileRegion counts its remaining bytes against the water marks, less as it is sent") {
  TempFile file(make_text(100'000));
  auto log = std::make_shared<WritabilityLog>();
  EmbeddedChannel ch{log};
  ch.config().set_write_buffer_water_mark(8'000, 16'000);
  ch.set_outbound_byte_budget(0);  // a peer that reads nothing yet: the region stays queued
  auto* out = ch.unsafe().outbound_buffer();
  REQUIRE(out != nullptr);

  FileRegion region = FileRegion::open(file.path, 0, 50'000);
  region.add_transferred(10'000);  // a region already partly sent counts what is left
  auto done = ch.new_promise();
  ch.write_and_flush(std::move(region), done);
  CHECK(out->total_pending_write_bytes() == 40'000);
  CHECK_FALSE(ch.is_writable());
  REQUIRE(log->changes == std::vector<bool>{false});

  // Partial writes (the embedded peer takes what its budget allows, as sendfile would): the
  // bytes sent stop counting, the region stays queued and resumes where it stopped.
  ch.add_outbound_byte_budget(20'000);
  CHECK(out->total_pending_write_bytes() == 20'000);
  CHECK_FALSE(ch.is_writable());
  ch.add_outbound_byte_budget(15'000);
  CHECK(out->total_pending_write_bytes() == 5'000);
  CHECK(ch.is_writable());  // under the low mark before the region is done
  CHECK(log->changes == std::vector<bool>{false, true});
  CHECK(out->size() == 1);
  CHECK_FALSE(done.is_done());
  ch.add_outbound_byte_budget(5'000);
  CHECK(done.is_success());
  CHECK(out->total_pending_write_bytes() == 0);

  // What the peer got: three regions, contiguous, from offset 10'000 to 50'000.
  std::uint64_t expected_position = 10'000;
  for (std::uint64_t count : {20'000, 15'000, 5'000}) {
    auto part = ch.read_outbound<FileRegion>();
    REQUIRE(part.has_value());
    CHECK(part->transfer_position() == expected_position);
    CHECK(part->remaining() == count);
    expected_position += count;
  }
  TRELLIS_CHECK_NO_MORE_OUTBOUND(ch);

  // progress() itself: bytes of the first flushed message that no longer count.
  ch.set_outbound_byte_budget(0);
  auto second = ch.new_promise();
  ch.write_and_flush(FileRegion::open(file.path, 0, 30'000), second);
  CHECK(out->total_pending_write_bytes() == 30'000);
  out->progress(25'000);
  CHECK(out->total_pending_write_bytes() == 5'000);
  out->progress(10'000);  // never more than the message counted for
  CHECK(out->total_pending_write_bytes() == 0);
  CHECK_FALSE(second.is_done());
  ch.close();  // the region still queued fails at the close
  CHECK(second.cause() != nullptr);
}

TEST_CASE("EmbeddedChannel shows a written FileRegion as an outbound message") {
  TempFile file(make_text(1'000));
  EmbeddedChannel ch;
  auto done = ch.new_promise();
  ch.write_and_flush(FileRegion::open(file.path, 10, 100), done);
  CHECK(done.is_success());
  auto region = ch.read_outbound<FileRegion>();
  REQUIRE(region.has_value());
  CHECK(region->position() == 10);
  CHECK(region->count() == 100);
  CHECK(region->transferred() == 0);
  TRELLIS_CHECK_NO_MORE_OUTBOUND(ch);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("ChunkedWriteHandler reads a FileRegion's remaining bytes in chunks (the read path)") {
  const std::string text = make_text(50'000);
  TempFile file(text);
  EmbeddedChannel ch{std::make_shared<ChunkedWriteHandler>()};
  FileRegion region = FileRegion::open(file.path, 1'000, 30'000);
  const int fd = region.fd();
  region.add_transferred(500);
  auto done = ch.new_promise();
  ch.write_and_flush(std::move(region), done);
  ch.run_pending_tasks();
  CHECK(done.is_success());
  CHECK(testing::drain_outbound_bytes(ch) == text.substr(1'500, 29'500));
  CHECK_FALSE(fd_is_open(fd));  // the region was the last owner of its descriptor
  CHECK_FALSE(ch.finish());

  // A ChunkedFile made from a region reads a duplicate: the region keeps its descriptor.
  FileRegion kept = FileRegion::open(file.path, 0, 100);
  {
    ChunkedFile chunks(kept, 64);
    CHECK(chunks.length() == 100);
  }
  CHECK(fd_is_open(kept.fd()));
}

TEST_CASE("the send_file example of docs/transport.md writes a head, then the file's region") {
  TempFile file(make_text(3'000));
  auto handler = std::make_shared<SendFileOnActive>(file.path);
  EmbeddedChannel ch{handler};
  CHECK(handler->done.is_success());
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "head");
  auto region = ch.read_outbound<FileRegion>();
  REQUIRE(region.has_value());
  CHECK(region->count() == 3'000);
  CHECK_FALSE(ch.finish());
}
