// zlib (zlib, gzip and raw deflate) behind StreamCompressor and StreamDecompressor.
#include <zlib.h>

#include <string>

#include <trellis/codec/compression/stream_compressor.hpp>
#include <trellis/codec/compression/stream_decompressor.hpp>

#include "compression_output.hpp"

namespace trellis::codec {
namespace {

int window_bits(ZlibWrapper wrapper) noexcept {
  switch (wrapper) {
    case ZlibWrapper::kGzip:
      return 15 + 16;
    case ZlibWrapper::kNone:
      return -15;
    case ZlibWrapper::kZlib:
    case ZlibWrapper::kZlibOrNone:
      break;
  }
  return 15;
}

std::string zlib_message(const z_stream& z, int rc) {
  return z.msg != nullptr ? std::string(z.msg) : "zlib error " + std::to_string(rc);
}

class ZlibCompressor final : public StreamCompressor {
 public:
  ZlibCompressor(ZlibWrapper wrapper, int level) {
    if (wrapper == ZlibWrapper::kZlibOrNone) {
      throw EncoderError("ZlibWrapper::kZlibOrNone is for decoders only");
    }
    if (level < -1 || level > 9) throw EncoderError("zlib level must be -1..9");
    // memLevel 8 and the full 32 KiB window: zlib's defaults (~256 KiB of state).
    if (deflateInit2(&z_, level, Z_DEFLATED, window_bits(wrapper), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw EncoderError("deflateInit2 failed");
    }
  }
  ~ZlibCompressor() override { deflateEnd(&z_); }

  void compress(std::span<const std::byte> in, Op op, ByteBuf& out) override {
    if (finished_) throw EncoderError("the zlib stream is finished");
    const int flush = op == Op::kProcess ? Z_NO_FLUSH : op == Op::kFlush ? Z_SYNC_FLUSH : Z_FINISH;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    for (;;) {
      auto room = detail::output_room(out, z_.avail_in / 2 + 64);
      z_.next_out = reinterpret_cast<Bytef*>(room.data());
      z_.avail_out = static_cast<uInt>(room.size());
      const int rc = deflate(&z_, flush);
      detail::commit_output(out, room.size() - z_.avail_out);
      if (rc == Z_STREAM_END) {
        finished_ = true;
        return;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) throw EncoderError("deflate: " + zlib_message(z_, rc));
      // Done when all input went in and deflate stopped short of filling the output (for a
      // flush that means the block is complete; kFinish continues until Z_STREAM_END).
      if (flush != Z_FINISH && z_.avail_in == 0 && z_.avail_out != 0) return;
    }
  }

  void reset() override {
    deflateReset(&z_);
    finished_ = false;
  }

 private:
  z_stream z_{};
};

class ZlibDecompressor final : public StreamDecompressor {
 public:
  explicit ZlibDecompressor(ZlibWrapper wrapper) : wrapper_(wrapper) {
    if (wrapper != ZlibWrapper::kZlibOrNone) init(window_bits(wrapper));
  }
  ~ZlibDecompressor() override {
    if (initialised_) inflateEnd(&z_);
  }

  Step decompress(std::span<const std::byte> in, std::span<std::byte> out) override {
    Step step;
    if (!initialised_) {
      // kZlibOrNone: a zlib header is CM = 8 in the low nibble of the first byte, a window of at
      // most 32 KiB, and the first two bytes a multiple of 31 (RFC 1950). Needs both bytes.
      if (in.size() < 2) return step;
      const auto cmf = static_cast<unsigned>(in[0]);
      const auto flg = static_cast<unsigned>(in[1]);
      const bool zlib = (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0;
      init(zlib ? 15 : -15);
    }
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z_, Z_NO_FLUSH);
    step.consumed = in.size() - z_.avail_in;
    step.produced = out.size() - z_.avail_out;
    if (rc == Z_STREAM_END) {
      step.finished = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw DecoderError("inflate: " + (rc == Z_NEED_DICT ? std::string("needs a preset dictionary")
                                                          : zlib_message(z_, rc)));
    }
    return step;
  }

  void reset() override {
    if (wrapper_ == ZlibWrapper::kZlibOrNone) {
      if (initialised_) inflateEnd(&z_);
      initialised_ = false;
      z_ = z_stream{};
    } else {
      inflateReset(&z_);
    }
  }

 private:
  void init(int bits) {
    if (inflateInit2(&z_, bits) != Z_OK) throw DecoderError("inflateInit2 failed");
    initialised_ = true;
  }

  ZlibWrapper wrapper_;
  z_stream z_{};
  bool initialised_ = false;
};

}  // namespace

std::unique_ptr<StreamCompressor> make_zlib_compressor(ZlibWrapper wrapper, int level) {
  return std::make_unique<ZlibCompressor>(wrapper, level);
}

std::unique_ptr<StreamDecompressor> make_zlib_decompressor(ZlibWrapper wrapper) {
  return std::make_unique<ZlibDecompressor>(wrapper);
}

}  // namespace trellis::codec
