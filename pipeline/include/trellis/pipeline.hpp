// Umbrella header of trellis::pipeline: executors, time, futures, tasks, buffers, messages,
// channels and pipelines.
#pragma once

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>
#include <trellis/pipeline/abstract_traffic_shaping_handler.hpp>
#include <trellis/pipeline/async_channel.hpp>
#include <trellis/pipeline/async_channel_options.hpp>
#include <trellis/pipeline/attribute_map.hpp>
#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/blocking.hpp>
#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_config.hpp>
#include <trellis/pipeline/channel_events.hpp>
#include <trellis/pipeline/channel_group.hpp>
#include <trellis/pipeline/channel_group_error.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_handler_mask.hpp>
#include <trellis/pipeline/channel_id.hpp>
#include <trellis/pipeline/channel_initializer.hpp>
#include <trellis/pipeline/channel_matcher.hpp>
#include <trellis/pipeline/channel_outbound_buffer.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/channel_traffic_shaping_handler.hpp>
#include <trellis/pipeline/chunked_file.hpp>
#include <trellis/pipeline/chunked_input.hpp>
#include <trellis/pipeline/chunked_stream.hpp>
#include <trellis/pipeline/chunked_write_handler.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/datagram_packet.hpp>
#include <trellis/pipeline/default_executor.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/file_region.hpp>
#include <trellis/pipeline/flow_control_handler.hpp>
#include <trellis/pipeline/flush_consolidation_handler.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/global_traffic_shaping_handler.hpp>
#include <trellis/pipeline/idle_state_event.hpp>
#include <trellis/pipeline/idle_state_handler.hpp>
#include <trellis/pipeline/ip_filter_rule.hpp>
#include <trellis/pipeline/ip_subnet_filter.hpp>
#include <trellis/pipeline/logging_handler.hpp>
#include <trellis/pipeline/manual_clock.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/pipeline/message_to_message_codec.hpp>
#include <trellis/pipeline/message_to_message_decoder.hpp>
#include <trellis/pipeline/message_to_message_encoder.hpp>
#include <trellis/pipeline/pooled_byte_buf_allocator.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/pipeline/read_timeout_handler.hpp>
#include <trellis/pipeline/remote_address_filter.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/pipeline/simple_channel_inbound_handler.hpp>
#include <trellis/pipeline/socket_address.hpp>
#include <trellis/pipeline/task.hpp>
#include <trellis/pipeline/thread_pool_executor.hpp>
#include <trellis/pipeline/traffic_shaper.hpp>
#include <trellis/pipeline/unique_function.hpp>
#include <trellis/pipeline/unique_ip_filter.hpp>
#include <trellis/pipeline/unpooled_byte_buf_allocator.hpp>
#include <trellis/pipeline/work_stealing_pool.hpp>
#include <trellis/pipeline/write_timeout_handler.hpp>

/// The framework: executors and event loops, futures and coroutine tasks, buffers, messages,
/// channels, pipelines and handlers, the bootstraps and transports, and the embedded test kit.
namespace trellis {}
