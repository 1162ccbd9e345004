// Umbrella header of the compression codecs: zlib/gzip/deflate, brotli and zstd encoders and
// decoders (ByteBuf in, ByteBuf out), with the decompression limits.
#pragma once

#include <trellis/codec/compression/brotli_decoder.hpp>
#include <trellis/codec/compression/brotli_encoder.hpp>
#include <trellis/codec/compression/decompression_limits.hpp>
#include <trellis/codec/compression/zlib_decoder.hpp>
#include <trellis/codec/compression/zlib_encoder.hpp>
#include <trellis/codec/compression/zstd_decoder.hpp>
#include <trellis/codec/compression/zstd_encoder.hpp>
