// Umbrella header of the HTTP/1.1 codec (namespace trellis::http).
#pragma once

#include <trellis/codec/http/content_coding.hpp>
#include <trellis/codec/http/http_body_stream.hpp>
#include <trellis/codec/http/http_client_errors.hpp>
#include <trellis/codec/http/http_client_handler.hpp>
#include <trellis/codec/http/http_client_options.hpp>
#include <trellis/codec/http/http_connection_pool.hpp>
#include <trellis/codec/http/http_content_compressor.hpp>
#include <trellis/codec/http/http_content_decompressor.hpp>
#include <trellis/codec/http/http_date.hpp>
#include <trellis/codec/http/http_decoders.hpp>
#include <trellis/codec/http/http_head_writer.hpp>
#include <trellis/codec/http/http_headers.hpp>
#include <trellis/codec/http/http_message.hpp>
#include <trellis/codec/http/http_method_queue.hpp>
#include <trellis/codec/http/http_object_aggregator.hpp>
#include <trellis/codec/http/http_parser.hpp>
#include <trellis/codec/http/http_refusal.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/codec/http/http_server_codec.hpp>
#include <trellis/codec/http/http_server_expect_continue_handler.hpp>
#include <trellis/codec/http/http_server_keep_alive_handler.hpp>
#include <trellis/codec/http/streaming_http_response.hpp>
#include <trellis/codec/http/url.hpp>

/// HTTP/1.1: the message types and headers, the strict parser, the server and client codecs,
/// the aggregator, keep-alive, `Expect: 100-continue` and content-coding handlers, the
/// connection pool and the URL parser.
namespace trellis::http {}
