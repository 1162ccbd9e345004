// Brotli behind StreamCompressor and StreamDecompressor.
#include <brotli/decode.h>
#include <brotli/encode.h>

#include <algorithm>
#include <string>

#include <trellis/codec/compression/stream_compressor.hpp>
#include <trellis/codec/compression/stream_decompressor.hpp>

#include "compression_output.hpp"

namespace trellis::codec {
namespace {

class BrotliCompressor final : public StreamCompressor {
 public:
  BrotliCompressor(int quality, int window_bits) : quality_(quality), window_bits_(window_bits) {
    if (quality < BROTLI_MIN_QUALITY || quality > BROTLI_MAX_QUALITY) {
      throw EncoderError("brotli quality must be 0..11");
    }
    if (window_bits < BROTLI_MIN_WINDOW_BITS || window_bits > BROTLI_MAX_WINDOW_BITS) {
      throw EncoderError("brotli window bits must be 10..24");
    }
    create();
  }
  ~BrotliCompressor() override { BrotliEncoderDestroyInstance(state_); }

  void compress(std::span<const std::byte> in, Op op, ByteBuf& out) override {
    if (finished_) throw EncoderError("the brotli stream is finished");
    const BrotliEncoderOperation bop = op == Op::kProcess ? BROTLI_OPERATION_PROCESS
                                       : op == Op::kFlush ? BROTLI_OPERATION_FLUSH
                                                          : BROTLI_OPERATION_FINISH;
    std::size_t avail_in = in.size();
    auto next_in = reinterpret_cast<const std::uint8_t*>(in.data());
    for (;;) {
      auto room = detail::output_room(out, avail_in / 2 + 64);
      std::size_t avail_out = room.size();
      auto next_out = reinterpret_cast<std::uint8_t*>(room.data());
      if (!BrotliEncoderCompressStream(state_, bop, &avail_in, &next_in, &avail_out, &next_out,
                                       nullptr)) {
        throw EncoderError("brotli compression failed");
      }
      detail::commit_output(out, room.size() - avail_out);
      if (op == Op::kFinish) {
        if (BrotliEncoderIsFinished(state_)) {
          finished_ = true;
          return;
        }
      } else if (avail_in == 0 && !BrotliEncoderHasMoreOutput(state_)) {
        return;
      }
    }
  }

  void set_source_size(std::size_t bytes) override {
    BrotliEncoderSetParameter(state_, BROTLI_PARAM_SIZE_HINT,
                              static_cast<std::uint32_t>(std::min<std::size_t>(bytes, 1u << 30)));
  }

  void reset() override {
    // Brotli has no reset: a new instance.
    BrotliEncoderDestroyInstance(state_);
    state_ = nullptr;
    create();
    finished_ = false;
  }

 private:
  void create() {
    state_ = BrotliEncoderCreateInstance(nullptr, nullptr, nullptr);
    if (state_ == nullptr) throw EncoderError("BrotliEncoderCreateInstance failed");
    BrotliEncoderSetParameter(state_, BROTLI_PARAM_QUALITY, static_cast<std::uint32_t>(quality_));
    BrotliEncoderSetParameter(state_, BROTLI_PARAM_LGWIN, static_cast<std::uint32_t>(window_bits_));
  }

  int quality_;
  int window_bits_;
  BrotliEncoderState* state_ = nullptr;
};

class BrotliDecompressor final : public StreamDecompressor {
 public:
  BrotliDecompressor() { create(); }
  ~BrotliDecompressor() override { BrotliDecoderDestroyInstance(state_); }

  Step decompress(std::span<const std::byte> in, std::span<std::byte> out) override {
    std::size_t avail_in = in.size();
    auto next_in = reinterpret_cast<const std::uint8_t*>(in.data());
    std::size_t avail_out = out.size();
    auto next_out = reinterpret_cast<std::uint8_t*>(out.data());
    const BrotliDecoderResult rc =
        BrotliDecoderDecompressStream(state_, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    if (rc == BROTLI_DECODER_RESULT_ERROR) {
      throw DecoderError(std::string("brotli: ") +
                         BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state_)));
    }
    return Step{in.size() - avail_in, out.size() - avail_out, rc == BROTLI_DECODER_RESULT_SUCCESS};
  }

  void reset() override {
    BrotliDecoderDestroyInstance(state_);
    state_ = nullptr;
    create();
  }

 private:
  void create() {
    state_ = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
    if (state_ == nullptr) throw DecoderError("BrotliDecoderCreateInstance failed");
  }

  BrotliDecoderState* state_ = nullptr;
};

}  // namespace

std::unique_ptr<StreamCompressor> make_brotli_compressor(int quality, int window_bits) {
  return std::make_unique<BrotliCompressor>(quality, window_bits);
}

std::unique_ptr<StreamDecompressor> make_brotli_decompressor() {
  return std::make_unique<BrotliDecompressor>();
}

}  // namespace trellis::codec
