// Umbrella header of trellis::codec: decoder framework, frame codecs and compression codecs.
#pragma once

#include <trellis/codec/byte_to_message_codec.hpp>
#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/compression.hpp>
#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/delimiter_based_frame_decoder.hpp>
#include <trellis/codec/fixed_length_frame_decoder.hpp>
#include <trellis/codec/haproxy/haproxy_message.hpp>
#include <trellis/codec/haproxy/haproxy_message_decoder.hpp>
#include <trellis/codec/length_field_based_frame_decoder.hpp>
#include <trellis/codec/length_field_prepender.hpp>
#include <trellis/codec/line_based_frame_decoder.hpp>
#include <trellis/codec/message_to_byte_encoder.hpp>
#include <trellis/codec/protobuf_varint32_frame_decoder.hpp>
#include <trellis/codec/protobuf_varint32_length_field_prepender.hpp>
#include <trellis/codec/replaying_byte_buf.hpp>
#include <trellis/codec/replaying_decoder.hpp>
#include <trellis/codec/string_codec.hpp>

/// Byte-level codecs: the decoder and encoder bases, frame decoders and encoders, string codecs
/// the PROXY protocol decoder, and the compression codecs (zlib, brotli, zstd) with their limits.
namespace trellis::codec {}
