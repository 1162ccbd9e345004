// Umbrella header of trellis::websocket: the WebSocket frame codec (RFC 6455).
#pragma once

#include <trellis/codec/websocket/utf8_frame_validator.hpp>
#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_decoder_config.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_frame_aggregator.hpp>
#include <trellis/codec/websocket/websocket_frame_decoder.hpp>
#include <trellis/codec/websocket/websocket_frame_encoder.hpp>
#include <trellis/codec/websocket/websocket_mask.hpp>
#include <trellis/codec/websocket/websocket_protocol_error.hpp>
#include <trellis/codec/websocket/websocket_protocol_handler.hpp>
#include <trellis/codec/websocket/websocket_role.hpp>
