// Zstandard behind StreamCompressor and StreamDecompressor.
#include <zstd.h>

#include <string>

#include <trellis/codec/compression/stream_compressor.hpp>
#include <trellis/codec/compression/stream_decompressor.hpp>

#include "compression_output.hpp"

namespace trellis::codec {
namespace {

// RFC 9659: a "zstd" content-coding uses windows of at most 8 MiB.
constexpr int kMaxWindowLog = 23;

class ZstdCompressor final : public StreamCompressor {
 public:
  explicit ZstdCompressor(int level) : cctx_(ZSTD_createCCtx()) {
    if (cctx_ == nullptr) throw EncoderError("ZSTD_createCCtx failed");
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
      ZSTD_freeCCtx(cctx_);
      throw EncoderError("zstd level out of range");
    }
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
    // Levels 20-22 ("ultra") pick windows over 8 MiB for large inputs; keep within what every
    // HTTP decoder must accept (levels up to 19 stay within it).
    if (level > 19) ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, kMaxWindowLog);
  }
  ~ZstdCompressor() override { ZSTD_freeCCtx(cctx_); }

  void compress(std::span<const std::byte> in, Op op, ByteBuf& out) override {
    if (finished_) throw EncoderError("the zstd stream is finished");
    const ZSTD_EndDirective mode = op == Op::kProcess ? ZSTD_e_continue
                                   : op == Op::kFlush ? ZSTD_e_flush
                                                      : ZSTD_e_end;
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    for (;;) {
      auto room = detail::output_room(out, (input.size - input.pos) / 2 + 64);
      ZSTD_outBuffer output{room.data(), room.size(), 0};
      const std::size_t rc = ZSTD_compressStream2(cctx_, &output, &input, mode);
      if (ZSTD_isError(rc)) throw EncoderError(std::string("zstd: ") + ZSTD_getErrorName(rc));
      detail::commit_output(out, output.pos);
      if (mode == ZSTD_e_continue) {
        if (input.pos == input.size) return;
      } else if (rc == 0) {
        if (mode == ZSTD_e_end) finished_ = true;
        return;
      }
    }
  }

  void reset() override {
    ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only);
    finished_ = false;
  }

  void set_source_size(std::size_t bytes) override {
    ZSTD_CCtx_setPledgedSrcSize(cctx_, static_cast<unsigned long long>(bytes));
  }

 private:
  ZSTD_CCtx* cctx_;
};

class ZstdDecompressor final : public StreamDecompressor {
 public:
  ZstdDecompressor() : dctx_(ZSTD_createDCtx()) {
    if (dctx_ == nullptr) throw DecoderError("ZSTD_createDCtx failed");
    ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, kMaxWindowLog);
  }
  ~ZstdDecompressor() override { ZSTD_freeDCtx(dctx_); }

  Step decompress(std::span<const std::byte> in, std::span<std::byte> out) override {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    ZSTD_outBuffer output{out.data(), out.size(), 0};
    const std::size_t rc = ZSTD_decompressStream(dctx_, &output, &input);
    if (ZSTD_isError(rc)) throw DecoderError(std::string("zstd: ") + ZSTD_getErrorName(rc));
    // 0: a frame is complete and fully flushed.
    return Step{input.pos, output.pos, rc == 0};
  }

  void reset() override { ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only); }

 private:
  ZSTD_DCtx* dctx_;
};

}  // namespace

std::unique_ptr<StreamCompressor> make_zstd_compressor(int level) {
  return std::make_unique<ZstdCompressor>(level);
}

std::unique_ptr<StreamDecompressor> make_zstd_decompressor() {
  return std::make_unique<ZstdDecompressor>();
}

}  // namespace trellis::codec
